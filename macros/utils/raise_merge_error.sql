{#- Every error the package raises goes through here, so they all start the same way:
    the package, the model, then what is wrong and how to fix it. -#}
{% macro raise_merge_error(message) %}
  {{ exceptions.raise_compiler_error("dbt_merge: model '" ~ model.name ~ "': " ~ message) }}
{% endmacro %}
