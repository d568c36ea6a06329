{#-
  A target that is not a table: a front end may write it itself, behind the same flow. The
  Parquet door (dbt_merge.parquet) gives its writer as `dbt_merge_writer` in the render context
  (as merge_dataframe gives dbt_merge_branches); in a dbt run there is none, and every macro
  here does nothing. The flow talks to a writer at four points, each a phase's own macro:
  scope_target (before the classify), apply_changes, rebuild_target and apply_schema_changes
  (the writer writes the planned columns; no ALTER). It also answers what the flow would ask the
  catalog of a table (target_rows_sql, described_target, target_definition): the target is the
  writer's, not the catalog's. See design/parquet-writer.md.
-#}
{% macro target_writer() %}
  {{ return(dbt_merge_writer if dbt_merge_writer is defined else none) }}
{% endmacro %}

{#- What the writer adds to the plan before the classify: {scope: the relation holding the target
    rows the SELECT may match (a Parquet writer: the candidate files), origin: the column of
    `scope` naming where each row is stored, which the changes then carry}; {} without a writer. -#}
{% macro scope_target(plan) %}
  {% set writer = dbt_merge.target_writer() %}
  {{ return(writer.scope(plan, dbt_merge.writer_spec(plan)) if writer is not none else {}) }}
{% endmacro %}

{#- The SQL only the flow's phases know, for a writer (which may call public macros, such as
    key_match and compared_value, but renders no phase's private one): which target rows
    (aliased DBT_INTERNAL_DEST) the merge considers, which of them are live (soft deletes), and
    delete_condition on a source row (aliased DBT_INTERNAL_SOURCE). -#}
{% macro writer_spec(plan) %}
  {{ return({
    'considered': dbt_merge.target_rows_condition(plan, false),
    'live': dbt_merge.live(plan) if plan.soft_delete else none,
    'delete_flag': dbt_merge.delete_flag(plan) if plan.delete_condition else none,
  }) }}
{% endmacro %}

{#- The target's rows, as a SQL expression for a count query: `(select count(*) from <target>)`, or
    the number a writer knows (a Parquet writer: a count of its files, read once; the merge
    holds the dataset's lock and its view reads a fixed list of files, so the number holds for
    the whole run). -#}
{% macro target_rows_sql(plan) %}
  {% set writer = dbt_merge.target_writer() %}
  {% if writer is not none %}
    {{ return(writer.target_rows() | string) }}
  {% endif %}
  {{ return('(select count(*) from ' ~ plan.target ~ ')') }}
{% endmacro %}
