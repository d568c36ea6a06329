{{ config(materialized='merge', strategy='upsert', unique_key='id') }}
select {% if not is_increment() %}id, {% endif %}name, tier, amount, updated_at
from {{ phase_ref('customers_initial', 'customers_increment') }}
