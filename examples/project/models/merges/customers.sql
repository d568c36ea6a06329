{{ config(materialized='merge', strategy='upsert', unique_key='customer_id') }}
select customer_id, region, name, tier, updated_at from {{ ref('stg_customers') }}
