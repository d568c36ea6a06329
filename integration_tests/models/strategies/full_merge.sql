{{ config(materialized='merge', strategy='full_merge', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
