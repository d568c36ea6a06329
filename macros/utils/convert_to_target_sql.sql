{#- `expr` as a column of type `data_type` stores it; NULL where it cannot be stored (the source
    check counts those and refuses the run). A collation is not converted to: values are
    compared byte for byte (compared_value). -#}
{% macro convert_to_target_sql(expr, data_type) %}
  {{ return(adapter.dispatch('convert_to_target_sql', 'dbt_merge')(expr, data_type)) }}
{% endmacro %}

{% macro default__convert_to_target_sql(expr, data_type) %}
  {{ return('try_cast(' ~ expr ~ ' as ' ~ data_type ~ ')') }}
{% endmacro %}

{# Spark: try_cast gives NULL for most values a type cannot hold, but not for two kinds of column:
   - FLOAT and DOUBLE: a value beyond the type's range becomes +-Infinity (a DOUBLE 1e300, a string
     '1e400'), ANSI mode on or off. Such a result is NULL here unless the value already was an
     infinity (how Spark writes one as a string, or spells one that it parses).
   - CHAR(n) / VARCHAR(n) of a parquet or Hive table: a cast to either is a plain string cast
     (no padding, no limit), while the table stores a value as its write does: trailing spaces
     beyond n dropped, then a value still longer than n refused (EXCEED_LIMIT_LENGTH), and a CHAR
     value padded to n. Converted the same way, keys match their stored value and unchanged
     values compare equal; a value too long is NULL (refused by the source check). #}
{% macro spark__convert_to_target_sql(expr, data_type) %}
  {% set spelled = data_type | lower | replace(' ', '') %}
  {% set varchar = spelled.startswith('varchar(') %}
  {% if (varchar or spelled.startswith('char(')) and spelled.endswith(')') %}
    {% set n = spelled.split('(')[1][:-1] | int %}
    {% set text = 'cast(' ~ expr ~ ' as string)' %}
    {% set fitted = 'case when char_length(' ~ text ~ ') <= ' ~ n ~ ' then ' ~ text
                    ~ " when rtrim(substr(" ~ text ~ ', ' ~ (n + 1) ~ ")) = '' then substr(" ~ text ~ ', 1, ' ~ n ~ ') end' %}
    {{ return(fitted if varchar else 'rpad(' ~ fitted ~ ', ' ~ n ~ ", ' ')") }}
  {% endif %}
  {% set converted = 'try_cast(' ~ expr ~ ' as ' ~ data_type ~ ')' %}
  {% if data_type | lower | trim in ['float', 'double', 'real'] %}
    {{ return('case when abs(' ~ converted ~ ") = cast('Infinity' as double) and lower(trim(cast(" ~ expr
              ~ " as string))) not in ('infinity', '+infinity', '-infinity', 'inf', '+inf', '-inf') then null else "
              ~ converted ~ ' end') }}
  {% endif %}
  {{ return(converted) }}
{% endmacro %}
