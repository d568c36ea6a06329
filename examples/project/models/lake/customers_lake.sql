{{ config(materialized='merge', strategy='upsert', unique_key='customer_id',
          location='lake/customers', partition_by='region') }}
select customer_id, region, name, tier from {{ ref('stg_customers') }}
