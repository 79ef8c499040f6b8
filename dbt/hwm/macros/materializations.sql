{#-
  materialized='hwm': a model that is an hwm pipeline.

  The model's SQL says which rows exist; hwm loads the new ones.  Objects
  (all owned by the role dbt connects as):

    <model>            the target table: the model's columns, a primary key
                       on unique_key (the upsert's conflict target)
    <model>__hwm_src   a view holding the model's SQL: the pipeline's source
    pipeline           hwm.state row named after config 'pipeline'
                       (default "schema.model"), owned by dbt's role

  First run: create the view, the table (empty, columns from the view) and
  the pipeline, then load with CALL hwm.catch_up.  Later runs: replace the
  view's SQL, apply on_schema_change, re-declare the pipeline when its
  configuration changed, then CALL hwm.catch_up.  --full-refresh: load the
  model from scratch into <model>__hwm_stg through a pipeline of its own,
  CALL hwm.swap it in (the target keeps its OID, grants and dependent
  views), and carry that pipeline's safe watermark over.

  Transactions: the setup runs in one transaction (pre-hooks inside it);
  CALL hwm.catch_up runs outside any transaction block, so with batch_size
  each batch commits with its watermark; post-hooks, grants and docs run in
  a last transaction, after the load.
-#}

{% materialization hwm, adapter='postgres' -%}
  {%- set c = hwm._hwm_model_config('hwm') -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set src = hwm._hwm_helper(target_relation, '__hwm_src', 'view') -%}
  {%- set new_view = hwm._hwm_helper(target_relation, '__hwm_new', 'view') -%}
  {%- set stg = hwm._hwm_helper(target_relation, '__hwm_stg', 'table') -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {%- do hwm._hwm_begin() -%}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#- Everything that can be wrong with the configuration, before anything is created. -#}
  {%- do hwm._hwm_check_config(c, sql) -%}
  {%- set facts = hwm._hwm_facts(c.pipeline, [target_relation, src]) -%}
  {%- set state = facts.state -%}
  {%- set after_run = facts.last_run_id -%}

  {%- if existing_relation is not none and not existing_relation.is_table -%}
    {#- A view (the model was materialized otherwise before): replaced by the table. -#}
    {%- do adapter.drop_relation(existing_relation) -%}
    {%- set existing_relation = none -%}
    {%- set facts = hwm._hwm_facts(c.pipeline, [target_relation, src]) -%}
  {%- endif -%}
  {%- set target_oid = facts.oids[0] -%}
  {%- if state is not none and (target_oid is none or state.target_oid != target_oid) -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\", which loads " ~ state.target ~ ", not this model: choose another pipeline name (or drop that pipeline)") }}
  {%- endif -%}
  {%- if state is not none and state.command is not none -%}
    {{ hwm._hwm_config_error('pipeline', "names pipeline \"" ~ c.pipeline ~ "\", an interval or command pipeline: rebuild the model with `dbt run --full-refresh --select " ~ model.name ~ "`") }}
  {%- endif -%}

  {#- Leftovers of an interrupted run. -#}
  {%- do run_query("drop view if exists " ~ new_view ~ "; drop table if exists " ~ stg) -%}

  {%- set redeclared = namespace(flag=false) -%}
  {%- if existing_relation is none -%}
    {#- First run. -#}
    {%- set mode = 'create' -%}
    {%- do run_query("drop view if exists " ~ src ~ ";\n"
                     ~ "create view " ~ src ~ " as (\n" ~ sql ~ "\n);\n"
                     ~ "create table " ~ target_relation ~ " as select * from " ~ src ~ " with no data;\n"
                     ~ "alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ")") -%}
    {%- do create_indexes(target_relation) -%}
    {%- do run_query(hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, c.initial_watermark, true)) -%}
    {%- do hwm._hwm_commit() -%}
    {%- set loaded = hwm._hwm_load(c.pipeline, false) -%}

  {%- elif should_full_refresh() -%}
    {%- set mode = 'full refresh' -%}
    {%- set loaded = hwm._hwm_full_refresh(c, state, target_relation, src, new_view, stg) -%}

  {%- else -%}
    {#- An incremental run. -#}
    {%- set mode = 'incremental' -%}
    {%- set refresh = "`dbt run --full-refresh --select " ~ model.name ~ "`" -%}
    {%- if state is none -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the table exists but no hwm pipeline \"" ~ c.pipeline ~ "\" loads it (it was built by another materialization, or its pipeline was dropped): rebuild it as an hwm model with " ~ refresh ~ ", which keeps the table's OID and grants") }}
    {%- endif -%}
    {%- if state.unique_key != c.unique_key -%}
      {{ hwm._hwm_config_error('unique_key', "changed from " ~ state.unique_key | join(', ') ~ " to " ~ c.unique_key | join(', ') ~ ": the table's key and the rows loaded on it change, so rebuild it with " ~ refresh) }}
    {%- endif -%}
    {%- if state.watermark_column != c.watermark_column -%}
      {{ hwm._hwm_config_error('watermark_column', "changed from " ~ state.watermark_column ~ " to " ~ c.watermark_column ~ ": the stored watermark is a value of the old column, so rebuild the model with " ~ refresh) }}
    {%- endif -%}
    {%- do run_query("create view " ~ new_view ~ " as (\n" ~ sql ~ "\n)") -%}
    {%- set attrs = hwm._hwm_attributes_of([new_view, target_relation, src]) -%}
    {%- set model_cols = hwm._hwm_live(attrs[0]) -%}
    {%- set ch = hwm._hwm_column_changes(model_cols, hwm._hwm_live(attrs[1])) -%}
    {%- if ch.any -%}
      {%- do hwm._hwm_apply_schema_changes(c, target_relation, ch, c.unique_key + [c.watermark_column] + ([c.partition_column] if c.partition_column else [])) -%}
    {%- endif -%}
    {#- The source view keeps its OID (and the pipeline) while its columns
        stay the same; otherwise it is replaced and the pipeline declared
        again from the same watermark. -#}
    {%- set src_cols = hwm._hwm_live(attrs[2]) -%}
    {%- set src_oid = facts.oids[1] -%}
    {%- set same_view = src_oid is not none and src_oid == state.source_oid
                        and (src_cols | map(attribute='name') | list) == (model_cols | map(attribute='name') | list)
                        and (src_cols | map(attribute='type') | list) == (model_cols | map(attribute='type') | list) -%}
    {%- set same_config = state.partition_column == c.partition_column and state.lookback == c.lookback
                          and state.batch_size == c.batch_size and hwm._hwm_same_interval(state.delay, c.delay) -%}
    {%- if same_view -%}
      {#- Replaced only when its SQL changed: replacing a view waits for the
          runs reading it (a scheduled run), which nowait would not. -#}
      {%- if not run_query("select pg_catalog.pg_get_viewdef(pg_catalog.to_regclass(" ~ hwm._hwm_regclass(src) ~ "))
                               = pg_catalog.pg_get_viewdef(pg_catalog.to_regclass(" ~ hwm._hwm_regclass(new_view) ~ "))").rows[0][0] -%}
        {%- do run_query("create or replace view " ~ src ~ " as (\n" ~ sql ~ "\n)") -%}
      {%- endif -%}
      {%- do run_query("drop view " ~ new_view) -%}
    {%- endif -%}
    {%- if not same_view or not same_config -%}
      {%- set redeclared.flag = true -%}
      {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
      {%- if not same_view -%}
        {%- do run_query("drop view if exists " ~ src) -%}
        {%- do run_query("alter view " ~ new_view ~ " rename to " ~ adapter.quote(src.identifier)) -%}
      {%- endif -%}
      {%- do run_query(hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation,
                                                    state.watermark if state.watermark is not none else c.initial_watermark, true)) -%}
      {%- do log("hwm " ~ c.pipeline ~ ": declared again from watermark " ~ (state.watermark or 'none') ~ " (" ~ ("the model's columns changed" if not same_view else "its configuration changed") ~ ")", info=true) -%}
    {%- endif -%}
    {%- do hwm._hwm_commit() -%}
    {%- set loaded = hwm._hwm_load(c.pipeline, c.schedule is not none) -%}
  {%- endif -%}

  {%- if mode != 'full refresh' -%}
    {%- do hwm._hwm_report(c.pipeline, after_run, loaded, mode) -%}
  {%- endif -%}

  {%- do hwm._hwm_begin() -%}
  {%- do hwm._hwm_sync_schedule(c, none if mode != 'incremental' or redeclared.flag else state.schedule) -%}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {%- do apply_grants(target_relation, grant_config, should_revoke=should_revoke(existing_relation, full_refresh_mode=False)) -%}
  {%- do persist_docs(target_relation, model) -%}
  {%- do adapter.commit() -%}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}


{#- Open dbt's transaction unless one is open (run_query never does: it
    runs with auto_begin=False). -#}
{% macro _hwm_begin() -%}
  {%- call statement('hwm_begin', auto_begin=True) -%} select 1 {%- endcall -%}
{%- endmacro %}

{#- Commit dbt's transaction (opening one first if none is open). -#}
{% macro _hwm_commit() -%}
  {%- do hwm._hwm_begin() -%}
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
  {{- return("select hwm.create_pipeline(" ~ args | join(', ') ~ ")") -}}
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
{% macro _hwm_full_refresh(c, state, target_relation, src, new_view, stg) -%}
  {%- set stg_pipeline = c.pipeline[:50] ~ '#full_refresh' -%}
  {%- do run_query("create view " ~ new_view ~ " as (\n" ~ sql ~ "\n)") -%}
  {%- if state is not none -%}
    {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
  {%- endif -%}
  {%- set key_changed = hwm._hwm_prepare_rebuild(c, target_relation, hwm._hwm_live(hwm._hwm_attributes(new_view))) -%}
  {%- do hwm._hwm_create_staging(c, stg, target_relation, not key_changed) -%}
  {%- do create_indexes(stg) -%}
  {%- do run_query(hwm._hwm_create_pipeline_sql(c, stg_pipeline, new_view, stg, c.initial_watermark, false)) -%}
  {%- do hwm._hwm_commit() -%}

  {%- set after_run = hwm._hwm_last_run_id() -%}
  {%- do hwm._hwm_load(stg_pipeline, false) -%}
  {%- do hwm._hwm_report(stg_pipeline, after_run, true, 'full refresh') -%}
  {%- do hwm._hwm_begin() -%}

  {%- set wm = hwm._hwm_state(stg_pipeline).watermark -%}
  {%- do run_query("select hwm.drop_pipeline(" ~ hwm._hwm_literal(stg_pipeline) ~ ")") -%}
  {%- do hwm._hwm_swap_in(c, target_relation, stg, key_changed) -%}
  {%- do run_query("drop view if exists " ~ src) -%}
  {%- do run_query("alter view " ~ new_view ~ " rename to " ~ adapter.quote(src.identifier)) -%}
  {%- do run_query(hwm._hwm_create_pipeline_sql(c, c.pipeline, src, target_relation, wm, true)) -%}
  {%- do run_query("drop table " ~ stg) -%}
  {%- do hwm._hwm_commit() -%}
  {%- do log("hwm " ~ c.pipeline ~ ": full refresh: rebuilt in " ~ stg.identifier ~ " and swapped in (the table keeps its OID, grants and dependent views); watermark set to " ~ (wm or 'none'), info=true) -%}
  {{- return(true) -}}
{%- endmacro %}

{#-
  Before a rebuild: bring the target's columns to the model's (as
  sync_all_columns does; a column whose old values do not cast to its new
  type is emptied), and with a new key drop the old primary key and the
  NOT NULLs (hwm.swap wants the same nullability; the new key's primary key
  comes after the swap).  Returns whether the key changed.
-#}
{% macro _hwm_prepare_rebuild(c, target_relation, model_cols) -%}
  {%- set ch = hwm._hwm_column_changes(model_cols, hwm._hwm_live(hwm._hwm_attributes(target_relation))) -%}
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
  {%- set key_changed = hwm._hwm_primary_key(target_relation) != (c.unique_key or []) -%}
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

{#- The swap of a rebuild, and a new key's primary key after it. -#}
{% macro _hwm_swap_in(c, target_relation, stg, key_changed) -%}
  {%- if key_changed and c.unique_key -%}
    {#- (the target has no index on the new key yet: it gets one after the swap) -#}
    {%- do run_query("drop index " ~ adapter.quote(stg.schema) ~ "." ~ adapter.quote(stg.identifier ~ "_key")) -%}
  {%- endif -%}
  {%- do run_query("CALL hwm.swap(" ~ hwm._hwm_regclass(target_relation) ~ ", " ~ hwm._hwm_regclass(stg) ~ ")") -%}
  {%- if key_changed and c.unique_key -%}
    {%- do run_query("alter table " ~ target_relation ~ " add primary key (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ")") -%}
  {%- endif -%}
{%- endmacro %}

{#- After the load: the pipeline's schedule becomes the config's, its first
    scheduled run one period from now (this run has just loaded).  Declaring
    the pipeline with its schedule would start a scheduled run at once, in
    the way of dbt's own load. -#}
{% macro _hwm_sync_schedule(c, current) -%}
  {%- if not hwm._hwm_same_interval(current, c.schedule) -%}
    {%- if c.schedule is none -%}
      {%- do run_query("select hwm.unschedule(" ~ hwm._hwm_literal(c.pipeline) ~ ")") -%}
    {%- else -%}
      {%- do run_query("select hwm.schedule(" ~ hwm._hwm_literal(c.pipeline) ~ ", " ~ hwm._hwm_literal(c.schedule) ~ "::interval, pg_catalog.now() + " ~ hwm._hwm_literal(c.schedule) ~ "::interval)") -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
