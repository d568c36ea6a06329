{#-
  Write once, count from the commit (Spark, Iceberg merge-on-read tables and tables of format
  version 3). A merge that qualifies (commit_counts_applies) is not classified and counted before
  it writes: after the source check (keys present and unique, the source's rows counted), one
  MERGE skipping unchanged rows writes into a branch of the run made at the table's current
  snapshot; the statistics are read from that commit; then main is fast-forwarded to it (only if
  main is still the snapshot the branch started from: another writer's commit refuses the run)
  and the branch is dropped. Readers and main see nothing until the fast-forward; on any refusal
  after the write the branch is dropped and main was never touched.

  Counts from the commit (the source's keys unique and every target key held once, so a source
  row matches at most one target row):
    merge-on-read, format 2 (upsert, insert): the commit's new position deletes are the updated
      rows (added-position-deletes less removed-position-deletes: a file-scoped delete file is
      rewritten with the positions it held), inserted = added-records - updated; the total is the
      rows before (below) plus inserted. Deletes (full_merge) would be position deletes too, and cannot be told
      from updates: such merges keep the passes.
    format 3 (copy-on-write and merge-on-read): the data files the commit added carry row
      lineage: a new row has no _row_id (its null count is the inserted rows), a written row no
      _last_updated_sequence_number (its null count less the inserted rows is the updated ones);
      the live rows are total-records less total-position-deletes of a snapshot (deletion
      vectors go with their data file), so deleted = live before + inserted - live after.
    An append (only new rows) carries no lineage columns: every added row is inserted.
    unchanged = the source's rows (the check's count) - inserted - updated (insert: - inserted).
  A target key held twice cannot be seen in a commit: the run reads the table's keys through its
  branch (the snapshot's rows, the table's current schema: what the MERGE reads), and takes the
  path only if every key is present and held once. After publishing it records that in the table
  property dbt_merge.keys-verified (keys_record: the snapshot, the format version, the key
  names and their Iceberg field ids (_key_fields_sql), the live rows, and a seal over them and
  the snapshot's manifest list). A later run whose table is still at that snapshot, format and
  key skips the read, and keeps the record's word only if the table's state read after its MERGE
  has the same field ids for the keys and that seal; otherwise (a rename, a record written by
  hand or copied) its branch is dropped and the passes count. A table holding a key twice or a
  NULL key takes the passes (count_changes), which refuse exactly the keys of the SELECT.

  What the MERGE wrote is read from the table reloaded after it (`refresh table`, then refs and
  snapshots in one query), never from a cached table, which another thread's refresh may have
  loaded before the commit: the run's branch must hold one new commit whose parent is the
  snapshot it started from (every MERGE commits, also one that changes nothing), and, from the
  Python door, carrying the call's own mark. Anything else refuses the run, nothing published.
  Each run's branch is its own (dbt_merge_<UTC time>_<id>); a run drops another's only when its
  name says it is more than a day old (drop_dead_branches).
  Returns the statistics (with snapshot_id: the snapshot published, none when nothing changed),
  or none (nothing written, no branch left) when the merge must take the passes instead.
-#}
{% macro merge_on_branch(plan) %}
  {{ return(adapter.dispatch('merge_on_branch', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__merge_on_branch(plan) %}
  {{ return(none) }}
{% endmacro %}

{% macro spark__merge_on_branch(plan) %}
  {% set storage = plan.target_storage %}
  {% set kind = dbt_merge.commit_counts_kind(storage) %}
  {#- one statement for what the table says of itself: its snapshot, its format, the package's
      record of its keys, whether it stages writes (WAP) -#}
  {% set properties = {} %}
  {% set listed = plan.get('target_properties') is not none
        and modules.re.match('^-?[0-9]+$', plan.target_properties.get('current-snapshot-id') or '') %}
  {% if listed %}
    {#- as read with the table's columns once the run reloaded it (described_target) -#}
    {% do properties.update(plan.target_properties) %}
  {% else %}
    {% do properties.update(dbt_merge.table_properties(plan.target)) %}
  {% endif %}
  {% set pinned = properties.get('current-snapshot-id') %}
  {% if not pinned or not modules.re.match('^-?[0-9]+$', pinned) %}
    {{ return(none) }}
  {% endif %}
  {% set staging = dbt_merge.table_wap_settings(plan, {'properties': properties, 'exact': not listed}) %}
  {% if staging %}
    {#- Iceberg would stage the branch's commit (spark.wap.id) or refuse it (spark.wap.branch):
        the passes write the merge as the session asks (staged), counted before they write -#}
    {% do log('dbt_merge ' ~ model.name ~ ': ' ~ plan.target ~ ' has write.wap.enabled and the session sets '
        ~ staging | join(', ') ~ ' (write-audit-publish): merged without a branch of the run, its changes '
        ~ 'counted before the write.', info=true) %}
    {{ return(none) }}
  {% endif %}
  {% set version = properties.get('format-version') or '' %}
  {% set keys = dbt_merge.keys_signature(plan.key_columns) %}
  {% set record = dbt_merge.parse_keys_record(properties.get('dbt_merge.keys-verified') or '') %}
  {#- the record names this snapshot, format and key: taken as it says until the table's state,
      read after the MERGE, proves it (the keys' field ids and its seal); else the keys are read -#}
  {% set claimed = record is not none and record.snapshot == pinned and record.format == version and record.columns == keys %}
  {#- a v3 table's snapshot: its live rows, and whether every data file carries row lineage -#}
  {% set before = dbt_merge._read_snapshot(plan, pinned) if kind == 'v3' else {} %}
  {% set refusal = none %}
  {% if before is none %}
    {% set refusal = 'the snapshot ' ~ pinned ~ ' it started from is gone' %}
  {% elif kind == 'v3' and before.live is none %}
    {#- equality deletes (another engine's): the live rows are known only to a scan -#}
    {% set refusal = '' %}
  {% elif kind == 'v3' and before.lineage_missing > 0 %}
    {% set refusal = before.lineage_missing ~ ' of its files have no row lineage or are position deletes of a whole '
        ~ 'partition (written before the table became format version 3), so its commit cannot be counted exactly' %}
  {% elif plan.strategy == 'full_merge' and plan.full_merge_write != 'merge'
          and (plan.source_rows | int) * 2 < (record.rows if claimed else before.live) %}
    {#- (full_merge: v3 only) a full_merge whose SELECT has fewer than half the table's rows
        deletes at least half of them: the passes write it as one INSERT OVERWRITE of the merged
        rows (full_merge_write 'auto'), cheaper than a MERGE that rewrites every file (a 200k
        SELECT into 2M rows: 2.2 s against 3.1 s). full_merge_write='merge' stays here. -#}
    {% set refusal = '' %}
  {% endif %}
  {% if refusal is not none %}
    {% if refusal %}
      {% do log('dbt_merge ' ~ model.name ~ ': ' ~ plan.target ~ ': ' ~ refusal ~ '; counting the merge by its passes '
          ~ 'instead.', info=true) %}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {% set branch = dbt_merge.run_branch_name(plan) %}
  {% do dbt_merge.iceberg_branch(plan.target, 'create', branch, pinned) %}
  {% set read = none if claimed else dbt_merge._read_keys(plan, branch) %}
  {% if not claimed and not read.unique %}
    {#- a key held twice or a NULL key: the passes refuse exactly the keys of the SELECT -#}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {{ return(none) }}
  {% endif %}
  {% set rows = record.rows if claimed else read.rows %}
  {% do dbt_merge.run_statement(dbt_merge._merge_on_branch_sql(dbt_merge.on_branch_plan(plan, branch), rows),
                                'dbt_merge_merge') %}

  {#- what the MERGE wrote, from the table reloaded (never a cached table another thread may have
      loaded before the commit): the run's own branch must hold one new commit on the snapshot
      it was made at; anything else refuses the run, nothing published -#}
  {% do dbt_merge.run_statement('refresh table ' ~ plan.target, 'dbt_merge_describe') %}
  {% set state = dbt_merge._branch_state(plan, branch, pinned) %}
  {% set head = state.refs.get(branch) %}
  {% set mark = dbt_merge_branches.mark if dbt_merge_branches is defined else none %}
  {% if head is none or head.snapshot == pinned or head.parent != pinned or (mark is not none and head.mark != mark) %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {{ dbt_merge.raise_merge_error(dbt_merge._unproven_commit_message(plan, branch, pinned, head)) }}
  {% endif %}
  {#- the keys as verified: the record, when the key columns are still the fields it names and
      its seal is the table's; else the keys read this run, when their columns are still the
      fields they were read under (unknown ids: the run's own read stands, no record) -#}
  {% set pinned_state = state.refs.get('') %}
  {% if claimed %}
    {% set proven = pinned_state is not none and record.fields == state.fields
                    and record.seal == dbt_merge.keys_record_seal(pinned, version, keys, record.fields, record.rows, pinned_state.manifest_list) %}
  {% else %}
    {% set proven = read.fields is none or state.fields is none or read.fields == state.fields %}
  {% endif %}
  {% if not proven %}
    {% do log('dbt_merge ' ~ model.name ~ ': ' ~ plan.target ~ ': ' ~ ('its record of verified keys (dbt_merge.keys-verified) '
        ~ 'is not the table\'s (its key columns are other fields now, or it was not written by this package for this table)'
        if claimed else 'its key columns became other fields while the run read them') ~ '; counting the merge by its '
        ~ 'passes instead.', info=true) %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {% if claimed %}
      {% do dbt_merge._set_marks(plan, {'dbt_merge.keys-verified': ''}) %}
    {% endif %}
    {{ return(none) }}
  {% endif %}
  {% set written = dbt_merge._commit_written(plan, kind, head, before, rows) %}
  {% set source_rows = plan.source_rows | int %}
  {% set sane = written is not none and written.inserted >= 0 and written.updated >= 0 and written.deleted >= 0
                and source_rows - written.inserted - written.updated >= 0 and written.total >= 0 %}
  {% if not sane %}
    {#- a commit without the row-lineage counts (column metrics off), or counts no merge of
        these rows could have: never reported; the branch is dropped and the passes count -#}
    {% if written is not none %}
      {% do log('dbt_merge ' ~ model.name ~ ': the commit of ' ~ plan.target ~ ' did not give counts this merge can '
          ~ 'have (' ~ written ~ ' for ' ~ source_rows ~ ' rows of the SELECT); counting it by its passes instead.',
          info=true) %}
    {% endif %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {{ return(none) }}
  {% endif %}
  {% set inserted, updated, deleted = written.inserted, written.updated, written.deleted %}
  {% set matched = source_rows - inserted %}
  {% set counts = {'inserted': inserted, 'updated': updated, 'deleted': deleted,
                   'unchanged': matched - updated, 'total': written.total, 'held_back': 0,
                   'condition_deletes': 0, 'matched_rows': matched, 'matched_keys': matched,
                   'considered': rows} %}
  {% if plan.actions.target_only == 'delete' and deleted > 0 and deleted > plan.max_delete_fraction * counts.considered %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {% do dbt_merge.check_merge_counts(plan, counts) %}
  {% endif %}
  {% do dbt_merge.drop_dead_branches(plan, state.refs, branch) %}
  {% if inserted + updated + deleted == 0 %}
    {#- nothing changed: main keeps its snapshot (no empty commit) -#}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {% set published, verified = none, pinned_state %}
  {% else %}
    {% set moved = state.refs.get('main') is none or state.refs.main.snapshot != pinned %}
    {% if not moved %}
      {#- Iceberg's fast-forward refuses, atomically, a main that is no longer an ancestor of the
          branch; the Python door reports that ('moved'), SQL fails the statement -#}
      {% set moved = dbt_merge.iceberg_branch(plan.target, 'fast_forward', branch, pinned, head.snapshot) == 'moved' %}
    {% endif %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {% if moved %}
      {#- the message names the snapshot the run counted -#}
      {{ dbt_merge.raise_merge_error(dbt_merge.concurrent_commit_message(dbt_merge.copy_with(plan, {'snapshot': pinned}),
                                                                         prefixed=false)) }}
    {% endif %}
    {% set published, verified = head.snapshot, head %}
  {% endif %}
  {#- the snapshot main is at (ours, or the one we started from), its keys verified, its rows
      and what binds the record to it: one metadata commit of the table's properties, no snapshot -#}
  {% set fields = state.fields if claimed or state.fields == read.fields else none %}
  {% set value = dbt_merge.keys_record(verified.snapshot, version, keys, fields, written.total, verified.manifest_list)
                 if verified is not none and fields is not none else '' %}
  {% if value != (properties.get('dbt_merge.keys-verified') or '') %}
    {% do dbt_merge._set_marks(plan, {'dbt_merge.keys-verified': value}) %}
  {% endif %}
  {{ return({'inserted': inserted, 'updated': updated, 'deleted': deleted,
             'unchanged': counts.unchanged, 'total': written.total, 'snapshot_id': published}) }}
{% endmacro %}

{#- The MERGE of the write-once path: every source row, the matched ones written only when they
    changed, into `plan.target` (the run's branch). The table's keys are held once (verified
    before); the source's keys were checked present and storable, and unique by the check for a
    SELECT small enough to broadcast; a larger one's (plan.keys_tested_by_count) are tested here:
    a key repeated in the SELECT fails the statement with the package's message (a window count
    by key, which the MERGE's own join, partitioned by the key, shares), before anything is
    committed. `target_rows`: the table's rows; a SELECT of at least 90% of
    them on a copy-on-write table skips the runtime file filter (matches_every_file). -#}
{% macro _merge_on_branch_sql(plan, target_rows) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set columns = dbt_merge.written_columns(plan) -%}
  {%- set n = dbt_merge.quote_identifier(plan.names.rows) -%}
  {%- set every_file = dbt_merge.matches_every_file(plan.target_storage, plan.source_rows | int, target_rows) -%}
  merge into {{ plan.target }} as {{ dst }}
  using (
  {%- if plan.keys_tested_by_count %}
    select * from (
      select {{ src }}.*, count(*) over (partition by {{ dbt_merge.column_list(plan.key_columns, src) }}) as {{ n }}
      from ({{ dbt_merge.source_rows_sql(plan) }}) as {{ src }}
    ) as {{ src }}
    where case when {{ src }}.{{ n }} > 1 then raise_error({{ dbt_merge._repeated_key_message_sql(plan, src) }}) else true end
  {%- else %}
    {{ dbt_merge.source_rows_sql(plan) }}
  {%- endif %}
  ) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- if not every_file %}{{ dbt_merge.target_key_bounds(plan, dst) }}{% endif %}
  {%- if plan.actions.matched == 'update' and plan.update_columns %}
  when matched and {{ dbt_merge.row_changed_condition(plan) }} then update set
    {%- for col in plan.update_columns %}
    {{ dst }}.{{ dbt_merge.quote_identifier(col) }} = {{ src }}.{{ dbt_merge.quote_identifier(col) }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  when not matched then insert ({{ dbt_merge.column_list(columns) }})
    values ({{ dbt_merge.column_list(columns, src) }})
  {%- if plan.actions.target_only == 'delete' %}
  when not matched by source then delete
  {%- elif every_file and plan.actions.matched == 'update' %}
  when not matched by source and false then delete
  {%- endif %}
{% endmacro %}

{#- The SQL of the message a repeated source key fails the MERGE with (the check's message, the
    key of the row at hand as its example; how many keys repeat is not counted here). -#}
{% macro _repeated_key_message_sql(plan, alias) %}
  {%- set parts = [] -%}
  {%- for key in plan.key_columns -%}
    {%- do parts.append('cast(' ~ alias ~ '.' ~ dbt_merge.quote_identifier(key) ~ ' as string)') -%}
  {%- endfor -%}
  {{ return("concat(" ~ dbt_merge.sql_string(dbt_merge.merge_error_prefix() ~ "unique_key value(s) occur more "
      ~ "than once in the model's SELECT, e.g. (" ~ plan.key_columns | join(', ') ~ ") = (") ~ ", concat_ws(', ', "
      ~ parts | join(', ') ~ "), " ~ dbt_merge.sql_string("). Make the key unique in the SELECT, fix unique_key, or use "
      ~ "strategy='deduplicate' with dedup_order_by to keep one row per key. The target was not changed.") ~ ")") }}
{% endmacro %}

{#- Set the package's own table properties ({key: value}) in one statement (a metadata commit,
    no snapshot). -#}
{% macro _set_marks(plan, marks) %}
  {% set pairs = [] %}
  {% for key, value in marks.items() %}
    {% do pairs.append(dbt_merge.sql_string(key) ~ ' = ' ~ dbt_merge.sql_string(value)) %}
  {% endfor %}
  {% do dbt_merge.run_statement('alter table ' ~ plan.target ~ ' set tblproperties (' ~ pairs | join(', ') ~ ')',
                                'dbt_merge_describe') %}
{% endmacro %}

{#- {inserted, updated, deleted, total} of the branch's commit (`head`: its row of _branch_state),
    or none when the commit does not carry what counting it needs. `before`: _read_snapshot of
    the snapshot the branch started from (v3); `rows`: its live rows, as the keys' read (or the package's
    record) found them. -#}
{% macro _commit_written(plan, kind, head, before, rows) %}
  {% if kind == 'mor' %}
    {#- no deletes on this path: the rows before plus the new -#}
    {% set updated = head.added_deletes - head.removed_deletes %}
    {% set inserted = head.added_records - updated %}
    {{ return({'inserted': inserted, 'updated': updated, 'deleted': 0, 'total': rows + inserted}) }}
  {% endif %}
  {% if head.live is none %}
    {{ return(none) }}
  {% endif %}
  {% if head.operation == 'append' %}
    {#- only new rows (insert, or nothing matched): Iceberg gives them their row ids at the
        commit and writes no lineage columns into the files -#}
    {{ return({'inserted': head.added_records, 'updated': 0, 'deleted': 0, 'total': head.live}) }}
  {% endif %}
  {#- format 3: the row-lineage fields' null counts in the data files the commit added
      (_row_id: 2147483540, _last_updated_sequence_number: 2147483539); every file it read
      carried lineage (_read_snapshot), so a copied row keeps its own -#}
  {% set row = dbt_merge.run_sql("select count(*), count(data_file.null_value_counts[2147483540]), "
      ~ "count(data_file.null_value_counts[2147483539]), coalesce(sum(data_file.null_value_counts[2147483540]), 0), "
      ~ "coalesce(sum(data_file.null_value_counts[2147483539]), 0) from " ~ plan.target ~ ".entries version as of "
      ~ head.snapshot ~ " where snapshot_id = " ~ head.snapshot ~ " and status = 1 and data_file.content = 0",
      'dbt_merge_count').rows[0] %}
  {% if (row[1] | int) != (row[0] | int) or (row[2] | int) != (row[0] | int) %}
    {{ return(none) }}
  {% endif %}
  {% set inserted = row[3] | int %}
  {{ return({'inserted': inserted, 'updated': (row[4] | int) - inserted,
             'deleted': before.live + inserted - head.live, 'total': head.live}) }}
{% endmacro %}

{#- The SQL of a snapshot's summary numbers, as columns: added records, added and removed position
    deletes (deletion vectors counted by their positions), total records, total position and
    equality deletes. `alias`: the snapshots table's. -#}
{% macro _summary_columns_sql(alias) %}
  {%- set parts = [] -%}
  {%- for key in ['added-records', 'added-position-deletes', 'removed-position-deletes', 'total-records',
                  'total-position-deletes', 'total-equality-deletes'] -%}
    {%- do parts.append('cast(' ~ alias ~ ".summary['" ~ key ~ "'] as bigint)") -%}
  {%- endfor -%}
  {{ return(parts | join(', ')) }}
{% endmacro %}

{#- The summary columns of _summary_columns_sql (from `start` in `row`) as numbers: added_records,
    added_deletes, removed_deletes, and live (total records less total position deletes; none
    when the table holds equality deletes, which only a scan applies). -#}
{% macro _summary_numbers(row, start) %}
  {% set n = [] %}
  {% for i in range(6) %}
    {% do n.append((row[start + i] or 0) | int) %}
  {% endfor %}
  {{ return({'added_records': n[0], 'added_deletes': n[1], 'removed_deletes': n[2],
             'live': none if n[5] > 0 else n[3] - n[4]}) }}
{% endmacro %}

{#- The Iceberg field ids of the key columns under the table's current schema, as SQL: text
    '<id>.<id>...' in key order, or NULL when any is not known for certain. Spark SQL shows no
    field id, but the table's `files` metadata table gives every data file's metrics twice: by
    field id (column_sizes, value_counts, null_value_counts, lower_bounds, upper_bounds) and by
    the current name (readable_metrics). The key's field id is the one id whose metrics equal
    the name's in every data file, its bounds compared as Iceberg stores them (_bound_hex_sql);
    two ids that match everywhere, a key type whose bounds are not compared here, a file without
    metrics or a table without files leave it unknown. A rename (one name now another field, no
    new snapshot) changes it. -#}
{% macro _key_fields_sql(plan) %}
  {% set columns = plan.schema.target_columns if plan.schema else [] %}
  {% set matches, picks = [], [] %}
  {% for key in plan.key_columns %}
    {% set found = columns | selectattr('name', 'equalto', key) | list %}
    {% set type = (found[0].data_type | lower) if found else '' %}
    {% set m = 'readable_metrics.' ~ dbt_merge.quote_identifier(key) %}
    {% set low = dbt_merge._bound_hex_sql(m ~ '.lower_bound', type) %}
    {% set high = dbt_merge._bound_hex_sql(m ~ '.upper_bound', type) %}
    {% if low is none %}
      {{ return('cast(null as string)') }}
    {% endif %}
    {#- per field id: in how many data files its metrics are this key's -#}
    {% do matches.append('count(case when size = ' ~ m ~ '.column_size and value_counts[f] <=> ' ~ m ~ '.value_count and '
        ~ 'null_value_counts[f] <=> ' ~ m ~ '.null_value_count and hex(lower_bounds[f]) <=> ' ~ low
        ~ ' and hex(upper_bounds[f]) <=> ' ~ high ~ ' then 1 end) as k' ~ loop.index) %}
    {% do picks.append('case when count(case when k' ~ loop.index ~ ' = files then 1 end) = 1 then cast(max(case when k'
        ~ loop.index ~ ' = files then f end) as string) end') %}
  {% endfor %}
  {{ return('(select concat(' ~ picks | join(", '.', ") ~ ') from (select f, max(files) as files, ' ~ matches | join(', ')
      ~ ' from (select explode(column_sizes) as (f, size), * from (select *, count(*) over () as files from '
      ~ plan.target ~ '.files where content = 0) as dbt_merge_files) as dbt_merge_sizes group by f) as dbt_merge_ids)') }}
{% endmacro %}

{#- The hex of a bound as Iceberg stores it (single-value serialization) from its value `value`
    of Spark type `type`, as SQL, for the key types compared: 8-byte little-endian bigint,
    4-byte int (int, smallint, tinyint; date as days), UTF-8 string; none for other types. -#}
{% macro _bound_hex_sql(value, type) %}
  {% if type in ['bigint', 'int', 'integer', 'smallint', 'tinyint', 'date'] %}
    {% set number = "datediff(" ~ value ~ ", date'1970-01-01')" if type == 'date' else value %}
    {% set width = 16 if type == 'bigint' else 8 %}
    {% set digits = 'right(lpad(hex(cast(' ~ number ~ ' as bigint)), 16, \'0\'), ' ~ width ~ ')' %}
    {% set pairs = [] %}
    {% for i in range(width // 2) %}
      {% do pairs.append('substr(' ~ digits ~ ', ' ~ (width - 1 - 2 * i) ~ ', 2)') %}
    {% endfor %}
    {{ return('concat(' ~ pairs | join(', ') ~ ')') }}
  {% elif type == 'string' %}
    {{ return('hex(cast(' ~ value ~ ' as binary))') }}
  {% endif %}
  {{ return(none) }}
{% endmacro %}

{#- A v3 table's snapshot `pinned`, in one statement: {live: its live rows (none with equality
    deletes), lineage_missing: how many of its data files have no row lineage (written before the
    table became format version 3: a copy-on-write MERGE copies their rows without it, a
    merge-on-read one writes their updated rows without it, and either would be counted new),
    or are position deletes scoped to a whole partition (format 2's, before Iceberg 1.8: the
    snapshot summary's live rows are then not the table's; red team, a format 2 table upgraded
    to 3 reported deleted=1 for an upsert that deleted nothing)}, or none when the snapshot is
    gone. -#}
{% macro _read_snapshot(plan, pinned) %}
  {% set rows = dbt_merge.run_sql('select ' ~ dbt_merge._summary_columns_sql('s') ~ ', (select count(*) from '
      ~ plan.target ~ '.files version as of ' ~ pinned ~ ' where (content = 0 and first_row_id is null) '
      ~ 'or (content = 1 and referenced_data_file is null)) from '
      ~ plan.target ~ '.snapshots as s where s.snapshot_id = ' ~ pinned, 'dbt_merge_describe').rows %}
  {% if not rows %}
    {{ return(none) }}
  {% endif %}
  {{ return({'live': dbt_merge._summary_numbers(rows[0], 0).live, 'lineage_missing': (rows[0][6] or 0) | int}) }}
{% endmacro %}

{#- The table's keys as the run's MERGE will see them, in one statement: read through the run's
    branch (just made: its data is the snapshot the run started from, its columns the table's
    current schema, as the MERGE's). {rows: the live rows, unique: every key present and held
    once, fields: the key columns' field ids they were read under (_key_fields_sql), or none}. -#}
{% macro _read_keys(plan, branch) %}
  {% set present = [] %}
  {% for key in plan.key_columns %}
    {% do present.append(dbt_merge.quote_identifier(key) ~ ' is not null') %}
  {% endfor %}
  {% set row = dbt_merge.run_sql('select count(*), count(case when ' ~ present | join(' and ') ~ ' then 1 end), count(distinct '
      ~ dbt_merge.column_list(plan.key_columns) ~ '), ' ~ dbt_merge._key_fields_sql(plan) ~ ' from '
      ~ plan.target ~ '.branch_' ~ branch, 'dbt_merge_check').rows[0] %}
  {{ return({'rows': row[0] | int, 'unique': (row[0] | int) == (row[1] | int) and (row[1] | int) == (row[2] | int),
             'fields': none if row[3] is none else row[3] | string}) }}
{% endmacro %}

{#- The table's state after the run's MERGE, in one statement (read after `refresh table`, so of
    the table as committed, not as a cache holds it): {fields: the key columns' field ids now
    (_key_fields_sql),
    refs: {name: {snapshot, parent, operation, manifest_list, mark, added_records, added_deletes,
    removed_deletes, live}}} for `main`, every branch named dbt_merge_... (a tag of such a name is
    someone else's: never read nor dropped) and, under '', the
    snapshot the run started from (`pinned`). `mark`: the commit's value of the Python door's
    snapshot summary key (dbt_merge_branches.mark_key), else none. -#}
{% macro _branch_state(plan, branch, pinned) %}
  {% set mark_key = dbt_merge_branches.mark_key if dbt_merge_branches is defined else none %}
  {% set rows = dbt_merge.run_sql('select r.name, cast(r.snapshot_id as string), cast(s.parent_id as string), '
      ~ 's.operation, s.manifest_list, ' ~ (('s.summary[' ~ dbt_merge.sql_string(mark_key) ~ ']') if mark_key else 'null')
      ~ ', ' ~ dbt_merge._key_fields_sql(plan) ~ ', ' ~ dbt_merge._summary_columns_sql('s')
      ~ ' from (select name, snapshot_id from ' ~ plan.target ~ ".refs where name = 'main' or (left(name, 10) = 'dbt_merge_' and type = 'BRANCH') "
      ~ "union all select '' as name, " ~ pinned ~ ' as snapshot_id) as r left join ' ~ plan.target
      ~ '.snapshots as s on s.snapshot_id = r.snapshot_id', 'dbt_merge_describe').rows %}
  {% set refs = {} %}
  {% set state = namespace(fields=none) %}
  {% for row in rows %}
    {% set ref = {'snapshot': row[1] | string, 'parent': none if row[2] is none else row[2] | string,
                  'operation': row[3], 'manifest_list': row[4], 'mark': row[5]} %}
    {% do ref.update(dbt_merge._summary_numbers(row, 7)) %}
    {% if row[0] != '' or row[4] is not none %}
      {% do refs.update({row[0] | string: ref}) %}
    {% endif %}
    {% set state.fields = none if row[6] is none else row[6] | string %}
  {% endfor %}
  {{ return({'fields': state.fields, 'refs': refs}) }}
{% endmacro %}

{#- What a run says when its MERGE left no commit it can prove its own. -#}
{% macro _unproven_commit_message(plan, branch, pinned, head) %}
  {% set found = 'the branch is gone' if head is none else ('it is at snapshot ' ~ head.snapshot
      ~ (', its commit not marked as this run\'s' if head.parent == pinned and head.snapshot != pinned
         else ', not a commit on ' ~ pinned)) %}
  {{ return("the MERGE into this run's branch " ~ branch ~ " of " ~ plan.target ~ " should have left one commit "
      ~ "on snapshot " ~ pinned ~ ", but " ~ found ~ ". This run cannot prove what it wrote, so nothing was "
      ~ "published to main. A session that stages Iceberg writes (spark.wap.id with write.wap.enabled, "
      ~ "under a name this run could not read: a redaction regex) or another job moving or dropping the "
      ~ "package's branches does this; a staged commit (a snapshot with that wap.id, not in main) may be "
      ~ "left. Unset spark.wap.id for the run, leave the package's branches alone, then run it again.") }}
{% endmacro %}
