{# Only amount is updated; a row whose only change is tier (id 4) is unchanged. #}
{{ config(materialized='merge', strategy='upsert', unique_key='id', merge_update_columns=['amount']) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
