{#-
  materialized='merge': the model's SELECT is the source, the existing table the target.
  Phases: config -> stage and check the SELECT (nothing written yet) -> build or merge ->
  statistics -> grants/docs/hooks -> commit. The SQL of each phase lives in its own macro.
-#}
{% materialization merge, default -%}

  {#-- config: fails before any SQL runs --#}
  {%- set cfg = dbt_merge.validate_merge_config() -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set target = this.incorporate(type='table') -%}
  {%- set rebuild = existing is none or existing.is_view or should_full_refresh() -%}
  {%- set relations = {
        'target': target,
        'stage': make_temp_relation(target, '__dbt_merge_src'),
        'deduped': make_temp_relation(target, '__dbt_merge_dedup') if cfg.actions.dedupe else none,
        'changes': make_temp_relation(target, '__dbt_merge_chg'),
      } -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#-- stage the SELECT once and check it: keys present, not NULL, unique (or deduplicable) --#}
  {% do dbt_merge.create_work_relation(relations.stage, sql) %}
  {% set source_columns = adapter.get_columns_in_relation(relations.stage) %}
  {% set source_names = source_columns | map(attribute='name') | list %}
  {% set target_columns = none if rebuild else adapter.get_columns_in_relation(existing) %}
  {% set plan = dbt_merge.build_merge_plan(cfg, relations, source_names,
                  none if rebuild else target_columns | map(attribute='name') | list) %}
  {% if plan.deduped %}
    {% do dbt_merge.create_work_relation(plan.deduped, dbt_merge.dedupe_source_sql(plan)) %}
  {% endif %}
  {% if dbt_merge.check_source_rows(plan) > 0 %}
    {#-- some keys' first rows are identical repeats: keep one of each --#}
    {% do dbt_merge.drop_work_relation(plan.deduped) %}
    {% do dbt_merge.create_work_relation(plan.deduped, dbt_merge.dedupe_source_sql(plan, one_per_key=true)) %}
  {% endif %}

  {#-- [relation, materialized] pairs to drop at the end --#}
  {% set work_relations = [[plan.deduped, true], [plan.stage, true]] %}
  {% if rebuild %}
    {% do dbt_merge.rebuild_target(plan, existing) %}
    {% set total = dbt_merge.count_rows(target) %}
    {% set stats = {'inserted': total, 'updated': 0, 'deleted': 0, 'unchanged': 0, 'total': total} %}
  {% else %}
    {% do dbt_merge.check_key_types(plan, source_columns, target_columns, cfg.on_schema_change) %}
    {% set target_names = dbt_merge.sync_target_schema(cfg.on_schema_change, target, source_columns, target_columns) %}
    {% set plan = dbt_merge.build_merge_plan(cfg, relations, source_names, target_names) %}
    {% set keep_changes = dbt_merge.materialize_changes(plan) %}
    {% do dbt_merge.create_work_relation(plan.changes, dbt_merge.classify_changes_sql(plan), materialize=keep_changes) %}
    {% do work_relations.insert(0, [plan.changes, keep_changes]) %}
    {% set stats = dbt_merge.count_changes(plan) %}
    {% do dbt_merge.apply_changes(plan, stats) %}
  {% endif %}
  {% do dbt_merge.drop_work_relations(work_relations) %}
  {% do dbt_merge.report_merge_stats(plan.strategy, stats) %}

  {% do apply_grants(target, grant_config, should_revoke=should_revoke(existing, rebuild)) %}
  {% do persist_docs(target, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% do adapter.commit() %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target]}) }}

{%- endmaterialization %}
