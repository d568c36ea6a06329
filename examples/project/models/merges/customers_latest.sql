{{ config(materialized='merge', strategy='upsert', unique_key='customer_id',
          merge_update_condition='DBT_INTERNAL_SOURCE.updated_at > DBT_INTERNAL_DEST.updated_at') }}
select customer_id, region, name, tier, updated_at from {{ ref('stg_customers') }}
