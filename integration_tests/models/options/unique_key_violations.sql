{# Not a merge model: data the dbt_merge.unique_key test must reject (duplicate id 1, NULL ids). #}
{{ config(materialized='table', tags=['expect_test_failure']) }}
select * from {{ ref('unique_key_violations_data') }}
