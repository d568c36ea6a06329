{# No dedup_order_by: duplicate rows are allowed only when identical. #}
{{ config(materialized='merge', strategy='deduplicate', unique_key='id') }}
select * from {{ phase_ref('events_initial', 'events_identical_increment') }}
