{{ config(materialized='merge', strategy='upsert', unique_key=['order_id', 'region']) }}
select * from {{ phase_ref('orders_initial', 'orders_increment') }}
