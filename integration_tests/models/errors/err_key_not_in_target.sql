{{ config(materialized='merge', strategy='upsert', unique_key=['id', 'code'] if is_increment() else 'id') }}
select *{% if is_increment() %}, 'x' as code{% endif %}
from {{ phase_ref('customers_initial', 'customers_increment') }}
