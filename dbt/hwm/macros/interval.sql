{#-
  materialized='hwm_interval': a model computed once per finished interval
  of a source's time column, on an hwm interval pipeline (what dbt's
  microbatch intends, with hwm's readiness rule: an interval runs once it
  has ended and no transaction in flight can still write into it).

    {{ config(materialized='hwm_interval', time_column='created_at',
              time_interval='1 hour', target_time_column='hour',
              unique_key=['hour', 'kind']) }}
    select date_trunc('hour', created_at) as hour, kind, count(*) as n
      from {{ source('shop', 'events') }}
     where created_at >= {{ hwm.interval_start() }} and created_at < {{ hwm.interval_end() }}
     group by 1, 2

  The pipeline's command replaces the target's rows of an interval (those
  whose target_time_column lies in it) by the model's rows for it, in one
  statement.  The source whose time column says when an interval is ready
  is time_source ('schema.table'), or else the model's only source or ref.
  The pipeline reads it through <model>__hwm_src, a view over the SQL
  function <model>__hwm_fn() that selects the time column from it: a
  function's body records no dependency, so dbt may drop and re-create the
  time source (a ref() rebuilt, a new materialization) without taking the
  pipeline, its intervals done and its schedule with it.
  The command runs with search_path = pg_catalog, pg_temp (dbt's ref() and
  source() are schema-qualified; qualify functions of your own).
-#}

{#- The bounds of the interval being computed, in the model's SQL: its start
    (inclusive) and end (exclusive), of the time column's type. -#}
{% macro interval_start() -%}$1{%- endmacro %}
{% macro interval_end() -%}$2{%- endmacro %}

{#- The relation whose time column drives the model: config time_source, or
    the model's only upstream source or model. -#}
{% macro _hwm_time_source(c) -%}
  {%- if c.time_source is not none -%}
    {%- set parts = c.time_source.split('.') -%}
    {%- if parts | length != 2 -%}
      {{ hwm._hwm_config_error('time_source', "must be schema.table, got " ~ c.time_source) }}
    {%- endif -%}
    {{- return(api.Relation.create(database=this.database, schema=parts[0], identifier=parts[1])) -}}
  {%- endif -%}
  {%- set ups = model.depends_on.nodes -%}
  {%- if ups | length != 1 -%}
    {{ hwm._hwm_config_error('time_source', "is needed: the model reads " ~ ups | length ~ " sources or models (" ~ ups | join(', ') ~ "), so say which one's time column (" ~ c.time_column ~ ") decides when an interval is ready, e.g. time_source='shop.events'") }}
  {%- endif -%}
  {%- set node = graph.sources[ups[0]] if ups[0].startswith('source.') else graph.nodes[ups[0]] -%}
  {{- return(api.Relation.create(database=node.database, schema=node.schema, identifier=(node.identifier if ups[0].startswith('source.') else node.alias))) -}}
{%- endmacro %}

{#- The pipeline's command: replace the rows of interval [$1, $2) of the
    relation by the model's rows for it.  The DELETE runs first (the
    INSERT's filter waits for its count), so a key deleted and inserted
    again does not conflict. -#}
{% macro _hwm_interval_command(c, relation, cols) -%}
  {%- set tc = adapter.quote(c.target_time_column) -%}
  {%- set collist = hwm._hwm_quoted_list(cols) -%}
  {{- return("with hwm_deleted as (delete from " ~ relation ~ " as t where t." ~ tc ~ " >= $1 and t." ~ tc ~ " < $2 returning 1)\n"
             ~ "insert into " ~ relation ~ " (" ~ collist ~ ")\nselect " ~ collist ~ " from (\n" ~ sql ~ "\n) as hwm_model\n"
             ~ "where hwm_model." ~ tc ~ " >= $1 and hwm_model." ~ tc ~ " < $2 and (select count(*) from hwm_deleted) >= 0") -}}
{%- endmacro %}

{% macro _hwm_create_interval_pipeline_sql(c, pipeline, source, command, start_at, with_schedule) -%}
  {%- set args = [hwm._hwm_literal(pipeline), hwm._hwm_regclass(source), hwm._hwm_literal(c.time_column),
                  hwm._hwm_literal(c.time_interval) ~ "::interval", hwm._hwm_literal(command)] -%}
  {%- if c.anchor is not none -%}{%- do args.append("anchor => " ~ hwm._hwm_literal(c.anchor)) -%}{%- endif -%}
  {%- if start_at is not none -%}{%- do args.append("start_at => " ~ hwm._hwm_literal(start_at)) -%}{%- endif -%}
  {%- do args.append("batched => " ~ ('true' if c.batched else 'false')) -%}
  {%- do args.append("skip_empty => " ~ ('true' if c.skip_empty else 'false')) -%}
  {%- if c.delay is not none -%}{%- do args.append("delay => " ~ hwm._hwm_literal(c.delay) ~ "::interval") -%}{%- endif -%}
  {{- return("select hwm.create_interval_pipeline(" ~ args | join(', ') ~ ")") -}}
{%- endmacro %}

{#- The body of the time source's function: its time column. -#}
{% macro _hwm_time_fn_body(c, source_rel) -%}
  {{- return("\nselect " ~ adapter.quote(c.time_column) ~ " from " ~ source_rel.include(database=False) ~ "\n") -}}
{%- endmacro %}

{#- The pipeline's source: a view over a function reading the time column of
    the time source (type: the column's type), replacing any before; the
    view records the project and model that made it (projects.sql). -#}
{% macro _hwm_make_time_source(c, src, fn, source_rel, type) -%}
  {%- do run_query("drop view if exists " ~ src ~ ";\n"
                   ~ "drop function if exists " ~ fn ~ "();\n"
                   ~ "create function " ~ fn ~ "() returns table (" ~ adapter.quote(c.time_column) ~ " " ~ type ~ ")\n"
                   ~ "language sql stable\nas $hwm_model$" ~ hwm._hwm_time_fn_body(c, source_rel) ~ "$hwm_model$;\n"
                   ~ "create view " ~ src ~ " as select * from " ~ fn ~ "();\n"
                   ~ hwm._hwm_mark_sql(src)) -%}
{%- endmacro %}

{#- SELECT hwm.alter_pipeline(...) bringing an interval pipeline's command and
    settings to the model's (extra: more arguments). -#}
{% macro _hwm_alter_interval_sql(c, command, extra) -%}
  {%- set args = [hwm._hwm_literal(c.pipeline), "command => " ~ hwm._hwm_literal(command),
                  "batched => " ~ ('true' if c.batched else 'false'),
                  "skip_empty => " ~ ('true' if c.skip_empty else 'false')] + extra -%}
  {%- if c.delay is not none -%}
    {%- do args.append("delay => " ~ hwm._hwm_literal(c.delay) ~ "::interval") -%}
  {%- else -%}
    {%- do args.append("reset => '{delay}'") -%}
  {%- endif -%}
  {{- return("select hwm.alter_pipeline(" ~ args | join(', ') ~ ")") -}}
{%- endmacro %}

{% materialization hwm_interval, adapter='postgres' -%}
  {%- set c = hwm._hwm_model_config('hwm_interval') -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set src, probe, stg, fn, fn2 = hwm._hwm_helpers(target_relation) -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set refresh = "`dbt run --full-refresh --select " ~ model.name ~ "`" -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {%- do hwm._hwm_begin() -%}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#- The time source and its column's type; the model's SQL with the bounds
      as NULLs of that type, to learn its columns. -#}
  {%- set source_rel = hwm._hwm_time_source(c) -%}
  {%- set tt = run_query("select pg_catalog.format_type(a.atttypid, a.atttypmod) from pg_catalog.pg_attribute a
                           where a.attrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(source_rel) ~ ")
                             and a.attname = " ~ hwm._hwm_literal(c.time_column) ~ " and a.attnum > 0 and not a.attisdropped") -%}
  {%- if tt.rows | length == 0 -%}
    {{ hwm._hwm_config_error('time_column', "names column " ~ c.time_column ~ ", which " ~ source_rel.include(database=False) ~ " does not have") }}
  {%- endif -%}
  {%- set null_bound = "(null::" ~ tt.rows[0][0] ~ ")" -%}
  {%- set probe_sql = sql | replace('$1', null_bound) | replace('$2', null_bound) -%}
  {%- do hwm._hwm_check_config(c, probe_sql) -%}
  {%- do hwm._hwm_check_contract(probe_sql) -%}
  {%- set facts = hwm._hwm_facts(c.pipeline, [src]) -%}
  {%- set state = facts.state -%}
  {%- set after_run = facts.last_run_id -%}
  {#- which project made it (projects.sql): another's is an error -#}
  {%- set marker = hwm._hwm_check_marker(c, src, facts.comments[0]) -%}
  {%- if state is not none and state.time_interval is none -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\", which is not an interval pipeline: choose another pipeline name (or drop that pipeline)") }}
  {%- endif -%}

  {%- if existing_relation is not none and not existing_relation.is_table -%}
    {%- do adapter.drop_relation(existing_relation) -%}
    {%- set existing_relation = none -%}
  {%- endif -%}
  {%- do run_query("drop view if exists " ~ probe) -%}
  {%- do run_query("drop table if exists " ~ stg) -%}
  {%- do run_query("create view " ~ probe ~ " as (\n" ~ probe_sql ~ "\n)") -%}
  {%- set model_cols = hwm._hwm_live(hwm._hwm_attributes(probe)) -%}

  {%- set redeclared = namespace(flag=false) -%}
  {#- An empty table without a pipeline (made by `dbt run --empty`, or left
      by a first run that failed) is taken over by a first run. -#}
  {%- set adopt = existing_relation is not none and state is none and not should_full_refresh()
                  and not hwm._hwm_sampled()
                  and not run_query("select exists (select from " ~ target_relation ~ ")").rows[0][0] -%}
  {%- if hwm._hwm_sampled() -%}
    {#- dbt run --empty or --sample: the live pipeline is left alone (see _hwm_sampled_run). -#}
    {%- set mode = 'sampled' -%}
    {%- if existing_relation is none -%}
      {%- do run_query("create table " ~ target_relation ~ " as select * from " ~ probe ~ " with no data") -%}
      {%- if c.unique_key -%}
        {%- do run_query("alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ")") -%}
      {%- endif -%}
      {%- do create_indexes(target_relation) -%}
    {%- endif -%}
    {%- do run_query("drop view " ~ probe) -%}
    {%- call statement('main') -%} select 0 {%- endcall -%}
    {%- do hwm._hwm_commit() -%}
    {%- do log("hwm " ~ c.pipeline ~ ": dbt run " ~ ("--empty" if flags.EMPTY else "--sample") ~ ": the model's SQL checked; "
               ~ ("the pipeline, its source, intervals done and schedule are left as they are" if state is not none
                  else "no pipeline is made (the next ordinary dbt run makes it)"), info=true) -%}
  {%- elif existing_relation is none or adopt -%}
    {%- set mode = 'create' -%}
    {%- set downstreams = hwm._hwm_downstreams(c.pipeline) if state is not none else [] -%}
    {%- if state is not none -%}
      {#- the pipeline of a table that was dropped (an interval pipeline has no target to follow) -#}
      {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
    {%- endif -%}
    {%- if not adopt -%}
      {%- do run_query("create table " ~ target_relation ~ " as select * from " ~ probe ~ " with no data") -%}
      {%- if c.unique_key -%}
        {%- do run_query("alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ")") -%}
      {%- endif -%}
      {%- do create_indexes(target_relation) -%}
    {%- endif -%}
    {%- do run_query("drop view " ~ probe) -%}
    {%- do hwm._hwm_make_time_source(c, src, fn, source_rel, tt.rows[0][0]) -%}
    {%- do run_query(hwm._hwm_create_interval_pipeline_sql(c, c.pipeline, src,
                       hwm._hwm_interval_command(c, target_relation, model_cols | map(attribute='name') | list), c.start_at, true)) -%}
    {%- do hwm._hwm_reschedule_downstreams(c.pipeline, downstreams) -%}
    {%- do hwm._hwm_commit() -%}
    {%- set loaded = hwm._hwm_load(c.pipeline, false) -%}
    {%- do hwm._hwm_report(c.pipeline, after_run, loaded, 'interval') -%}

  {%- elif should_full_refresh() -%}
    {%- set mode = 'full refresh' -%}
    {%- set stg_pipeline = c.pipeline[:50] ~ '#full_refresh' -%}
    {#- (the pipelines scheduled after this one, unscheduled by the drop,
        are scheduled after it again once it is declared again) -#}
    {%- set downstreams = hwm._hwm_downstreams(c.pipeline) if state is not none else [] -%}
    {%- if state is not none -%}
      {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
    {%- endif -%}
    {%- set key_changed = hwm._hwm_prepare_rebuild(c, target_relation, model_cols) -%}
    {%- do run_query("drop view " ~ probe) -%}
    {%- do hwm._hwm_create_staging(c, stg, target_relation, not key_changed) -%}
    {%- do create_indexes(stg) -%}
    {%- set cols = model_cols | map(attribute='name') | list -%}
    {%- do hwm._hwm_make_time_source(c, src, fn, source_rel, tt.rows[0][0]) -%}
    {%- do run_query(hwm._hwm_create_interval_pipeline_sql(c, stg_pipeline, src, hwm._hwm_interval_command(c, stg, cols), c.start_at, false)) -%}
    {%- do hwm._hwm_commit() -%}
    {%- do hwm._hwm_load(stg_pipeline, false) -%}
    {%- do hwm._hwm_report(stg_pipeline, after_run, true, 'interval') -%}
    {%- do hwm._hwm_begin() -%}
    {%- set wm = hwm._hwm_state(stg_pipeline).watermark -%}
    {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ")") -%}
    {%- do hwm._hwm_swap_in(c, target_relation, stg, key_changed) -%}
    {%- do run_query("drop table " ~ stg) -%}
    {%- do run_query(hwm._hwm_create_interval_pipeline_sql(c, c.pipeline, src,
                       hwm._hwm_interval_command(c, target_relation, cols), wm if wm is not none else c.start_at, true)) -%}
    {%- do hwm._hwm_reschedule_downstreams(c.pipeline, downstreams) -%}
    {%- do hwm._hwm_commit() -%}
    {%- do log("hwm " ~ c.pipeline ~ ": full refresh: rebuilt in " ~ stg.identifier ~ " and swapped in (the table keeps its OID, grants and dependent views); intervals done up to " ~ (wm or 'none'), info=true) -%}

  {%- else -%}
    {%- set mode = 'incremental' -%}
    {%- if state is none -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the table exists but no hwm pipeline \"" ~ c.pipeline ~ "\" computes it: rebuild it as an hwm_interval model with " ~ refresh ~ ", which keeps the table's OID and grants") }}
    {%- endif -%}
    {#- The pipeline reads the time source through the model's function
        (whose body names it), or, made by an older version of this
        package, the time source itself: then it is pointed at a new
        function and view, keeping its intervals done. -#}
    {%- set srcs = run_query("select pg_catalog.to_regclass(" ~ hwm._hwm_regclass(src) ~ ")::oid::text, pg_catalog.to_regclass(" ~ hwm._hwm_regclass(source_rel) ~ ")::oid::text,
                                     (select prosrc from pg_catalog.pg_proc where oid = pg_catalog.to_regprocedure(" ~ hwm._hwm_literal(fn | string ~ "()") ~ "))").rows[0] -%}
    {%- set via_fn = state.source_oid == srcs[0] and srcs[2] == hwm._hwm_time_fn_body(c, source_rel) -%}
    {%- set direct = state.source_oid == srcs[1] -%}
    {%- if state.watermark_column != c.time_column or not (via_fn or direct) -%}
      {{ hwm._hwm_config_error('time_column', "changed from " ~ state.watermark_column ~ " (of the time source the pipeline reads) to " ~ source_rel.include(database=False) ~ "." ~ c.time_column ~ ": the intervals done are those of the old column, so rebuild the model with " ~ refresh) }}
    {%- endif -%}
    {%- if not hwm._hwm_same_interval(state.time_interval, c.time_interval) -%}
      {{ hwm._hwm_config_error('time_interval', "changed from " ~ state.time_interval ~ " to " ~ c.time_interval ~ ": the rows computed are those of the old intervals, so rebuild the model with " ~ refresh) }}
    {%- endif -%}
    {%- set ch = hwm._hwm_column_changes(model_cols, hwm._hwm_live(hwm._hwm_attributes(target_relation))) -%}
    {%- if ch.any -%}
      {%- do hwm._hwm_apply_schema_changes(c, target_relation, ch, (c.unique_key or []) + [c.target_time_column]) -%}
    {%- endif -%}
    {%- do run_query("drop view " ~ probe) -%}
    {%- set tnames = hwm._hwm_live(hwm._hwm_attributes(target_relation)) | map(attribute='name') | list -%}
    {%- set cols = model_cols | map(attribute='name') | select('in', tnames) | list -%}
    {%- set command = hwm._hwm_interval_command(c, target_relation, cols) -%}
    {%- if not via_fn -%}
      {#- (an older version's pipeline over the time source itself) -#}
      {%- do hwm._hwm_make_time_source(c, src, fn, source_rel, tt.rows[0][0]) -%}
      {%- do run_query("select hwm.alter_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ", source => " ~ hwm._hwm_regclass(src) ~ ")") -%}
    {%- elif marker == 'write' -%}
      {#- a pipeline made by an older version of the package: this project's now -#}
      {%- do run_query(hwm._hwm_mark_sql(src)) -%}
      {%- do log("hwm " ~ c.pipeline ~ ": recorded as made by dbt project " ~ project_name ~ " (" ~ model.unique_id ~ ")"
                 ~ ("" if facts.comments[0] else ": a pipeline made by an older version of the hwm package, adopted"), info=true) -%}
    {%- endif -%}
    {%- if command != state.command or state.batched != c.batched or state.skip_empty != c.skip_empty or not hwm._hwm_same_interval(state.delay, c.delay) -%}
      {%- do run_query(hwm._hwm_alter_interval_sql(c, command, [])) -%}
      {%- do log("hwm " ~ c.pipeline ~ ": changed in place from " ~ (state.watermark or 'the start') ~ " (the model's SQL or configuration changed; intervals done before keep their rows: `dbt run-operation hwm_rerun_intervals` or " ~ refresh ~ " computes them again)", info=true) -%}
    {%- endif -%}
    {%- do hwm._hwm_commit() -%}
    {%- set loaded = hwm._hwm_load(c.pipeline, c.schedule is not none) -%}
    {%- do hwm._hwm_report(c.pipeline, after_run, loaded, 'interval') -%}
  {%- endif -%}

  {%- do hwm._hwm_begin() -%}
  {%- if mode != 'sampled' -%}
    {%- do hwm._hwm_sync_schedule(c, none if mode != 'incremental' or redeclared.flag else state) -%}
  {%- endif -%}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {%- do apply_grants(target_relation, grant_config, should_revoke=should_revoke(existing_relation, full_refresh_mode=False)) -%}
  {%- do persist_docs(target_relation, model) -%}
  {%- do hwm._hwm_commit() -%}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}
