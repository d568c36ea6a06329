{{ config(materialized='merge', strategy='deduplicate', unique_key='id') }}
select * from {{ phase_ref('events_initial', 'events_increment') }}
