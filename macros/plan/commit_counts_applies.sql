{#- Whether a merge writes once and counts from its commit (asked after the source check, by a
    merge with rows to write: an empty increment never reads the session's extensions). Only
    when the project asks for it (the dbt var dbt_merge_commit_counts: true): measured on
    2026-11-30 (round 18 of the benchmark history), the passes were faster on every load but
    one, upsert and insert alike (a 1,000-row upsert into a 2M-row merge-on-read table 2.06 s
    against 3.35 s; the whole table again 4.13 s against 5.17 s; format 3 too); the one load
    where writing once won is an `insert` of the whole table again (-16%).
    And, whatever the var, a table set to `write.merge.isolation-level=snapshot`: Iceberg does
    not check such a MERGE against appends committed while it ran, and the passes' guard reads
    the table through the session's catalog cache, which another application's commit does not
    refresh; their MERGE INTO the table then went through on top of another application's
    append of a key it inserted too (the key held twice, the run reported success: red team
    helper-60). Written once, the run's branch is published only while main is still the
    snapshot it counted. -#}
{% macro commit_counts_applies(plan, cfg) %}
  {{ return(adapter.dispatch('commit_counts_applies', 'dbt_merge')(plan, cfg)) }}
{% endmacro %}

{% macro default__commit_counts_applies(plan, cfg) %}
  {{ return(false) }}
{% endmacro %}

{% macro spark__commit_counts_applies(plan, cfg) %}
  {% if plan.history %}{{ return(false) }}{% endif %}{#- a history merge closes and inserts versions: the passes -#}
  {% set storage = plan.target_storage %}
  {% set isolation = dbt_merge.isolation_level((plan.get('target_properties') or {}).get('write.merge.isolation-level') or '') %}
  {% set asked = var('dbt_merge_commit_counts', false) or isolation == 'SNAPSHOT' %}
  {% if not asked or cfg.dry_run or not storage or storage.provider != 'iceberg' %}
    {{ return(false) }}
  {% endif %}
  {% set kind = dbt_merge.commit_counts_kind(storage) %}
  {% set strategies = ['upsert', 'insert', 'full_merge'] if kind == 'v3' else ['upsert', 'insert'] %}
  {% set altered = dbt_merge.schema_changes_any(plan.schema) %}
  {#- full_merge_write='overwrite', asked for by name, is honoured: it rewrites the whole table -#}
  {% if plan.strategy == 'full_merge' and plan.get('full_merge_write') == 'overwrite' %}
    {{ return(false) }}
  {% endif %}
  {{ return(kind is not none and plan.strategy in strategies and not plan.actions.dedupe and not plan.deduped
            and not plan.update_condition and not plan.delete_condition and not plan.soft_delete
            and not plan.predicates and not altered and dbt_merge.branches_available(plan)) }}
{% endmacro %}

{#- 'v3' (row lineage), 'mor' (merge-on-read, format 2) or none. -#}
{% macro commit_counts_kind(storage) %}
  {% if (storage.format_version or 0) >= 3 %}
    {{ return('v3') }}
  {% endif %}
  {#- a format 1 table cannot hold delete files (check_table_format refuses it set to merge-on-read) -#}
  {{ return('mor' if storage.merge_on_read and (storage.format_version or 2) >= 2 else none) }}
{% endmacro %}
