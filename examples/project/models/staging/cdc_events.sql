-- The change events of one day (op: I insert, U update, D delete), several per customer_id;
-- event_seq orders them.
select customer_id, name, tier, op, event_seq
from {{ ref('raw_cdc_events') }}
where day = {{ var('day') }}
