{#- Refuse two columns whose names are equal but for case, in the SELECT (`target` none) or in
    the target table: every phase finds a column by its name ignoring case (`| lower`, Python's
    str.lower: `É` and `é`, `Σ` and `σ` too), so it would take one for the other and write the
    values of one into both, or into the other's column. An engine that keeps both (DuckDB keeps
    names that differ in case beyond A-Z; it renames a second `Name` to `name_1`) did so with no
    error (red team helper-75). Run before anything is written. -#}
{% macro check_column_names(columns, target=none) %}
  {% set seen = {} %}
  {% for col in columns %}
    {% set folded = col.name | lower %}
    {% if folded in seen %}
      {% set pair = "columns '" ~ seen[folded] ~ "' and '" ~ col.name ~ "', whose names differ only in case: "
          ~ "the merge matches column names ignoring case, so it would take one for the other (the values of one "
          ~ "written into both, or into the other's column). " %}
      {% if target is none %}
        {{ dbt_merge.raise_merge_error("the model's SELECT has " ~ pair
            ~ "Rename one of them in the SELECT. The target was not changed.") }}
      {% else %}
        {{ dbt_merge.raise_merge_error("the target " ~ target ~ " has " ~ pair
            ~ "Rename one of them in the table, or rebuild the table with --full-refresh (its columns are then "
            ~ "the SELECT's). The target was not changed.") }}
      {% endif %}
    {% endif %}
    {% do seen.update({folded: col.name}) %}
  {% endfor %}
{% endmacro %}
