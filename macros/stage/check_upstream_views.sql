{#-
  Refuse a merge whose SELECT reads, or whose upstream models were built from, a view Spark may
  read at an old definition, before the SELECT is staged or anything is written (run_merge calls
  this first).

  Spark: with Iceberg's SparkSessionCatalog over a Hive metastore and Iceberg's SQL extensions
  (the documented profile), `create or replace view` makes an Iceberg view, registered in the
  metastore as a table of type ICEBERG-VIEW whose Hive view text is the SQL the view was first
  created with. Replacing the view writes a new Iceberg version of it and leaves that text as it
  was (Iceberg 1.10's HiveViewOperations writes the text only when it creates the view), and
  Spark 3.5 reads a view of its session catalog from that text: the view keeps its first
  definition for every reader, in this session and the next, with or without the extensions
  (a session without them, on the same metastore, reads the same old text), whatever
  `refresh table` or the catalog's `cache-enabled` says. A dbt `view` model replaced daily
  (`where day = {{ var('day') }}`) then serves its first day forever, and a merge from it
  reports 0 changes. So the check runs on every session, extensions or not.

  What is checked:
  - the views the SELECT reads, directly, nested, or in a subquery of merge_update_condition,
    delete_condition or incremental_predicates: Spark prints them in the analyzed plan
    (`View (`spark_catalog`.`db`.`v`, ...)`, or `db`.`v` under
    spark.sql.legacy.v1IdentifierNoCatalog); one EXPLAIN (no Spark job) lists them. A plan Spark
    prints cut short (spark.sql.maxPlanStringLength) is printed again at full length (the
    setting raised for that one EXPLAIN and put back); a plan it cannot be read from (cut short
    still, or names redacted by spark.sql.redaction.string.regex so that the views cannot be
    told) is refused, never read as "no views";
  - (dbt) every view model upstream of the model in dbt's graph, through tables and other
    models: a table built today from a view read at its old definition holds old rows too.
  - the tables of the session catalog the plan reads through Iceberg's catalog (RelationV2): one
    the metastore registers as a view now is a table dropped since that the session's Iceberg
    catalog cache still holds (dbt invoked twice in one process, a model turned from table into
    view): Spark would read the dropped table's rows; refused, naming `refresh table`.
  Their metastore properties are read with one SHOW TABLE EXTENDED per schema. A view of the
  session catalog whose properties say ICEBERG-VIEW and name a previous metadata file has had a
  second version written since it was created (replaced, or altered: ALTER VIEW SET
  TBLPROPERTIES writes one too, and SQL cannot read which version changed the SQL), so the text
  Spark reads may be older than its SQL: refused, naming the views and the fix. A view made once
  and never replaced or altered, a Hive view, a temporary view and a view of another catalog
  (which Iceberg reads at its current version) pass. The fix is to drop the view and create it
  again, which writes its text anew, and to have dbt do so whenever it replaces one:
  spark_create_view_as.

  cfg     validate_merge_config()'s result (its conditions are checked too)
  target  the table the merge reads as DBT_INTERNAL_DEST, or none (a build)
  plan_text  EXPLAIN EXTENDED's full text of a plan that reads the SELECT (its staged view's
          rows, read by create_work_relation's pin check), to read the views from instead of
          explaining the SELECT again; only where no condition holds a query
          (views_checked_with_stage)
-#}
{% macro check_upstream_views(sql, cfg=none, target=none, plan_text=none) %}
  {{ return(adapter.dispatch('check_upstream_views', 'dbt_merge')(sql, cfg, target, plan_text)) }}
{% endmacro %}

{% macro default__check_upstream_views(sql, cfg=none, target=none, plan_text=none) %}
{% endmacro %}

{% macro spark__check_upstream_views(sql, cfg=none, target=none, plan_text=none) %}
  {% set read = dbt_merge._views_read(sql, cfg, target, plan_text) %}
  {% if read.unreadable %}
    {{ dbt_merge.raise_merge_error(dbt_merge._unreadable_plan_message(read.unreadable)) }}
  {% endif %}
  {% set upstream = dbt_merge._upstream_view_models() %}
  {#- the metastore's views asked once per schema for both lookups (the tables the plan reads,
      the views it and the upstream models read): one SHOW TABLE EXTENDED fewer where a schema
      holds both -#}
  {% set listed = dbt_merge._catalog_views_by_schema(read.tables + read.views + upstream) %}
  {% set cached = dbt_merge.views_read_as_tables(read.tables, listed) %}
  {% if cached %}
    {{ dbt_merge.raise_merge_error(dbt_merge.cached_tables_message(cached, read.reader)) }}
  {% endif %}
  {% set stale = dbt_merge.replaced_iceberg_views(read.views + upstream, listed) %}
  {% if stale %}
    {{ dbt_merge.raise_merge_error(dbt_merge.stale_views_message(stale, read.reader)) }}
  {% endif %}
{% endmacro %}

{#- The refusal of views `stale` ([{schema, name, shown, upstream}]) that `reader` reads, shared
    by every front end (merge_dataframe's check of a DataFrame's plan too, dbt_merge.spark.views). -#}
{% macro stale_views_message(stale, reader="the model's SELECT") %}
  {% set names = [] %}
  {% for view in stale %}
    {% do names.append(view.schema ~ '.' ~ view.name
                       ~ (' (upstream of the model, through ' ~ view.upstream ~ ')' if view.get('upstream') else '')
                       ~ (' (printed ' ~ view.shown ~ ' by Spark, which redacts its name)' if view.get('shown') else '')) %}
  {% endfor %}
  {% set one = stale | length == 1 %}
  {{ return(reader ~ " reads " ~ names | join(', ') ~ ", " ~ ("an Iceberg view" if one else "Iceberg views")
      ~ " replaced or altered (create or replace view, alter view) since " ~ ("it was" if one else "they were")
      ~ " created. Spark reads a view of this catalog from the Hive metastore's view text, which Iceberg"
      ~ " writes only when it creates the view: the merge could read the first definition, not the SQL"
      ~ " the view has now. Drop the view and create it again (drop view " ~ stale[0].schema ~ '.' ~ stale[0].name
      ~ ", then run its model or create it as before), and have dbt drop an Iceberg view before replacing it:"
      ~ " add the one-line macro spark__create_view_as to your project's macros (docs/spark.md, Views on an"
      ~ " Iceberg session catalog). The target was not changed.") }}
{% endmacro %}

{#- Of `tables` ([{schema, name}]: relations Spark's plan reads as tables of the session
    catalog), those the metastore registers as views now: the session's Iceberg catalog cache
    still holds a table of that name that was dropped (spark.sql.catalog.spark_catalog.cache-enabled,
    30 s by default), and Spark reads the dropped table's rows, not the view. One SHOW TABLE
    EXTENDED per schema. -#}
{% macro views_read_as_tables(tables, listed=none) %}
  {% set found = [] %}
  {% for wanted in dbt_merge._by_schema(tables).values() %}
    {% for view in dbt_merge._views_named(wanted[0].schema, wanted | map(attribute='name') | list, listed) %}
      {% do found.append({'schema': wanted[0].schema, 'name': view.name}) %}
    {% endfor %}
  {% endfor %}
  {{ return(found) }}
{% endmacro %}

{% macro cached_tables_message(cached, reader="the model's SELECT") %}
  {% set names = [] %}
  {% for table in cached %}{% do names.append(table.schema ~ '.' ~ table.name) %}{% endfor %}
  {{ return(reader ~ " reads " ~ names | join(', ') ~ " as a table, but the metastore registers "
      ~ ("it" if names | length == 1 else "them") ~ " as a view: this Spark session's Iceberg catalog cache"
      ~ " still holds a table of that name dropped since (spark.sql.catalog.spark_catalog.cache-enabled),"
      ~ " and the merge would read the dropped table's rows. Run refresh table " ~ names[0]
      ~ " in this session (or run dbt in a new process, or set spark.sql.catalog.spark_catalog.cache-enabled"
      ~ " to false) and run the merge again. The target was not changed.") }}
{% endmacro %}

{% macro _unreadable_plan_message(unreadable) %}
  {% if unreadable.reason == 'redacted' %}
    {% set why = "Spark redacts part of its plan (spark.sql.redaction.string.regex matches a name in it), so the"
                 ~ " views the SELECT reads cannot be told. Set spark.sql.redaction.string.regex, for the session"
                 ~ " dbt runs in, to a pattern that matches no database, view or plan node name the model reads" %}
  {% elif unreadable.reason == 'cut short' %}
    {% set unraised = dbt_merge.plan_length_not_raised() %}
    {% set why = "Spark prints its plan cut short (spark.sql.maxPlanStringLength), and the merge could not print"
                 ~ " it in full " ~ unraised.why ~ ", so the views the SELECT reads cannot be told. "
                 ~ unraised.fix ~ ", for the session dbt runs in" %}
  {% else %}
    {% set why = "Spark prints a view of its plan in a form the package does not read (" ~ unreadable.line | trim
                 ~ "). Report it to dbt_merge's maintainers" %}
  {% endif %}
  {{ return("cannot check whether the model's SELECT reads an Iceberg view replaced since it was created, which"
      ~ " Spark would read at its first definition: " ~ why ~ ". The target was not changed.") }}
{% endmacro %}

{#- The persistent views of the session catalog that the SELECT reads, directly, through other
    views, or in a subquery of merge_update_condition, delete_condition or incremental_predicates:
    {views: [{schema, name, shown}], unreadable: none or {reason, line}}. `shown` is the name as
    Spark printed it when it redacted part of it (then `name` is a SHOW TABLES pattern, `*` for
    what was redacted). No views when Spark cannot analyze the SELECT: staging it then fails with
    Spark's own error, before anything is written. -#}
{% macro _views_read(sql, cfg, target, plan_text=none) %}
  {% set conditions = dbt_merge._view_conditions(cfg, target) %}
  {% if not conditions %}
    {% set read = dbt_merge.parse_plan_views(plan_text) if plan_text is not none else dbt_merge._plan_views(sql) %}
    {% do read.update({'reader': "the model's SELECT"}) %}
    {{ return(read) }}
  {% endif %}
  {#- the conditions analyzed as the merge reads them, the SELECT as DBT_INTERNAL_SOURCE and the
      table as DBT_INTERNAL_DEST: one EXPLAIN lists the views of all -#}
  {% set read = dbt_merge._plan_views('select 1 from (\n' ~ sql ~ '\n) as DBT_INTERNAL_SOURCE'
      ~ (' cross join ' ~ target ~ ' as DBT_INTERNAL_DEST' if target is not none else '')
      ~ ' where (' ~ conditions | join(') and (') ~ ')') %}
  {% if read.error is none %}
    {% do read.update({'reader': "the model's SELECT, with its merge conditions,"}) %}
    {{ return(read) }}
  {% endif %}
  {% set alone = dbt_merge._plan_views(sql) %}
  {% do alone.update({'reader': "the model's SELECT"}) %}
  {% if alone.error is none %}
    {#- the SELECT is analyzed, the conditions with it are not: their views cannot be told -#}
    {{ dbt_merge.raise_merge_error("merge_update_condition, delete_condition or incremental_predicates (those"
        ~ " holding a query: " ~ conditions | join('; ') ~ ") cannot be analyzed with the SELECT as"
        ~ " DBT_INTERNAL_SOURCE and the table as DBT_INTERNAL_DEST, so the views they read cannot be checked."
        ~ " Spark says: " ~ read.error ~ " Fix the condition. The target was not changed.") }}
  {% endif %}
  {{ return(alone) }}
{% endmacro %}

{#- The merge conditions (delete_condition; with a target, merge_update_condition and
    incremental_predicates) that hold a query, whose views the check reads with the SELECT's. -#}
{% macro _view_conditions(cfg, target) %}
  {% set conditions = [] %}
  {% set candidates = [cfg.get('delete_condition')] if cfg else [] %}
  {% if cfg and target is not none %}
    {% do candidates.extend([cfg.get('update_condition')] + (cfg.get('predicates') or [])) %}
  {% endif %}
  {#- a condition that reads a relation holds a query (SELECT, or TABLE name); one without costs nothing -#}
  {% for condition in candidates if condition and modules.re.search('(?i)\\b(select|table)\\b', condition | string) %}
    {% do conditions.append(condition | string) %}
  {% endfor %}
  {{ return(conditions) }}
{% endmacro %}

{#- Whether the views check can read the plan of the staged SELECT (stage_select's `views`)
    instead of explaining the SELECT before it is staged: Spark, a merge into an existing table
    none of whose conditions holds a query (those are analyzed with the SELECT and the table,
    _views_read). The check then runs right after the view is made, before it is cached or
    anything else is read or written; its refusal drops the view (raise_merge_error). -#}
{% macro views_checked_with_stage(cfg, target) %}
  {{ return(adapter.dispatch('views_checked_with_stage', 'dbt_merge')(cfg, target)) }}
{% endmacro %}

{% macro default__views_checked_with_stage(cfg, target) %}
  {{ return(false) }}
{% endmacro %}

{% macro spark__views_checked_with_stage(cfg, target) %}
  {{ return(target is not none and not dbt_merge._view_conditions(cfg, target)) }}
{% endmacro %}

{#- The views of `sql`'s analyzed plan as _views_read returns them, and Spark's error when it
    could not analyze `sql` (error; none when it did). A plan printed cut short is printed once
    more with spark.sql.maxPlanStringLength raised for that statement, then put back as it was. -#}
{% macro _plan_views(sql) %}
  {% set explain = 'explain extended ' ~ sql %}
  {% set found = dbt_merge.parse_plan_views(dbt_merge.run_sql(explain, 'dbt_merge_views').rows | map(attribute=0) | join('\n')) %}
  {% if found.unreadable and found.unreadable.reason == 'cut short' %}
    {% set found = dbt_merge.parse_plan_views(dbt_merge.explain_at_full_length(explain, 'dbt_merge_views')) %}
  {% endif %}
  {{ return(found) }}
{% endmacro %}

{#- The text of an EXPLAIN statement run with spark.sql.maxPlanStringLength raised for that one
    statement, then put back as it was: for a plan Spark printed cut short (plan_cut_short).
    The setting is the session's, which other threads share: one that read it while another had
    it raised put the raised value back at its end, and the user's length was gone (red team
    helper-44, 4 threads). So the raised value carries the user's: 2,000,000,000 plus it, read
    back by any thread as the user's, and every thread puts back the user's own; one whose
    EXPLAIN ran after another had put it back runs it again (a few times). A length written so
    that it cannot be read here (or too large to carry) is raised and put back as before. -#}
{% macro explain_at_full_length(explain, name) %}
  {% set setting = 'spark.sql.maxPlanStringLength' %}
  {% set raised = 2000000000 %}
  {% set read = dbt_merge.session_setting(setting, name) %}
  {% if read.redacted %}
    {#- a length that cannot be read cannot be put back: the plan stays as Spark prints it, cut
        short, and its readers refuse it as unreadable, naming the setting -#}
    {{ return(dbt_merge.run_sql(explain, name).rows | map(attribute=0) | join('\n')) }}
  {% endif %}
  {% set value = read.value | trim %}
  {% set found = modules.re.match('^(\\d+)\\s*(b|k|kb|m|mb|g|gb)?$', value | lower) %}
  {% set bytes = (found.group(1) | int) * {'': 1, 'b': 1, 'k': 1024, 'kb': 1024, 'm': 1048576, 'mb': 1048576,
                                          'g': 1073741824, 'gb': 1073741824}[found.group(2) or ''] if found else none %}
  {% if bytes is none or (bytes < raised and bytes > 147483632) %}
    {% do dbt_merge.keep_session_conf({setting: 2147483632}) %}
    {% set text = dbt_merge.run_sql(explain, name).rows | map(attribute=0) | join('\n') %}
    {% do dbt_merge.keep_session_conf({setting: value}) %}
    {{ return(text) }}
  {% endif %}
  {% set original = bytes - raised if bytes >= raised else bytes %}
  {% set put_back = (original | string) if bytes >= raised else value %}
  {% set result = namespace(text='') %}
  {% for attempt in range(5) if attempt == 0 or dbt_merge.plan_cut_short(result.text) %}
    {% do dbt_merge.keep_session_conf({setting: raised + original}) %}
    {% set result.text = dbt_merge.run_sql(explain, name).rows | map(attribute=0) | join('\n') %}
  {% endfor %}
  {% do dbt_merge.keep_session_conf({setting: put_back}) %}
  {{ return(result.text) }}
{% endmacro %}

{#- Why a plan stays cut short after explain_at_full_length, and the fix, for the messages of
    the readers that then cannot read it (the upstream views', the cached target's): the session
    shows the length redacted, so it was not raised, or it was raised and something else set it
    back before each EXPLAIN ran (red team helper-72: the message blamed a redaction regex the
    user had not set). Read once more, on the refusal only. -#}
{% macro plan_length_not_raised() %}
  {% if dbt_merge.session_setting('spark.sql.maxPlanStringLength').redacted %}
    {{ return({'why': "(it raises the setting for one statement only when it can read the value to put back, not"
                      ~ " when spark.sql.redaction.options.regex shows it redacted)",
               'fix': "Unset spark.sql.maxPlanStringLength, or narrow spark.sql.redaction.options.regex so that it"
                      ~ " matches neither the setting's name nor a value such as 2000000000"}) }}
  {% endif %}
  {{ return({'why': "(it raised the setting for its EXPLAIN, and something else in the session set it back before"
                    ~ " the EXPLAIN ran, each time it tried: a hook, or another client of a shared session)",
             'fix': "Stop whatever sets spark.sql.maxPlanStringLength while the merge runs, or unset it"}) }}
{% endmacro %}

{#- Whether Spark printed a plan cut short (spark.sql.maxPlanStringLength): it ends with
    `... N more characters`, or, for a length too small to hold that, is only `Truncated plan
    of N characters` (red team helper-48: lengths up to about 30 refused every merge). -#}
{% macro plan_cut_short(text) %}
  {{ return(modules.re.search('[.][.][.] \\d+ more characters\\s*$', text) is not none
            or modules.re.match('^\\s*Truncated plan of \\d+ characters\\s*$', text) is not none) }}
{% endmacro %}

{#- Read the analyzed section of EXPLAIN EXTENDED's text. Every line's node name is read: a View
    line gives a view; a section missing (the text cut short, or its headers redacted), a node
    name Spark redacted, or a View line that does not read as one make the plan unreadable,
    never viewless. -#}
{% macro parse_plan_views(text) %}
  {% set redacted = '*********(redacted)' %}
  {% set head, tail = '== Analyzed Logical Plan ==\n', '\n== Optimized Logical Plan ==' %}
  {% set result = {'views': [], 'tables': [], 'unreadable': none, 'error': none} %}
  {#- a header twice (a string literal of the SELECT holding one, which the plans print as it
      is) would move the section: the plan is unreadable, never read at the wrong place -#}
  {% if text.count(head) > 1 or text.count(tail) > 1 %}
    {% do result.update({'unreadable': {'reason': 'unread', 'line': head | trim}}) %}
    {{ return(result) }}
  {% endif %}
  {% set analyzed = text.split(head, 1)[1] if head in text else '' %}
  {% if tail not in analyzed and modules.re.match('^[a-z][\\w$]*(\\.[\\w$]+)+(Exception|Error): ', analyzed)
        and not dbt_merge.plan_cut_short(text) %}
    {#- Spark could not analyze it: its error (a Java exception, and no later section) -#}
    {% do result.update({'error': analyzed.split('\n')[0] | trim}) %}
    {{ return(result) }}
  {% endif %}
  {% if tail not in analyzed %}
    {% do result.update({'unreadable': {'reason': 'redacted' if redacted in text else 'cut short', 'line': ''}}) %}
    {{ return(result) }}
  {% endif %}
  {% set lines = analyzed.split(tail, 1)[0].split('\n') %}
  {#- the section's first line (its schema, which the loop below does not read) redacted, e.g. by
      a regex stretched over the whole plan, or a section without a plan line: unreadable, never
      viewless. A redaction in a later line is judged there (a view's name redacted is matched) -#}
  {% if redacted in lines[0] or not (lines[1:] | select | list) %}
    {% do result.update({'unreadable': {'reason': 'redacted' if redacted in lines[0] else 'unread', 'line': lines[0]}}) %}
    {{ return(result) }}
  {% endif %}
  {% set part = '`(?:[^`]|``)+`' %}
  {% set alias = {'name': none} %}
  {% for line in lines[1:] if not result.unreadable %}
    {% set node = modules.re.match("^[\\s:|+!'-]*(\\S*)(.*)$", line) %}
    {% set name = modules.re.split('[(\\[]', node.group(1))[0] %}
    {#- a table of the session catalog read through Spark's DataSource V2 path (Iceberg's catalog,
        whose cache may hold a table dropped since): its name, from the SubqueryAlias above it -#}
    {% if name == 'RelationV2' and alias.name %}
      {% set parts = [] %}
      {% for p in modules.re.findall('`((?:[^`]|``)+)`|([^.`]+)', alias.name) %}{% do parts.append((p[0] | replace('``', '`')) or p[1]) %}{% endfor %}
      {% if parts | length == 3 and parts[0] == 'spark_catalog' and redacted not in alias.name %}
        {% set table = {'schema': parts[1], 'name': parts[2], 'shown': none} %}
        {% if table not in result.tables %}{% do result.tables.append(table) %}{% endif %}
      {% endif %}
    {% endif %}
    {% do alias.update({'name': node.group(2) | trim if name == 'SubqueryAlias' else none}) %}
    {% if redacted in node.group(1) or name.endswith('*********') %}
      {% do result.update({'unreadable': {'reason': 'redacted', 'line': line}}) %}
    {% elif name == 'View' %}
      {% set found = modules.re.match('^ \\((' ~ part ~ '(?:\\.' ~ part ~ ')*), \\[', node.group(2)) %}
      {% if found is none %}
        {% do result.update({'unreadable': {'reason': 'redacted' if redacted in line else 'unread', 'line': line}}) %}
      {% else %}
        {% set parts = [] %}
        {% for p in modules.re.findall('`((?:[^`]|``)+)`', found.group(1)) %}{% do parts.append(p | replace('``', '`')) %}{% endfor %}
        {#- a temporary view is one part (the views it reads are nested below it); a view of the
            session catalog is spark_catalog.db.v, or db.v (v1IdentifierNoCatalog; so is a
            global temporary view, which the metastore lookup then finds temporary) -#}
        {% if parts | length == 3 and parts[0] == 'spark_catalog' %}{% set parts = parts[1:] %}{% endif %}
        {% if parts | length == 2 and redacted in parts[0] %}
          {% do result.update({'unreadable': {'reason': 'redacted', 'line': line}}) %}
        {% elif parts | length == 2 %}
          {% set view = {'schema': parts[0], 'name': parts[1] | replace(redacted, '*'),
                         'shown': found.group(1) if redacted in parts[1] else none} %}
          {% if view not in result.views %}{% do result.views.append(view) %}{% endif %}
        {% endif %}
      {% endif %}
    {% endif %}
  {% endfor %}
  {{ return(result) }}
{% endmacro %}

{#- dbt: the view models upstream of the model in dbt's graph, walked through every kind of
    model (a table built from a view holds what the view gave), that dbt's relation cache holds
    as views: [{schema, name, upstream: the model's parent they are read through}]. None outside
    dbt (merge_dataframe). -#}
{% macro _upstream_view_models() %}
  {% set views = [] %}
  {% if graph is not defined or model.get('depends_on') is none %}
    {{ return(views) }}
  {% endif %}
  {% set queue, via = [], {} %}
  {% for parent in model.depends_on.nodes if parent not in via %}
    {% do queue.append(parent) %}{% do via.update({parent: parent}) %}
  {% endfor %}
  {% for id in queue %}
    {% set node = graph.nodes.get(id) %}
    {% if node is not none and node.resource_type == 'model' %}
      {% if node.config.materialized == 'view' %}
        {% set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) %}
        {% if relation is not none and relation.is_view %}
          {% set parent = graph.nodes[via[id]] %}
          {% do views.append({'schema': relation.schema, 'name': relation.identifier, 'shown': none,
                              'upstream': none if via[id] == id else parent.schema ~ '.' ~ parent.alias}) %}
        {% endif %}
      {% endif %}
      {% for parent in node.depends_on.nodes if parent not in via %}
        {% do queue.append(parent) %}{% do via.update({parent: via[id]}) %}
      {% endfor %}
    {% endif %}
  {% endfor %}
  {{ return(views) }}
{% endmacro %}

{#- Of `views` ([{schema, name, shown, upstream}]; a name may be a SHOW TABLES pattern), those
    the metastore registers as Iceberg views with a second version written since they were
    created, each once, with the name the metastore has: one SHOW TABLE EXTENDED per schema. -#}
{% macro replaced_iceberg_views(views, listed=none) %}
  {% set stale = [] %}
  {% for wanted in dbt_merge._by_schema(views).values() %}
    {% for found in dbt_merge._views_named(wanted[0].schema, wanted | map(attribute='name') | list, listed) if found.replaced %}
      {% set given = [] %}
      {% for view in wanted if modules.re.fullmatch('(?i)' ~ (view.name | replace('*', '.*')), found.name) %}
        {% do given.append(view) %}
      {% endfor %}
      {% set one = {} %}
      {% do one.update(given[0]) %}
      {% do one.update({'schema': given[0].schema, 'name': found.name}) %}
      {% do stale.append(one) %}
    {% endfor %}
  {% endfor %}
  {{ return(stale) }}
{% endmacro %}

{#- catalog_views of every schema of `relations` ([{schema, name}]), all their names asked in one
    SHOW TABLE EXTENDED per schema: {schema in lower case: [found]}, for _views_named. -#}
{% macro _catalog_views_by_schema(relations) %}
  {% set listed = {} %}
  {% for key, wanted in dbt_merge._by_schema(relations).items() %}
    {% do listed.update({key: dbt_merge.catalog_views(wanted[0].schema, wanted | map(attribute='name') | list)}) %}
  {% endfor %}
  {{ return(listed) }}
{% endmacro %}

{#- catalog_views(schema, names), from `listed` (_catalog_views_by_schema, which asked for these
    names and maybe others of the schema) when it holds the schema: those whose names match
    `names` as catalog_views matches them; else asked now. -#}
{% macro _views_named(schema, names, listed=none) %}
  {% if listed is none or (schema | lower) not in listed %}
    {{ return(dbt_merge.catalog_views(schema, names)) }}
  {% endif %}
  {{ return(dbt_merge._matching_views(listed[schema | lower], dbt_merge._names_regex(dbt_merge._name_patterns(names)))) }}
{% endmacro %}

{% macro _matching_views(found, matching) %}
  {% set kept = [] %}
  {% for view in found if modules.re.fullmatch(matching, view.name) %}
    {% do kept.append(view) %}
  {% endfor %}
  {{ return(kept) }}
{% endmacro %}

{#- `relations` ([{schema, name, ...}]) grouped by schema: {schema in lower case: [relation]},
    in the order they come. -#}
{% macro _by_schema(relations) %}
  {% set schemas = {} %}
  {% for relation in relations %}
    {% do schemas.setdefault(relation.schema | lower, []).append(relation) %}
  {% endfor %}
  {{ return(schemas) }}
{% endmacro %}

{#- The regex (case-insensitive, whole name) of SHOW TABLES `patterns` (_name_patterns). -#}
{% macro _names_regex(patterns) %}
  {{ return('(?i)(' ~ patterns | map('replace', '*', '.*') | join('|') ~ ')') }}
{% endmacro %}

{#- `names` (names, or SHOW TABLES patterns with `*`) as SHOW TABLES patterns, each once:
    metastore names are letters, digits and _, so anything else can only match as a wildcard. -#}
{% macro _name_patterns(names) %}
  {% set patterns = [] %}
  {% for name in names %}
    {% set pattern = modules.re.sub('[^A-Za-z0-9_*]+', '*', name | string) %}
    {% if pattern not in patterns %}{% do patterns.append(pattern) %}{% endif %}
  {% endfor %}
  {{ return(patterns) }}
{% endmacro %}

{#- The views of `schema` whose names match `names` (names, or SHOW TABLES patterns with `*`), as
    the metastore holds them now, from one SHOW TABLE EXTENDED (a name that is not there is no
    error): [{name, iceberg: an Iceberg view, replaced: one with a second version}]. Temporary
    views and tables are left out. The properties are read from the line Spark prints them on;
    their values may be redacted (spark.sql.redaction.options.regex), their names are not. -#}
{% macro catalog_views(schema, names) %}
  {% set patterns = dbt_merge._name_patterns(names) %}
  {% set matching = dbt_merge._names_regex(patterns) %}
  {% set found = [] %}
  {% for row in dbt_merge.run_sql('show table extended in ' ~ dbt_merge.quote_identifier(schema)
                                  ~ " like '" ~ patterns | join('|') ~ "'", 'dbt_merge_views').rows
        if not row[2] and '\nType: VIEW\n' in row[3] | string and modules.re.fullmatch(matching, row[1] | string) %}
    {#- from the properties' line to the end: a value holding a newline (set by another tool)
        continues them on the next lines; text after them can only add a match (a refusal) -#}
    {% set information = '\n' ~ (row[3] | string) %}
    {% set listed = information.split('\nTable Properties: [', 1)[1] if '\nTable Properties: [' in information else '' %}
    {% set listed = '[' ~ listed %}
    {% set iceberg = modules.re.search('(?:\\[|, )table_type=(?:(?i:ICEBERG-VIEW)|\\*{9}\\(redacted\\))(?:, |\\])', listed) is not none %}
    {% do found.append({'name': row[1] | string, 'iceberg': iceberg,
                        'replaced': iceberg and modules.re.search('(?:\\[|, )previous_metadata_location=', listed) is not none}) %}
  {% endfor %}
  {{ return(found) }}
{% endmacro %}
