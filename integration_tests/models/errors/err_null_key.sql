{{ config(materialized='merge', strategy='upsert', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_null_key') }}
