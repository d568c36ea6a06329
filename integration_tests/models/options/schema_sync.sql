{{ config(materialized='merge', strategy='upsert', unique_key='id', on_schema_change='sync_all_columns') }}
{% if is_increment() %}
select id, name, amount, updated_at, upper(tier) as tier_code from {{ ref('customers_increment') }}
{% else %}
select * from {{ ref('customers_initial') }}
{% endif %}
