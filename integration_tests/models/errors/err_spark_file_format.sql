{{ config(materialized='merge', strategy='upsert', unique_key='id', enabled=(target.type == 'spark'),
          file_format='parquet' if is_increment() else 'iceberg') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
