{{ config(materialized='merge', strategy='history', unique_key='customer_id',
          updated_at='updated_at', hard_deletes='invalidate', full_refresh=false) }}
select customer_id, region, name, tier, updated_at from {{ ref('stg_customers') }}
