{{ config(materialized='merge', strategy='insert', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
