{#-
  How full_merge writes a table that takes MERGE INTO (`storage` is table_storage(plan.target)),
  from the counts already made: 'merge', one MERGE INTO, or 'overwrite', one INSERT OVERWRITE of
  the whole merged table (replace_target). Other strategies always MERGE.

  full_merge_write 'merge' or 'overwrite' forces the choice. 'auto' (the default) overwrites an
  Iceberg or Delta table, without incremental_predicates, when no matched row is left as it is
  (none unchanged or held back) and the rows updated or deleted are at least half of the table:
    - then the merged table is the source's rows plus the few target rows the merge does not
      consider (NULL keys): the overwrite reads the target for those only and joins nothing,
      where a MERGE joins the whole target and, on a copy-on-write table, rewrites every file
      holding a matched row (with WHEN NOT MATCHED BY SOURCE every file: Spark 3.5 then prunes
      no target file, SPARK-49933). Measured (500k-row table, whole model run, one run each on
      2 cores shared with other work), every row changed: 6.1 s against 11.2 s copy-on-write,
      4.7 s against 7.2 s merge-on-read; 90% deleted, the rest changed: 2.2 s against 2.3 s,
      1.8 s against 2.7 s;
    - a matched row left as it is must be kept as the target holds it, which costs the overwrite
      two joins with the changes: measured no faster than the MERGE (half the rows changed:
      13.4 s against 14.0 s copy-on-write, 12.7 s against 11.2 s merge-on-read; half deleted:
      3.8 s against 3.1 s);
    - with incremental_predicates the merge considers a slice of the table, but an overwrite
      rewrites all of it: the MERGE stays the write whose cost follows the slice.
  A partitioned table is always written by MERGE INTO, also with full_merge_write='overwrite': its
  overwrite would need static partition overwrite mode, a session setting, which on dbt-spark's
  session method reaches every dbt thread's statements (keep_session_conf, replace_target). So is
  a merge that leaves the table empty: in dynamic mode an INSERT OVERWRITE of no rows replaces no
  partition, and an unpartitioned Iceberg table keeps every row (seen, differential case cful0159).
-#}
{% macro choose_full_merge_write(plan, counts, storage) %}
  {{ return(adapter.dispatch('choose_full_merge_write', 'dbt_merge')(plan, counts, storage)) }}
{% endmacro %}

{% macro default__choose_full_merge_write(plan, counts, storage) %}
  {% set replace_share = 0.5 %}
  {% if plan.actions.target_only != 'delete' %}
    {{ return('merge') }}
  {% endif %}
  {#- the table's rows now: soft-deleted rows stay, so total counts them -#}
  {% set target_rows = counts.total - counts.inserted + (0 if plan.soft_delete else counts.deleted) %}
  {% set rewritten = counts.updated + counts.deleted %}
  {% if plan.full_merge_write not in ['auto', 'merge', 'overwrite'] %}
    {{ dbt_merge.raise_merge_error("full_merge_write '" ~ plan.full_merge_write ~ "' is not one of: auto, merge, overwrite.") }}
  {% elif plan.full_merge_write == 'merge' %}
    {% set write, reason = 'merge', 'as configured' %}
  {% elif storage.partitioned %}
    {% set write, reason = 'merge', 'a partitioned table: its overwrite would need static partition '
        ~ 'overwrite mode, a session setting that other dbt threads sharing the session would run with' %}
  {% elif counts.total == 0 %}
    {% set write, reason = 'merge', 'the merge leaves the table empty: an INSERT OVERWRITE of no rows replaces '
        ~ 'nothing in dynamic partition overwrite mode, the mode other dbt threads sharing the session may have set' %}
  {% elif plan.full_merge_write == 'overwrite' %}
    {% set write, reason = 'overwrite', 'as configured' %}
  {% elif plan.predicates %}
    {% set write, reason = 'merge', 'incremental_predicates are set' %}
  {% elif storage.provider not in ['iceberg', 'delta'] %}
    {% set write, reason = 'merge', 'a ' ~ storage.provider ~ ' table' %}
  {% else %}
    {% set kept = counts.unchanged + (counts.held_back or 0) %}
    {% set write = 'overwrite' if kept == 0 and target_rows > 0 and rewritten >= replace_share * target_rows
                   else 'merge' %}
    {% set reason = rewritten ~ ' of ' ~ target_rows ~ ' rows updated or deleted, ' ~ kept
                    ~ ' matched rows left as they are' %}
  {% endif %}
  {% set staging = dbt_merge.table_wap_settings(plan) if write == 'overwrite' and storage.provider == 'iceberg' else [] %}
  {% if staging %}
    {#- the overwrite would be staged or go to the WAP branch, where its commit cannot be checked
        against the snapshot the merge counted; MERGE INTO writes as the session asks -#}
    {% set write, reason = 'merge', 'the table has write.wap.enabled and the session sets '
        ~ staging | join(', ') ~ ' (write-audit-publish)' %}
  {% endif %}
  {% do log('dbt_merge ' ~ plan.target ~ ': full_merge_write=' ~ plan.full_merge_write ~ ' (' ~ reason ~ '): '
      ~ ('INSERT OVERWRITE' if write == 'overwrite' else 'MERGE INTO')) %}
  {{ return(write) }}
{% endmacro %}
