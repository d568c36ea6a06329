{#-
  A run that rewrites partitions of a parquet, orc or Hive table (overwrite_partitions) and is
  interrupted while writing the target (killed, or its INSERT OVERWRITE failing) can leave the
  table without the rows it was rewriting: Spark deletes a table without partitions before it
  writes it again, and swaps partitions one at a time. Those rows are then still in the run's work
  table, marked complete before the target was touched. The next run of the model, before anything
  reads the target, finishes that write: the partitions the run was emptying are dropped and the
  same INSERT OVERWRITE runs from the work table, which leaves the table as the interrupted run
  would have. A work table not marked complete (the run stopped before touching the target) is
  dropped. A rebuild (--full-refresh, or a view there) leaves every leftover where it is until
  the new table is written (rebuild_target, drop_leftover_work_tables): a rebuild refused on the
  way (a bad SELECT) must not lose the rows an unfinished write holds.
  A work table is the run's own only when it carries the package's mark (the table property
  dbt_merge.work_for, naming the table it was made for): a table of the user's whose name merely
  looks like one is never read, finished or dropped.
  `existing` is the target as dbt found it (none on a first run). A dry run writes nothing: it
  leaves leftovers where they are, and refuses when a write is unfinished (its counts would be of
  a table missing the rows that write holds).
-#}
{% macro finish_interrupted_write(existing, dry_run=false, storage=none) %}
  {{ return(adapter.dispatch('finish_interrupted_write', 'dbt_merge')(existing, dry_run, storage)) }}
{% endmacro %}

{# Other engines write in one transaction or commit: there is never a write to finish. #}
{% macro default__finish_interrupted_write(existing, dry_run, storage=none) %}
{% endmacro %}

{#- Spark. `storage`: table_storage(existing) when the run read it already. A table the merge
    writes with MERGE INTO (Iceberg, Delta) has no write to finish (it commits once), so its
    leftovers are not looked for on every run (one statement): the copies of a non-deterministic
    SELECT a failed run left are dropped by the next run that makes one (stage_select), and a
    table rebuilt from a parquet one drops its leftovers once it is built (rebuild_target). -#}
{% macro spark__finish_interrupted_write(existing, dry_run, storage=none) %}
  {% if existing is none or existing.is_view or should_full_refresh() %}
    {#- nothing to finish: the table is built anew, and its leftovers dropped once it is -#}
    {{ return(none) }}
  {% endif %}
  {% if storage and storage.write == 'merge' %}
    {{ return(none) }}
  {% endif %}
  {% set leftovers = dbt_merge.leftover_work_tables(existing) %}
  {% if not leftovers %}
    {{ return(none) }}
  {% endif %}
  {% set storage = storage or dbt_merge.table_storage(existing) %}
  {% set unfinished = leftovers | selectattr('ready') | list if storage.write == 'overwrite' else [] %}
  {% if dry_run %}
    {% if unfinished %}
      {{ dbt_merge.raise_merge_error("a run that rewrote " ~ existing ~ " was interrupted before it finished (its rows "
          ~ "are in " ~ unfinished[0].relation ~ "): a dry run would count a table missing them. Run once "
          ~ "without dry_run: it finishes that write first. Nothing was written.") }}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {#- oldest first: each finished write is the state the next one started from -#}
  {% for work in unfinished | sort(attribute='ready') %}
    {% do log('dbt_merge ' ~ model.name ~ ': a run started at ' ~ work.ready ~ ' was interrupted while it '
        ~ 'rewrote ' ~ existing ~ '; finishing its write from ' ~ work.relation ~ ' first.', info=true) %}
    {% if work.emptied %}
      {% do dbt_merge.run_statement('alter table ' ~ existing ~ ' drop if exists ' ~ work.emptied | join(', '),
          'dbt_merge_drop_partitions') %}
    {% endif %}
    {% do dbt_merge.overwrite_from_work_table(existing, storage, work.relation) %}
  {% endfor %}
  {% for work in leftovers %}
    {% do dbt_merge.run_statement('drop table if exists ' ~ work.relation, 'dbt_merge_leftovers') %}
  {% endfor %}
{% endmacro %}

{#- After a rebuild of `existing` (the relation found before it): the work tables earlier runs
    left for it dropped, unfinished writes too (the new table replaces what they would have
    written). Not on a dry run, which writes nothing. -#}
{% macro drop_leftover_work_tables(existing) %}
  {{ return(adapter.dispatch('drop_leftover_work_tables', 'dbt_merge')(existing)) }}
{% endmacro %}

{% macro default__drop_leftover_work_tables(existing) %}
{% endmacro %}

{% macro spark__drop_leftover_work_tables(existing) %}
  {% if existing is none %}
    {{ return(none) }}
  {% endif %}
  {% for work in dbt_merge.leftover_work_tables(existing) %}
    {% do dbt_merge.run_statement('drop table if exists ' ~ work.relation, 'dbt_merge_leftovers') %}
  {% endfor %}
{% endmacro %}

{#- The work tables earlier runs left for `existing` and marked as the package's: [{relation,
    ready (when the write was marked complete, or none), emptied (partition specs)}]. -#}
{% macro leftover_work_tables(existing) %}
  {#- `like` takes a regular expression with * for .*: other characters of the name become *,
      and | separates patterns; the names are matched exactly here. Also dropped: the copies of a non-deterministic
      SELECT (stage_select, <model>__dbt_merge_s_*) that a failed run left. -#}
  {% set prefix = existing.identifier ~ '__dbt_merge_w_' %}
  {% set copy_prefix = existing.identifier ~ '__dbt_merge_s_' %}
  {% set pattern = modules.re.sub('[^A-Za-z0-9_]', '*', prefix) ~ '*|'
                   ~ modules.re.sub('[^A-Za-z0-9_]', '*', copy_prefix) ~ '*' %}
  {% set leftovers = [] %}
  {% for row in dbt_merge.run_sql('show tables in ' ~ dbt_merge.quote_identifier(existing.schema) ~ " like '" ~ pattern ~ "'",
                                   'dbt_merge_leftovers').rows %}
    {% set name = row[1] | lower %}
    {% set copy = name != copy_prefix | lower and name.startswith(copy_prefix | lower) %}
    {% set rewrite = name != prefix | lower and name.startswith(prefix | lower) %}
    {% if not row[2] and (copy or rewrite) %}
      {% set work = existing.incorporate(path={'identifier': row[1]}) %}
      {% set marks = dbt_merge.work_table_marks(work) %}
      {% if (marks.get('dbt_merge.work_for') or '') | lower == existing.identifier | lower %}
        {% set ready = marks.get('dbt_merge.ready') or '' %}
        {% do leftovers.append({'relation': work,
                                'ready': ready if rewrite and modules.re.match('[0-9]{4}-[0-9]{2}-[0-9]{2}T', ready) else none,
                                'emptied': fromjson(marks.get("dbt_merge.emptied") or "[]")}) %}
      {% endif %}
    {% endif %}
  {% endfor %}
  {{ return(leftovers) }}
{% endmacro %}

{#- The package's table properties of a work table ({name: value} of those starting with
    dbt_merge.): its mark and state. -#}
{% macro work_table_marks(relation) %}
  {% set marks = {} %}
  {% for row in dbt_merge.run_sql('show tblproperties ' ~ relation, 'dbt_merge_leftovers').rows
      if (row[0] or '').startswith('dbt_merge.') %}
    {% do marks.update({row[0]: row[1] | string}) %}
  {% endfor %}
  {{ return(marks) }}
{% endmacro %}

{#- `tblproperties (...)` marking a work table the run creates as the package's, made for `target`
    (finish_interrupted_write recognises its own work tables by it, never by their names). -#}
{% macro work_table_properties(target) %}
  {{ return("tblproperties ('dbt_merge.work_for' = " ~ dbt_merge.sql_string(target.identifier) ~ ")") }}
{% endmacro %}
