{#-
  materialized='hwm': a model that is an hwm pipeline.

  The model's SQL says which rows exist; hwm loads the new ones.  Objects
  (all owned by the role dbt connects as):

    <model>            the target table: the model's columns, a primary key
                       on unique_key (the upsert's conflict target)
                       (history=true: plus valid_from and valid_to, a
                       primary key on unique_key and valid_from, and a
                       unique index of the current versions; see
                       _hwm_history_config)
    <model>__hwm_fn    a SQL function holding the model's SQL (its body is
                       text, so PostgreSQL records no dependency on the
                       relations it reads: dbt may drop and re-create them,
                       by --full-refresh or a new materialization, without
                       taking the pipeline with them; a scheduled run in
                       between fails and is retried)
    <model>__hwm_src   a view over <model>__hwm_fn(): the pipeline's source
                       (the planner inlines the function, so the run's
                       filter on the watermark reaches the model's tables)
    pipeline           hwm.state row named after config 'pipeline'
                       (default "schema.model"), owned by dbt's role

  First run: create the function and view, the table (empty, columns from
  the view) and the pipeline, then load.  Later runs: replace the
  function's SQL, apply on_schema_change, change the pipeline in place
  with hwm.alter_pipeline when its columns or configuration changed (its
  watermark, history and schedule kept), then load.  --full-refresh: load
  the model from scratch into <model>__hwm_stg through a pipeline of its
  own, CALL hwm.swap it in (the target keeps its OID, grants and dependent
  views), and carry that pipeline's safe watermark over.  The load is one
  hwm.run, or with batch_size one per batch until the watermark stops
  (_hwm_load_model).

  Transactions: the setup runs in one transaction (pre-hooks inside it);
  the load's runs are committed each on its own, so with batch_size each
  batch commits with its watermark; post-hooks, grants and docs run in a
  last transaction, after the load.
-#}

{% materialization hwm, adapter='postgres' -%}
  {#- (Every macro a run calls is compiled from Jinja in each dbt process,
      and that is most of an incremental run's time: what only a first run,
      a rebuild, a changed model or an error needs lives in macros of its
      own, called only then.) -#}
  {%- set c = hwm._hwm_model_config('hwm') -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set src, new_view, stg, fn, fn2 = hwm._hwm_helpers(target_relation) -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {#- (dbt's transaction: opened by the in-transaction pre-hooks, or else by
      _hwm_facts; every round trip counts in a model's time) -#}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {#- Leftovers of an interrupted run: dropped by the first statement of
      each kind of run.  The facts' query drops them and makes the model's
      view, which every kind of run reads first: an incremental run and a
      first run need nothing more of it before they make what they make
      (each round trip counts in a model's time); the others make it
      again. -#}
  {%- set leftovers = "drop view if exists " ~ new_view ~ "; drop table if exists " ~ stg ~ "; drop function if exists " ~ fn2 ~ "();\n" -%}
  {%- set facts = hwm._hwm_facts(c.pipeline, [target_relation, src], fn, new_view,
                                 leftovers ~ "create view " ~ new_view ~ " as (\n" ~ sql ~ "\n);\n", hwm._hwm_bounds(c)) -%}
  {%- set state = facts.state -%}
  {%- set after_run = facts.last_run_id -%}
  {%- set reconcile_after = hwm._hwm_reconcile_config() -%}

  {%- if existing_relation is not none and existing_relation.is_table and state is not none and not should_full_refresh()
         and not hwm._hwm_sampled() -%}
    {%- set mode = 'incremental' -%}
    {%- set loaded = hwm._hwm_incremental(c, facts, target_relation, src, new_view, fn, fn2) -%}
  {%- else -%}
    {#- Every other run (_hwm_other_run). -#}
    {%- set built = hwm._hwm_other_run(c, facts, existing_relation, target_relation, src, new_view, stg, fn, leftovers) -%}
    {%- set mode = built.mode -%}
    {%- set loaded = built.loaded -%}
    {%- set existing_relation = built.existing -%}
  {%- endif -%}

  {%- if mode not in ['full refresh', 'sampled'] and not loaded.reported -%}
    {%- do hwm._hwm_report(c.pipeline, after_run, loaded, mode) -%}
  {%- endif -%}
  {#- config reconcile=true (reconcile.sql): delete the rows whose key the
      model no longer returns, after an incremental run's load. -#}
  {%- if reconcile_after and mode == 'incremental' -%}
    {%- do hwm._hwm_reconcile_after_run(c.pipeline) -%}
  {%- endif -%}

  {#- (the report's 'main' statement opened the last transaction, for
      create and incremental runs) -#}
  {%- if mode in ['full refresh', 'sampled'] or (reconcile_after and mode == 'incremental') -%}
    {%- do hwm._hwm_begin() -%}
  {%- endif -%}
  {#- (a pipeline this run declared has no schedule yet; an incremental
      run's changes only when the config's or the pipeline's says one) -#}
  {%- if mode != 'sampled' and (c.schedule is not none or c.schedule_after_refs
                                or (mode == 'incremental' and (state.schedule is not none or state.after))) -%}
    {%- do hwm._hwm_sync_schedule(c, state if mode == 'incremental' else none) -%}
  {%- endif -%}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {%- do apply_grants(target_relation, config.get('grants'), should_revoke=should_revoke(existing_relation, full_refresh_mode=False)) -%}
  {%- do persist_docs(target_relation, model) -%}
  {%- do adapter.commit() -%}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}

{#-
  The runs of an hwm model that are not incremental: the common first run
  (_hwm_first), the common --full-refresh (_hwm_refresh: false when it is
  not one) and every other (_hwm_build).  In a macro of its own, so that an
  incremental run does not compile it.  Returns {mode, loaded, existing},
  as _hwm_build does.
-#}
{% macro _hwm_other_run(c, facts, existing_relation, target_relation, src, new_view, stg, fn, leftovers) -%}
  {%- set state = facts.state -%}
  {%- set contract_config = config.get('contract') -%}
  {%- set plain = not c.history and not (contract_config and contract_config.enforced) and not hwm._hwm_sampled() -%}
  {%- if existing_relation is none and state is none and plain -%}
    {{- return({'mode': 'create', 'existing': existing_relation,
                'loaded': hwm._hwm_first(c, facts, target_relation, src, new_view, fn)}) -}}
  {%- elif existing_relation is not none and existing_relation.is_table and state is not none and should_full_refresh() and plain
           and hwm._hwm_refresh(c, facts, target_relation, src, new_view, stg, fn) -%}
    {{- return({'mode': 'full refresh', 'existing': existing_relation, 'loaded': true}) -}}
  {%- endif -%}
  {#- Another first run, a rebuild, dbt run --empty or --sample. -#}
  {{- return(hwm._hwm_build(c, facts, existing_relation, target_relation, src, new_view, stg, fn, leftovers)) -}}
{%- endmacro %}

{#-
  An incremental run of an hwm model.  The model's view was made and read
  by the facts' query, the setup's first round trip, with what the run
  needs to know of it (facts.view): its columns, and whether they are the
  target's (less a history's bounds) and the source view's (the query
  compares them: what a macro computes is compiled from Jinja in every dbt
  process, a query's text is not).  Everything that can be wrong with the
  configuration is checked before anything is committed (an error rolls
  the setup back).  What waits for the setup's commit and the commit
  itself go in the load's first round trip.  Returns what _hwm_load_model
  returns.
-#}
{% macro _hwm_incremental(c, facts, target_relation, src, new_view, fn, fn2) -%}
  {%- set state = facts.state -%}
  {%- set model_cols, defs, same_table, same_source = facts.view -%}
  {%- set cols = model_cols | map(attribute='name') | list -%}
  {%- do hwm._hwm_check_config(c, none, cols) -%}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {%- do hwm._hwm_check_contract(sql, c) -%}
  {%- endif -%}
  {#- which project made it (projects.sql): another's is an error -#}
  {%- set marker = 'keep' if facts.comments[1] == hwm._hwm_marker() else hwm._hwm_check_marker(c, src, facts.comments[1]) -%}
  {#- (lists compared, not conditions joined: each operator is a node
      compiled, and nested ones cost more) -#}
  {%- if [state.target_oid, state.command, state.unique_key, state.watermark_column, state.valid_from_column is not none]
           != [facts.oids[0], none, c.unique_key, c.watermark_column, c.history]
         or (c.history and [state.valid_from_column, state.valid_to_column] != [c.valid_from_column, c.valid_to_column]) -%}
    {%- do hwm._hwm_refuse_incremental(c, state, facts) -%}
  {%- endif -%}
  {%- if not same_table -%}
    {%- do hwm._hwm_schema_changed(c, target_relation, new_view) -%}
  {%- endif -%}
  {#- The source view and its function keep their OIDs while the
      model's columns stay the same (the function's body is replaced);
      otherwise a new function and view take their place, and the
      pipeline is pointed at them with hwm.alter_pipeline
      (_hwm_change_in_place).  A source made by an older version of this
      package (a view of the model's SQL, no function) is replaced the
      same way. -#}
  {%- set same_view = same_source and facts.fn_body is not none and facts.oids[1] is not none and facts.oids[1] == state.source_oid -%}
  {%- set same_config = [state.partition_column, state.lookback, state.batch_size, state.delete_column,
                         state.history_columns if c.history else none, state.delay is none]
                        == [c.partition_column, c.lookback, c.batch_size, c.delete_column, c.history_columns if c.history else none, c.delay is none]
                        and (state.delay is none or state.delay == c.delay or hwm._hwm_same_interval(state.delay, c.delay)) -%}
  {#- (what waits for the setup's commit, to run in its round trip) -#}
  {%- set deferred = [] -%}
  {%- if same_view -%}
    {%- do deferred.append("drop view " ~ new_view) -%}
    {%- if marker == 'write' -%}
      {%- do deferred.append(hwm._hwm_adopt_sql(c, src, facts.comments[1])) -%}
    {%- endif -%}
    {#- Replaced only when its SQL changed: replacing it waits for
        nothing, but keeps pg_proc quiet when nothing changed. -#}
    {%- if facts.fn_body != hwm._hwm_fn_body() -%}
      {%- do deferred.append(hwm._hwm_fn_sql(fn, model_cols, true)) -%}
    {%- endif -%}
  {%- else -%}
    {%- do run_query("drop view " ~ new_view) -%}
  {%- endif -%}
  {%- if not same_view or not same_config -%}
    {%- do hwm._hwm_change_in_place(c, state, same_view, model_cols, src, new_view, fn, fn2) -%}
  {%- endif -%}
  {{- return(hwm._hwm_load_model(c.pipeline, c.schedule is not none, c, none, (deferred | join(";\n") ~ ";\n") if deferred else '')) -}}
{%- endmacro %}

{#-
  The common first run: no table, no pipeline, no enforced contract, not
  a history, not dbt run --empty or --sample (everything else is
  _hwm_build's).  One round trip before the load's: the facts' query,
  which made the model's view and read what the run needs of it
  (facts.view: its columns, as the function's result columns too).  The
  load's first round trip makes the function, the source view, the table
  with its primary key and the pipeline, and commits them (config indexes:
  made before it, by dbt's create_indexes).  The checks that need more (a
  column the configuration names that the model does not return, a
  schedule, a delay, models upstream) are _hwm_check_config's, called only
  when they apply.  Returns what _hwm_load_model returns.
-#}
{% macro _hwm_first(c, facts, target_relation, src, new_view, fn) -%}
  {%- set cols = facts.view[0] | map(attribute='name') | list -%}
  {%- do hwm._hwm_config_checks(c, cols, (c.unique_key + [c.watermark_column, c.partition_column, c.delete_column]) | reject('none') | reject('in', cols) | list) -%}
  {%- if facts.comments[1] is not none -%}
    {%- do hwm._hwm_check_marker(c, src, facts.comments[1]) -%}
  {%- endif -%}
  {%- set setup = hwm._hwm_source_sql(src, fn, facts.view[1], "drop view if exists " ~ src ~ ";\ndrop function if exists " ~ fn ~ "();\n")
                  ~ "create table " ~ target_relation ~ " as select * from " ~ new_view ~ " with no data;\n"
                  ~ "alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ");\n" -%}
  {%- if config.get('indexes') -%}
    {%- do run_query(setup) -%}
    {%- do create_indexes(target_relation) -%}
    {%- set setup = '' -%}
  {%- endif -%}
  {%- set cleanup = ["select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")", "drop view if exists " ~ src,
                     "drop function if exists " ~ fn ~ "()", "drop table if exists " ~ target_relation] -%}
  {{- return(hwm._hwm_load_model(c.pipeline, false, c, cleanup,
                                 setup ~ "drop view " ~ new_view ~ ";\n" ~ hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, c.initial_watermark, true) ~ ";\n")) -}}
{%- endmacro %}

{#-
  The common --full-refresh: the model's columns and types are the
  table's, which has no dropped column, its primary key is on unique_key,
  the pipeline is the table's copy pipeline and no pipeline runs after it,
  no history, no enforced contract, no config indexes (what
  _hwm_full_refresh does in general, with fewer round trips and one
  macro).  The first query (after the facts', which made the model's
  view) says whether the run is one; false when it is not (the view is
  left for _hwm_build's first statement to drop), true when done.  Then,
  in one round trip: the staging table (the table's columns, NOT NULLs and
  key) and its pipeline, committed, the load, and its report with the
  staging pipeline's watermark, which opens the swap's transaction; then
  the swap, the model's function, source view and pipeline made again
  from that watermark, the staging table dropped, committed.
-#}
{% macro _hwm_refresh(c, facts, target_relation, src, new_view, stg, fn) -%}
  {%- set state = facts.state -%}
  {%- if state.target_oid != facts.oids[0] or state.command is not none or config.get('indexes')
         or (facts.comments[1] is not none and facts.comments[1] != hwm._hwm_marker()) -%}
    {{- return(false) -}}
  {%- endif -%}
  {%- set named = c.unique_key + [c.watermark_column, c.partition_column, c.delete_column] | reject('none') | list -%}
  {%- set row = hwm._hwm_query("with a as (select n.i, a.attnum, a.attname::text as name, pg_catalog.format_type(a.atttypid, a.atttypmod) as type, a.attnotnull, a.attisdropped
                      from pg_catalog.unnest(ARRAY[" ~ hwm._hwm_regclass(new_view) ~ ", " ~ hwm._hwm_regclass(target_relation) ~ "]::text[]) with ordinality as n(rel, i)
                      join pg_catalog.pg_attribute a on a.attrelid = pg_catalog.to_regclass(n.rel) and a.attnum > 0)
       select (select pg_catalog.string_agg(pg_catalog.quote_ident(name) || ' ' || type, ', ' order by attnum) from a where i = 1),
              (select pg_catalog.string_agg(pg_catalog.quote_ident(name) || ' ' || type || case when attnotnull then ' not null' else '' end, ', ' order by attnum) from a where i = 2),
              (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, type) order by attnum) from a where i = 1)
                = (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, type) order by attnum) from a where i = 2)
              and not exists (select from a where i = 2 and attisdropped)
              and " ~ hwm._hwm_text_array(named) ~ " operator(pg_catalog.<@) (select pg_catalog.array_agg(name) from a where i = 1)
              and (select pg_catalog.array_agg(k.attname::text order by u.n)
                     from pg_catalog.pg_constraint p, pg_catalog.unnest(p.conkey) with ordinality as u(attnum, n), pg_catalog.pg_attribute k
                    where p.conrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(target_relation) ~ ") and p.contype = 'p'
                      and k.attrelid = p.conrelid and k.attnum = u.attnum) = " ~ hwm._hwm_text_array(c.unique_key) ~ "
              and not exists (select from hwm.state as s where (pg_catalog.to_jsonb(s.*) operator(pg_catalog.->) 'after') operator(pg_catalog.?) " ~ hwm._hwm_literal(c.pipeline) ~ ")").rows[0] -%}
  {%- if not row[2] -%}
    {{- return(false) -}}
  {%- endif -%}
  {%- do hwm._hwm_config_checks(c, named, false) -%}
  {#- (the model's function and source view, made after the swap: built
      now, so that what is wrong with them is said before anything is) -#}
  {%- set source_sql = hwm._hwm_source_sql(src, fn, row[0], "drop view if exists " ~ src ~ ";\ndrop function if exists " ~ fn ~ "();\n") -%}
  {%- set stg_pipeline = c.pipeline[:50] ~ '#full_refresh' -%}
  {%- set cleanup = ["select hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ")", "drop table if exists " ~ stg, "drop view if exists " ~ new_view] -%}
  {%- set loaded = hwm._hwm_load_model(stg_pipeline, false, c, cleanup,
                                       "create table " ~ stg ~ " (" ~ row[1] ~ ");\nalter table " ~ stg ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ");\n"
                                       ~ hwm._hwm_create_pipeline_sql(c, stg_pipeline, new_view, stg, c.initial_watermark, false) ~ ";\n") -%}
  {%- if not loaded.reported -%}
    {%- do hwm._hwm_report(stg_pipeline, 0, loaded, 'full refresh') -%}
  {%- endif -%}
  {%- set wm = loaded.watermark if loaded.reported else hwm._hwm_query("select watermark from hwm.state where pipeline = " ~ hwm._hwm_literal(stg_pipeline)).rows[0][0] -%}
  {%- do hwm._hwm_commit("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ");\nselect hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ");\n"
                         ~ "CALL hwm.swap(" ~ hwm._hwm_regclass(target_relation) ~ ", " ~ hwm._hwm_regclass(stg) ~ ");\n"
                         ~ source_sql ~ hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, wm, true) ~ ";\n"
                         ~ "drop view " ~ new_view ~ ";\ndrop table " ~ stg) -%}
  {%- do log("hwm " ~ c.pipeline ~ ": full refresh: rebuilt in " ~ stg.identifier ~ " and swapped in (the table keeps its OID, grants and dependent views); watermark set to " ~ (wm or 'none'), info=true) -%}
  {{- return(true) -}}
{%- endmacro %}

{#- The model's columns are not the target's (less a history's bounds):
    on_schema_change (_hwm_apply_schema_changes). -#}
{% macro _hwm_schema_changed(c, target_relation, new_view) -%}
  {%- set attrs = hwm._hwm_attributes_of([new_view, target_relation]) -%}
  {%- set ch = hwm._hwm_column_changes(hwm._hwm_live(attrs[0]), hwm._hwm_model_side(c, hwm._hwm_live(attrs[1]))) -%}
  {%- if ch.any -%}
    {%- do hwm._hwm_apply_schema_changes(c, target_relation, ch, c.unique_key + [c.watermark_column] + ([c.partition_column] if c.partition_column else [])) -%}
  {%- endif -%}
{%- endmacro %}


{#-
  What an incremental run of an hwm model refuses, before anything is
  committed: a pipeline that loads another table or is an interval or
  command pipeline, and a changed unique_key, watermark_column, history or
  history bounds (each needs a rebuild).
-#}
{% macro _hwm_refuse_incremental(c, state, facts) -%}
  {%- do hwm._hwm_refuse_pipeline(c, state, facts.oids[0]) -%}
  {%- set refresh = "`dbt run --full-refresh --select " ~ model.name ~ "`" -%}
  {%- if state.unique_key != c.unique_key -%}
    {{ hwm._hwm_config_error('unique_key', "changed from " ~ state.unique_key | join(', ') ~ " to " ~ c.unique_key | join(', ') ~ ": the table's key and the rows loaded on it change, so rebuild it with " ~ refresh) }}
  {%- endif -%}
  {%- if state.watermark_column != c.watermark_column -%}
    {{ hwm._hwm_config_error('watermark_column', "changed from " ~ state.watermark_column ~ " to " ~ c.watermark_column ~ ": the stored watermark is a value of the old column, so rebuild the model with " ~ refresh) }}
  {%- endif -%}
  {#- (a pipeline stays a history or not: hwm.alter_pipeline keeps it so) -#}
  {%- set state_history = state.valid_from_column is not none -%}
  {%- if state_history != c.history -%}
    {{ hwm._hwm_config_error('history', ("is true, but the table holds one row per key (its pipeline is not a history): the versions before now are not known to hwm, and the table's key becomes ("
         ~ hwm._hwm_table_key(c) | join(', ') ~ ")" if c.history else "is no longer true, but the table holds the versions of each key (its pipeline is a history): they would be lost, and the table's key becomes ("
         ~ c.unique_key | join(', ') ~ ")") ~ ". Rebuild the model with " ~ refresh ~ " (the table is rebuilt from the model's SQL and swapped in), or set history back") }}
  {%- endif -%}
  {%- if c.history and (state.valid_from_column != c.valid_from_column or state.valid_to_column != c.valid_to_column) -%}
    {{ hwm._hwm_config_error('valid_from_column' if state.valid_from_column != c.valid_from_column else 'valid_to_column',
         "changed: the history's bounds are " ~ state.valid_from_column ~ " and " ~ state.valid_to_column ~ ", the config's " ~ c.valid_from_column ~ " and " ~ c.valid_to_column
         ~ ". Rebuild the model with " ~ refresh ~ ", or set them back") }}
  {%- endif -%}
{%- endmacro %}

{#- The model's pipeline (state) is another table's (target_oid: the
    model's table, none when there is none), or an interval or command
    pipeline: an error. -#}
{% macro _hwm_refuse_pipeline(c, state, target_oid) -%}
  {#- (an interval or command pipeline first: it has no target to name) -#}
  {%- if state.command is not none -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\", an interval or command pipeline: rebuild the model with `dbt run --full-refresh --select " ~ model.name ~ "`") }}
  {%- endif -%}
  {%- if target_oid is none or state.target_oid != target_oid -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\", which loads " ~ state.target ~ ", not this model: choose another pipeline name (or drop that pipeline)") }}
  {%- endif -%}
{%- endmacro %}

{#-
  An incremental run whose model's columns or configuration changed: the
  pipeline changed in place with hwm.alter_pipeline, keeping its watermark,
  what its last run remembered, its history and its schedule.  New columns
  (not same_view): a new function and view, the pipeline pointed at them,
  the old ones dropped and the new ones renamed into their place.
-#}
{% macro _hwm_change_in_place(c, state, same_view, model_cols, src, new_view, fn, fn2) -%}
  {%- set alter = [] -%}
  {%- if not same_view -%}
    {%- do run_query(hwm._hwm_fn_sql(fn2, model_cols, false)) -%}
    {%- do run_query("create view " ~ new_view ~ " as select * from " ~ fn2 ~ "();\n" ~ hwm._hwm_mark_sql(new_view)) -%}
    {%- do alter.append("source => " ~ hwm._hwm_regclass(new_view)) -%}
  {%- endif -%}
  {%- do run_query(hwm._hwm_alter_pipeline_sql(c, state, alter)) -%}
  {%- if not same_view -%}
    {%- do run_query("drop view if exists " ~ src ~ ";\n"
                     ~ "drop function if exists " ~ fn ~ "();\n"
                     ~ "alter view " ~ new_view ~ " rename to " ~ adapter.quote(src.identifier) ~ ";\n"
                     ~ "alter function " ~ fn2 ~ "() rename to " ~ adapter.quote(fn.identifier)) -%}
  {%- endif -%}
  {%- do log("hwm " ~ c.pipeline ~ ": changed in place, watermark " ~ (state.watermark or 'none') ~ " kept (" ~ ("the model's columns changed" if not same_view else "its configuration changed") ~ ")", info=true) -%}
  {%- if c.history and state.history_columns != c.history_columns -%}
    {%- do log("hwm " ~ c.pipeline ~ ": the history now tracks " ~ (c.history_columns | join(', ') if c.history_columns is not none else "every column but the key, the watermark column and the delete marker (config history_columns unset)")
               ~ " (was " ~ (state.history_columns | join(', ') if state.history_columns is not none else "the default") ~ "): later runs open a version when those change; the versions kept stay as they are", info=true) -%}
  {%- endif -%}
{%- endmacro %}

{#-
  Every run of an hwm model but an incremental one and the common first
  run (_hwm_first): a first run with an enforced contract, of a history,
  or one that adopts an empty table without a pipeline (as dbt run --empty
  leaves it), a --full-refresh, dbt run --empty or --sample; and the error of a
  table that exists without its pipeline.  The model's view is made and
  read first, in the setup's transaction: everything that can be wrong
  with the configuration is checked against its columns before anything is
  committed (an error rolls the setup back).  Returns {mode, loaded,
  existing (the existing relation, none when it was a view, dropped)}.
-#}
{% macro _hwm_build(c, facts, existing_relation, target_relation, src, new_view, stg, fn, leftovers) -%}
  {%- set model_cols = hwm._hwm_live(hwm._hwm_attributes(new_view, leftovers ~ "create view " ~ new_view ~ " as (\n" ~ sql ~ "\n);\n")) -%}
  {%- do hwm._hwm_check_config(c, none, model_cols | map(attribute='name') | list) -%}
  {%- do hwm._hwm_check_contract(sql, c) -%}
  {%- set state = facts.state -%}
  {%- do hwm._hwm_check_marker(c, src, facts.comments[1]) -%}

  {%- if existing_relation is not none and not existing_relation.is_table -%}
    {#- A view (the model was materialized otherwise before): replaced by the table. -#}
    {%- do adapter.drop_relation(existing_relation) -%}
    {%- set existing_relation = none -%}
    {%- set facts = hwm._hwm_facts(c.pipeline, [target_relation, src], fn) -%}
  {%- endif -%}
  {%- if state is not none -%}
    {%- do hwm._hwm_refuse_pipeline(c, state, facts.oids[0]) -%}
  {%- endif -%}

  {#- An empty table without a pipeline (made by `dbt run --empty`, or left
      by a first run that failed) is taken over by a first run. -#}
  {%- set adopt = existing_relation is not none and state is none and not should_full_refresh()
                  and not hwm._hwm_sampled()
                  and not run_query("select exists (select from " ~ target_relation ~ ")").rows[0][0] -%}
  {%- set loaded = none -%}
  {%- if hwm._hwm_sampled() -%}
    {#- dbt run --empty or --sample: dbt rewrites the model's ref() and
        source() to read no rows (or a sample); the live pipeline, its
        source, watermark and schedule are left alone. -#}
    {%- set mode = 'sampled' -%}
    {%- do hwm._hwm_sampled_run(c, existing_relation, target_relation, new_view, state) -%}
  {%- elif existing_relation is none or adopt -%}
    {#- First run. -#}
    {%- set mode = 'create' -%}
    {%- set source_sql = hwm._hwm_source_sql(src, fn, model_cols, "drop view if exists " ~ src ~ ";\n" ~ "drop function if exists " ~ fn ~ "();\n") -%}
    {%- if adopt -%}
      {%- do run_query(source_sql) -%}
      {%- set ch = hwm._hwm_column_changes(model_cols, hwm._hwm_model_side(c, hwm._hwm_live(hwm._hwm_attributes(target_relation)))) -%}
      {%- if ch.any or hwm._hwm_primary_key(target_relation) != hwm._hwm_table_key(c) -%}
        {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the table exists, empty, without a pipeline, and differs from the model (" ~ (hwm._hwm_describe_changes(ch) or "its primary key is not " ~ hwm._hwm_table_key(c) | join(', ')) ~ "): rebuild it with `dbt run --full-refresh --select " ~ model.name ~ "`") }}
      {%- endif -%}
      {%- do log("hwm " ~ c.pipeline ~ ": the empty table " ~ hwm._hwm_where() ~ " (made by dbt run --empty?) gets its pipeline", info=true) -%}
    {%- else -%}
      {#- (from the model's view: a function's result columns have no type
          modifiers, numeric(10,2) would be numeric) -#}
      {%- do hwm._hwm_create_target(c, target_relation, new_view, source_sql) -%}
    {%- endif -%}
    {%- do hwm._hwm_commit("drop view " ~ new_view ~ ";\n" ~ hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, c.initial_watermark, true)) -%}
    {%- set cleanup = ["select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")",
                       "drop view if exists " ~ src, "drop function if exists " ~ fn ~ "()"]
                      + ([] if adopt else ["drop table if exists " ~ target_relation]) -%}
    {%- set loaded = hwm._hwm_load_model(c.pipeline, false, c, cleanup) -%}
  {%- elif should_full_refresh() -%}
    {%- set mode = 'full refresh' -%}
    {%- set loaded = hwm._hwm_full_refresh(c, state, target_relation, src, new_view, stg, fn, model_cols) -%}
  {%- else -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the table exists but no hwm pipeline \"" ~ c.pipeline ~ "\" loads it (it was built by another materialization, or its pipeline was dropped): rebuild it as an hwm model with `dbt run --full-refresh --select " ~ model.name ~ "`, which keeps the table's OID and grants") }}
  {%- endif -%}
  {{- return({'mode': mode, 'loaded': loaded, 'existing': existing_relation}) -}}
{%- endmacro %}


{#-
  An enforced contract (contract: {enforced: true}): the model's columns
  and types checked against the YAML as dbt checks a table or incremental
  model, on every run, before anything changes.  A history's contract is
  the table's: the model's columns and the bounds (valid_from, valid_to),
  of the watermark column's type, which it must list (they are the columns
  its readers filter on; dbt checks them as if the model returned them).
-#}
{% macro _hwm_check_contract(model_sql, c=none) -%}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {%- if c is not none and c.history -%}
      {%- set listed = (model.columns or {}).keys() | list -%}
      {%- set missing = hwm._hwm_bounds(c) | reject('in', listed) | list -%}
      {%- if missing and listed -%}
        {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": its contract is enforced and does not list " ~ missing | join(' and ')
             ~ ": a history's table has the model's columns plus " ~ hwm._hwm_bounds(c) | join(' and ') ~ " (of the type of the watermark column, " ~ c.watermark_column
             ~ "), and its contract describes the table, so list them too (with that data_type)") }}
      {%- endif -%}
      {%- set q = adapter.quote -%}
      {%- do get_assert_columns_equivalent("select hwm_model.*, hwm_model." ~ q(c.watermark_column) ~ " as " ~ q(c.valid_from_column)
                                           ~ ", hwm_model." ~ q(c.watermark_column) ~ " as " ~ q(c.valid_to_column) ~ " from (\n" ~ model_sql ~ "\n) as hwm_model") -%}
    {%- else -%}
      {%- do get_assert_columns_equivalent(model_sql) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-
  The target of a first run, empty, with the model's columns (from the
  view of the model's SQL) and a primary key on unique_key; with an
  enforced contract, the columns, types and constraints of the contract,
  as dbt-postgres creates a table model's (a primary key in the contract
  must be on unique_key).  A history's table has the bounds too (from the
  contract, or after the model's columns, of the watermark column's type),
  valid_from NOT NULL, its primary key on unique_key and valid_from, and
  the unique index of the current versions (_hwm_current_index_sql).  Then
  the model's indexes.
-#}
{% macro _hwm_create_target(c, target_relation, new_view, prefix='') -%}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {%- do run_query(prefix ~ "create table " ~ target_relation ~ " " ~ get_table_columns_and_constraints()) -%}
    {#- dbt's parser warned "Constraint types are not supported for hwm
        materializations": dbt-core fixes that list to table and
        incremental (ModelNode.materialization_enforces_constraints), and a
        package cannot add to it.  Say what was done instead. -#}
    {%- set kinds = [] -%}
    {%- for con in (model.constraints or []) -%}{%- do kinds.append(con.type) -%}{%- endfor -%}
    {%- for col in (model.columns or {}).values() -%}{%- for con in (col.constraints or []) -%}{%- do kinds.append(con.type) -%}{%- endfor -%}{%- endfor -%}
    {%- if kinds -%}
      {%- do log("hwm model " ~ hwm._hwm_where() ~ ": the contract's constraints (" ~ kinds | unique | join(', ') ~ ") are the table's, applied as for a table model"
                 ~ " (dbt's parser warns that constraints are not supported for hwm materializations: its list is fixed to table and incremental;"
                 ~ " warn_unsupported: false on a constraint silences it)", info=true) -%}
    {%- endif -%}
    {%- set pk = hwm._hwm_primary_key(target_relation) -%}
    {%- set key = hwm._hwm_table_key(c) -%}
    {%- if c.history -%}
      {%- do run_query("alter table " ~ target_relation ~ " alter column " ~ adapter.quote(c.valid_from_column) ~ " set not null") -%}
    {%- endif -%}
    {%- if not pk -%}
      {%- do run_query("alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(key) ~ ")") -%}
    {%- elif pk != key -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the contract's primary key (" ~ pk | join(', ') ~ ") is not "
           ~ ("unique_key and valid_from_column (" if c.history else "unique_key (") ~ key | join(', ') ~ "): hwm "
           ~ ("keeps one version of a key per value of " ~ c.valid_from_column if c.history else "upserts on unique_key") ~ ", so make them the same") }}
    {%- endif -%}
  {%- elif c.history -%}
    {%- set wm = "hwm_model." ~ adapter.quote(c.watermark_column) -%}
    {%- do run_query(prefix ~ "create table " ~ target_relation ~ " as select hwm_model.*, " ~ wm ~ " as " ~ adapter.quote(c.valid_from_column) ~ ", " ~ wm ~ " as " ~ adapter.quote(c.valid_to_column)
                     ~ " from " ~ new_view ~ " as hwm_model with no data;\n"
                     ~ "alter table " ~ target_relation ~ " alter column " ~ adapter.quote(c.valid_from_column) ~ " set not null;\n"
                     ~ "alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(hwm._hwm_table_key(c)) ~ ")") -%}
  {%- else -%}
    {%- do run_query(prefix ~ "create table " ~ target_relation ~ " as select * from " ~ new_view ~ " with no data;\n"
                     ~ "alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ")") -%}
  {%- endif -%}
  {%- if c.history -%}
    {%- do run_query(hwm._hwm_current_index_sql(c, target_relation)) -%}
  {%- endif -%}
  {%- do create_indexes(target_relation) -%}
{%- endmacro %}

{#- Whether dbt rewrites the model's SQL to read no rows or a sample
    (dbt run --empty, --sample). -#}
{% macro _hwm_sampled() -%}
  {{- return(flags.EMPTY or (flags.SAMPLE is not none and flags.SAMPLE is defined and flags.SAMPLE)) -}}
{%- endmacro %}

{#-
  An hwm model under dbt run --empty or --sample: the model's SQL (which
  reads nothing, or a sample) is checked by creating a view of it; the
  first time, the table is created, empty, with its key (so that models
  downstream can be checked too), and its first ordinary run gives it its
  pipeline.  An existing table, pipeline, source and watermark are left
  alone.  dbt's 'main' statement reports 0 rows.
-#}
{% macro _hwm_sampled_run(c, existing_relation, target_relation, new_view, state) -%}
  {%- set how = "--empty" if flags.EMPTY else "--sample" -%}
  {%- if existing_relation is none -%}
    {%- do hwm._hwm_create_target(c, target_relation, new_view) -%}
  {%- endif -%}
  {%- do run_query("drop view " ~ new_view) -%}
  {%- call statement('main') -%} select 0 {%- endcall -%}
  {%- do hwm._hwm_commit() -%}
  {%- do log("hwm " ~ c.pipeline ~ ": dbt run " ~ how ~ ": the model's SQL checked; "
             ~ ("the pipeline, its source, watermark and schedule are left as they are" if state is not none
                else "no pipeline is made (the next dbt run without " ~ how ~ " makes it and loads)"), info=true) -%}
{%- endmacro %}

{#- Open dbt's transaction unless one is open (run_query never does: it
    runs with auto_begin=False). -#}
{% macro _hwm_begin() -%}
  {%- call statement('hwm_begin', auto_begin=True) -%} select 1 {%- endcall -%}
{%- endmacro %}

{#- Run sql (statements; the last one's rows are returned, as an agate
    table) in dbt's transaction, opening one unless one is open: saves
    the round trip of a _hwm_begin before it. -#}
{% macro _hwm_query(sql) -%}
  {%- call statement('hwm_query', fetch_result=True, auto_begin=True) -%} {{ sql }} {%- endcall -%}
  {{- return(load_result('hwm_query').table) -}}
{%- endmacro %}

{#- Commit dbt's transaction (opening one first if none is open); sql, when
    given, runs just before in it, in place of _hwm_begin's round trip. -#}
{% macro _hwm_commit(sql=none) -%}
  {%- if sql is none -%}
    {%- do hwm._hwm_begin() -%}
  {%- else -%}
    {%- do hwm._hwm_query(sql) -%}
  {%- endif -%}
  {%- do adapter.commit() -%}
{%- endmacro %}

{#- SELECT hwm.create_pipeline(...) for a copy pipeline from view to table. -#}
{% macro _hwm_create_pipeline_sql(c, pipeline, source, target, initial_watermark, main) -%}
  {%- set args = [hwm._hwm_literal(pipeline), hwm._hwm_regclass(source), hwm._hwm_regclass(target),
                  "unique_key => " ~ hwm._hwm_text_array(c.unique_key),
                  "watermark_column => " ~ hwm._hwm_literal(c.watermark_column)] -%}
  {%- if main and c.partition_column is not none -%}
    {%- do args.append("partition_column => " ~ hwm._hwm_literal(c.partition_column)) -%}
    {%- do args.append("lookback => " ~ c.lookback) -%}
  {%- endif -%}
  {%- if initial_watermark is not none -%}
    {%- do args.append("initial_watermark => " ~ hwm._hwm_literal(initial_watermark)) -%}
  {%- endif -%}
  {%- if c.delay is not none -%}
    {%- do args.append("delay => " ~ hwm._hwm_literal(c.delay) ~ "::interval") -%}
  {%- endif -%}
  {%- if c.batch_size is not none -%}
    {%- do args.append("batch_size => " ~ c.batch_size) -%}
  {%- endif -%}
  {%- if c.delete_column is not none -%}
    {%- do args.append("delete_column => " ~ hwm._hwm_literal(c.delete_column)) -%}
  {%- endif -%}
  {%- if c.history -%}
    {%- do args.append("history => true") -%}
    {%- if c.history_columns is not none -%}
      {%- do args.append("history_columns => " ~ hwm._hwm_text_array(c.history_columns)) -%}
    {%- endif -%}
    {%- do args.append("valid_from_column => " ~ hwm._hwm_literal(c.valid_from_column)) -%}
    {%- do args.append("valid_to_column => " ~ hwm._hwm_literal(c.valid_to_column)) -%}
  {%- endif -%}
  {{- return("select hwm.create_pipeline(" ~ args | join(', ') ~ ")") -}}
{%- endmacro %}

{#- The body of the model's function: the model's SQL, as a subquery. -#}
{% macro _hwm_fn_body() -%}
  {{- return("\nselect * from (\n" ~ sql ~ "\n) as hwm_model\n") -}}
{%- endmacro %}

{#-
  CREATE [OR REPLACE] FUNCTION fn() RETURNS TABLE (the model's columns)
  holding the model's SQL.  LANGUAGE sql, STABLE, no SET clause and not
  STRICT: what the planner needs to inline it into the run's queries.  Its
  body is parsed when it runs, with hwm's search_path (pg_catalog,
  pg_temp): dbt's ref() and source() are schema-qualified; qualify
  functions of your own.  cols: [{name, type}], or the column definitions
  as a query wrote them ("name type, ...").
-#}
{% macro _hwm_fn_sql(fn, cols, replace) -%}
  {%- if '$hwm_model$' in sql -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the model's SQL contains $hwm_model$, the quote hwm's function uses for it; write it otherwise") }}
  {%- endif -%}
  {%- set defs = [] -%}
  {%- for col in ([] if cols is string else cols) -%}{%- do defs.append(adapter.quote(col.name) ~ " " ~ col.type) -%}{%- endfor -%}
  {{- return("create " ~ ("or replace " if replace else "") ~ "function " ~ fn ~ "()\nreturns table (" ~ (cols if cols is string else defs | join(', ')) ~ ")\n"
             ~ "language sql stable\nas $hwm_model$" ~ hwm._hwm_fn_body() ~ "$hwm_model$") -}}
{%- endmacro %}

{#- The statements that make the model's function and its source view, from
    the model's columns, after those in prefix; the view records the project
    and model that made it (projects.sql). -#}
{% macro _hwm_source_sql(src, fn, cols, prefix='') -%}
  {{- return(prefix ~ hwm._hwm_fn_sql(fn, cols, false) ~ ";\n"
             ~ "create view " ~ src ~ " as select * from " ~ fn ~ "();\n" ~ hwm._hwm_mark_sql(src) ~ ";\n") -}}
{%- endmacro %}

{#- SELECT hwm.alter_pipeline(...) bringing a copy pipeline's settings to the
    model's configuration (extra: more arguments, such as source => ...). -#}
{% macro _hwm_alter_pipeline_sql(c, state, extra) -%}
  {%- set args = [hwm._hwm_literal(c.pipeline)] + extra -%}
  {%- set reset = [] -%}
  {%- if c.partition_column is not none -%}
    {%- do args.append("partition_column => " ~ hwm._hwm_literal(c.partition_column)) -%}
  {%- else -%}
    {%- do reset.append('partition_column') -%}
  {%- endif -%}
  {%- do args.append("lookback => " ~ (c.lookback or 0)) -%}
  {%- if c.delay is not none -%}
    {%- do args.append("delay => " ~ hwm._hwm_literal(c.delay) ~ "::interval") -%}
  {%- else -%}
    {%- do reset.append('delay') -%}
  {%- endif -%}
  {%- if c.batch_size is not none -%}
    {%- do args.append("batch_size => " ~ c.batch_size) -%}
  {%- else -%}
    {%- do reset.append('batch_size') -%}
  {%- endif -%}
  {%- if c.delete_column is not none -%}
    {%- do args.append("delete_column => " ~ hwm._hwm_literal(c.delete_column)) -%}
  {%- elif state.delete_column is not none -%}
    {%- do reset.append('delete_column') -%}
  {%- endif -%}
  {#- a history's tracked columns (later runs track them; the versions
      kept stay as they are); none: hwm's default -#}
  {%- if c.history and c.history_columns is not none -%}
    {%- do args.append("history_columns => " ~ hwm._hwm_text_array(c.history_columns)) -%}
  {%- elif c.history and state.history_columns is not none -%}
    {%- do reset.append('history_columns') -%}
  {%- endif -%}
  {%- if reset -%}
    {%- do args.append("reset => " ~ hwm._hwm_text_array(reset)) -%}
  {%- endif -%}
  {{- return("select hwm.alter_pipeline(" ~ args | join(', ') ~ ")") -}}
{%- endmacro %}

{#-
  --full-refresh of an hwm model.  Returns true (it always loads).
  1. (a transaction) drop the model's pipeline; bring the target's columns
     to the model's (as sync_all_columns does; a column whose old values do
     not cast to its new type is emptied); with a new key, drop the old
     primary key; create the staging table with the target's layout and a
     pipeline "<pipeline>#full_refresh" from the new view into it; commit.
     Readers see the old rows meanwhile.
  2. CALL hwm.catch_up of that pipeline (outside a transaction block).
  3. (a transaction) CALL hwm.swap; with a new key, add its primary key;
     declare the model's pipeline again over the new view, from the
     staging pipeline's watermark (safe: no transaction in flight can still
     commit a row at or below it); drop the staging table (the old rows).
-#}
{% macro _hwm_full_refresh(c, state, target_relation, src, new_view, stg, fn, model_cols) -%}
  {%- set stg_pipeline = c.pipeline[:50] ~ '#full_refresh' -%}
  {#- (the model's pipeline stays until the new rows are in: a load that
      fails leaves the model as it was) -#}
  {%- set key_changed = hwm._hwm_prepare_rebuild(c, target_relation, model_cols) -%}
  {%- do hwm._hwm_create_staging(c, stg, target_relation, not key_changed) -%}
  {%- do create_indexes(stg) -%}
  {%- do hwm._hwm_commit(hwm._hwm_create_pipeline_sql(c, stg_pipeline, new_view, stg, c.initial_watermark, false)) -%}

  {#- (the report counts the runs the load returns: no newest run id
      needed; one run reports in its own round trip, which opens the
      swap's transaction) -#}
  {%- set cleanup = ["select hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ")", "drop table if exists " ~ stg, "drop view if exists " ~ new_view] -%}
  {%- set loaded = hwm._hwm_load_model(stg_pipeline, false, c, cleanup) -%}
  {%- if not loaded.reported -%}
    {%- do hwm._hwm_report(stg_pipeline, 0, loaded, 'full refresh') -%}
  {%- endif -%}
  {#- The staging pipeline's watermark, and the pipelines scheduled after
      the model's (dropping it unschedules them: see _hwm_downstreams), in
      one query, in the swap's transaction. -#}
  {%- set r = hwm._hwm_query("select (select watermark from hwm.state where pipeline = " ~ hwm._hwm_literal(stg_pipeline) ~ "),
                                     (select pg_catalog.json_agg(pg_catalog.json_build_object('pipeline', s.pipeline, 'after', pg_catalog.to_jsonb(s.*) operator(pg_catalog.->) 'after') order by s.pipeline)
                                        from hwm.state as s
                                       where (pg_catalog.to_jsonb(s.*) operator(pg_catalog.->) 'after') operator(pg_catalog.?) " ~ hwm._hwm_literal(c.pipeline) ~ ")::text").rows[0] -%}
  {%- set wm = r[0] -%}
  {%- set downstreams = fromjson(r[1]) if r[1] and state is not none else [] -%}
  {#- (the rest in as few round trips as it takes: one, unless the key
      changed or pipelines run after the model's) -#}
  {%- set drops = ("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ");\n" if state is not none else "")
                  ~ "select hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ");\n" -%}
  {%- if key_changed -%}
    {%- do run_query(drops) -%}
    {%- do hwm._hwm_swap_in(c, target_relation, stg, key_changed) -%}
    {%- set drops = "" -%}
  {%- else -%}
    {%- set drops = drops ~ "CALL hwm.swap(" ~ hwm._hwm_regclass(target_relation) ~ ", " ~ hwm._hwm_regclass(stg) ~ ");\n" -%}
  {%- endif -%}
  {%- set declare = hwm._hwm_source_sql(src, fn, model_cols, drops ~ "drop view if exists " ~ src ~ ";\n"
                                                          ~ "drop view " ~ new_view ~ ";\n"
                                                          ~ "drop function if exists " ~ fn ~ "();\n")
                    ~ hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, wm, true) -%}
  {%- if downstreams -%}
    {%- do run_query(declare) -%}
    {%- do hwm._hwm_reschedule_downstreams(c.pipeline, downstreams) -%}
    {%- do hwm._hwm_commit("drop table " ~ stg) -%}
  {%- else -%}
    {%- do hwm._hwm_commit(declare ~ ";\ndrop table " ~ stg) -%}
  {%- endif -%}
  {%- do log("hwm " ~ c.pipeline ~ ": full refresh: rebuilt in " ~ stg.identifier ~ " and swapped in (the table keeps its OID, grants and dependent views); watermark set to " ~ (wm or 'none'), info=true) -%}
  {{- return(true) -}}
{%- endmacro %}

{#-
  A column that changes type (or goes) under a view that reads it: an
  error before anything changes, naming the views and what to do
  (PostgreSQL cannot alter a column a view reads; dbt's table models,
  dropped and created again, cannot keep such views either).
-#}
{% macro _hwm_check_retype(target_relation, ch) -%}
  {%- set names = (ch.retyped | map(attribute='name') | list) + (ch.removed | map(attribute='name') | list) -%}
  {%- if names -%}
    {%- set r = run_query("select pg_catalog.string_agg(distinct v.oid::pg_catalog.regclass::text || ' (column ' || a.attname || ')', ', ')
                             from pg_catalog.pg_depend d
                             join pg_catalog.pg_rewrite w on w.oid = d.objid
                             join pg_catalog.pg_class v on v.oid = w.ev_class
                             join pg_catalog.pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
                            where d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                              and d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                              and d.refobjid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(target_relation) ~ ")
                              and v.oid <> d.refobjid
                              and a.attname = any(" ~ hwm._hwm_text_array(names) ~ ")").rows[0][0] -%}
    {%- if r -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": " ~ hwm._hwm_describe_changes(ch) ~ ", but views read the columns that change: " ~ r ~ ". PostgreSQL cannot change or drop a column a view reads (dbt's table models cannot keep such views either), so nothing was changed. Drop those views, run `dbt run --full-refresh --select " ~ model.name ~ "+` (which also rebuilds dbt's models downstream), and create the other views again") }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-
  Before a rebuild: bring the target's columns to the model's (as
  sync_all_columns does; a column whose old values do not cast to its new
  type is emptied), and with a new key drop the old primary key and the
  NOT NULLs (hwm.swap wants the same nullability; the new key's primary key
  comes after the swap).  A history's table has the bounds besides the
  model's columns (of the watermark column's type): a model that becomes a
  history gets them, one that stops being one loses them, and its key
  changes.  Returns whether the key changed.
-#}
{% macro _hwm_prepare_rebuild(c, target_relation, model_cols) -%}
  {%- set table_cols = model_cols -%}
  {%- if c.history -%}
    {%- set wm = model_cols | selectattr('name', 'equalto', c.watermark_column) | first -%}
    {%- set table_cols = model_cols + [{'name': c.valid_from_column, 'type': wm.type}, {'name': c.valid_to_column, 'type': wm.type}] -%}
  {%- endif -%}
  {%- set ch = hwm._hwm_column_changes(table_cols, hwm._hwm_live(hwm._hwm_attributes(target_relation))) -%}
  {%- do hwm._hwm_check_retype(target_relation, ch) -%}
  {%- for r in ch.removed -%}
    {%- do run_query("alter table " ~ target_relation ~ " drop column " ~ adapter.quote(r.name)) -%}
  {%- endfor -%}
  {%- for a in ch.added -%}
    {%- do run_query("alter table " ~ target_relation ~ " add column " ~ adapter.quote(a.name) ~ " " ~ a.type) -%}
  {%- endfor -%}
  {%- for t in ch.retyped -%}
    {%- set alter = "alter table " ~ target_relation ~ " alter column " ~ adapter.quote(t.name) ~ " type " ~ t.new ~ " using " -%}
    {%- do run_query("DO $hwm$ BEGIN EXECUTE " ~ hwm._hwm_literal(alter ~ adapter.quote(t.name) ~ "::" ~ t.new) ~ ";
                      EXCEPTION WHEN others THEN EXECUTE " ~ hwm._hwm_literal(alter ~ "null") ~ "; END $hwm$") -%}
  {%- endfor -%}
  {%- set key_changed = hwm._hwm_primary_key(target_relation) != (hwm._hwm_table_key(c) or []) -%}
  {%- if key_changed and c.history -%}
    {#- (the index of the current versions of the old key: made again after the swap) -#}
    {%- for i in hwm._hwm_current_indexes(c, target_relation) -%}
      {%- do run_query("drop index " ~ i) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if key_changed -%}
    {%- set conname = run_query("select conname::text from pg_catalog.pg_constraint where contype = 'p' and conrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(target_relation) ~ ")") -%}
    {%- if conname.rows | length > 0 -%}
      {%- do run_query("alter table " ~ target_relation ~ " drop constraint " ~ adapter.quote(conname.rows[0][0])) -%}
    {%- endif -%}
    {%- for a in hwm._hwm_live(hwm._hwm_attributes(target_relation)) if a.notnull -%}
      {%- do run_query("alter table " ~ target_relation ~ " alter column " ~ adapter.quote(a.name) ~ " drop not null") -%}
    {%- endfor -%}
  {%- endif -%}
  {{- return(key_changed) -}}
{%- endmacro %}

{#- The swap of a rebuild, and a new key's primary key after it (and a
    history's index of the current versions). -#}
{% macro _hwm_swap_in(c, target_relation, stg, key_changed) -%}
  {%- set key = hwm._hwm_table_key(c) -%}
  {%- if key_changed and c.unique_key -%}
    {#- (the target has no index on the new key yet, nor NOT NULLs: it gets
        them after the swap) -#}
    {%- do run_query("drop index " ~ adapter.quote(stg.schema) ~ "." ~ adapter.quote(stg.identifier ~ "_key")) -%}
    {%- if c.history -%}
      {%- set nn = [] -%}
      {%- for k in key -%}{%- do nn.append("alter column " ~ adapter.quote(k) ~ " drop not null") -%}{%- endfor -%}
      {%- do run_query("alter table " ~ stg ~ " " ~ nn | join(', ')) -%}
    {%- endif -%}
  {%- endif -%}
  {%- do run_query("CALL hwm.swap(" ~ hwm._hwm_regclass(target_relation) ~ ", " ~ hwm._hwm_regclass(stg) ~ ")") -%}
  {%- if key_changed and c.unique_key -%}
    {%- do run_query("alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(key) ~ ")") -%}
    {%- if c.history -%}
      {%- do run_query(hwm._hwm_current_index_sql(c, target_relation)) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-
  After the load: the pipeline's schedule becomes the config's (state: the
  pipeline's hwm.state before this dbt run, none for a pipeline this run
  declared), and the catalog changes only when it differs.
  - schedule: hwm.schedule, the first scheduled run one period from now
    (this run has just loaded).  Declaring the pipeline with its schedule
    would start a scheduled run at once, in the way of dbt's own load.
  - schedule_after_refs: hwm.schedule_after of the pipelines of the hwm
    models the model ref()s (c.after), compared with hwm.state.after in any
    order; each replaces the other.
  - neither: hwm.unschedule, which clears both.
-#}
{% macro _hwm_sync_schedule(c, state) -%}
  {%- set current = state.schedule if state is not none else none -%}
  {%- set current_after = ((state.after or []) if state is not none else []) | unique | sort | list -%}
  {%- if c.schedule_after_refs -%}
    {%- if current is not none or current_after != c.after -%}
      {%- do hwm._hwm_schedule_after(c) -%}
    {%- endif -%}
  {%- elif c.schedule is not none -%}
    {%- if not hwm._hwm_same_interval(current, c.schedule) -%}
      {%- do run_query("select hwm.schedule(" ~ hwm._hwm_literal(c.pipeline) ~ ", " ~ hwm._hwm_literal(c.schedule) ~ "::interval, pg_catalog.now() + " ~ hwm._hwm_literal(c.schedule) ~ "::interval)") -%}
    {%- endif -%}
  {%- elif current is not none or current_after -%}
    {%- do run_query("select hwm.unschedule(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
    {%- if current_after -%}
      {%- do log("hwm " ~ c.pipeline ~ ": no longer runs after " ~ current_after | join(', ') ~ " (config schedule_after_refs is gone): unscheduled, it runs when dbt runs it", info=true) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-
  hwm.schedule_after(the model's pipeline, c.after), its error (caught)
  told in the model's terms: an upstream that has no pipeline yet (42704:
  its model has not run, or ran with --empty) says to run it first.
-#}
{% macro _hwm_schedule_after(c) -%}
  {%- do run_query("DO $hwm$ DECLARE st text; msg text; hnt text; BEGIN
                       PERFORM pg_catalog.set_config('hwm_dbt.after', '', true);
                       PERFORM hwm.schedule_after(" ~ hwm._hwm_literal(c.pipeline) ~ ", " ~ hwm._hwm_text_array(c.after) ~ ");
                     EXCEPTION WHEN others THEN
                       GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hnt = PG_EXCEPTION_HINT;
                       PERFORM pg_catalog.set_config('hwm_dbt.after', pg_catalog.json_build_object('sqlstate', st, 'message', msg, 'hint', hnt)::text, true);
                     END $hwm$") -%}
  {%- set r = run_query("select pg_catalog.current_setting('hwm_dbt.after', true),
                                (select pg_catalog.string_agg(u.p, ', ' order by u.p) from pg_catalog.unnest(" ~ hwm._hwm_text_array(c.after) ~ ") as u(p)
                                  where not exists (select from hwm.state s where s.pipeline operator(pg_catalog.=) u.p))").rows[0] -%}
  {%- if r[0] -%}
    {%- set e = fromjson(r[0]) -%}
    {%- set how = "config 'schedule_after_refs': hwm.schedule_after(" ~ c.pipeline ~ ", {" ~ c.after | join(', ') ~ "}) failed (this run's load stands; the pipeline's schedule was not changed): " -%}
    {%- if e.sqlstate == '42704' -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": " ~ how ~ "the upstream pipeline " ~ (r[1] or e.message)
           ~ " does not exist yet (its hwm model has not run, or ran only with --empty), or belongs to another role whose table " ~ target.user ~ " may not read. Run the upstream models first, e.g. `dbt run --select +" ~ model.name ~ "`") }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": " ~ how ~ e.sqlstate ~ ": " ~ e.message ~ ("\nHINT: " ~ e.hint if e.hint else "")) }}
  {%- endif -%}
  {%- do log("hwm " ~ c.pipeline ~ ": runs after " ~ c.after | join(', ') ~ " (config schedule_after_refs): hwm's background worker runs it whenever a run of "
             ~ ("that pipeline" if c.after | length == 1 else "one of them") ~ " commits rows", info=true) -%}
{%- endmacro %}

{#-
  The pipelines scheduled after this one (hwm.schedule_after), with all
  their upstreams: [{pipeline, after}], those dbt's role can see.  Read
  before a rebuild drops the pipeline (which unschedules them, saying that
  their upstream was dropped) and scheduled after it again once it is
  declared again, in _hwm_reschedule_downstreams.
-#}
{% macro _hwm_downstreams(pipeline) -%}
  {%- set r = run_query("select s.pipeline, (pg_catalog.to_jsonb(s.*) operator(pg_catalog.->) 'after')::text from hwm.state as s
                          where (pg_catalog.to_jsonb(s.*) operator(pg_catalog.->) 'after') operator(pg_catalog.?) " ~ hwm._hwm_literal(pipeline) ~ "
                          order by 1") -%}
  {%- set out = [] -%}
  {%- for row in r.rows -%}{%- do out.append({'pipeline': row[0], 'after': fromjson(row[1])}) -%}{%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{% macro _hwm_reschedule_downstreams(pipeline, downstreams) -%}
  {%- for d in downstreams -%}
    {%- do run_query("select hwm.schedule_after(" ~ hwm._hwm_literal(d.pipeline) ~ ", " ~ hwm._hwm_text_array(d.after) ~ ")") -%}
  {%- endfor -%}
  {%- if downstreams -%}
    {%- do log("hwm " ~ pipeline ~ ": " ~ downstreams | map(attribute='pipeline') | join(', ') ~ " run after it again (declaring it again had unscheduled them)", info=true) -%}
  {%- endif -%}
{%- endmacro %}
