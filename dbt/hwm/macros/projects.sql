{#-
  Which dbt project made a pipeline (issue 42).  Several dbt projects may
  build hwm models in one database, even in one schema: each one's orphan
  warnings and hwm_retire must act on its own pipelines only.

  The record is the COMMENT of the pipeline's source view,
  <model>__hwm_src (both materializations make one; hwm.state.source names
  it), a JSON object written by the materialization:

    {"made_by": "hwm dbt package", "project": "<project_name>", "model": "<unique_id>"}

  Why there, and not a column of hwm.state or a table of the package's: the
  view is the package's own object, made and dropped with the pipeline (hwm's
  sql_drop trigger drops a pipeline with its source), so the record cannot
  outlive the pipeline nor be missing from one the package made; it needs no
  change to hwm's catalog, no schema or grants of the package's, and pg_dump
  keeps it.  dbt's persist_docs comments the model's table, never its helpers.

  A pipeline made by an older version of the package has no record: the
  project whose model next runs it writes its own (adopts it); until then no
  project names it as retired, and hwm_retire lists it apart, dropping
  nothing.
-#}

{#- The record of the running model, as the comment's text. -#}
{% macro _hwm_marker() -%}
  {{- return(tojson({'made_by': 'hwm dbt package', 'project': project_name, 'model': model.unique_id})) -}}
{%- endmacro %}

{#- COMMENT ON VIEW that writes the record on a source view. -#}
{% macro _hwm_mark_sql(view) -%}
  {{- return("comment on view " ~ view ~ " is " ~ hwm._hwm_literal(hwm._hwm_marker())) -}}
{%- endmacro %}

{#- The record written on a source view (src) whose comment carries none,
    or an older model id of this project: a pipeline made by an older
    version of the package (or by this project's model under another name)
    is this project's now.  Returns the COMMENT ON VIEW, and logs it. -#}
{% macro _hwm_adopt_sql(c, src, comment) -%}
  {%- do log("hwm " ~ c.pipeline ~ ": recorded as made by dbt project " ~ project_name ~ " (" ~ model.unique_id ~ ")"
             ~ ("" if comment else ": a pipeline made by an older version of the hwm package, adopted"), info=true) -%}
  {{- return(hwm._hwm_mark_sql(src)) -}}
{%- endmacro %}

{#- The record in a comment's text: a dict, or none (no comment, or not ours). -#}
{% macro _hwm_parse_marker(comment) -%}
  {%- if comment is string and comment.startswith('{"made_by": "hwm dbt package", ') -%}
    {{- return(fromjson(comment)) -}}
  {%- endif -%}
  {{- return(none) -}}
{%- endmacro %}

{#- SQL: the project of the record on the relation with OID relid_sql (NULL:
    none). -#}
{% macro _hwm_project_of_sql(relid_sql) -%}
  {{- return("(select d.description::jsonb operator(pg_catalog.->>) 'project' from pg_catalog.pg_description d
              where d.objoid = " ~ relid_sql ~ " and d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass and d.objsubid = 0
                and d.description like '{\"made_by\": \"hwm dbt package\", %')") -}}
{%- endmacro %}

{#-
  Before a model changes anything: its source view (src) may carry another
  project's record (two projects declaring one relation): an error, nothing
  changed.  Returns what to do with the record: 'keep' (ours), 'write' (none,
  or an older model id of this project).
-#}
{% macro _hwm_check_marker(c, src, comment) -%}
  {%- set m = hwm._hwm_parse_marker(comment) -%}
  {%- if m is not none and m.project != project_name -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\" and its source " ~ src.include(database=False)
         ~ ", which dbt project " ~ m.project ~ " made (its model " ~ m.model ~ "); this is project " ~ project_name
         ~ ". Two projects cannot build one relation: give this model another schema, alias or pipeline name. If this project is that one renamed, "
         ~ "hand the pipeline over with `COMMENT ON VIEW " ~ src.include(database=False) ~ " IS NULL` (this project adopts it at its next run)") }}
  {%- endif -%}
  {{- return('keep' if comment == hwm._hwm_marker() else 'write') -}}
{%- endmacro %}
