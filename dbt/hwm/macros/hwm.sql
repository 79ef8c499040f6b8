{#-
  hwm's dbt macros.  Each one builds one hwm statement from its arguments
  (values quoted as SQL literals, never pasted in raw) and

  - in a hook (pre-hook, post-hook, on-run-start, on-run-end) returns it,
    so that dbt runs it where the hook runs: inside the model's transaction
    by default, before it with before_begin(...), after it with
    after_commit(...);
  - under `dbt run-operation` runs it at once and logs the summary row
    (dbt commits when the operation ends).

  hwm.run and hwm.overwrite are functions that work inside the caller's
  transaction, so they are safe in every hook.  hwm.backfill and
  hwm.catch_up are procedures: called inside a transaction block (which is
  where dbt-postgres runs every statement) they do all their batches in that
  one transaction.
-#}

{#- hwm.run(pipeline): one incremental run.  (The materializations
    materialized='hwm' and 'hwm_interval' are in materializations.sql and
    interval.sql.) -#}
{% macro hwm_run(pipeline=none, nowait=false, model=none) -%}
  {{- return(hwm._hwm_statement(
        "SELECT * FROM hwm.run(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_run', pipeline, model))
        ~ ", nowait => " ~ hwm._hwm_bool(nowait) ~ ")")) -}}
{%- endmacro %}

{#- hwm.overwrite(pipeline, from, to): overwrite an inclusive partition range. -#}
{% macro hwm_overwrite(pipeline=none, from_partition=none, to_partition=none, nowait=false, model=none) -%}
  {{- return(hwm._hwm_statement(
        "SELECT * FROM hwm.overwrite(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_overwrite', pipeline, model))
        ~ ", " ~ hwm._hwm_literal(from_partition)
        ~ ", " ~ hwm._hwm_literal(to_partition)
        ~ ", nowait => " ~ hwm._hwm_bool(nowait) ~ ")")) -}}
{%- endmacro %}

{#- CALL hwm.backfill(pipeline, from, to, batch_size, dry_run): overwrite every partition of a range.
    model=NAME instead of pipeline names the pipeline of an hwm model. -#}
{% macro hwm_backfill(pipeline=none, from_partition=none, to_partition=none, batch_size=1, dry_run=false, model=none) -%}
  {%- if batch_size is not number or batch_size is boolean -%}
    {{ exceptions.raise_compiler_error("hwm_backfill: batch_size must be an integer, got " ~ batch_size) }}
  {%- endif -%}
  {{- return(hwm._hwm_statement(
        "CALL hwm.backfill(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_backfill', pipeline, model))
        ~ ", " ~ hwm._hwm_literal(from_partition)
        ~ ", " ~ hwm._hwm_literal(to_partition)
        ~ ", batch_size => " ~ (batch_size | int)
        ~ ", dry_run => " ~ hwm._hwm_bool(dry_run) ~ ")")) -}}
{%- endmacro %}

{#- CALL hwm.rerun_intervals(pipeline, from_time, to_time): compute the
    intervals [from_time, to_time) of an interval pipeline (an hwm_interval
    model: model=NAME) again. -#}
{% macro hwm_rerun_intervals(pipeline=none, from_time=none, to_time=none, model=none) -%}
  {{- return(hwm._hwm_statement(
        "CALL hwm.rerun_intervals(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_rerun_intervals', pipeline, model))
        ~ ", " ~ hwm._hwm_literal(from_time)
        ~ ", " ~ hwm._hwm_literal(to_time) ~ ")")) -}}
{%- endmacro %}

{#- The pipeline of an hwm or hwm_interval model: its config 'pipeline', or
    "schema.alias". -#}
{% macro hwm_model_pipeline(model_name) -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == model_name -%}
      {{- return(node.config.get('pipeline') or (node.schema ~ '.' ~ node.alias)) -}}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("hwm: no model named " ~ model_name) }}
  {%- endif -%}
  {{- return(none) -}}
{%- endmacro %}

{% macro _hwm_pipeline_arg(macro_name, pipeline, model) -%}
  {%- if (pipeline is none) == (model is none) -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": give either pipeline or model (the name of an hwm model)") }}
  {%- endif -%}
  {{- return(pipeline if model is none else hwm.hwm_model_pipeline(model)) -}}
{%- endmacro %}

{#- CALL hwm.catch_up(pipeline): run batch after batch until the watermark stops moving. -#}
{% macro hwm_catch_up(pipeline=none, model=none) -%}
  {{- return(hwm._hwm_statement("CALL hwm.catch_up(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_catch_up', pipeline, model)) ~ ")")) -}}
{%- endmacro %}

{#- hwm.set_watermark(pipeline, watermark): move the watermark by hand (none: reload everything). -#}
{% macro hwm_set_watermark(pipeline=none, watermark=none, model=none) -%}
  {{- return(hwm._hwm_statement(
        "SELECT hwm.set_watermark(" ~ hwm._hwm_literal(hwm._hwm_pipeline_arg('hwm_set_watermark', pipeline, model))
        ~ ", " ~ hwm._hwm_literal(watermark) ~ ")")) -}}
{%- endmacro %}

{#- A value as an SQL text literal ('it''s'), none as NULL. -#}
{% macro _hwm_literal(value) -%}
  {%- if value is none -%}
    {{- return("NULL") -}}
  {%- else -%}
    {{- return("'" ~ (value | string | replace("'", "''")) ~ "'") -}}
  {%- endif -%}
{%- endmacro %}

{% macro _hwm_bool(value) -%}
  {%- if value is not boolean -%}
    {{ exceptions.raise_compiler_error("hwm: expected true or false, got " ~ value) }}
  {%- endif -%}
  {{- return("true" if value else "false") -}}
{%- endmacro %}

{#- Return the statement (hooks), or run it now (dbt run-operation). -#}
{% macro _hwm_statement(sql) -%}
  {%- if flags.WHICH == 'run-operation' -%}
    {%- if execute -%}
      {%- set result = run_query(sql) -%}
      {%- for row in result.rows -%}
        {%- set fields = [] -%}
        {%- for name in result.column_names -%}
          {%- do fields.append(name ~ "=" ~ row[loop.index0]) -%}
        {%- endfor -%}
        {%- do log("hwm: " ~ fields | join(", "), info=true) -%}
      {%- endfor -%}
      {%- do log("hwm: done: " ~ sql, info=true) -%}
    {%- endif -%}
    {{- return("") -}}
  {%- endif -%}
  {{- return(sql) -}}
{%- endmacro %}
