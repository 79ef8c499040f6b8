{#-
  Retiring hwm models (issue 29, case 5).  dbt never drops the table of a
  model that was deleted or renamed; an hwm model also has a pipeline
  (still scheduled, still loading) and two helper relations.

  - Every dbt run and build ends with hwm_check_retired (the package's
    on-run-end hook): a dbt warning for each pipeline this package made (its
    source is <table>__hwm_src) in the project's schemas that no model of
    the project declares any more, with its schedule and target; and what
    hwm made for a model that is now another materialization (its pipeline,
    <model>__hwm_src view and <model>__hwm_fn function) is dropped, since
    that model's new materialization owns the table now.
  - `dbt run-operation hwm_retire` lists those pipelines (a dry run);
    `--args '{dry_run: false}'` drops them with their helper relations.
    Their tables and run history stay.
-#}

{#- The models of the project (schema, relation name, materialization, pipeline). -#}
{% macro _hwm_project_models() -%}
  {%- set out = [] -%}
  {%- for node in graph.nodes.values() if node.resource_type in ['model', 'snapshot', 'seed'] -%}
    {%- do out.append({'schema': node.schema, 'name': node.alias or node.name,
                       'materialized': node.config.materialized,
                       'pipeline': node.config.get('pipeline') or (node.schema ~ '.' ~ (node.alias or node.name))}) -%}
  {%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{#-
  The pipelines this package made (source <target>__hwm_src, next to the
  target) in the schemas of the project's models, that no hwm or
  hwm_interval model declares: a list of {pipeline, target, schedule,
  src, fn}.
-#}
{% macro _hwm_retired_pipelines() -%}
  {%- set models = hwm._hwm_project_models() -%}
  {%- set schemas = models | map(attribute='schema') | unique | list -%}
  {%- set declared = [] -%}
  {%- for m in models if m.materialized in ['hwm', 'hwm_interval'] -%}
    {%- do declared.append(m.pipeline) -%}
  {%- endfor -%}
  {%- if not schemas -%}{{- return([]) -}}{%- endif -%}
  {%- set r = run_query("select s.pipeline, s.target::text, coalesce(s.schedule::text, 'not scheduled'),
                                pg_catalog.format('%I.%I', n.nspname, c.relname), pg_catalog.format('%I.%I', n.nspname, t.relname || '__hwm_fn')
                           from hwm.state s
                           join pg_catalog.pg_class c on c.oid = s.source
                           join pg_catalog.pg_class t on t.oid = s.target
                           join pg_catalog.pg_namespace n on n.oid = t.relnamespace
                          where c.relnamespace = t.relnamespace and c.relname = t.relname || '__hwm_src'
                            and n.nspname = any(" ~ hwm._hwm_text_array(schemas) ~ ")
                            and s.pipeline <> all(" ~ hwm._hwm_text_array(declared or ['']) ~ ")
                            and pg_catalog.pg_has_role(s.owner, 'USAGE')
                          order by 1") -%}
  {%- set out = [] -%}
  {%- for row in r.rows -%}
    {%- do out.append({'pipeline': row[0], 'target': row[1], 'schedule': row[2], 'src': row[3], 'fn': row[4]}) -%}
  {%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{#- Drop a pipeline this package made and its helper view and function. -#}
{% macro _hwm_drop_made(pipeline, src, fn) -%}
  {%- if pipeline is not none -%}
    {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(pipeline) ~ ")") -%}
  {%- endif -%}
  {%- do run_query("drop view if exists " ~ src ~ "; drop function if exists " ~ fn ~ "()") -%}
{%- endmacro %}

{#-
  on-run-end: warn about retired pipelines; remove what hwm made for the
  models of this run that are now another materialization.  Returns a
  statement for the hook to run (a no-op).
-#}
{% macro hwm_check_retired() -%}
  {%- if execute and flags.WHICH in ['run', 'build'] -%}
    {%- set switched = [] -%}
    {%- for res in results if res.node.resource_type == 'model' and res.node.config.materialized not in ['hwm', 'hwm_interval'] and res.status == 'success' -%}
      {%- do switched.append(res.node) -%}
    {%- endfor -%}
    {%- for node in switched -%}
      {%- set name = node.alias or node.name -%}
      {%- set src = adapter.quote(node.schema) ~ "." ~ adapter.quote(name ~ '__hwm_src') -%}
      {%- set fn = adapter.quote(node.schema) ~ "." ~ adapter.quote(name ~ '__hwm_fn') -%}
      {%- set made = run_query("select (select s.pipeline from hwm.state s where s.source = pg_catalog.to_regclass(" ~ hwm._hwm_literal(src) ~ ")),
                                       pg_catalog.to_regclass(" ~ hwm._hwm_literal(src) ~ ") is not null
                                       or pg_catalog.to_regprocedure(" ~ hwm._hwm_literal(fn ~ "()") ~ ") is not null").rows[0] -%}
      {%- if made[1] -%}
        {%- do hwm._hwm_drop_made(made[0], src, fn) -%}
        {%- do log("hwm: model " ~ node.schema ~ "." ~ name ~ " is materialized as " ~ node.config.materialized ~ " now: its hwm pipeline" ~ (" " ~ made[0] if made[0] else "") ~ ", " ~ name ~ "__hwm_src and " ~ name ~ "__hwm_fn were dropped", info=true) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if switched -%}{%- do hwm._hwm_commit() -%}{%- endif -%}
    {%- for p in hwm._hwm_retired_pipelines() -%}
      {%- do exceptions.warn("hwm: pipeline " ~ p.pipeline ~ " (" ~ p.schedule ~ ", loading " ~ p.target ~ ") was made by an hwm model that no model of this project declares any more: `dbt run-operation hwm_retire` lists such pipelines, `dbt run-operation hwm_retire --args '{dry_run: false}'` drops them with their helper relations (their tables stay)") -%}
    {%- endfor -%}
  {%- endif -%}
  {{- return("select 1 as hwm_check_retired") -}}
{%- endmacro %}

{#- dbt run-operation hwm_retire [--args '{dry_run: false}']: list (or drop)
    the retired pipelines with their helper relations; tables stay. -#}
{% macro hwm_retire(dry_run=true) -%}
  {%- if dry_run is not boolean -%}
    {{ exceptions.raise_compiler_error("hwm_retire: dry_run must be true or false, got " ~ dry_run) }}
  {%- endif -%}
  {%- if execute -%}
    {%- set found = hwm._hwm_retired_pipelines() -%}
    {%- for p in found -%}
      {%- if dry_run -%}
        {%- do log("hwm_retire: would drop pipeline " ~ p.pipeline ~ " (" ~ p.schedule ~ ", loading " ~ p.target ~ ") with " ~ p.src ~ " and " ~ p.fn ~ "()", info=true) -%}
      {%- else -%}
        {%- do hwm._hwm_drop_made(p.pipeline, p.src, p.fn) -%}
        {%- do log("hwm_retire: dropped pipeline " ~ p.pipeline ~ " with " ~ p.src ~ " and " ~ p.fn ~ "(); the table " ~ p.target ~ " and the run history stay", info=true) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if not found -%}
      {%- do log("hwm_retire: no retired hwm pipeline in the project's schemas", info=true) -%}
    {%- elif dry_run -%}
      {%- do log("hwm_retire: a dry run; --args '{dry_run: false}' drops them", info=true) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
