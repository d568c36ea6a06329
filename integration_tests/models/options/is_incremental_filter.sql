{# Second run selects only rows newer than the target's newest (ids 2 and 5). #}
{{ config(materialized='merge', strategy='upsert', unique_key='id') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
{% if is_incremental() %}
where updated_at > (select max(updated_at) from {{ this }})
{% endif %}
