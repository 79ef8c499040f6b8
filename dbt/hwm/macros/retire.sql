{#-
  Retiring hwm models (issue 29, case 5; issue 42).  dbt never drops the
  table of a model that was deleted or renamed; an hwm model also has a
  pipeline (still scheduled, still loading) and two helper relations.
  Several projects may share a database and a schema: each acts only on
  what its own models made, as recorded on the source view (projects.sql).

  - Every dbt run and build ends with hwm_check_retired (the package's
    on-run-end hook): a dbt warning for each pipeline of this project (an
    hwm or hwm_interval model's) in the project's schemas that no model of
    the project declares any more, with its schedule and target; the
    helper view and function of a model of this project whose table was
    dropped by hand are dropped; and what hwm made for a model that is now
    another materialization (its pipeline, <model>__hwm_src view and
    <model>__hwm_fn function) is dropped, since that model's new
    materialization owns the table now.
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
  What this package made for the running project's models, in the schemas
  of the project's models, that no model of the project declares or that
  lost their table: a list of {kind, pipeline, target, schedule, src, fn}.
  The project that made a pipeline is recorded on its source view,
  <model>__hwm_src (projects.sql); kind is
  - 'retired': a pipeline recorded as this project's that no hwm or
    hwm_interval model of the project declares (an interval pipeline too:
    it has no target, and is found by its source view);
  - 'unclaimed': a pipeline made by an older version of the package (no
    record) that no model of the project declares: it may be another
    project's, which records it at its next run, so it is only listed;
  - 'leftover': the helper view and function of this project's model whose
    table was dropped by hand (hwm's sql_drop trigger dropped the pipeline
    with it), no pipeline reading them: pipeline none.
  Another project's pipelines and helpers are never in the list.
-#}
{% macro _hwm_made_objects() -%}
  {%- set models = hwm._hwm_project_models() -%}
  {#- (the profile's schema too: a project whose models are all gone) -#}
  {%- set schemas = (models | map(attribute='schema') | list + [target.schema]) | unique | list -%}
  {%- set declared = [] -%}
  {%- for m in models if m.materialized in ['hwm', 'hwm_interval'] -%}
    {%- do declared.append(m.pipeline) -%}
    {#- (the staging pipeline of a --full-refresh in progress) -#}
    {%- do declared.append(m.pipeline[:50] ~ '#full_refresh') -%}
  {%- endfor -%}
  {%- if not schemas -%}{{- return([]) -}}{%- endif -%}
  {%- set r = run_query("with v as (
                           select c.oid, n.nspname, pg_catalog.left(c.relname, -9) as name,
                                  pg_catalog.format('%I.%I', n.nspname, c.relname) as src,
                                  pg_catalog.format('%I.%I', n.nspname, pg_catalog.left(c.relname, -9) || '__hwm_fn') as fn,
                                  " ~ hwm._hwm_project_of_sql('c.oid') ~ " as project
                             from pg_catalog.pg_class c
                             join pg_catalog.pg_namespace n on n.oid = c.relnamespace
                            where c.relkind = 'v' and pg_catalog.right(c.relname, 9) = '__hwm_src'
                              and n.nspname = any(" ~ hwm._hwm_text_array(schemas) ~ "))
                         select case when s.pipeline is null then 'leftover' when v.project is null then 'unclaimed' else 'retired' end,
                                s.pipeline, coalesce(s.target::text, pg_catalog.format('%I.%I', v.nspname, v.name)),
                                coalesce(s.schedule::text, 'not scheduled'), v.src, v.fn
                           from v left join hwm.state s on s.source::oid = v.oid
                          where case when s.pipeline is null
                                     then v.project = " ~ hwm._hwm_literal(project_name) ~ "
                                          and pg_catalog.to_regclass(pg_catalog.format('%I.%I', v.nspname, v.name)) is null
                                     else (v.project is null or v.project = " ~ hwm._hwm_literal(project_name) ~ ")
                                          and s.pipeline <> all(" ~ hwm._hwm_text_array(declared or ['']) ~ ")
                                          and pg_catalog.pg_has_role(s.owner, 'USAGE') end
                          order by 1, 2, 5") -%}
  {%- set out = [] -%}
  {%- for row in r.rows -%}
    {%- do out.append({'kind': row[0], 'pipeline': row[1], 'target': row[2], 'schedule': row[3], 'src': row[4], 'fn': row[5]}) -%}
  {%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{#- The retired pipelines of the project (kind 'retired' above). -#}
{% macro _hwm_retired_pipelines() -%}
  {{- return(hwm._hwm_made_objects() | selectattr('kind', 'equalto', 'retired') | list) -}}
{%- endmacro %}

{#- Drop a pipeline this package made and its helper view and function. -#}
{% macro _hwm_drop_made(pipeline, src, fn) -%}
  {%- if pipeline is not none -%}
    {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(pipeline) ~ ")") -%}
  {%- endif -%}
  {%- do run_query("drop view if exists " ~ src ~ "; drop function if exists " ~ fn ~ "()") -%}
{%- endmacro %}

{#-
  on-run-end: warn about this project's retired pipelines; drop the helper
  view and function of this project's models whose table was dropped by
  hand; remove what hwm made for the models of this run that are now
  another materialization.  Returns a statement for the hook to run (a
  no-op).
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
      {#- (not what another project made under this name) -#}
      {%- set made = run_query("select (select s.pipeline from hwm.state s where s.source = pg_catalog.to_regclass(" ~ hwm._hwm_literal(src) ~ ")),
                                       (pg_catalog.to_regclass(" ~ hwm._hwm_literal(src) ~ ") is not null
                                        or pg_catalog.to_regprocedure(" ~ hwm._hwm_literal(fn ~ "()") ~ ") is not null)
                                       and coalesce(" ~ hwm._hwm_project_of_sql("pg_catalog.to_regclass(" ~ hwm._hwm_literal(src) ~ ")") ~ ", "
                                                      ~ hwm._hwm_literal(project_name) ~ ") = " ~ hwm._hwm_literal(project_name)).rows[0] -%}
      {%- if made[1] -%}
        {%- do hwm._hwm_drop_made(made[0], src, fn) -%}
        {%- do log("hwm: model " ~ node.schema ~ "." ~ name ~ " is materialized as " ~ node.config.materialized ~ " now: its hwm pipeline" ~ (" " ~ made[0] if made[0] else "") ~ ", " ~ name ~ "__hwm_src and " ~ name ~ "__hwm_fn were dropped", info=true) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set found = hwm._hwm_made_objects() -%}
    {%- for p in found if p.kind == 'leftover' -%}
      {%- do hwm._hwm_drop_made(none, p.src, p.fn) -%}
      {%- do log("hwm: the table " ~ p.target ~ " was dropped: its helper view " ~ p.src ~ " and function " ~ p.fn ~ "() were dropped too", info=true) -%}
    {%- endfor -%}
    {%- if switched or (found | selectattr('kind', 'equalto', 'leftover') | list) -%}{%- do hwm._hwm_commit() -%}{%- endif -%}
    {%- for p in found if p.kind == 'retired' -%}
      {%- do exceptions.warn("hwm: pipeline " ~ p.pipeline ~ " (" ~ p.schedule ~ ", loading " ~ p.target ~ ") was made by an hwm model of this project (" ~ project_name ~ ") that the project no longer declares: `dbt run-operation hwm_retire` lists such pipelines, `dbt run-operation hwm_retire --args '{dry_run: false}'` drops them with their helper relations (their tables stay)") -%}
    {%- endfor -%}
  {%- endif -%}
  {{- return("select 1 as hwm_check_retired") -}}
{%- endmacro %}

{#- dbt run-operation hwm_retire [--args '{dry_run: false}']: list (or drop)
    the project's retired pipelines with their helper relations, and the
    helpers of its models whose table was dropped; tables stay.  Pipelines
    made by an older version of the package that no model declares are
    listed, never dropped: they may be another project's. -#}
{% macro hwm_retire(dry_run=true) -%}
  {%- if dry_run is not boolean -%}
    {{ exceptions.raise_compiler_error("hwm_retire: dry_run must be true or false, got " ~ dry_run) }}
  {%- endif -%}
  {%- if execute -%}
    {%- set all = hwm._hwm_made_objects() -%}
    {%- set found = all | rejectattr('kind', 'equalto', 'unclaimed') | list -%}
    {%- for p in found -%}
      {%- set what = ("pipeline " ~ p.pipeline ~ " (" ~ p.schedule ~ ", loading " ~ p.target ~ ") with " if p.pipeline else "the helpers of the dropped table " ~ p.target ~ ", ")
                     ~ p.src ~ " and " ~ p.fn ~ "()" -%}
      {%- if dry_run -%}
        {%- do log("hwm_retire: would drop " ~ what, info=true) -%}
      {%- else -%}
        {%- do hwm._hwm_drop_made(p.pipeline, p.src, p.fn) -%}
        {%- do log("hwm_retire: dropped " ~ what ~ (("; the table " ~ p.target ~ " and the run history stay") if p.pipeline else ""), info=true) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- for p in all if p.kind == 'unclaimed' -%}
      {%- do log("hwm_retire: pipeline " ~ p.pipeline ~ " (" ~ p.schedule ~ ", loading " ~ p.target ~ ") was made by an older version of the hwm package and no model of this project declares it; it may be another dbt project's (whose next run records it as its own), so it is not dropped. If it is a model this project deleted, drop it yourself: select hwm.drop_pipeline('" ~ p.pipeline ~ "'); drop view " ~ p.src ~ "; drop function " ~ p.fn ~ "()", info=true) -%}
    {%- endfor -%}
    {%- if not found -%}
      {%- do log("hwm_retire: no retired hwm pipeline of project " ~ project_name ~ " in its schemas", info=true) -%}
    {%- elif dry_run -%}
      {%- do log("hwm_retire: a dry run; --args '{dry_run: false}' drops them", info=true) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
