{#
  The strategy table: the one place that says what each strategy does.

  A merge classifies every row as
    matched      - the key is in the source and in the target
    source_only  - the key is only in the source
    target_only  - the key is only in the target (within incremental_predicates)
  and each strategy picks an action per class. The engines never look at the strategy name;
  they render the actions (see build_merge_plan.sql, macros/classify/ and macros/write/).

  history (slowly changing dimensions, type 2, with dbt snapshots' semantics) keeps every version
  of a row: a matched, changed key's current version is closed and a new one inserted, a new key
  gets its first version, and with hard_deletes a key the SELECT lacks is closed (target_only
  becomes 'delete', see validate_history_config); its classes and writes are its own
  (macros/classify/classify_history_sql.sql, macros/write/apply_history.sql), over the target's
  current versions only.
#}
{% macro merge_strategies() %}
  {{ return({
    'upsert':      {'matched': 'update', 'source_only': 'insert', 'target_only': 'keep',   'dedupe': false},
    'insert':      {'matched': 'keep',   'source_only': 'insert', 'target_only': 'keep',   'dedupe': false},
    'update':      {'matched': 'update', 'source_only': 'skip',   'target_only': 'keep',   'dedupe': false},
    'full_merge':  {'matched': 'update', 'source_only': 'insert', 'target_only': 'delete', 'dedupe': false},
    'deduplicate': {'matched': 'update', 'source_only': 'insert', 'target_only': 'keep',   'dedupe': true},
    'history':     {'matched': 'update', 'source_only': 'insert', 'target_only': 'keep',   'dedupe': false},
  }) }}
{% endmacro %}
