{{ config(materialized='merge', strategy='upsert' if not is_increment() else 'upsrt', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
