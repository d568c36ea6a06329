{# full_merge limited to target rows with id >= 2: id 1, missing from the source, is kept. #}
{{ config(materialized='merge', strategy='full_merge', unique_key='id',
          incremental_predicates=['DBT_INTERNAL_DEST.id >= 2']) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
