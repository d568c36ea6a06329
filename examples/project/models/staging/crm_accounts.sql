-- The whole account table as the CRM holds it on a day, one row per account_id: an account
-- missing from a day's extract was deleted in the CRM.
select account_id, name, tier
from {{ ref('raw_crm_accounts') }}
where day = {{ var('day') }}
