{#-
  The run's Iceberg branch and the session's Iceberg settings, in one place for every path that
  writes into a branch (merge_on_branch, write_on_branch, replace_target): whether branches can
  be made (the Python door's Iceberg calls, or Iceberg's SQL extensions in the session), the
  branch's name, making, fast-forwarding and dropping it (iceberg_branch: through the door's
  calls when it gives them, dbt_merge_branches, else in SQL), the branches a killed run left,
  and the session's WAP settings that would stage or redirect a write.
-#}

{#- Branches can be made and published: by the Python door (its own Iceberg calls,
    dbt_merge_branches) or in SQL, which needs Iceberg's SQL extensions in the session. -#}
{% macro branches_available(plan=none) %}
  {{ return(dbt_merge_branches is defined or dbt_merge.iceberg_extensions(plan) == true) }}
{% endmacro %}

{#- Whether the session runs Iceberg's SQL extensions (a static setting of the session): as
    staging the SELECT read it (plan.session, stage_select), else read now. -#}
{% macro iceberg_extensions(plan=none) %}
  {% set known = (plan.session if plan else {}).get('iceberg_extensions') %}
  {% if known is not none %}
    {{ return(known) }}
  {% endif %}
  {#- with SET, which shows the value redacted when spark.sql.redaction.options.regex matches it
      (so does variable substitution): then none, not known (red team helper-69: a redacted value
      taken for "no extensions" refused format-3 tables in a session that has them, and skipped
      the run's branch) -#}
  {% set read = dbt_merge.session_setting('spark.sql.extensions') %}
  {% if read.redacted %}
    {{ return(none) }}
  {% endif %}
  {% set value = read.value %}
  {{ return('IcebergSparkSessionExtensions' in value) }}
{% endmacro %}

{#- Drop the branches a run of the package left (a statement failed inside Spark, or the run was
    killed) once they are provably not a live run's: the time in their name (dbt_merge_<UTC
    yyyymmddHHMMSS>_<id>, run_branch_name) more than a day before now. A run that old refuses to
    publish (its branch gone). Branches of other names, older versions' included, are never
    touched. `refs`: _branch_state's; `own`: this run's branch. -#}
{% macro drop_dead_branches(plan, refs, own) %}
  {% set limit = (modules.datetime.datetime.utcnow() - modules.datetime.timedelta(days=1)).strftime('%Y%m%d%H%M%S') %}
  {% for name in refs if name != own %}
    {% set found = modules.re.match('^dbt_merge_([0-9]{14})_[0-9a-f]{12}$', name) %}
    {% if found and found.group(1) < limit %}
      {% do log('dbt_merge ' ~ model.name ~ ': dropping the branch ' ~ name ~ ' of ' ~ plan.target ~ ', left more than '
          ~ 'a day ago by a run that did not finish.', info=true) %}
      {% do dbt_merge.iceberg_branch(plan.target, 'drop', name) %}
    {% endif %}
  {% endfor %}
{% endmacro %}

{#- The run's own branch: dbt_merge_<UTC yyyymmddHHMMSS>_<12 hex>, the hex from this invocation,
    the table and the moment (no other run holds it; drop_dead_branches reads its age). -#}
{% macro run_branch_name(plan) %}
  {% set now = modules.datetime.datetime.utcnow() %}
  {{ return('dbt_merge_' ~ now.strftime('%Y%m%d%H%M%S') ~ '_'
      ~ local_md5(invocation_id ~ '.' ~ plan.target ~ '.' ~ now.isoformat())[:12]) }}
{% endmacro %}

{#- The WAP settings the session has (`spark.wap.id=...`, `spark.wap.branch=...`), as text, or []:
    every one set, whatever its value, as Iceberg takes it (a value that is not null: an empty,
    blank or redacted one stages the writes too; red team helper-63: `spark.wap.id=' '` was
    taken for unset, and the run's branch stayed empty while Iceberg staged its commit). -#}
{% macro wap_settings() %}
  {% set found = [] %}
  {% for row in dbt_merge.run_sql('set', 'dbt_merge_conf').rows %}
    {% if row[0] in ['spark.wap.id', 'spark.wap.branch'] and row[1] is not none %}
      {% do found.append(row[0] ~ '=' ~ row[1]) %}
    {% endif %}
  {% endfor %}
  {{ return(found) }}
{% endmacro %}

{#- The session's WAP settings (wap_settings) that Iceberg applies to the writes into
    plan.target: those set, when the table has write.wap.enabled (`true` in any case, nothing
    trimmed, as Iceberg reads it: red team helper-62), else [] (Iceberg ignores them). The
    properties the run read with the table's columns (plan.target_properties, DESCRIBE's listing)
    answer when they do not name the property; a listing that names it is asked again by name
    (SHOW TBLPROPERTIES), since another property's value can carry it ('notes'='a=1,
    write.wap.enabled=true' lists as the table's, red team helper-63). A session that sets both
    spark.wap.id and spark.wap.branch is refused here, nothing written: Iceberg fails every write
    into such a table with its raw 'Cannot set both WAP ID and branch' (red team helper-64). -#}
{% macro table_wap_settings(plan, read=none, at_write=true) %}
  {% set read = read or dbt_merge.write_properties(plan) %}
  {% if 'write.wap.enabled' not in read.properties %}
    {{ return([]) }}
  {% endif %}
  {% if read.exact %}
    {% set value = read.properties['write.wap.enabled'] | string %}
  {% else %}
    {% set value = dbt_merge.table_property(plan.target, 'write.wap.enabled') %}
  {% endif %}
  {% if '*********(redacted)' in value %}
    {#- hidden by spark.sql.redaction.options.regex: whether Iceberg stages or redirects the
        writes cannot be told, which matters only to a session that sets WAP (red team
        helper-65: taken for off, the run's branch met Iceberg's raw 'Cannot write to both
        branch and WAP branch', the branch left) -#}
    {% set settings = dbt_merge.wap_settings() %}
    {% if settings %}
      {{ dbt_merge.raise_merge_error("Spark shows the property write.wap.enabled of " ~ plan.target ~ " redacted "
          ~ "(spark.sql.redaction.options.regex), and the session sets " ~ settings | join(', ') ~ ": the merge "
          ~ "cannot tell whether Iceberg stages its write or sends it to another branch, so it cannot choose "
          ~ "a write it can check. Narrow spark.sql.redaction.options.regex so that it matches neither "
          ~ "write.wap.enabled nor the WAP settings, or unset the WAP settings, then run the merge again. "
          ~ dbt_merge.refused_target_note(plan, at_write)) }}
    {% endif %}
    {{ return([]) }}
  {% endif %}
  {% if value | lower != 'true' %}
    {{ return([]) }}
  {% endif %}
  {% set settings = dbt_merge.wap_settings() %}
  {% if settings | length > 1 %}
    {{ dbt_merge.raise_merge_error("the session sets both " ~ settings | join(' and ') ~ ", and " ~ plan.target
        ~ " has write.wap.enabled: Iceberg refuses every write into it with both ('Cannot set both WAP ID and "
        ~ "branch'). Unset one of them (spark.wap.id stages the merge's commit, spark.wap.branch writes it "
        ~ "into that branch), then run the merge again. " ~ dbt_merge.refused_target_note(plan, at_write)) }}
  {% endif %}
  {{ return(settings) }}
{% endmacro %}

{#- Make (at `snapshot`), fast-forward main to, or drop the run's branch `name` of the Iceberg
    table `relation`: through the Python door's Iceberg calls when it gives them
    (dbt_merge_branches), else in SQL (Iceberg's SQL extensions). Returns 'ok', or for a
    fast-forward the door found main moved, 'moved' (in SQL Iceberg fails the statement).
    A fast-forward's `snapshot` is the one main must be at, the run's read: the door moves main
    only from it (one compare-and-set commit). SQL has no such move: Iceberg's procedure takes
    any main the branch descends from, so a rollback of main in the instant before it would be
    undone; the table's history is read after it (_check_fast_forward) and such a run fails
    saying so, its branch dropped. -#}
{% macro iceberg_branch(relation, action, name, snapshot=none, head=none) %}
  {% if dbt_merge_branches is defined %}
    {{ return(dbt_merge_branches.run(relation, action, name, snapshot)) }}
  {% elif action == 'create' %}
    {#- kept a day at most by the table's snapshot expiry, should no run drop it -#}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' create branch ' ~ dbt_merge.quote_identifier(name)
        ~ ' as of version ' ~ snapshot ~ ' retain 1 days', 'dbt_merge_branch') %}
  {% elif action == 'fast_forward' %}
    {% do dbt_merge.run_statement('call spark_catalog.system.fast_forward(' ~ dbt_merge.sql_string(relation | string)
        ~ ", 'main', " ~ dbt_merge.sql_string(name) ~ ')', 'dbt_merge_branch') %}
    {% if snapshot is not none and head is not none %}
      {% do dbt_merge._check_fast_forward(relation, name, snapshot, head) %}
    {% endif %}
  {% elif action == 'drop' %}
    {% do dbt_merge.run_statement('alter table ' ~ relation ~ ' drop branch if exists ' ~ dbt_merge.quote_identifier(name),
        'dbt_merge_branch') %}
  {% else %}
    {{ dbt_merge.raise_merge_error("no branch action '" ~ action ~ "'.") }}
  {% endif %}
  {{ return('ok') }}
{% endmacro %}

{#- After a fast-forward in SQL of main to the run's branch `name`, whose read was `read` and
    whose head is `head`: the entry of the table's history before the one that made `head`
    current must be `read` (entries after it are later writers', red team helper-47: main taken
    for the head made another writer's commit look like the run's). Another one there (a
    rollback of main, set_current_snapshot) was undone by the fast-forward: the run fails saying
    so, with the snapshot to roll back to, its branch dropped. The history is read in the order
    Iceberg logged it (sorted by time, ties kept in that order). An expiry that trimmed the
    history up to the head between the fast-forward and this read hides such a rollback. -#}
{% macro _check_fast_forward(relation, name, read, head) %}
  {% set published = head | string %}
  {% set read_ids = namespace(ids=[]) %}
  {% for attempt in range(2) if published not in read_ids.ids %}
    {% if attempt > 0 %}
      {#- the head not in the history read: the session's table object predates the move -#}
      {% do dbt_merge.run_statement('refresh table ' ~ relation, 'dbt_merge_describe') %}
    {% endif %}
    {% set rows = dbt_merge.run_sql('select cast(snapshot_id as string), made_current_at from ' ~ relation ~ '.history',
                                    'dbt_merge_describe').rows | sort(attribute=1) | list %}
    {% set read_ids.ids = rows | map(attribute=0) | list %}
  {% endfor %}
  {% set ids = read_ids.ids %}
  {% set positions = [] %}
  {% for id in ids %}
    {% if id == published %}{% do positions.append(loop.index0) %}{% endif %}
  {% endfor %}
  {% set before = ids[positions[-1] - 1] if positions and positions[-1] > 0 else none %}
  {% if before is not none and before != read | string %}
    {% do dbt_merge.iceberg_branch(relation, 'drop', name) %}
    {{ dbt_merge.raise_merge_error("this run published its commit " ~ published ~ " to " ~ relation ~ " by fast-forwarding "
        ~ "main from snapshot " ~ read ~ ", the one it read and counted, but main had been set to snapshot " ~ before
        ~ " in between (a rollback or set_current_snapshot by another job), and the fast-forward undid that: main "
        ~ "now holds this run's rows on top of snapshot " ~ read ~ ". If the change to " ~ before ~ " was meant, run "
        ~ "CALL spark_catalog.system.rollback_to_snapshot('" ~ relation ~ "', " ~ before ~ ") (which also removes "
        ~ "this run's commit and any made after it), then run this model again.") }}
  {% endif %}
{% endmacro %}
