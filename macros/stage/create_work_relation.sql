{#-
  A session-scoped working copy of a SELECT, read several times by one run (checks, statistics,
  the write), so that every step sees the same rows and the SELECT runs once.
  materialize=false asks for a plain view (read once).
-#}
{% macro create_work_relation(relation, select_sql, materialize=true, pin='checked') %}
  {{ return(adapter.dispatch('create_work_relation', 'dbt_merge')(relation, select_sql, materialize, pin)) }}
{% endmacro %}

{% macro default__create_work_relation(relation, select_sql, materialize, pin) %}
  {{ dbt_merge.raise_merge_error("no working relation for adapter '" ~ adapter.type() ~ "'.") }}
{% endmacro %}

{# DuckDB: a temp table lives in the connection and is rolled back with the transaction. #}
{% macro duckdb__create_work_relation(relation, select_sql, materialize, pin) %}
  {% do dbt_merge.run_statement('create or replace temporary ' ~ ('table ' if materialize else 'view ')
      ~ relation ~ ' as ' ~ select_sql) %}
{% endmacro %}

{# Spark: a temporary view, cached so later reads do not re-run the SELECT (and do not see the
   target after the MERGE changed it). The cache is lazy: the next statement to read the relation
   is always an aggregate over all of its rows (the source check for the staged SELECT and the
   deduplicate candidates, the count for the changes), which fills the cache before anything is
   written, instead of a separate job to fill it. One exception: candidates rebuilt after a tie
   during a rebuild (first run, full refresh) are filled by the table's creation; they are
   computed from the staged SELECT, cached by then, not from a table being written. Staging +
   checking 200k rows measured 0.8 s this way against 1.5 s with an eager `cache table` (2 cores,
   warm JVM). #}
{% macro spark__create_work_relation(relation, select_sql, materialize, pin) %}
  {#- A temporary view keeps its SQL text by default and is analyzed again at each read: a table
      the SELECT reads that changes meanwhile (another writer, a column added) gives a plan the
      lazy cache (looked up by plan) does not hold, and the checks, the counts and the write
      would each see other rows. Storing the analyzed plan pins it: every read sees the rows the
      cache holds. The setting is the session's, which other dbt threads share (method: session,
      a Thrift server's single session): one that puts it back (put_back_session_conf, at the
      end of its model) between this `set` and the view would unpin this view. So once the view
      exists, it is read whether the view is pinned (_view_plan_is_stored: its plan analyzed
      twice is the same plan), and the view made again while it is not (a few times; then the
      run is refused rather than merged from a plan that can change; a session whose plans
      show no expression ids is refused, naming the setting that hides them). Reading the setting again
      instead was not enough: a third thread's `set` after the reset and before the read showed
      `true` for a view made while it was off (CI, 4 threads: a first run counted 209 rows
      inserted into a table that held 199). `pin`: 'checked'
      (so), or 'stage': the view reads only the staged SELECT (pinned, cached)
      and the target (whose commits the write refuses since it was counted), the views run_merge
      makes from the stage; a plan analyzed again reads the same, so the setting is left as the
      stage's `set` left it (one statement fewer). -#}
  {% set key = 'spark.sql.legacy.storeAnalyzedPlanForView' %}
  {% set pinned = namespace(done=false, unreadable=false, text=none, cut=false) %}
  {% for attempt in range(5) if not pinned.done and not pinned.unreadable %}
    {% if pin != 'stage' %}
      {% do dbt_merge.keep_session_conf({key: 'true'}) %}
    {% endif %}
    {% do dbt_merge.run_statement('create or replace temporary view ' ~ relation ~ ' as ' ~ select_sql) %}
    {% set read = dbt_merge._view_plan_is_stored(relation) if pin == 'checked' else {'stored': true, 'text': none} %}
    {% set pinned.done = read.stored == true %}
    {% set pinned.unreadable = read.stored is none %}
    {% set pinned.cut = read.get('cut', false) %}
    {% set pinned.text = read.text %}
  {% endfor %}
  {% if pinned.unreadable and pinned.cut %}
    {% do dbt_merge.run_statement('drop view if exists ' ~ relation) %}
    {#- the cause as the session shows it now (red team helper-73: this message blamed the
        redaction regex where something else had set the length back) -#}
    {% set unraised = dbt_merge.plan_length_not_raised() %}
    {{ dbt_merge.raise_merge_error("this Spark session prints query plans cut short (spark.sql.maxPlanStringLength), "
        ~ "and the merge could not print its staged SELECT's plan in full " ~ unraised.why ~ ". The merge reads "
        ~ "that plan to know that the SELECT keeps the rows the checks saw until the write. " ~ unraised.fix
        ~ ", for the session that runs the merge, then run this model again. The target was not changed.") }}
  {% endif %}
  {% if pinned.unreadable %}
    {% do dbt_merge.run_statement('drop view if exists ' ~ relation) %}
    {{ dbt_merge.raise_merge_error("this Spark session prints query plans without their expression ids (the number after # in "
        ~ "`id#12L`), so the merge cannot tell whether its staged SELECT keeps the rows the checks saw until the "
        ~ "write (a view that another thread's reset of " ~ key ~ " left unpinned is read anew at each step). "
        ~ "A spark.sql.redaction.string.regex that matches part of a plan does this: narrow it so that it "
        ~ "matches no plan text (or unset it) for the session that runs the merge, then run this model again. "
        ~ "The target was not changed.") }}
  {% endif %}
  {% if not pinned.done %}
    {% do dbt_merge.run_statement('drop view if exists ' ~ relation) %}
    {{ dbt_merge.raise_merge_error("something else in this Spark session set " ~ key ~ " back each time "
        ~ "the merge staged its SELECT (5 times): the staged rows could change between the checks and "
        ~ "the write. Stop whatever resets it during the merge (the profile's server_side_parameters, which "
        ~ "dbt-spark applies again before every statement; a hook; another client of a shared session), "
        ~ "then run this model again. The target was not changed.") }}
  {% endif %}
  {% if materialize %}
    {% do dbt_merge.cache_lazy(relation) %}
  {% endif %}
  {#- the view's plan as the pin check read it (pin 'checked'): stage_select reads the views the
      SELECT reads from it -#}
  {{ return(pinned.text) }}
{% endmacro %}

{#- Spark: whether a temporary view keeps the plan analyzed when it was made
    (storeAnalyzedPlanForView) rather than its SQL text: {stored: true, false, or none when the
    session prints plans whose expression ids cannot be read; text: the plan's first text read,
    in full}. A view that keeps its text is parsed and
    analyzed again at every read, each time with new expression ids, so two plans of a read
    differ; a view that keeps its plan gives the same plan, ids and all, each time. EXPLAIN
    EXTENDED of the view's LIMIT 0, which the optimizer makes an empty relation: no scan is
    planned (12 ms a read against 200 ms for a plain EXPLAIN of a two-table join on Iceberg),
    and its analyzed plan prints the view's ids (`View (`v`, [id#12L,...])`) whatever
    spark.sql.debug.maxToStringFields (the physical plan alone prints none for an empty range,
    or for one field). Whole texts are compared, no section looked for (a string literal of the
    SELECT can print a section's header). A text cut short (spark.sql.maxPlanStringLength) is
    printed again in full: a cut just after `id#1` made an unpinned view look pinned (red team
    helper-45). Unreadable: a text that shows Spark's redaction (a regex can hide some ids and
    leave a column named `r#1`) or no id at all; never a guess from the setting (red team
    helper-44: a third thread's `set` made that guess right for views made while it was off). -#}
{% macro _view_plan_is_stored(relation) %}
  {% set explain = 'explain extended select * from ' ~ relation ~ ' limit 0' %}
  {% set texts = [] %}
  {% for attempt in range(2) %}
    {% set text = dbt_merge.run_sql(explain, 'dbt_merge_conf').rows | map(attribute=0) | join('\n') %}
    {% if dbt_merge.plan_cut_short(text) %}
      {% set text = dbt_merge.explain_at_full_length(explain, 'dbt_merge_conf') %}
    {% endif %}
    {% if dbt_merge.plan_cut_short(text) %}
      {{ return({'stored': none, 'text': none, 'cut': true}) }}
    {% endif %}
    {% if '*********(redacted)' in text or not modules.re.search('#\\d', text) %}
      {{ return({'stored': none, 'text': none, 'cut': false}) }}
    {% endif %}
    {% do texts.append(text) %}
  {% endfor %}
  {{ return({'stored': texts[0] == texts[1], 'text': texts[0]}) }}
{% endmacro %}

{#- Spark: `cache lazy table relation`, its columns stored without compression. The cache holds
    the rows the checks saw for the steps that read them again; it is not kept beyond the run.
    Compressing it cost more than reading the rows again: checking a 2M-row snapshot read
    through the cache took 4.1-6.7 s compressed, 2.4-2.7 s uncompressed, 1.7 s with no cache
    (issue 22, local[2], idle machine; the cache is read as fast either way). Spark takes the
    setting when the cache statement runs, not when the cache fills, so it is set for that
    statement only and put back to the session's value (a merge in another thread of the
    session caching meanwhile gets one setting or the other, and two such merges may leave it
    false: only the memory a cache takes differs, never what it holds). `bytes`: an upper bound
    of the relation's size when known (rows * columns * 8), from which the rule of
    _uncompressed_cache_bytes applies. -#}
{% macro cache_lazy(relation, name='dbt_merge', bytes=none) %}
  {% if bytes is not none and bytes < dbt_merge._uncompressed_cache_bytes() %}
    {#- small (the estimate's rule as stage_select's): cached as the session compresses caches,
        which costs less than the three statements around the setting -#}
    {% do dbt_merge.run_statement('cache lazy table ' ~ relation, name) %}
  {% else %}
    {% do dbt_merge.run_with_settings('cache lazy table ' ~ relation,
                                      {'spark.sql.inMemoryColumnarStorage.compressed': 'false'}, name) %}
  {% endif %}
{% endmacro %}

{#- Spark: run one statement with session `settings` ({key: value}) and put each key back to the
    session's value right after it (a key already at its value is not touched). For settings
    Spark reads when the statement runs, not later; see cache_lazy on another thread's
    statements meanwhile. A key whose value the session shows redacted (session_setting) is not
    touched: its value could not be put back. The statement then runs as the session has it,
    which the two callers allow: a cache compressed takes less memory and holds the same rows
    (cache_lazy); a copy of the SELECT written with the session's own datetime rebase mode reads
    back the values it wrote, or Spark refuses a date it cannot write (stage_select). -#}
{% macro run_with_settings(sql, settings, name='dbt_merge') %}
  {% set previous = {} %}
  {% for key, value in settings.items() %}
    {% set read = dbt_merge.session_setting(key) %}
    {% set now = read.value %}
    {% if read.redacted %}
      {% do log('dbt_merge: ' ~ key ~ ' is shown redacted in this session (spark.sql.redaction.options.regex), so it '
          ~ 'is left as it is for: ' ~ sql[:80], info=false) %}
    {% elif now | lower != value | string | lower %}
      {% do previous.update({key: now}) %}
      {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
    {% endif %}
  {% endfor %}
  {% do dbt_merge.run_statement(sql, name) %}
  {% for key, value in previous.items() %}
    {% do dbt_merge.run_statement('set ' ~ key ~ '=' ~ value, 'dbt_merge_conf') %}
  {% endfor %}
{% endmacro %}

{#-
  Stage the model's SELECT (create_work_relation) for a merge into an existing table. Returns
  {copy: the table it copied the rows to, to drop at the end, or none; bytes: the engine's
  estimate of the SELECT's size, or none}.
  Spark: a SELECT that Spark calls non-deterministic (rand(), uuid(), monotonically_increasing_id(),
  a non-deterministic UDF, also through an upstream view) cannot be the source of a MERGE INTO a
  copy-on-write table: Spark 3.5 refuses it (INVALID_NON_DETERMINISTIC_EXPRESSIONS), whatever the
  cache holds. Its rows are written once to a parquet table in the target's schema
  (<model>__dbt_merge_s_<invocation id>, marked as the package's work table, dropped at the end,
  and by the next run if this one fails: finish_interrupted_write), and the stage reads that
  table: every step reads the rows the checks saw, and the MERGE's source is deterministic. The
  copy is written with the dates and timestamps as they are (Spark's proleptic calendar, the
  rebase settings CORRECTED for that statement only): a parquet write of a date before 1582 fails
  otherwise (INCONSISTENT_BEHAVIOR_CROSS_VERSION), and only this package reads the copy. Not
  ORC, which would take the old dates but reads a column named with a backtick back as NULL
  (Spark 3.5, seen in the differential suite). Spark's own flag decides: a join
  condition holding the SELECT in a subquery fails analysis exactly when the SELECT is
  non-deterministic, and EXPLAIN returns that failure as text without running anything.
  Otherwise the same EXPLAIN (COST) prints the optimizer's estimate of the staged SELECT (its
  InMemoryRelation's statistics, no Spark job; _cached_size_estimate): count_tests_keys decides
  with it, before the source check, whether the count will test the keys.
  `target` (the table merged into, none on a build): the same EXPLAIN also reads it, and an
  Iceberg target the session caches (CACHE TABLE, a DataFrame's cache()) is refused
  (_refuse_cached_target): the counts would read the cached rows, not the table another
  application may have committed to since (Spark 3.5 does not reload an Iceberg table's cached
  rows on REFRESH TABLE with the catalog's cache on: it re-runs the cached plan on the table
  object it loaded then).
-#}
{% macro stage_select(relation, select_sql, materialize, target=none, views=none) %}
  {{ return(adapter.dispatch('stage_select', 'dbt_merge')(relation, select_sql, materialize, target, views)) }}
{% endmacro %}

{% macro default__stage_select(relation, select_sql, materialize, target=none, views=none) %}
  {% if views is not none %}
    {% do dbt_merge.check_upstream_views(select_sql, views, target) %}
  {% endif %}
  {% do dbt_merge.create_work_relation(relation, select_sql, materialize) %}
  {{ return({'copy': none, 'bytes': none, 'session': none, 'columns': none}) }}
{% endmacro %}

{% macro spark__stage_select(relation, select_sql, materialize, target=none, views=none) %}
  {#- cached as the session compresses caches (one statement), then, when the estimate says the
      SELECT is large or cannot say, cached again without compression (cache_lazy): a small
      SELECT costs no setting read, set and put back. The probe also reads whether the session
      runs Iceberg's SQL extensions (a static setting: `session`, read by iceberg_extensions),
      through Spark's variable substitution (${...} in the SQL text is the setting's value, '' when
      unset): one statement fewer than a `set` read. A session that turned substitution off
      (spark.sql.variable.substitute=false) prints the text unchanged: then it is read with `set`
      when needed. (Not the analyzed-plan setting: substituting a boolean setting that is not
      set fails the statement, "should be boolean, but was".) -#}
  {% set view_plan = dbt_merge.create_work_relation(relation, select_sql, false) %}
  {% if views is not none %}
    {#- the views the SELECT reads (check_upstream_views), from the plan the pin check read
        (views_checked_with_stage: no merge condition holds a query): one EXPLAIN fewer. Before
        the cache and anything else: a refusal leaves nothing (raise_merge_error drops the view) -#}
    {% do dbt_merge.check_upstream_views(select_sql, views, target, view_plan) %}
  {% endif %}
  {#- the SELECT's columns as the same plan prints them, where that text says them exactly
      (_plan_columns); else relation_columns reads them (`describe table`) -#}
  {% set columns = dbt_merge._plan_columns(view_plan) %}
  {% if materialize %}
    {% do dbt_merge.run_statement('cache lazy table ' ~ relation) %}
  {% endif %}
  {#- the target's subquery after the stage's: its InMemoryRelation, when cached, is printed after
      the stage's (the estimate reads the first) -#}
  {% set probe = "explain cost select '${spark.sql.extensions}' as dbt_merge_extensions "
                 ~ 'from range(1) join range(1) on exists (select 1 from ' ~ relation ~ ')'
                 ~ (' and exists (select 1 from ' ~ target ~ ')' if target is not none else '') %}
  {% set plan_text = dbt_merge.run_sql(probe, 'dbt_merge_work_table').rows | map(attribute=0) | join('\n') %}
  {% if target is not none and dbt_merge.plan_cut_short(plan_text) %}
    {#- printed cut short: a cached target could be in the part cut; printed once more in full -#}
    {% set plan_text = dbt_merge.explain_at_full_length(probe, 'dbt_merge_work_table') %}
  {% endif %}
  {% set session = none %}
  {#- (a value shown redacted, which substitution gives too, is not known: read again when needed,
      iceberg_extensions) -#}
  {% set shown = plan_text.split(' AS dbt_merge_extensions')[0].split('\n')[-1] %}
  {% if ' AS dbt_merge_extensions' in plan_text and '${spark.sql.extensions}' not in plan_text
        and '*********(redacted)' not in shown %}
    {% set session = {'iceberg_extensions': 'IcebergSparkSessionExtensions' in shown} %}
  {% endif %}
  {#- the probe's own literal, redacted (spark.sql.redaction.options.regex matching the
      extensions), is no part of the plans read below: every merge into a table was refused as
      one whose cache cannot be read (red team helper-69). Only that literal: a redaction
      anywhere else still makes the plan unreadable -#}
  {% set plan_text = modules.re.sub('\\[\\*{9}\\(redacted\\) AS dbt_merge_extensions#', '[redacted_extensions AS dbt_merge_extensions#', plan_text) %}
  {% if 'INVALID_NON_DETERMINISTIC' not in plan_text %}
    {% set cached_target = dbt_merge._cached_v2_scans(plan_text, 1 if materialize else 0) if target is not none else false %}
    {% if cached_target %}
      {% do dbt_merge._refuse_cached_target(target, cached_target) %}
    {% endif %}
    {% set bytes = dbt_merge._cached_size_estimate(plan_text) %}
    {% if materialize and (bytes is none or bytes >= dbt_merge._uncompressed_cache_bytes()) %}
      {#- the cache is lazy: nothing was filled yet, uncaching it costs no job -#}
      {% do dbt_merge.run_statement('uncache table if exists ' ~ relation) %}
      {% do dbt_merge.cache_lazy(relation) %}
    {% endif %}
    {{ return({'copy': none, 'bytes': bytes, 'session': session, 'columns': columns}) }}
  {% endif %}
  {% if target is not none %}
    {#- the probe failed analysis (a non-deterministic SELECT): the target asked alone -#}
    {% set target_plan = dbt_merge.run_sql('explain cost select 1 from ' ~ target, 'dbt_merge_work_table').rows
                         | map(attribute=0) | join('\n') %}
    {% if dbt_merge.plan_cut_short(target_plan) %}
      {#- printed cut short, as the probe above (red team helper-44: refused as unreadable) -#}
      {% set target_plan = dbt_merge.explain_at_full_length('explain cost select 1 from ' ~ target, 'dbt_merge_work_table') %}
    {% endif %}
    {% set cached_target = dbt_merge._cached_v2_scans(target_plan, 0) %}
    {% if cached_target %}
      {% do dbt_merge._refuse_cached_target(target, cached_target) %}
    {% endif %}
  {% endif %}
  {% if target is not none %}
    {#- the copies failed runs left (finish_interrupted_write does not look for them on every run
        of a table MERGE INTO writes) -#}
    {% set copy_prefix = (target.identifier ~ '__dbt_merge_s_') | lower %}
    {% for work in dbt_merge.leftover_work_tables(target) if (work.relation.identifier | lower).startswith(copy_prefix) %}
      {% do dbt_merge.run_statement('drop table if exists ' ~ work.relation, 'dbt_merge_leftovers') %}
    {% endfor %}
  {% endif %}
  {% set copy = this.incorporate(path={'identifier': this.identifier ~ '__dbt_merge_s_' ~ invocation_id | replace('-', '')},
                                 type='table') %}
  {% do log('dbt_merge ' ~ model.name ~ ': the SELECT is non-deterministic; its rows are written once to '
      ~ copy ~ ' and merged from there.') %}
  {% do dbt_merge.run_with_settings('create table ' ~ copy ~ ' using parquet ' ~ dbt_merge.work_table_properties(this)
      ~ ' as select * from ' ~ relation, {'spark.sql.parquet.datetimeRebaseModeInWrite': 'CORRECTED',
                                          'spark.sql.parquet.int96RebaseModeInWrite': 'CORRECTED'},
      'dbt_merge_work_table') %}
  {% do dbt_merge.drop_work_relation(relation, materialize) %}
  {% do dbt_merge.create_work_relation(relation, 'select * from ' ~ copy, materialize) %}
  {{ return({'copy': copy, 'bytes': none, 'session': none, 'columns': none}) }}
{% endmacro %}

{#- Spark: the columns of a view (dbt Columns) from the text of EXPLAIN EXTENDED of its rows
    (`select * from v limit 0`, _view_plan_is_stored's): the analyzed section's first line,
    `name: type, ...` (each attribute's name and simpleString, as DESCRIBE TABLE of the view gives
    them: char and varchar print as string in both). Spark prints a name as it is, so a name can
    forge that line: `a, b: int` reads as two columns, a newline ends the line early (red team
    helper-56: a column skipped, not added, or dropped by sync_all_columns, the run reported
    done), and a name holding line breaks can print the lines below it too (helper-57: the
    schema, GlobalLimit, LocalLimit and Project lines all forged). So the line is taken only
    where the plan's next lines are `GlobalLimit 0`, `LocalLimit 0` and `Project [a#1, b#2L,
    ...]` (one line, closed) whose attributes are the same names in the same order, each a plain
    identifier (letters, digits, _) with its id, and where everything after the optimized
    plan's header is, to the character, what those attributes give (`LocalRelation <empty>,
    [a#1, b#2L]` and `LocalTableScan <empty>, [...]`): Spark prints every attribute there as it
    is, so a name that is not a plain identifier shows there whatever it forged above, and the
    headers, each printed once, cannot be forged. Every type atomic (no struct, map or array,
    whose field names may hold anything and whose text Spark cuts at
    spark.sql.debug.maxToStringFields; no interval), no `... N more fields` (a longer list is cut
    the same way), no name twice (in any case), one analyzed section; else none, and the caller
    asks DESCRIBE; and none where a name is one of Hudi's metadata columns, which
    relation_columns leaves out. -#}
{% macro _plan_columns(text) %}
  {% set head = '== Analyzed Logical Plan ==\n' %}
  {% if text is none or text.count(head) != 1 %}
    {{ return(none) }}
  {% endif %}
  {% set lines = text.split(head, 1)[1].split('\n') %}
  {% if lines | length < 4 or lines[1] != 'GlobalLimit 0' or lines[2] != '+- LocalLimit 0' %}
    {{ return(none) }}
  {% endif %}
  {% set project = modules.re.match('^   \\+- Project \\[(.*)\\]$', lines[3]) %}
  {% if project is none %}
    {{ return(none) }}
  {% endif %}
  {% set attributes = [] %}
  {% for piece in project.group(1).split(', ') %}
    {% set found = modules.re.match('^([A-Za-z_][A-Za-z0-9_]*)#[0-9]+L?$', piece) %}
    {% if found is none %}
      {{ return(none) }}
    {% endif %}
    {% do attributes.append(found.group(1)) %}
  {% endfor %}
  {% set columns = [] %}
  {% for piece in lines[0].split(', ') %}
    {% set found = modules.re.match('^([A-Za-z_][A-Za-z0-9_]*): ([a-z_][a-z0-9_]*(\\([0-9]+(,[0-9]+)?\\))?)$', piece) %}
    {% if found is none %}
      {{ return(none) }}
    {% endif %}
    {% if found.group(2).startswith('interval') or found.group(1) in ['_hoodie_commit_time', '_hoodie_commit_seqno',
          '_hoodie_record_key', '_hoodie_partition_path', '_hoodie_file_name'] %}
      {#- an interval (the legacy calendar one prints as `interval`); a name of Hudi's metadata
          columns, which relation_columns leaves out (red team helper-58: read here, it was added
          to the table, or its addition failed with Spark's raw error) -#}
      {{ return(none) }}
    {% endif %}
    {% do columns.append(api.Column.create(found.group(1), found.group(2))) %}
  {% endfor %}
  {% set names = columns | map(attribute='name') | list %}
  {% if names != attributes or (names | map('lower') | unique | list | length) != names | length %}
    {{ return(none) }}
  {% endif %}
  {#- the rest of the text is what these attributes give, to the character: the empty relation
      of a LIMIT 0 prints every attribute again, a forged name included, as it is -#}
  {% set optimized, physical = '== Optimized Logical Plan ==', '== Physical Plan ==' %}
  {% set rest = 'LocalRelation <empty>, [' ~ project.group(1) ~ ']\n\n' ~ physical ~ '\nLocalTableScan <empty>, [' ~ project.group(1) ~ ']' %}
  {% if text.count(optimized) != 1 or text.count(physical) != 1 or (text.split(optimized, 1)[1] | trim) != rest %}
    {{ return(none) }}
  {% endif %}
  {{ return(columns if columns else none) }}
{% endmacro %}

{#- Spark: the estimated size of a staged SELECT (bytes) from which its cache is kept without
    compression (cache_lazy); a smaller one is cached as the session compresses caches, which
    costs less than the three statements around the setting (dbt var
    dbt_merge_spark_uncompressed_cache_bytes, default 1 MiB: about 25,000 rows of 5 columns; the
    compressed cache of 2M rows cost 1.5-4 s more, about 1-2 us a row, against ~30 ms for the
    three statements). -#}
{% macro _uncompressed_cache_bytes() %}
  {{ return(var('dbt_merge_spark_uncompressed_cache_bytes', 1048576) | int) }}
{% endmacro %}

{#- The optimizer's estimate of the first InMemoryRelation (a cached relation: the staged SELECT)
    in Spark's EXPLAIN COST text: its rows when Spark knows them (an Iceberg table reports its
    row count), as rows * columns * 8 bytes like the count's own rule (spark__count_changes),
    else its sizeInBytes; none when the text has neither. Spark prints e.g.
    `Statistics(sizeInBytes=91.6 MiB, rowCount=2.00E+6)`. -#}
{% macro _cached_size_estimate(plan_text) %}
  {% set units = {'B': 1, 'KiB': 2 ** 10, 'MiB': 2 ** 20, 'GiB': 2 ** 30, 'TiB': 2 ** 40, 'PiB': 2 ** 50, 'EiB': 2 ** 60} %}
  {% for line in plan_text.split('\n') if 'InMemoryRelation [' in line and 'Statistics(' in line %}
    {% set columns = line.split('InMemoryRelation [')[1].split(']')[0].split(', ') | length %}
    {% set stats = {} %}
    {% for part in line.split('Statistics(')[-1].split(')')[0].split(', ') if '=' in part %}
      {% do stats.update({part.split('=')[0].strip(): part.split('=')[1].strip()}) %}
    {% endfor %}
    {% if stats.get('rowCount') %}
      {{ return((stats.rowCount | float * columns * 8) | int) }}
    {% endif %}
    {% set size = (stats.get('sizeInBytes') or '').split(' ') %}
    {% if size | length == 2 and size[1] in units %}
      {{ return((size[0] | float * units[size[1]]) | int) }}
    {% endif %}
    {{ return(none) }}
  {% endfor %}
  {{ return(none) }}
{% endmacro %}

{#- Whether Spark's EXPLAIN COST text reads, after its first `skip` cached relations, a cached
    relation (InMemoryRelation: one of the optimized plan's nodes, printed with its statistics;
    the physical plan's are not) whose cached plan scans a DataSource V2 table (BatchScan: an
    Iceberg table). A cached parquet, orc or Hive table (FileScan, HiveTableScan) is not one:
    REFRESH TABLE, which every run makes (reload_table), caches it again from its files now. The
    cached plan is printed below the node, up to the next node with statistics. -#}
{% macro _cached_v2_scans(plan_text, skip) %}
  {% set seen = {'relations': 0, 'inside': false, 'v2': false} %}
  {% for line in plan_text.split('\n') %}
    {% if line.startswith('==') %}
      {#- a section's header: the optimized plan ends (the physical plan prints no statistics) -#}
      {% do seen.update({'inside': false}) %}
    {% elif 'Statistics(' in line %}
      {% set cached = 'InMemoryRelation [' in line %}
      {% if cached %}{% do seen.update({'relations': seen.relations + 1}) %}{% endif %}
      {% do seen.update({'inside': cached and seen.relations > skip}) %}
    {% elif seen.inside and 'BatchScan ' in line %}
      {% do seen.update({'v2': seen.v2 or true}) %}
    {% endif %}
    {#- a part of the optimized plan Spark redacted (spark.sql.redaction.string.regex) could hide a
        cached relation, its statistics or its scan ('InMemory*********(redacted)', a line's
        Statistics): unreadable, never read as no cache. (A regex that matches a column's name
        redacts the plan of every merge reading it; the upstream-view check refuses those already.) -#}
    {% if line.startswith('== Optimized Logical Plan') %}
      {% do seen.update({'optimized': true}) %}
    {% elif line.startswith('==') %}
      {% do seen.update({'optimized': false}) %}
    {% endif %}
    {% if '*********(redacted)' in line and (seen.get('optimized') or modules.re.sub('^[\\s:+|-]*', '', line).startswith('*********(redacted)')) %}
      {% do seen.update({'v2': 'unreadable'}) %}
    {% endif %}
  {% endfor %}
  {#- cut short: the part cut could hold a cached relation; with a part redacted too, both named -#}
  {% if dbt_merge.plan_cut_short(plan_text) %}
    {{ return('cut short and redacted' if seen.v2 == 'unreadable' else 'cut short') }}
  {% endif %}
  {{ return(seen.v2) }}
{% endmacro %}

{#- A merge target the session caches: the counts would read the cached rows. Refused before
    anything is written; the user's cache is theirs (not uncached here). -#}
{% macro _refuse_cached_target(target, state=true) %}
  {% if state in ('cut short', 'cut short and redacted') %}
    {#- still cut short after explain_at_full_length: the length could not be raised for the EXPLAIN,
        since the session shows it redacted (spark.sql.redaction.options.regex matches the user's
        value, or the raised one another thread of the run has set for a moment: red team
        helper-71, a value regex of ten digits), or a plan longer than Spark prints at all -#}
    {% set unraised = dbt_merge.plan_length_not_raised() %}
    {{ dbt_merge.raise_merge_error("cannot check whether the target " ~ target ~ " is cached in this Spark"
        ~ " session (a cached Iceberg target would be counted from its cached rows): Spark prints the plan cut"
        ~ " short (spark.sql.maxPlanStringLength), and the merge could not print it in full " ~ unraised.why
        ~ ". " ~ unraised.fix ~ ", for the session that runs the merge"
        ~ ("; Spark also redacts part of the plan (spark.sql.redaction.string.regex matches a node's name or"
           ~ " statistics): set that regex so that it matches no plan node's name (InMemoryRelation, BatchScan,"
           ~ " RelationV2)" if state == 'cut short and redacted' else "")
        ~ ", then run the merge again. The target was not changed.") }}
  {% endif %}
  {% if state == 'unreadable' %}
    {{ dbt_merge.raise_merge_error("cannot check whether the target " ~ target ~ " is cached in this Spark"
        ~ " session (a cached Iceberg target would be counted from its cached rows): Spark redacts part of"
        ~ " its optimized plan (spark.sql.redaction.string.regex matches a node's name or statistics)."
        ~ " Set spark.sql.redaction.string.regex so that it matches no plan node's name (InMemoryRelation,"
        ~ " BatchScan, RelationV2), then run the merge again. The target was not changed.") }}
  {% endif %}
  {{ dbt_merge.raise_merge_error("the target " ~ target ~ " is cached in this Spark session (CACHE TABLE, or"
      ~ " a DataFrame's cache() of the table), so the merge would count its changes from the cached rows:"
      ~ " a commit another application made to the table since it was cached would be miscounted or"
      ~ " lost. REFRESH TABLE does not reload the cached rows of an Iceberg table (Spark 3.5, with the"
      ~ " catalog's cache on). Run uncache table " ~ target ~ " in this session before the merge (cache"
      ~ " it again after it, if you need to), and run the merge again. The target was not changed.") }}
{% endmacro %}
