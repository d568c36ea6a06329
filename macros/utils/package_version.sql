{#- This dbt package's own version (its dbt_project.yml), whichever project installs it, or none
    when its dbt_project.yml names none. Passed to the Python package where the macros hand it a
    job (parquet_dataset_job, merge_history_job), which refuses a version other than its own
    (dbt_merge.version). -#}
{% macro package_version() %}
  {% set version = adapter.config.load_dependencies()['dbt_merge'].version %}
  {{ return(none if version is none else version | string) }}
{% endmacro %}
