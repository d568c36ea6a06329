{{ config(materialized='merge', strategy='upsert', unique_key='id',
          on_schema_change='append' if is_increment() else 'ignore') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
