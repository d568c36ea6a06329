{#- Refuse two columns whose names are equal but for case, in the SELECT (`target` none) or in
    the target table: every phase finds a column by its name ignoring case (`| lower`, Python's
    str.lower: `É` and `é`, `Σ` and `σ` too), so it would take one for the other and write the
    values of one into both, or into the other's column. An engine that keeps both (DuckDB keeps
    names that differ in case beyond A-Z; it renames a second `Name` to `name_1`) did so with no
    error (red team helper-75). Run before anything is written. In the target (`target` its
    relation), only a pair the run writes or reads (`used`: the names the SELECT brings, soft-delete
    and history columns included): a pair the model never names is kept as it is (red team
    helper-76: a table with 'É' and 'é' and a SELECT of neither merged right, and was refused). -#}
{% macro check_column_names(columns, target=none, used=none) %}
  {% set seen = {} %}
  {% set used = (used or []) | map('lower') | list %}
  {% for col in columns %}
    {% set folded = col.name | lower %}
    {% if folded in seen and (target is none or folded in used) %}
      {% set pair = "columns '" ~ seen[folded] ~ "' and '" ~ col.name ~ "', whose names differ only in case: "
          ~ "the merge matches column names ignoring case, so it would take one for the other (the values of one "
          ~ "written into both, or into the other's column). " %}
      {% if target is none %}
        {{ dbt_merge.raise_merge_error("the model's SELECT has " ~ pair
            ~ "Rename one of them in the SELECT. The target was not changed.") }}
      {% else %}
        {{ dbt_merge.raise_merge_error("the target table " ~ target ~ " has " ~ pair
            ~ "Rename one of them in the target table, or rebuild the table with --full-refresh (its columns are then "
            ~ "the SELECT's: the other column and its values are gone). The target was not changed.") }}
      {% endif %}
    {% endif %}
    {% do seen.update({folded: col.name}) %}
  {% endfor %}
{% endmacro %}
