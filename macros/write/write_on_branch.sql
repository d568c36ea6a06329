{#-
  A write of the passes (counted before, written after) published through a branch of the run:
  the statement writes into a branch made at the snapshot the run counted, and `main` is
  fast-forwarded to it only while it is still that snapshot. Iceberg's fast-forward refuses,
  atomically, a `main` that is no longer an ancestor of the branch, so another writer's commit
  made after the counts, before or while the statement ran, refuses the run with nothing
  published, whatever Iceberg itself validates when it commits. Used by every INSERT OVERWRITE of
  a whole Iceberg table (replace_target), and by the MERGE of the passes into a table that does
  not validate a MERGE against the commits made while it ran (publishes_on_branch).
-#}

{#- Whether the passes' MERGE into this Iceberg table (`storage`: plan.target_storage or as read
    again) is written through a branch of the run: when the table's `write.merge.isolation-level`
    is anything but `serializable` (Iceberg's default: it fails a MERGE when another writer
    committed, while it ran, rows its condition could match). Under `snapshot` Iceberg checks no
    appended file: another application's append of a key the run inserts too, committed after
    the counts, was kept under the MERGE (the key held twice, the run reported success: red team
    helper-60, then helper-61 on every table and merge that takes the passes). A value that
    cannot be read as either (redacted, or a listing of the properties that is not exact, then
    read again with SHOW TBLPROPERTIES) is taken as not serializable. Not without a counted
    snapshot (a table with no commit yet: nothing to make a branch at), nor where branches
    cannot be made (a session without Iceberg's SQL extensions; merge_dataframe makes its own),
    nor in a session that stages the table's writes (write-audit-publish: Iceberg would stage
    the branch's commit, or refuse it): those are merged in place, as before, except a session
    whose WAP branch is `main`, which Iceberg writes in place unchecked: refused. -#}
{% macro publishes_on_branch(plan, storage, at_write=true, read=none) %}
  {% if storage.provider != 'iceberg' or plan.get('snapshot') is none %}
    {{ return(false) }}
  {% endif %}
  {% set read = read or dbt_merge.write_properties(plan) %}
  {% set properties = read.properties %}
  {#- the session's WAP settings for this table (both at once refused there, for every MERGE) -#}
  {% set staging = dbt_merge.table_wap_settings(plan, read, at_write) %}
  {% set isolation = (properties.get('write.merge.isolation-level') or 'serializable') | string %}
  {% if dbt_merge.isolation_level(isolation) == 'SERIALIZABLE' %}
    {{ return(false) }}
  {% endif %}
  {#- as branches_available, read once: none when the session's extensions cannot be read -#}
  {% set branches = true if dbt_merge_branches is defined else dbt_merge.iceberg_extensions(plan) %}
  {% if branches is none %}
    {#- a session whose extensions cannot be read (shown redacted): a branch may not be makeable,
        and merged in place such a table keeps another writer's append under the MERGE (red team
        helper-69: the branch skipped silently) -#}
    {#- a level shown redacted too (red team helper-70: the message said a serializable table was
        not checked, and told the user to make it serializable) -#}
    {% set level_hidden = '*********(redacted)' in isolation %}
    {{ dbt_merge.raise_merge_error(plan.target ~ (
          "'s write.merge.isolation-level is shown redacted (it may be snapshot, under which Iceberg does not "
          ~ "check a MERGE against what other writers commit while it runs)" if level_hidden
          else " has write.merge.isolation-level=" ~ isolation ~ ", so Iceberg does not check a MERGE against "
          ~ "what other writers commit while it runs")
        ~ ", and the merge then writes through a branch of its own, which needs Iceberg's SQL extensions in the "
        ~ "session; this session shows spark.sql.extensions redacted (spark.sql.redaction.options.regex matches "
        ~ "its name or value), so the merge cannot tell whether it has them. Narrow the regex so that it matches "
        ~ ("neither the setting nor the table's isolation level" if level_hidden else "neither")
        ~ (", then run the merge again. " if level_hidden
           else ", or set the table's write.merge.isolation-level to serializable, then run the merge again. ")
        ~ dbt_merge.refused_target_note(plan, at_write)) }}
  {% endif %}
  {% if not branches %}
    {{ return(false) }}
  {% endif %}
  {% set wap_branch = namespace(value=none) %}
  {% for setting in staging if setting.startswith('spark.wap.branch=') %}
    {% set wap_branch.value = setting[17:] %}
  {% endfor %}
  {#- Iceberg writes the WAP branch `main` straight into the table, and refuses a write into any
      other branch: neither a branch of the run nor a checked write (red team helper-64: merged
      in place, another application's append kept under the MERGE, the key held twice). A value
      Spark shows redacted may be `main` (red team helper-65: taken for another, the same). -#}
  {% set redacted = wap_branch.value is not none and '*********(redacted)' in wap_branch.value %}
  {% if wap_branch.value == 'main' or redacted %}
    {{ dbt_merge.raise_merge_error(plan.target ~ " has write.merge.isolation-level=" ~ isolation
        ~ ", so Iceberg does not check a MERGE against what other writers commit while it runs, and the merge "
        ~ "writes it through a branch of its own, published only if nothing was committed meanwhile. But the "
        ~ "table has write.wap.enabled and the session sets spark.wap.branch="
        ~ (wap_branch.value ~ " (redacted by spark.sql.redaction.options.regex: it may be main)" if redacted else "main")
        ~ ": Iceberg would write straight into main, unchecked (a key another writer adds meanwhile would be "
        ~ "held twice), and refuses any other branch. Unset spark.wap.branch (a write into main needs no WAP "
        ~ "branch)" ~ (", or narrow spark.sql.redaction.options.regex so that it matches neither spark.wap.branch "
        ~ "nor its value" if redacted else "") ~ ", or set the table's write.merge.isolation-level to serializable, "
        ~ "then run the merge again. " ~ dbt_merge.refused_target_note(plan, at_write)) }}
  {% endif %}
  {#- a session that stages the table's writes (spark.wap.id) or sends them to another branch:
      merged as it asks, in place (a branch of the run would be staged, or refused) -#}
  {{ return(staging | length == 0) }}
{% endmacro %}

{#- Refuse, before anything is written (a schema change, a dry run's report): asked before the
    run counts (no plan.snapshot yet), a table every MERGE into fails (_check_isolation_level);
    asked once it counted its snapshot, a run whose write the session's WAP settings would
    refuse (publishes_on_branch, table_wap_settings: the same decision the write makes; red
    team helper-65: refused only at the write, a column append_new_columns added was left, the
    message saying the target was not changed). No statement for a table whose properties, as
    the run read them, name neither write.wap.enabled nor an isolation level. -#}
{% macro check_write_session(plan) %}
  {{ return(adapter.dispatch('check_write_session', 'dbt_merge')(plan)) }}
{% endmacro %}

{% macro default__check_write_session(plan) %}
{% endmacro %}

{% macro spark__check_write_session(plan) %}
  {% if (plan.target_storage or {}).get('provider') == 'iceberg' %}
    {% set read = dbt_merge.write_properties(plan) %}
    {% if plan.get('snapshot') is none %}
      {#- asked before the run counts (a table with no commit yet: at both asks) -#}
      {% do dbt_merge._check_isolation_level(plan, read) %}
    {% else %}
      {% do dbt_merge.publishes_on_branch(plan, plan.target_storage, false, read) %}
    {% endif %}
  {% endif %}
{% endmacro %}

{#- The table's properties for the write's decisions: {properties: {name: value}, exact}: as the
    run read them with its columns (plan.target_properties, DESCRIBE's listing: not exact, a
    piece of another property's value can list as a property of its own), else read now with
    SHOW TBLPROPERTIES (exact). -#}
{% macro write_properties(plan) %}
  {% if plan.get('target_properties') is not none %}
    {{ return({'properties': plan.target_properties, 'exact': false}) }}
  {% endif %}
  {{ return({'properties': dbt_merge.table_properties(plan.target), 'exact': true}) }}
{% endmacro %}

{#- An Iceberg table's properties as SHOW TBLPROPERTIES gives them: {name: value as text}. -#}
{% macro table_properties(relation) %}
  {% set properties = {} %}
  {% for row in dbt_merge.run_sql('show tblproperties ' ~ relation, 'dbt_merge_describe').rows %}
    {% do properties.update({row[0]: row[1] | string}) %}
  {% endfor %}
  {{ return(properties) }}
{% endmacro %}

{#- One property of a table, asked by its name (SHOW TBLPROPERTIES t ('name')): its value as
    text, Spark's 'Table ... does not have property: ...' when unset, '' without a row. -#}
{% macro table_property(relation, name) %}
  {% set rows = dbt_merge.run_sql('show tblproperties ' ~ relation ~ " ('" ~ name ~ "')", 'dbt_merge_describe').rows %}
  {{ return(rows[0][1] | string if rows | length > 0 else '') }}
{% endmacro %}

{#- How a refusal of the write's session settings ends: before the write nothing was changed;
    at the write (another thread changed the settings after the early check), a column change
    on_schema_change made before it stays (red team helper-66: "The target was not changed"
    while a column sync_all_columns dropped was gone). -#}
{% macro refused_target_note(plan, at_write) %}
  {% if at_write and dbt_merge.schema_changes_any(plan.get('schema')) %}
    {{ return("No row was written, but the column change on_schema_change made before the write stays "
        ~ "(the session's settings changed after the run checked them).") }}
  {% endif %}
  {{ return("The target was not changed.") }}
{% endmacro %}

{#- The isolation level Iceberg reads from a write.merge.isolation-level value: 'SERIALIZABLE',
    'SNAPSHOT', or none for a value it refuses. Iceberg upper-cases the name as Java does
    (IsolationLevel.fromName, Locale.ENGLISH), which maps 'ſ' to 'S' and 'ı' to 'I', as
    Python's upper() does: compared in lower case, 'ſnapshot' was refused (red team helper-67). -#}
{% macro isolation_level(value) %}
  {% set name = (value | string) | upper %}
  {{ return(name if name in ['SERIALIZABLE', 'SNAPSHOT'] else none) }}
{% endmacro %}

{#- Refuse an Iceberg table whose write.merge.isolation-level is not a level Iceberg knows
    (`serializable` or `snapshot`, in any case, nothing around them: IsolationLevel.fromName):
    Iceberg fails every MERGE into it with its raw 'Invalid isolation level', on a branch of
    the run too (which a failed statement leaves behind), while its INSERT OVERWRITE and UPDATE
    go through. A value as DESCRIBE's listing gives it is read again by name before refusing
    (another property's value can carry a piece that lists as this one); a value Spark shows
    redacted cannot be told and is left to the write (taken as not serializable). -#}
{% macro _check_isolation_level(plan, read) %}
  {% if 'write.merge.isolation-level' not in read.properties %}
    {{ return(none) }}
  {% endif %}
  {% set level = read.properties['write.merge.isolation-level'] | string %}
  {% if not read.exact %}
    {#- the listing's value ends at the first comma ('snapshot,x=1' lists as 'snapshot', red
        team helper-67): asked by name -#}
    {% set level = dbt_merge.table_property(plan.target, 'write.merge.isolation-level') %}
    {% if 'does not have property' in level %}
      {{ return(none) }}
    {% endif %}
  {% endif %}
  {% if dbt_merge.isolation_level(level) is not none or '*********(redacted)' in level %}
    {{ return(none) }}
  {% endif %}
  {{ dbt_merge.raise_merge_error(plan.target ~ " has write.merge.isolation-level='" ~ level ~ "', which is not an "
      ~ "isolation level Iceberg knows (serializable or snapshot, nothing around them): Iceberg fails every MERGE "
      ~ "into the table ('Invalid isolation level'). Set it to one of them (alter table " ~ plan.target
      ~ " set tblproperties ('write.merge.isolation-level'='serializable'), Iceberg's default) or unset it, "
      ~ "then run the merge again. The target was not changed.") }}
{% endmacro %}

{#- `plan` writing into its run's branch `branch` instead of the table: no snapshot guard (the
    branch is the run's own; the fast-forward checks `main`). -#}
{% macro on_branch_plan(plan, branch) %}
  {{ return(dbt_merge.copy_with(plan, {'target': plan.target ~ '.branch_' ~ branch, 'snapshot': none,
                                      'no_commit_yet': false})) }}
{% endmacro %}

{#- Run `sql`, a statement writing into the run's branch `branch` of plan.target (written for
    on_branch_plan's target), with the branch made at snapshot `read` first, then publish it:
    the branch must hold exactly one new commit on `read`, and main must still be `read`;
    otherwise the branch is dropped and the run refused, nothing published. `what` names the
    statement in the message ('MERGE', 'INSERT OVERWRITE'). -#}
{% macro write_on_branch(plan, read, branch, sql, what) %}
  {% do dbt_merge.iceberg_branch(plan.target, 'create', branch, read) %}
  {% do dbt_merge.run_statement(sql, 'dbt_merge_merge' if what == 'MERGE' else 'dbt_merge_overwrite') %}
  {#- the branch and main as committed (reloaded, never a cached table), and the package's other
      branches (one left by a run that failed is dropped once a day old) -#}
  {% do dbt_merge.run_statement('refresh table ' ~ plan.target, 'dbt_merge_describe') %}
  {% set refs = {} %}
  {% for row in dbt_merge.run_sql('select r.name, cast(r.snapshot_id as string), cast(s.parent_id as string) from '
      ~ plan.target ~ '.refs as r left join ' ~ plan.target ~ '.snapshots as s on s.snapshot_id = r.snapshot_id '
      ~ "where r.name = 'main' or (left(r.name, 10) = 'dbt_merge_' and r.type = 'BRANCH')", 'dbt_merge_describe').rows %}
    {% do refs.update({row[0]: {'snapshot': row[1], 'parent': row[2]}}) %}
  {% endfor %}
  {% set head = refs.get(branch) %}
  {% if head is none or head.snapshot == read or head.parent != read %}
    {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
    {{ dbt_merge.raise_merge_error("the " ~ what ~ " into this run's branch " ~ branch ~ " of " ~ plan.target
        ~ " should have left one commit on snapshot " ~ read ~ ", but the branch is "
        ~ ("gone" if head is none else "snapshot " ~ head.snapshot ~ " (parent " ~ (head.parent or 'none') ~ ")")
        ~ ". This run cannot prove what it wrote, so nothing was published to main. Leave the "
        ~ "package's branches (dbt_merge_...) alone and run this model again. If the session stages "
        ~ "Iceberg writes (spark.wap.id with write.wap.enabled) under a name this run could not read (a "
        ~ "redaction regex), its commit may be staged: a snapshot with that wap.id, not in main.") }}
  {% endif %}
  {% do dbt_merge.drop_dead_branches(plan, refs, branch) %}
  {% set moved = refs.get('main') is none or refs.main.snapshot != read %}
  {% if not moved %}
    {% set moved = dbt_merge.iceberg_branch(plan.target, 'fast_forward', branch, read, head.snapshot) == 'moved' %}
  {% endif %}
  {% do dbt_merge.iceberg_branch(plan.target, 'drop', branch) %}
  {% if moved %}
    {{ dbt_merge.raise_merge_error(dbt_merge.concurrent_commit_message(plan, prefixed=false)) }}
  {% endif %}
{% endmacro %}
