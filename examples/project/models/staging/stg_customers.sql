-- One extract of the customer table per day (var `day`: 1 or 2), one row per customer_id.
select customer_id, name, region, tier, updated_at
from {{ ref('raw_customers') }}
where day = {{ var('day') }}
