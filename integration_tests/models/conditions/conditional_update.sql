{# Late-arriving data: a matched row is updated only when the SELECT's row is newer (id 4 changed but is not newer: held back). #}
{{ config(materialized='merge', strategy='upsert', unique_key='id',
          merge_update_condition='DBT_INTERNAL_SOURCE.updated_at > DBT_INTERNAL_DEST.updated_at',
          merge_history_table='merge_history') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
