{{ config(materialized='merge', strategy='upsert', unique_key='id') }}
select *{% if is_increment() %}, upper(tier) as tier_code{% endif %}
from {{ phase_ref('customers_initial', 'customers_increment') }}
