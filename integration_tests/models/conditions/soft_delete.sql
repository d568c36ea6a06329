{# full_merge that marks the rows missing from the SELECT (id 1) instead of deleting them. #}
{{ config(materialized='merge', strategy='full_merge', unique_key='id', soft_delete_column='is_deleted') }}
select * from {{ phase_ref('customers_initial', 'customers_increment') }}
