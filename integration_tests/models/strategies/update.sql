{{ config(materialized='merge', strategy='update', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
