{#- Write the classified changes (plan.changes) to the target. `counts` lets engines skip no-op
    statements. Deletes are soft (an UPDATE of soft_delete_column) when configured. -#}
{% macro apply_changes(plan, counts) %}
  {% set writer = dbt_merge.target_writer() %}
  {% if writer is not none %}
    {#- a target the front end writes itself (target_writer.sql) -#}
    {{ return(writer.apply(plan, counts, dbt_merge.writer_spec(plan))) }}
  {% endif %}
  {{ return(adapter.dispatch('apply_changes', 'dbt_merge')(plan, counts)) }}
{% endmacro %}

{#- Delete the rows being replaced or removed, then insert the new row images, in the model's
    transaction. On DuckDB 2.0 this measured faster than MERGE INTO (see BENCHMARKS.md). -#}
{% macro default__apply_changes(plan, counts) %}
  {#- Only target rows the merge considers: a row of the same key outside incremental_predicates
      (kept by on_key_outside_predicates='insert') is not the one being replaced. Updated rows
      are deleted and inserted again, or updated in place (plan.update_in_place). -#}
  {% set in_place = plan.update_in_place %}
  {% set removed = ([] if in_place else ['U']) + ([] if plan.soft_delete else ['D', 'C']) %}
  {% if (0 if in_place else counts.updated) + (0 if plan.soft_delete else counts.deleted) > 0 %}
    {% do dbt_merge.run_statement('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
        ~ dbt_merge.target_rows_condition(plan, false) ~ ' and '
        ~ dbt_merge.in_changes(plan, removed, 'DBT_INTERNAL_DEST'), 'dbt_merge_delete') %}
  {% endif %}
  {% if plan.soft_delete and counts.deleted > 0 %}
    {% do dbt_merge.run_statement(dbt_merge._soft_delete_sql(plan,
        dbt_merge.in_changes(plan, ['D', 'C'], 'DBT_INTERNAL_DEST')), 'dbt_merge_soft_delete') %}
  {% endif %}
  {% set action = dbt_merge.quote_identifier(plan.names.action) %}
  {% if in_place and counts.updated > 0 %}
    {% do dbt_merge.run_statement(dbt_merge._update_in_place_sql(plan,
        'select * from ' ~ plan.changes ~ ' where ' ~ action ~ " = 'U'")) %}
  {% endif %}
  {#- A new row gets the target's own value (its DEFAULT: a sequence, a load time) in a column the
      SELECT lacks, as an INSERT that leaves the column out gives it; a row written again after
      its delete keeps its values. So the new rows leave those columns out, when there are any. -#}
  {% set sourced = dbt_merge.written_columns(plan) | select('in', plan.write_names) | list %}
  {% set again = [] if in_place else ['U'] %}
  {% set groups = [(plan.write_names, ['I'] + again)] %}
  {% if sourced | length < plan.write_names | length %}
    {% set groups = [(sourced, ['I']), (plan.write_names, again)] %}
  {% endif %}
  {% for names, actions in groups %}
    {% set rows = (counts.inserted if 'I' in actions else 0) + (counts.updated if 'U' in actions else 0) %}
    {% if rows > 0 %}
      {% set columns = dbt_merge.column_list(names) %}
      {% do dbt_merge.run_statement(
          'insert into ' ~ plan.target ~ ' (' ~ columns ~ ') select ' ~ columns ~ ' from ' ~ plan.changes
          ~ ' where ' ~ action ~ " in ('" ~ actions | join("', '") ~ "')", 'dbt_merge_insert') %}
    {% endif %}
  {% endfor %}
{% endmacro %}

{#- UPDATE of the target rows (aliased DBT_INTERNAL_DEST) the merge considers whose key is in
    `rows_sql` (a SELECT with the key and update columns, named as in the target): their update
    columns from those rows. For targets whose rows cannot be deleted and inserted again. -#}
{% macro _update_in_place_sql(plan, rows_sql) %}
  {%- set assignments = [] -%}
  {%- for col in plan.update_columns -%}
    {%- set q = dbt_merge.quote_identifier(col) -%}
    {%- do assignments.append(q ~ ' = DBT_INTERNAL_SOURCE.' ~ q) -%}
  {%- endfor -%}
  {{ return('update ' ~ plan.target ~ ' as DBT_INTERNAL_DEST set ' ~ assignments | join(', ')
      ~ ' from (' ~ rows_sql ~ ') as DBT_INTERNAL_SOURCE where ' ~ dbt_merge.target_rows_condition(plan, false)
      ~ ' and ' ~ dbt_merge.key_match(plan.key_columns, 'DBT_INTERNAL_SOURCE', 'DBT_INTERNAL_DEST', plan.compare)) }}
{% endmacro %}

{#- DuckDB: full_merge's target rows missing from the source are not in the wide changes (see
    duckdb__classify_changes_sql): remove them by an anti-join on the key, then apply the rest.
    With the narrow changes, delete the target rows being replaced or removed and insert the
    source rows to write. -#}
{% macro duckdb__apply_changes(plan, counts) %}
  {% set full = plan.actions.target_only == 'delete' %}
  {% if plan.writes_source_rows %}
    {% set in_place = plan.update_in_place %}
    {% set replaced = (0 if in_place else counts.updated) + (0 if plan.soft_delete else counts.deleted) %}
    {% if replaced > 0 %}
      {% do dbt_merge.run_statement('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
          ~ dbt_merge._replaced_target_rows_condition(plan, counts), 'dbt_merge_delete') %}
    {% endif %}
    {% if plan.soft_delete and counts.deleted > 0 %}
      {% set soft = dbt_merge.in_changes(plan, ['C'], 'DBT_INTERNAL_DEST') %}
      {% if full %}
        {% set soft = '(' ~ soft ~ ' or not ' ~ dbt_merge.exists_match(plan.deduped or plan.stage,
            plan.key_columns, 'DBT_INTERNAL_DEST', compare=plan.compare) ~ ')' %}
      {% endif %}
      {% do dbt_merge.run_statement(dbt_merge._soft_delete_sql(plan, soft), 'dbt_merge_soft_delete') %}
    {% endif %}
    {% if in_place and counts.updated > 0 %}
      {% do dbt_merge.run_statement(dbt_merge._update_in_place_sql(plan, dbt_merge.source_rows_sql(plan, 'updated'))) %}
    {% endif %}
    {% if counts.inserted + (0 if in_place else counts.updated) > 0 %}
      {% do dbt_merge.run_statement(dbt_merge._insert_source_rows_sql(plan, counts), 'dbt_merge_insert') %}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {% if full and counts.unmatched > 0 %}
    {% if plan.soft_delete %}
      {% do dbt_merge.run_statement(dbt_merge._soft_delete_sql(plan, dbt_merge.target_rows_condition(plan, true)),
                                    'dbt_merge_soft_delete') %}
    {% else %}
      {% do dbt_merge.run_statement('delete from ' ~ plan.target ~ ' as DBT_INTERNAL_DEST where '
          ~ dbt_merge.target_rows_condition(plan, true), 'dbt_merge_delete') %}
    {% endif %}
  {% endif %}
  {% set rest = {} %}
  {% do rest.update(counts) %}
  {% do rest.update({'deleted': counts.condition_deletes}) %}
  {% do dbt_merge.default__apply_changes(plan, rest) %}
{% endmacro %}

{#- Spark: one MERGE INTO, which Iceberg and Delta commit atomically as one snapshot. Rows left
    unchanged are not in its source (except for full_merge, where they must match to be kept), so
    files holding only unchanged rows are not rewritten. A full_merge that rewrites most of the
    table replaces it instead, also in one commit (choose_full_merge_write, replace_target).
    Tables without MERGE INTO (parquet, orc, Hive), judged by the table that exists, not the
    config: see overwrite_partitions. How the table is stored was read before the run
    (check_table_format, plan.target_storage), and is read again only when the run changed its
    columns. An Iceberg table whose write.merge.isolation-level is not `serializable` gets the
    MERGE into the run's branch, published only while main is still the snapshot counted
    (publishes_on_branch). -#}
{% macro spark__apply_changes(plan, counts) %}
  {% if counts.inserted + counts.updated + counts.deleted > 0 %}
    {% set altered = dbt_merge.schema_changes_any(plan.schema) %}
    {% set storage = plan.target_storage if plan.target_storage and not altered else dbt_merge.table_storage(plan.target) %}
    {% if storage.write == 'overwrite' %}
      {% do dbt_merge.overwrite_partitions(plan, counts, storage) %}
    {% elif dbt_merge.choose_full_merge_write(plan, counts, storage) == 'overwrite' %}
      {% do dbt_merge.replace_target(plan, counts, storage) %}
    {% elif dbt_merge.publishes_on_branch(plan, storage) %}
      {#- a table that does not validate a MERGE against other writers' appends: written into the
          run's branch, published only while main is still the snapshot counted -#}
      {% set branch = dbt_merge.run_branch_name(plan) %}
      {% do dbt_merge.write_on_branch(plan, plan.snapshot, branch,
                                       dbt_merge._passes_merge_sql(dbt_merge.on_branch_plan(plan, branch), counts, storage), 'MERGE') %}
    {% else %}
      {% do dbt_merge.run_statement(dbt_merge._passes_merge_sql(plan, counts, storage), 'dbt_merge_merge') %}
    {% endif %}
  {% endif %}
{% endmacro %}

{#- Spark: the passes' MERGE of `plan` (into plan.target, which may be the run's branch). -#}
{% macro _passes_merge_sql(plan, counts, storage) %}
  {{ return(dbt_merge.merge_source_rows_sql(plan, counts, dbt_merge._rewrites_every_file(plan, storage, counts))
            if plan.writes_source_rows else dbt_merge.merge_into_sql(plan)) }}
{% endmacro %}

{#- Spark: whether a MERGE into this copy-on-write Iceberg table will rewrite every data file anyway,
    because the source matches at least 90% of the target's rows (a snapshot of the table). Such
    a MERGE is better without the runtime filter that first joins source and target to find the
    files holding a matched row: merge_source_rows_sql then gives it a WHEN NOT MATCHED BY
    SOURCE clause that never applies, which makes Spark plan one full outer join instead of two
    joins. Measured on a 2M-row snapshot (issue 22, local[2], idle machine, benchmarks.floor):
    see docs/spark.md. Below 90% a table whose rows are clustered by key may hold files without
    a matched row, which the filter spares. -#}
{% macro _rewrites_every_file(plan, storage, counts) %}
  {% set target_rows = counts.total - counts.inserted + (0 if plan.soft_delete else counts.deleted) %}
  {{ return(dbt_merge.matches_every_file(storage, counts.matched_keys, target_rows)) }}
{% endmacro %}

{#- The rule of _rewrites_every_file: `matched` source keys (or, before the write, the SELECT's
    rows) against the copy-on-write Iceberg table's `target_rows`. -#}
{% macro matches_every_file(storage, matched, target_rows) %}
  {{ return(storage.provider == 'iceberg' and not storage.merge_on_read
            and target_rows > 0 and matched >= 0.9 * target_rows) }}
{% endmacro %}

{#- UPDATE that soft-deletes the live target rows (aliased DBT_INTERNAL_DEST) the merge considers
    and `condition` selects: soft_delete_column true, its timestamp column now. -#}
{% macro _soft_delete_sql(plan, condition) %}
  {{ return('update ' ~ plan.target ~ ' as DBT_INTERNAL_DEST set ' ~ dbt_merge.soft_delete_assignments(plan, false)
      ~ ' where ' ~ dbt_merge.target_rows_condition(plan, false) ~ ' and ' ~ dbt_merge.live(plan)
      ~ ' and ' ~ condition) }}
{% endmacro %}

{#- `col = true[, ts = current_timestamp]`, target columns (qualified with DBT_INTERNAL_DEST when
    `qualified`, as MERGE's SET clause takes them). -#}
{% macro soft_delete_assignments(plan, qualified) %}
  {%- set prefix = 'DBT_INTERNAL_DEST.' if qualified else '' -%}
  {%- set parts = [prefix ~ dbt_merge.quote_identifier(dbt_merge.find_column(plan.soft_delete.column, plan.target_names)) ~ ' = true'] -%}
  {%- if plan.soft_delete.timestamp_column -%}
    {%- set stamp_name = dbt_merge.find_column(plan.soft_delete.timestamp_column, plan.target_names) -%}
    {%- set found = dbt_merge.column_named(stamp_name, plan.schema.target_columns if plan.schema else none) -%}
    {%- set dtype = (found.dtype | string | lower) if found is not none else '' -%}
    {#- a column with a time zone takes the instant itself: through TIMESTAMP (the wall clock
        of the session's zone) a TIMETZ was stamped with that clock labelled +00 (red team
        helper-49); a TIMESTAMPTZ one reads the same either way -#}
    {%- set now = 'current_timestamp' if ('time zone' in dtype or dtype in ['timestamptz', 'timetz']) and adapter.type() == 'duckdb'
                  else 'cast(current_timestamp as timestamp)' -%}
    {%- do parts.append(prefix ~ dbt_merge.quote_identifier(stamp_name) ~ ' = ' ~ now) -%}
  {%- endif -%}
  {{ return(parts | join(', ')) }}
{% endmacro %}

{#- With the narrow changes (plan.writes_source_rows): WHERE condition on the target, aliased
    DBT_INTERNAL_DEST, of the rows to delete: the updated ones, those delete_condition deletes,
    and for full_merge every target row the merge considers except the matched ones left as
    they are (with soft deletes: only the updated ones, which are written again). -#}
{% macro _replaced_target_rows_condition(plan, counts) %}
  {%- set condition = dbt_merge.target_rows_condition(plan, false) -%}
  {%- set match = dbt_merge.replaced_rows_match(plan, counts, 'DBT_INTERNAL_DEST') -%}
  {{ return(condition ~ (' and ' ~ match if match else '')) }}
{% endmacro %}

{#- With the narrow changes: which considered target rows (aliased `alias`) the merge replaces or
    removes, as a condition on the changes, or none for every one of them: the updated ones (and
    with soft deletes only those, the deleted ones stay), those delete_condition deletes, and for
    full_merge all but the matched ones left as they are. Shared by the DuckDB delete and the
    Spark overwrite of parquet tables and whole tables (_removed_rows_condition). -#}
{% macro replaced_rows_match(plan, counts, alias) %}
  {#- updated in place (plan.update_in_place, DuckDB): not deleted -#}
  {%- set updated = [] if plan.update_in_place else ['U'] -%}
  {%- if plan.soft_delete -%}
    {{ return(dbt_merge.in_changes(plan, updated, alias) if updated else 'false') }}
  {%- elif plan.actions.target_only != 'delete' -%}
    {{ return(dbt_merge.in_changes(plan, updated + ['C'], alias)) }}
  {%- endif -%}
  {%- set kept = (['N', 'H'] if counts.unchanged + (counts.held_back or 0) > 0 else [])
                 + ([] if updated or counts.updated == 0 else ['U']) -%}
  {%- if kept -%}
    {{ return('not ' ~ dbt_merge.in_changes(plan, kept, alias)) }}
  {%- endif -%}
  {{ return(none) }}
{% endmacro %}

{#- With the narrow changes: SELECT of the staged source rows to write, as the target's columns
    that the source has (named as in the target), aliased DBT_INTERNAL_SOURCE; not the rows
    delete_condition marks, unless keep_deleted (for a MERGE, whose conditions then see every
    column of the SELECT). `only`:
      none         every source row
      'changed'    all but the matched ones left as they are ('N', 'H', 'K')
      'updated'    only the 'U' ones
      'written'    only the 'I' and 'U' ones (changes of every source row, DuckDB)
      'inserted'   all but the matched ones ('N', 'H', 'K', 'U'): the updated rows are updated in
                   place (plan.update_in_place) -#}
{% macro source_rows_sql(plan, only=none, keep_deleted=false) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set select_list = [] -%}
  {%- set written = dbt_merge.written_columns(plan) -%}
  {%- for col in written -%}
    {%- do select_list.append(src ~ '.' ~ dbt_merge.quote_identifier(dbt_merge.find_column(col, plan.source_names))
          ~ ' as ' ~ dbt_merge.quote_identifier(col)) -%}
  {%- endfor -%}
  {%- if keep_deleted -%}
    {#- the MERGE's conditions may name any column of the SELECT -#}
    {%- for col in plan.source_names if dbt_merge.find_column(col, written) is none -%}
      {%- do select_list.append(src ~ '.' ~ dbt_merge.quote_identifier(col)) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set filters = ['not ' ~ dbt_merge.delete_flag(plan)] if plan.delete_condition and not keep_deleted else [] -%}
  {%- if only == 'updated' -%}
    {%- do filters.append(dbt_merge.in_changes(plan, ['U'], src)) -%}
  {%- elif only == 'written' -%}
    {%- do filters.append(dbt_merge.in_changes(plan, ['I', 'U'], src)) -%}
  {%- elif only == 'changed' -%}
    {%- do filters.append('not ' ~ dbt_merge.in_changes(plan, ['N', 'H', 'K'], src)) -%}
  {%- elif only == 'inserted' -%}
    {%- do filters.append('not ' ~ dbt_merge.in_changes(plan, ['N', 'H', 'K', 'U'], src)) -%}
  {%- endif -%}
  {{ return('select ' ~ select_list | join(', ') ~ ' from ' ~ (plan.deduped or plan.stage) ~ ' as ' ~ src
            ~ (' where ' ~ filters | join(' and ') if filters else '')) }}
{% endmacro %}

{#- `exists (...)`: the row aliased `alias` has a key the changes list with one of `actions`. -#}
{% macro in_changes(plan, actions, alias) %}
  {%- set quoted = [] -%}
  {%- for a in actions -%}{%- do quoted.append("'" ~ a ~ "'") -%}{%- endfor -%}
  {{ return(dbt_merge.exists_match(plan.changes, plan.key_columns, alias,
      dbt_merge.quote_identifier(plan.names.action) ~ ' in (' ~ quoted | join(', ') ~ ')', compare=plan.compare)) }}
{% endmacro %}

{#- The target's columns that the source has: those a source row fills. -#}
{% macro written_columns(plan) %}
  {%- set columns = [] -%}
  {%- for col in plan.target_names -%}
    {%- if dbt_merge.find_column(col, plan.source_names) is not none -%}
      {%- do columns.append(col) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(columns) }}
{% endmacro %}

{#- INSERT of the source rows to write ('I' and 'U') into the target (DuckDB). All of them when no
    matched row is left as it is; otherwise, when the changes list every source row, a semi-join
    on the rows to write or an anti-join on the rows left, whichever side is smaller: on a
    10M-row snapshot with 1% changed, the anti-join on the 9.9M unchanged keys took 0.94 s. -#}
{% macro _insert_source_rows_sql(plan, counts) %}
  {%- set kept = counts.unchanged + (counts.held_back or 0) -%}
  {%- if plan.update_in_place -%}
    {%- set only = 'inserted' -%}
  {%- elif plan.actions.source_only != 'insert' -%}
    {%- set only = 'updated' -%}
  {%- elif kept == 0 -%}
    {%- set only = none -%}
  {%- elif plan.every_source_row and counts.inserted + counts.updated <= kept -%}
    {%- set only = 'written' -%}
  {%- else -%}
    {%- set only = 'changed' -%}
  {%- endif -%}
  {{ return('insert into ' ~ plan.target ~ ' (' ~ dbt_merge.column_list(dbt_merge.written_columns(plan)) ~ ') '
      ~ dbt_merge.source_rows_sql(plan, only)) }}
{% endmacro %}
