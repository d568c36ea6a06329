{{ config(materialized='merge', strategy='deduplicate', unique_key='id', dedup_order_by='version desc') }}
select * from {{ phase_ref('events_initial', 'events_tied') }}
