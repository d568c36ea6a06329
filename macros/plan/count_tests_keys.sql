{#- Whether count_changes tests that the source's keys are unique (the source check then leaves
    that out, check_source_rows' keys_later), given the engine's size estimate of the staged
    SELECT (stage_select; none when unknown). Spark only (below). -#}
{% macro count_tests_keys(plan, estimated_bytes) %}
  {{ return(adapter.dispatch('count_tests_keys', 'dbt_merge')(plan, estimated_bytes)) }}
{% endmacro %}

{% macro default__count_tests_keys(plan, estimated_bytes) %}
  {{ return(false) }}
{% endmacro %}

{#- Spark: the count tests the source's keys' uniqueness instead of the source check (which then
    skips its count(distinct)) when it counts the narrow changes of a source that Spark
    estimates too large to broadcast: that count is a full outer join, on whose rows the tests
    cost little. On a 2M-row snapshot (issue 22, local[2], idle machine, benchmarks.floor) the
    check filling the cache took 0.9-1.0 s instead of 2.2-2.5 s, the count 1.9-2.1 s instead of
    1.7-1.8 s. A small source keeps the check's count(distinct): moved into the left join's
    count (a scalar subquery) it cost 4-7% more on a 200k-row increment (paired runs). An
    estimate too large costs a full outer join where the left join would do, never a result. -#}
{% macro spark__count_tests_keys(plan, estimated_bytes) %}
  {{ return(plan.writes_source_rows and not plan.actions.dedupe and not plan.deduped
            and estimated_bytes is not none and estimated_bytes >= dbt_merge.full_join_bytes()) }}
{% endmacro %}

{#- Spark: the size from which a source is joined to the target by a full outer join instead of
    being broadcast, in bytes (Spark's default broadcast threshold; dbt var
    dbt_merge_spark_full_join_bytes, which the tests set to 0 to take that path on small data). -#}
{% macro full_join_bytes() %}
  {{ return(var('dbt_merge_spark_full_join_bytes', 10485760) | int) }}
{% endmacro %}
