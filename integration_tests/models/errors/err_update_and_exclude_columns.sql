{{ config(materialized='merge', strategy='upsert', unique_key='id',
          merge_update_columns=['amount'] if is_increment() else none,
          merge_exclude_columns=['tier'] if is_increment() else none) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
