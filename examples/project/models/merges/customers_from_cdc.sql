{{ config(materialized='merge', strategy='deduplicate', unique_key='customer_id',
          dedup_order_by='event_seq desc', delete_condition="DBT_INTERNAL_SOURCE.op = 'D'") }}
select customer_id, name, tier, op, event_seq from {{ ref('cdc_events') }}
