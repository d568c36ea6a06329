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
  A target key held twice cannot be seen in a commit: the run reads the table's keys (every key
  present and held once, and the live rows), and records the snapshot it published in the table
  property dbt_merge.keys-verified, with the key columns and its rows ('<snapshot>:<keys>:<rows>').
  A later run whose table is still at that snapshot (nobody else committed since) skips that
  read; any other writer's commit, or a table never verified, reads the keys again. A table holding a key twice
  or a NULL key takes the passes (count_changes), which refuse exactly the keys of the SELECT.
  Returns the statistics, or none (nothing written, no branch left) when the merge must take
  the passes instead.
-#}
{% macro merge_on_branch(plan) %}
  {{ return(adapter.dispatch('merge_on_branch', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__merge_on_branch(plan) %}
  {{ return(none) }}
{% endmacro %}

{#- Whether a merge can write once and count from its commit (before its source is checked, so
    that the check tests the keys itself: count_tests_keys is not used). -#}
{% macro commit_counts_applies(plan, cfg) %}
  {{ return(adapter.dispatch('commit_counts_applies', 'dbt_merge')(plan, cfg)) }}
{% endmacro %}

{% macro default__commit_counts_applies(plan, cfg) %}
  {{ return(false) }}
{% endmacro %}

{% macro spark__commit_counts_applies(plan, cfg) %}
  {% if plan.history %}{{ return(false) }}{% endif %}{#- a history merge closes and inserts versions: the passes -#}
  {% set storage = plan.target_storage %}
  {% if not var('dbt_merge_commit_counts', true) or cfg.dry_run or not storage or storage.provider != 'iceberg' %}
    {{ return(false) }}
  {% endif %}
  {% set kind = dbt_merge._commit_counts_kind(storage) %}
  {% set strategies = ['upsert', 'insert', 'full_merge'] if kind == 'v3' else ['upsert', 'insert'] %}
  {% set altered = plan.schema is not none and (plan.schema.added or plan.schema.removed or plan.schema.retyped) %}
  {#- full_merge_write='overwrite', asked for by name, is honoured: it rewrites the whole table -#}
  {% if plan.strategy == 'full_merge' and plan.get('full_merge_write') == 'overwrite' %}
    {{ return(false) }}
  {% endif %}
  {{ return(kind is not none and plan.strategy in strategies and not plan.actions.dedupe and not plan.deduped
            and not plan.update_condition and not plan.delete_condition and not plan.soft_delete
            and not plan.predicates and not altered and dbt_merge._branches_available()) }}
{% endmacro %}

{#- 'v3' (row lineage), 'mor' (merge-on-read, format 2) or none. -#}
{% macro _commit_counts_kind(storage) %}
  {% if (storage.format_version or 0) >= 3 %}
    {{ return('v3') }}
  {% endif %}
  {{ return('mor' if storage.merge_on_read else none) }}
{% endmacro %}

{#- Branches can be made and published: by the Python door (its own Iceberg calls,
    dbt_merge_branches) or in SQL, which needs Iceberg's SQL extensions in the session. -#}
{% macro _branches_available() %}
  {{ return(dbt_merge_branches is defined or dbt_merge._iceberg_extensions()) }}
{% endmacro %}

{#- Whether the session runs Iceberg's SQL extensions (a static setting of the session). -#}
{% macro _iceberg_extensions() %}
  {% set value = dbt_merge.run_sql('set spark.sql.extensions', 'dbt_merge_conf').rows[0][1] | string %}
  {{ return('IcebergSparkSessionExtensions' in value) }}
{% endmacro %}

{% macro spark__merge_on_branch(plan) %}
  {% set storage = plan.target_storage %}
  {% set kind = dbt_merge._commit_counts_kind(storage) %}
  {#- one statement for what the table says of itself: its snapshot, the package's record of its
      keys, a branch a failed run of the package left -#}
  {% set properties = {} %}
  {% for row in dbt_merge.run_sql('show tblproperties ' ~ plan.target, 'dbt_merge_describe').rows %}
    {% do properties.update({row[0]: row[1] | string}) %}
  {% endfor %}
  {% set pinned = properties.get('current-snapshot-id') %}
  {% if not pinned or not modules.re.match('^-?[0-9]+$', pinned) %}
    {{ return(none) }}
  {% endif %}
  {% set left = properties.get('dbt_merge.branch') or '' %}
  {% if left %}
    {#- a run that failed inside its MERGE left its branch, which holds no commit of its own -#}
    {% do dbt_merge._iceberg_branch(plan.target, 'drop', left) %}
  {% endif %}
  {% set keys = plan.key_columns | map('lower') | join(',') %}
  {% set verified = dbt_merge._verified_rows(plan, pinned, keys, properties.get('dbt_merge.keys-verified') or '') %}
  {% if verified.rows is none %}
    {{ return(none) }}
  {% endif %}
  {% if plan.strategy == 'full_merge' and plan.full_merge_write != 'merge' and (plan.source_rows | int) * 2 < verified.rows %}
    {#- a full_merge whose SELECT has fewer than half the table's rows deletes at least half of
        them: the passes write it as one INSERT OVERWRITE of the merged rows (full_merge_write
        'auto'), cheaper than a MERGE that rewrites every file (a 200k SELECT into 2M rows:
        2.2 s against 3.1 s). A full_merge_write='merge' asked for by name stays here. -#}
    {{ return(none) }}
  {% endif %}
  {% set before = dbt_merge._snapshot_numbers(plan.target, pinned) if kind == 'v3' else {'live': none} %}
  {% if kind == 'v3' and before.live is none %}
    {#- equality deletes (another engine's): the live rows are known only to a scan -#}
    {{ return(none) }}
  {% endif %}
  {% do before.update({'rows': verified.rows}) %}
  {% set branch = 'dbt_merge_' ~ local_md5(invocation_id ~ '.' ~ plan.target)[:16] %}
  {% set on_branch = {} %}
  {% do on_branch.update(plan) %}
  {% do on_branch.update({'target': plan.target ~ '.branch_' ~ branch, 'snapshot': none}) %}
  {#- the branch is named in the table's properties before it exists: the run's own mark -#}
  {% do dbt_merge._set_marks(plan, {'dbt_merge.branch': branch}) %}
  {% do dbt_merge._iceberg_branch(plan.target, 'create', branch, pinned) %}
  {% do dbt_merge.run_statement(dbt_merge._merge_on_branch_sql(on_branch, before.rows), 'dbt_merge_merge') %}
  {% set head = dbt_merge.run_sql('select snapshot_id from ' ~ plan.target ~ ".refs where name = '" ~ branch ~ "'",
                                  'dbt_merge_describe').rows[0][0] | string %}
  {% set written = dbt_merge._commit_written(plan, kind, head, pinned, before) %}
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
    {% do dbt_merge._drop_run_branch(plan, branch) %}
    {{ return(none) }}
  {% endif %}
  {% set inserted, updated, deleted = written.inserted, written.updated, written.deleted %}
  {% set matched = source_rows - inserted %}
  {% set counts = {'inserted': inserted, 'updated': updated, 'deleted': deleted,
                   'unchanged': matched - updated, 'total': written.total, 'held_back': 0,
                   'condition_deletes': 0, 'matched_rows': matched, 'matched_keys': matched,
                   'considered': before.rows} %}
  {% if plan.actions.target_only == 'delete' and deleted > 0 and deleted > plan.max_delete_fraction * counts.considered %}
    {% do dbt_merge._drop_run_branch(plan, branch) %}
    {% do dbt_merge.check_merge_counts(plan, counts) %}
  {% endif %}
  {% set mark = pinned ~ ':' ~ keys ~ ':' ~ written.total %}
  {% if inserted + updated + deleted == 0 %}
    {#- nothing changed: main keeps its snapshot (no empty commit) -#}
    {% do dbt_merge._iceberg_branch(plan.target, 'drop', branch) %}
  {% else %}
    {% if dbt_merge._current_snapshot(plan.target) != pinned %}
      {% do dbt_merge._drop_run_branch(plan, branch) %}
      {% do plan.update({'snapshot': pinned}) %}
      {{ dbt_merge.raise_merge_error(dbt_merge._concurrent_commit_message(plan, prefixed=false)) }}
    {% endif %}
    {% do dbt_merge._iceberg_branch(plan.target, 'fast_forward', branch) %}
    {% do dbt_merge._iceberg_branch(plan.target, 'drop', branch) %}
    {% set mark = head ~ ':' ~ keys ~ ':' ~ written.total %}
  {% endif %}
  {#- the snapshot main is at, its keys verified and its rows (a later run into it reads neither),
      and no branch left: one metadata commit of the table's properties, no snapshot -#}
  {% do dbt_merge._set_marks(plan, {'dbt_merge.keys-verified': mark, 'dbt_merge.branch': ''}) %}
  {{ return({'inserted': inserted, 'updated': updated, 'deleted': deleted,
             'unchanged': counts.unchanged, 'total': written.total}) }}
{% endmacro %}

{#- The MERGE of the write-once path: every source row, the matched ones written only when they
    changed, into `plan.target` (the run's branch). The table's keys are held once (verified
    before); the source's keys were checked present and storable, and unique by the check for a
    SELECT small enough to broadcast; a larger one's (plan.keys_tested_by_count) are tested here:
    a key repeated in the SELECT fails the statement with the package's message (a window count
    by key, which the MERGE's own join, partitioned by the key, shares), before anything is
    committed. `target_rows`: the table's rows; a SELECT of at least 90% of
    them on a copy-on-write table skips the runtime file filter (_matches_every_file). -#}
{% macro _merge_on_branch_sql(plan, target_rows) %}
  {%- set src = 'DBT_INTERNAL_SOURCE' -%}
  {%- set dst = 'DBT_INTERNAL_DEST' -%}
  {%- set columns = dbt_merge._written_columns(plan) -%}
  {%- set n = dbt_merge.quote_identifier(plan.names.rows) -%}
  {%- set every_file = dbt_merge._matches_every_file(plan.target_storage, plan.source_rows | int, target_rows) -%}
  merge into {{ plan.target }} as {{ dst }}
  using (
  {%- if plan.keys_tested_by_count %}
    select * from (
      select {{ src }}.*, count(*) over (partition by {{ dbt_merge.column_list(plan.key_columns, src) }}) as {{ n }}
      from ({{ dbt_merge._source_rows_sql(plan) }}) as {{ src }}
    ) as {{ src }}
    where case when {{ src }}.{{ n }} > 1 then raise_error({{ dbt_merge._repeated_key_message_sql(plan, src) }}) else true end
  {%- else %}
    {{ dbt_merge._source_rows_sql(plan) }}
  {%- endif %}
  ) as {{ src }}
  on {{ dbt_merge.key_match(plan.key_columns, src, dst) }}
  {%- if plan.actions.matched == 'update' and plan.update_columns %}
  when matched and {{ dbt_merge._row_changed_condition(plan) }} then update set
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
  {{ return("concat(" ~ dbt_merge._sql_string("dbt_merge: model '" ~ model.name ~ "': unique_key value(s) occur more "
      ~ "than once in the model's SELECT, e.g. (" ~ plan.key_columns | join(', ') ~ ") = (") ~ ", concat_ws(', ', "
      ~ parts | join(', ') ~ "), " ~ dbt_merge._sql_string("). Make the key unique in the SELECT, fix unique_key, or use "
      ~ "strategy='deduplicate' with dedup_order_by to keep one row per key. The target was not changed.") ~ ")") }}
{% endmacro %}

{#- A refused run's branch dropped, and the table's properties no longer naming it (the mark a
    run sets before it makes its branch). -#}
{% macro _drop_run_branch(plan, branch) %}
  {% do dbt_merge._iceberg_branch(plan.target, 'drop', branch) %}
  {% do dbt_merge._set_marks(plan, {'dbt_merge.branch': ''}) %}
{% endmacro %}

{#- Set the package's own table properties ({key: value}) in one statement (a metadata commit,
    no snapshot). -#}
{% macro _set_marks(plan, marks) %}
  {% set pairs = [] %}
  {% for key, value in marks.items() %}
    {% do pairs.append(dbt_merge._sql_string(key) ~ ' = ' ~ dbt_merge._sql_string(value)) %}
  {% endfor %}
  {% do dbt_merge.run_statement('alter table ' ~ plan.target ~ ' set tblproperties (' ~ pairs | join(', ') ~ ')',
                                'dbt_merge_describe') %}
{% endmacro %}

{#- {inserted, updated, deleted, total} of the branch's commit `head` (or all 0 and the live rows
    when it is still the pinned snapshot: nothing was written), or none when the commit does not
    carry what counting it needs. `before`: _snapshot_numbers of the pinned snapshot, with its
    live rows as the keys' read (or the package's record) found them (`rows`). -#}
{% macro _commit_written(plan, kind, head, pinned, before) %}
  {% if head == pinned %}
    {{ return({'inserted': 0, 'updated': 0, 'deleted': 0, 'total': before.rows}) }}
  {% endif %}
  {% set after = dbt_merge._snapshot_numbers(plan.target, head) %}
  {% if kind == 'mor' %}
    {#- no deletes on this path: the rows before (read or recorded with the keys) plus the new -#}
    {% set updated = after.added_deletes - after.removed_deletes %}
    {% set inserted = after.added_records - updated %}
    {{ return({'inserted': inserted, 'updated': updated, 'deleted': 0, 'total': before.rows + inserted}) }}
  {% endif %}
  {% if after.operation == 'append' %}
    {#- only new rows (insert, or nothing matched): Iceberg gives them their row ids at the
        commit and writes no lineage columns into the files -#}
    {{ return({'inserted': after.added_records, 'updated': 0, 'deleted': 0, 'total': after.live}) }}
  {% endif %}
  {#- format 3: the row-lineage fields' null counts in the data files the commit added
      (_row_id: 2147483540, _last_updated_sequence_number: 2147483539) -#}
  {% set row = dbt_merge.run_sql("select count(*), count(data_file.null_value_counts[2147483540]), "
      ~ "count(data_file.null_value_counts[2147483539]), coalesce(sum(data_file.null_value_counts[2147483540]), 0), "
      ~ "coalesce(sum(data_file.null_value_counts[2147483539]), 0) from " ~ plan.target ~ ".entries version as of " ~ head
      ~ " where snapshot_id = " ~ head ~ " and status = 1 and data_file.content = 0", 'dbt_merge_count').rows[0] %}
  {% if (row[1] | int) != (row[0] | int) or (row[2] | int) != (row[0] | int) %}
    {{ return(none) }}
  {% endif %}
  {% set inserted = row[3] | int %}
  {{ return({'inserted': inserted, 'updated': (row[4] | int) - inserted,
             'deleted': before.live + inserted - after.live, 'total': after.live}) }}
{% endmacro %}

{#- A snapshot's summary numbers: added_records, added_deletes and removed_deletes (position
    deletes, deletion vectors counted by their positions), and live (total-records less
    total-position-deletes; none when the table holds equality deletes, which only a scan
    applies). -#}
{% macro _snapshot_numbers(relation, snapshot) %}
  {% set row = dbt_merge.run_sql("select summary['added-records'], summary['added-position-deletes'], "
      ~ "summary['removed-position-deletes'], summary['total-records'], summary['total-position-deletes'], "
      ~ "summary['total-equality-deletes'], operation from " ~ relation ~ ".snapshots where snapshot_id = " ~ snapshot,
      'dbt_merge_describe').rows[0] %}
  {% set live = none if (row[5] or 0) | int > 0 else (row[3] or 0) | int - (row[4] or 0) | int %}
  {{ return({'added_records': (row[0] or 0) | int, 'added_deletes': (row[1] or 0) | int,
             'removed_deletes': (row[2] or 0) | int, 'live': live, 'operation': row[6]}) }}
{% endmacro %}

{#- {rows, mark}: the live rows of the table at `snapshot` when it holds each key (`keys`, lower
    case, comma-separated) at most once and no NULL key, else rows none; mark: `value`, the table
    property dbt_merge.keys-verified as it is ('<snapshot>:<keys>:<rows>', set by the run that
    published or verified that snapshot). A value naming this snapshot and these keys is
    trusted; otherwise the table's keys are read now. -#}
{% macro _verified_rows(plan, snapshot, keys, value) %}
  {% set parts = value.split(':') %}
  {% if parts | length == 3 and parts[0] == snapshot | string and parts[1] == keys and modules.re.match('^[0-9]+$', parts[2]) %}
    {{ return({'rows': parts[2] | int, 'mark': value}) }}
  {% endif %}
  {% set present = [] %}
  {% for key in plan.key_columns %}
    {% do present.append(dbt_merge.quote_identifier(key) ~ ' is not null') %}
  {% endfor %}
  {% set row = dbt_merge.run_sql('select count(*), count(case when ' ~ present | join(' and ') ~ ' then 1 end), count(distinct '
      ~ dbt_merge.column_list(plan.key_columns) ~ ') from ' ~ plan.target, 'dbt_merge_check').rows[0] %}
  {% set unique = (row[0] | int) == (row[1] | int) and (row[1] | int) == (row[2] | int) %}
  {{ return({'rows': (row[0] | int) if unique else none, 'mark': value}) }}
{% endmacro %}

{#- Make (at `snapshot`), fast-forward main to, or drop the run's branch `name` of the Iceberg
    table `relation`: through the Python door's Iceberg calls when it gives them
    (dbt_merge_branches), else in SQL (Iceberg's SQL extensions). -#}
{% macro _iceberg_branch(relation, action, name, snapshot=none) %}
  {% if dbt_merge_branches is defined %}
    {% do dbt_merge_branches.run(relation, action, name, snapshot) %}
  {% elif action == 'create' %}
    {#- kept a day at most by the table's snapshot expiry, should no run drop it -#}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' create branch ' ~ dbt_merge.quote_identifier(name)
        ~ ' as of version ' ~ snapshot ~ ' retain 1 days', 'dbt_merge_branch') %}
  {% elif action == 'fast_forward' %}
    {% do dbt_merge.run_statement('call spark_catalog.system.fast_forward(' ~ dbt_merge._sql_string(relation | string)
        ~ ", 'main', " ~ dbt_merge._sql_string(name) ~ ')', 'dbt_merge_branch') %}
  {% elif action == 'drop' %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' drop branch if exists ' ~ dbt_merge.quote_identifier(name),
        'dbt_merge_branch') %}
  {% else %}
    {{ dbt_merge.raise_merge_error("no branch action '" ~ action ~ "'.") }}
  {% endif %}
{% endmacro %}
