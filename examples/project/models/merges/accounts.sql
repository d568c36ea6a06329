{{ config(materialized='merge', strategy='full_merge', unique_key='account_id',
          soft_delete_column='is_deleted', soft_delete_timestamp_column='deleted_at') }}
select account_id, name, tier from {{ ref('crm_accounts') }}
