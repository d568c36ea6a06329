{#-
  materialized='merge': the model's SELECT is the source, the existing table the target.
  Phases: config -> hooks -> the merge flow (run_merge: stage and check the SELECT, plan the
  schema change, build or classify, count, check and write, history) -> statistics ->
  grants/docs/hooks -> commit. The flow is shared with the Python front ends.
-#}
{% materialization merge, default -%}

  {#-- a Parquet dataset (config location, dbt-duckdb): merged by the package's Python side.
       statement(language='python') must be called here, in the materialization itself. --#}
  {%- if config.get('location') is not none -%}
    {%- set job = dbt_merge.parquet_dataset_job() -%}
    {%- call statement('dbt_merge_parquet_check', language='python') -%}{{ job.check_code }}{%- endcall -%}
    {%- do dbt_merge.parquet_dataset_start(job) -%}
    {%- call statement('dbt_merge_parquet', language='python') -%}{{ job.code }}{%- endcall -%}
    {{ return(dbt_merge.parquet_dataset_finish(job)) }}
  {%- endif %}

  {#-- the model's table where dbt's cache of the schema may have missed it (Spark), first: every
       check that follows, and the choice between a merge and a build, read that cache --#}
  {%- do dbt_merge.confirm_relation_cache(this) -%}
  {#-- config: fails before anything is changed (a history table's --full-refresh is refused there) --#}
  {%- set cfg = dbt_merge.validate_merge_config() -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set rebuild = existing is none or existing.is_view or should_full_refresh() -%}
  {%- set grant_config = config.get('grants') -%}

  {#-- merge_history_table: checked (a dry run too: it says what the run would refuse) and created
       before the merge's transaction begins, where the engine needs it (statement(language='python')
       runs only here, in the materialization itself) --#}
  {%- set history_job = dbt_merge.merge_history_job(cfg.history_table, target, create=not cfg.dry_run)
                        if cfg.history_table else none -%}
  {%- if history_job is not none -%}
    {%- call statement('dbt_merge_history', language='python') -%}{{ history_job.code }}{%- endcall -%}
    {%- if not cfg.dry_run -%}
      {%- do adapter.cache_added(history_job.relation) -%}
    {%- endif -%}
  {%- endif %}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#-- the merge flow, shared with the Python front ends (macros/flow/run_merge.sql) --#}
  {%- set stats = dbt_merge.run_merge(cfg, target, existing, rebuild, sql,
                                      contract_enforced=(config.get('contract') or {}).enforced) -%}
  {% do dbt_merge.put_back_session_conf() %}
  {% do dbt_merge.report_merge_stats(cfg.strategy, stats) %}

  {% do apply_grants(target, grant_config, should_revoke=should_revoke(existing, rebuild)) %}
  {% do persist_docs(target, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% do adapter.commit() %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target]}) }}

{%- endmaterialization %}
