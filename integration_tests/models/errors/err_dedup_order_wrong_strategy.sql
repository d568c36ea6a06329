{{ config(materialized='merge', strategy='upsert', unique_key='id',
          dedup_order_by='updated_at desc' if is_increment() else none) }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
