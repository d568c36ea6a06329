{# A CDC feed: op = 'D' deletes the row with that key (3); a 'D' for a key the table lacks (6) does nothing. #}
{{ config(materialized='merge', strategy='upsert', unique_key='id',
          delete_condition="DBT_INTERNAL_SOURCE.op = 'D'", merge_history_table='merge_history') }}
select * from {{ phase_ref('cdc_initial', 'cdc_increment') }}
