{#- This dbt package's own version (its dbt_project.yml), whichever project installs it. Passed
    to the Python package where the macros hand it a job (parquet_dataset_job,
    merge_history_job), which refuses a version other than its own (dbt_merge.version). -#}
{% macro package_version() %}
  {{ return(adapter.config.load_dependencies()['dbt_merge'].version | string) }}
{% endmacro %}
