{{ config(materialized='merge', strategy='upsert', unique_key='id', merge_exclude_columns=['updated_at']) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
