{#
  The strategy table: the one place that says what each strategy does.

  A merge classifies every row as
    matched      - the key is in the source and in the target
    source_only  - the key is only in the source
    target_only  - the key is only in the target (within incremental_predicates)
  and each strategy picks an action per class. The engines never look at the strategy name;
  they render the actions (see build_merge_plan.sql, macros/classify/ and macros/write/).
#}
{% macro merge_strategies() %}
  {{ return({
    'upsert':      {'matched': 'update', 'source_only': 'insert', 'target_only': 'keep',   'dedupe': false},
    'insert':      {'matched': 'keep',   'source_only': 'insert', 'target_only': 'keep',   'dedupe': false},
    'update':      {'matched': 'update', 'source_only': 'skip',   'target_only': 'keep',   'dedupe': false},
    'full_merge':  {'matched': 'update', 'source_only': 'insert', 'target_only': 'delete', 'dedupe': false},
    'deduplicate': {'matched': 'update', 'source_only': 'insert', 'target_only': 'keep',   'dedupe': true},
  }) }}
{% endmacro %}
