{#- Whether a first build or full refresh may load the target straight from the SELECT and check
    the rows it loaded (NULL and repeated keys) afterwards, failing the run before the commit:
    only where the model's transaction rolls the new table back (and keeps the old one). It
    saves writing the SELECT twice (DuckDB, 5M rows: the staged copy and its check cost as much
    as a third of dbt's `table` materialization). Not for deduplicate (its candidates are
    checked before the build), delete_condition (rows it marks are not loaded, but must be
    checked) or soft deletes (columns added to the SELECT). -#}
{% macro check_after_rebuild(cfg) %}
  {{ return(adapter.dispatch('check_after_rebuild', 'dbt_merge')(cfg)) }}
{% endmacro %}

{% macro default__check_after_rebuild(cfg) %}
  {{ return(false) }}
{% endmacro %}

{% macro duckdb__check_after_rebuild(cfg) %}
  {#- (a target a writer builds is not the model's table until it is published: checked before) -#}
  {{ return(dbt_merge.target_writer() is none and not cfg.dry_run and not cfg.actions.dedupe and not cfg.delete_condition
            and not cfg.soft_delete and not cfg.history) }}
{% endmacro %}
