{#- A file_format the merge cannot write (csv: no MERGE INTO, no lossless rewrite) on the second run. #}
{{ config(materialized='merge', strategy='upsert', unique_key='id', enabled=(target.type == 'spark'),
          file_format='csv' if is_increment() else 'iceberg') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
