{#-
  The folder of a `location` model, one string that every step of the model reads: the Python
  job that writes the dataset, is_incremental(), the --empty skip and the model's view. A
  relative path is relative to where dbt runs. `~` and `~/...` are the home folder as DuckDB
  reads `~` (its home_directory setting, else $HOME), so the dataset is where a read of
  `~/...` on the model's connection finds it. Refused (when `refuse`, else none is returned):
  `~user/...` (DuckDB has no such form), a glob character or a backslash (every read of the
  dataset globs `<location>/**/*.parquet`, in which DuckDB expands * ? [ { and reads \ as an
  escape). `location`: another model's config value, as its node holds it (default: this
  model's, rendered).
-#}
{% macro dataset_location(location=none, refuse=true) %}
  {% set raw = (render(config.get('location')) if location is none else location) | string %}
  {% set problem = none %}
  {% if not raw.strip() %}
    {% set problem = "is empty: name the dataset's folder." %}
  {% elif not raw.strip('/') %}
    {% set problem = "is the file system's root: a dataset is a folder of its own (every `*.parquet` below it "
        ~ "is its rows). Name that folder." %}
  {% elif raw.startswith('~') %}
    {% set rest = raw[1:] %}
    {% if rest and not rest.startswith('/') %}
      {% set problem = "starts with ~ followed by a name: DuckDB reads only ~ and ~/... as the home folder, "
          ~ "so the dataset would be written in one folder and looked for in another. Write the folder's full "
          ~ "path (or ~/... for the home folder)." %}
    {% else %}
      {% set home = adapter.add_query("select current_setting('home_directory')", auto_begin=false)[1].fetchone()[0]
                    or env_var('HOME', '') %}
      {% if not home %}
        {% set problem = "starts with ~, but neither DuckDB's home_directory setting nor $HOME says which folder "
            ~ "that is. Write the folder's full path." %}
      {% else %}
        {% set raw = home.rstrip('/') ~ rest %}
      {% endif %}
    {% endif %}
  {% endif %}
  {#- a variable set inside a for loop does not leave it (Jinja's scoping): select instead -#}
  {% set globbed = ['*', '?', '[', '{'] | select('in', raw) | list %}
  {% if problem is none and globbed %}
    {% set problem = "has a glob character (" ~ globbed | join(' ') ~ "), which DuckDB would expand when "
        ~ "reading the dataset (every later merge, the model's view, every reader). Choose a path without * ? [ {." %}
  {% endif %}
  {% if problem is none and '\\' in raw %}
    {% set problem = "has a backslash, which DuckDB's glob reads as an escape: `<location>/**/*.parquet` would "
        ~ "find no file in it (every later merge, the model's view, is_incremental()). Choose a path without \\." %}
  {% endif %}
  {% if problem is not none %}
    {% if not refuse %}
      {{ return(none) }}
    {% endif %}
    {{ dbt_merge.raise_merge_error("location '" ~ raw ~ "' " ~ problem ~ " The target was not changed.") }}
  {% endif %}
  {{ return(raw) }}
{% endmacro %}

{#- Whether the folder `path` (dataset_location) holds Parquet files: DuckDB's glob of
    `<path>/**/*.parquet`, the path passed as a bound parameter (never pasted into the SQL: a
    quote or any other character in it is just a character). The Python job checks that it sees
    what this saw (dbt_job.run_job), so the SELECT that is_incremental() shaped is never merged
    into a dataset it was not shaped for. -#}
{% macro dataset_has_files(path) %}
  {% set found = adapter.add_query('select count(*) from glob(?)', auto_begin=false,
                                   bindings=[path.rstrip('/') ~ '/**/*.parquet']) %}
  {{ return(found[1].fetchone()[0] > 0) }}
{% endmacro %}

{#- [{model, location}] of the project's other `merge` models with a `location` (each as
    dataset_location resolves it; one it would refuse is left out, its own run refuses it): the
    Python job refuses this model when one of them is its folder, holds it or lies in it. A
    location holding Jinja (`{{ var('lake') }}/customers`) is rendered here as its own model
    renders it: in this model's context, with `this` and `model` standing for that model. -#}
{% macro other_dataset_locations() %}
  {% set others = [] %}
  {% for node in graph.nodes.values() if node.resource_type == 'model' and node.unique_id != model.unique_id
       and node.config.materialized == 'merge' and node.config.get('location') %}
    {% set raw = node.config.location | string %}
    {% if '{{' in raw or '{%' in raw %}
      {% set parts = [] %}
      {% for part in [node.database, node.schema, node.alias] %}
        {% do parts.append('none' if part is none else tojson(part)) %}
      {% endfor %}
      {% set raw = render("{% set this = api.Relation.create(database=" ~ parts[0] ~ ", schema=" ~ parts[1]
          ~ ", identifier=" ~ parts[2] ~ ") %}{% set model = graph.nodes[" ~ tojson(node.unique_id) ~ "] %}" ~ raw) %}
    {% endif %}
    {% set location = dbt_merge.dataset_location(raw, refuse=false) %}
    {% if location is not none %}
      {% do others.append({'model': node.name, 'location': location}) %}
    {% endif %}
  {% endfor %}
  {{ return(others) }}
{% endmacro %}
