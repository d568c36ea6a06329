{{ config(materialized='merge', strategy='upsert', unique_key='id',
          merge_update_columns=['amount', 'balance'] if is_increment() else none) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
