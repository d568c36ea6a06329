{# Makes plain is_incremental() true in merge models too (see the package README). #}
{% macro is_incremental() %}{{ return(dbt_merge.is_incremental()) }}{% endmacro %}
