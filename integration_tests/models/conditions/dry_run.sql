{# The increment is a dry run: every check and the exact counts, nothing written. #}
{{ config(materialized='merge', strategy='upsert', unique_key='id', dry_run=is_increment()) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
