{#- The run's work relations. Their names carry a hash of the model's schema, name and the dbt
    invocation, so that two models of the same name in different schemas, run by parallel
    threads, or two invocations sharing one Spark session, never share one. -#}
{% macro work_relations(target, cfg) %}
  {% set tag = '__dbt_merge_' ~ local_md5(target.schema ~ '.' ~ target.identifier ~ '.' ~ invocation_id)[:10] %}
  {{ return({
    'target': target,
    'stage': make_temp_relation(target, tag ~ '_src'),
    'converted': make_temp_relation(target, tag ~ '_cnv'),
    'deduped': make_temp_relation(target, tag ~ '_dedup') if cfg.actions.dedupe else none,
    'changes': make_temp_relation(target, tag ~ '_chg'),
  }) }}
{% endmacro %}
