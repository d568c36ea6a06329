{# Second run: id 1 has versions 2 and 3 (3 wins), id 2 an identical pair, id 4 a NULL version (sorts last). #}
{{ config(materialized='merge', strategy='deduplicate', unique_key='id', dedup_order_by='version desc') }}
select * from {{ phase_ref('events_initial', 'events_increment') }}
