{{ config(materialized='merge', strategy='upsert', unique_key=[] if is_increment() else ['id']) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
