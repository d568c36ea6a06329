{#-
  A run that rewrites partitions of a parquet, orc or Hive table (overwrite_partitions) and is
  interrupted while writing the target (killed, or its INSERT OVERWRITE failing) can leave the
  table without the rows it was rewriting: Spark deletes a table without partitions before it
  writes it again, and swaps partitions one at a time. Those rows are then still in the run's work
  table, marked complete before the target was touched. The next run of the model, before anything
  reads the target, finishes that write: the same INSERT OVERWRITE from the work table, which
  leaves the table as the interrupted run would have. A work table not marked complete (the run
  stopped before touching the target) is dropped, and so is every leftover on a rebuild.
  `existing` is the target as dbt found it (none on a first run).
-#}
{% macro finish_interrupted_write(existing) %}
  {{ return(adapter.dispatch('finish_interrupted_write', 'dbt_merge')(existing)) }}
{% endmacro %}

{# Other engines write in one transaction or commit: there is never a write to finish. #}
{% macro default__finish_interrupted_write(existing) %}
{% endmacro %}

{% macro spark__finish_interrupted_write(existing) %}
  {% if existing is none %}
    {{ return(none) }}
  {% endif %}
  {#- `like` takes a regular expression with * for .*: other characters of the name become *,
      and | separates patterns; the names are matched exactly here. Also dropped: the copies of a non-deterministic
      SELECT (stage_select, <model>__dbt_merge_s_*) that a failed run left. -#}
  {% set prefix = existing.identifier ~ '__dbt_merge_w_' %}
  {% set copy_prefix = existing.identifier ~ '__dbt_merge_s_' %}
  {% set pattern = modules.re.sub('[^A-Za-z0-9_]', '*', prefix) ~ '*|'
                   ~ modules.re.sub('[^A-Za-z0-9_]', '*', copy_prefix) ~ '*' %}
  {% set leftovers = [] %}
  {% for row in dbt_merge.run_sql('show tables in ' ~ existing.schema ~ " like '" ~ pattern ~ "'",
                                   'dbt_merge_leftovers').rows %}
    {% set name = row[1] | lower %}
    {% if not row[2] and name != copy_prefix | lower and name.startswith(copy_prefix | lower) %}
      {% do leftovers.append({'relation': existing.incorporate(path={'identifier': row[1]}), 'ready': none}) %}
    {% elif not row[2] and name != prefix | lower and name.startswith(prefix | lower) %}
      {% set work = existing.incorporate(path={'identifier': row[1]}) %}
      {#- the value, or a sentence saying the table does not have the property -#}
      {% set ready = dbt_merge.run_sql('show tblproperties ' ~ work ~ " ('dbt_merge.ready')",
                                       'dbt_merge_leftovers').rows[0][-1] %}
      {% do leftovers.append({'relation': work,
                              'ready': ready if modules.re.match('[0-9]{4}-[0-9]{2}-[0-9]{2}T', ready) else none}) %}
    {% endif %}
  {% endfor %}
  {% if not leftovers %}
    {{ return(none) }}
  {% endif %}
  {% set storage = none if existing.is_view or should_full_refresh() else dbt_merge.table_storage(existing) %}
  {#- oldest first: each finished write is the state the next one started from -#}
  {% for work in leftovers | selectattr('ready') | sort(attribute='ready')
      if storage is not none and storage.write == 'overwrite' %}
    {% do log('dbt_merge ' ~ model.name ~ ': a run started at ' ~ work.ready ~ ' was interrupted while it '
        ~ 'rewrote ' ~ existing ~ '; finishing its write from ' ~ work.relation ~ ' first.', info=true) %}
    {% do dbt_merge._overwrite_from_work_table(existing, storage, work.relation) %}
  {% endfor %}
  {% for work in leftovers %}
    {% do dbt_merge.run_statement('drop table if exists ' ~ work.relation, 'dbt_merge_leftovers') %}
  {% endfor %}
{% endmacro %}
