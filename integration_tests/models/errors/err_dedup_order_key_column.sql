{{ config(materialized='merge', strategy='deduplicate', unique_key='id',
          dedup_order_by='id' if is_increment() else 'version desc') }}
select * from {{ phase_ref('events_initial', 'events_increment') }}
