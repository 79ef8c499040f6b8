{#-
  Helpers of the hwm materializations (materialized='hwm' and
  materialized='hwm_interval', see materializations.sql).  Every name that
  reaches SQL is quoted with adapter.quote(); every value is an SQL literal
  (hwm._hwm_literal), never pasted in raw.
-#}

{#- "schema.identifier" of the model, for messages and the default pipeline name. -#}
{% macro _hwm_where() -%}
  {{- return(this.schema ~ '.' ~ this.identifier) -}}
{%- endmacro %}

{#- A configuration error, raised before anything is created: names the key. -#}
{% macro _hwm_config_error(key, msg) -%}
  {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": config '" ~ key ~ "' " ~ msg) }}
{%- endmacro %}

{#- A column list config (a name or a list of names) as a list; none stays none. -#}
{% macro _hwm_name_list(key, value) -%}
  {%- if value is none -%}
    {{- return(none) -}}
  {%- elif value is string -%}
    {{- return([value]) -}}
  {%- elif value is sequence and value is not mapping and value | length > 0 -%}
    {%- for v in value if v is not string -%}
      {{ hwm._hwm_config_error(key, "must be a column name or a list of column names, got " ~ value) }}
    {%- endfor -%}
    {{- return(value | list) -}}
  {%- else -%}
    {{ hwm._hwm_config_error(key, "must be a column name or a list of column names, got " ~ value) }}
  {%- endif -%}
{%- endmacro %}

{#- A config value the user set (in the model, a .yml file or
    dbt_project.yml), or default: dbt gives every model its own defaults for
    some of hwm's names (lookback=1 and batch_size for microbatch models,
    on_schema_change='ignore'), which must not count as set. -#}
{% macro _hwm_user_config(key, default=none) -%}
  {%- if key in (model.unrendered_config or {}) -%}
    {{- return(config.get(key, default)) -}}
  {%- endif -%}
  {{- return(default) -}}
{%- endmacro %}

{% macro _hwm_opt_string(key) -%}
  {%- set v = config.get(key) -%}
  {%- if v is not none and v is not string -%}
    {{ hwm._hwm_config_error(key, "must be a string, got " ~ v) }}
  {%- endif -%}
  {{- return(v) -}}
{%- endmacro %}

{% macro _hwm_opt_int(key, minimum) -%}
  {%- set v = hwm._hwm_user_config(key) -%}
  {%- if v is not none and (v is not number or v is boolean or v != (v | int) or v < minimum) -%}
    {{ hwm._hwm_config_error(key, "must be an integer of at least " ~ minimum ~ ", got " ~ v) }}
  {%- endif -%}
  {{- return(none if v is none else v | int) -}}
{%- endmacro %}

{% macro _hwm_opt_bool(key, default) -%}
  {%- set v = config.get(key, default) -%}
  {%- if v is not boolean -%}
    {{ hwm._hwm_config_error(key, "must be true or false, got " ~ v) }}
  {%- endif -%}
  {{- return(v) -}}
{%- endmacro %}

{#-
  The model's configuration, checked: a dict of hwm's keys.  (What is wrong
  with it is found by the conditions here and told by
  _hwm_model_config_error, compiled only when one holds: each macro a run
  calls is compiled in every dbt process.)
-#}
{% macro _hwm_model_config(flavour) -%}
  {#- dbt gives every model on_schema_change='ignore' unless set: hwm's
      default is 'fail', so only a value the user wrote counts; the same
      for lookback and batch_size. -#}
  {%- set user_set = model.unrendered_config or {} -%}
  {%- set uk = config.get('unique_key') -%}
  {%- set c = {'flavour': flavour, 'pipeline': config.get('pipeline') or hwm._hwm_where(),
               'unique_key': [uk] if uk is string else hwm._hwm_name_list('unique_key', uk),
               'on_schema_change': (config.get('on_schema_change') if 'on_schema_change' in user_set else none) or 'fail',
               'watermark_column': config.get('watermark_column'), 'after': none} -%}
  {%- for key in ['schedule', 'delay'] + (['partition_column', 'initial_watermark', 'delete_column'] if flavour == 'hwm' else ['time_source', 'anchor', 'start_at']) -%}
    {%- set v = config.get(key) -%}
    {%- do c.update({key: v if v is none or v is string else hwm._hwm_opt_string(key)}) -%}
  {%- endfor -%}
  {%- set v = config.get('schedule_after_refs', false) -%}
  {%- do c.update({'schedule_after_refs': v if v is boolean else hwm._hwm_opt_bool('schedule_after_refs', false)}) -%}
  {%- for key, minimum in [('lookback', 0), ('batch_size', 1)] if flavour == 'hwm' -%}
    {%- set v = config.get(key) if key in user_set else none -%}
    {%- do c.update({key: none if v is none else v | int if v is number and v is not boolean and v == (v | int) and v >= minimum else hwm._hwm_opt_int(key, minimum)}) -%}
  {%- endfor -%}
  {%- if c.pipeline is not string or c.pipeline | length > 63 or this.identifier | length > 54
         or c.on_schema_change not in ['fail', 'append_new_columns', 'sync_all_columns', 'ignore'] or config.get('incremental_predicates')
         or (flavour == 'hwm' and (c.unique_key is none or c.watermark_column is not string or c.watermark_column == ''
                                   or (c.lookback and c.partition_column is none) or c.delete_column in c.unique_key)) -%}
    {%- do hwm._hwm_model_config_error(c) -%}
  {%- endif -%}
  {#- schedule_after_refs: the pipeline runs after those of the hwm models
      it ref()s (hwm.schedule_after), instead of every so often. -#}
  {%- if c.schedule_after_refs -%}
    {%- do c.update({'after': hwm._hwm_after_refs(c)}) -%}
  {%- endif -%}
  {%- if flavour != 'hwm' -%}
    {%- do hwm._hwm_interval_config(c) -%}
    {{- return(c) -}}
  {%- endif -%}
  {%- do c.update({'lookback': c.lookback or 0}) -%}
  {%- if config.get('history', false) is sameas false and config.get('history_columns') is none
         and config.get('valid_from_column') is none and config.get('valid_to_column') is none -%}
    {%- do c.update({'history': false, 'history_columns': none, 'valid_from_column': none, 'valid_to_column': none}) -%}
  {%- else -%}
    {%- do c.update(hwm._hwm_history_config(c)) -%}
  {%- endif -%}
  {{- return(c) -}}
{%- endmacro %}

{#- What _hwm_model_config found wrong with the configuration c: the
    error, in the order the keys are checked. -#}
{% macro _hwm_model_config_error(c) -%}
  {%- if c.pipeline is not string or c.pipeline | length > 63 -%}
    {{ hwm._hwm_config_error('pipeline', "must be a pipeline name of at most 63 characters (the default is schema.model), got " ~ c.pipeline) }}
  {%- endif -%}
  {%- if this.identifier | length > 54 -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the relation name is longer than 54 characters; hwm's helper relations add 9 (name__hwm_src): set a shorter alias") }}
  {%- endif -%}
  {%- if c.on_schema_change not in ['fail', 'append_new_columns', 'sync_all_columns', 'ignore'] -%}
    {{ hwm._hwm_config_error('on_schema_change', "must be fail (the default for hwm models), append_new_columns, sync_all_columns or ignore, got " ~ c.on_schema_change) }}
  {%- endif -%}
  {%- if config.get('incremental_predicates') -%}
    {{ hwm._hwm_config_error('incremental_predicates', "is not supported by hwm models: hwm reads the source from its watermark and upserts on unique_key, so a predicate on the target's rows would not change what is loaded. Filter the source in the model's SQL, or use partition_column and lookback to overwrite the newest partitions") }}
  {%- endif -%}
  {%- if c.unique_key is none -%}
    {{ hwm._hwm_config_error('unique_key', "is required: the business key hwm upserts on, e.g. unique_key='id' or unique_key=['id', 'day']") }}
  {%- endif -%}
  {%- if c.watermark_column is not string or c.watermark_column == '' -%}
    {{ hwm._hwm_config_error('watermark_column', "is required: the column whose new values say which rows are new, e.g. watermark_column='updated_at'") }}
  {%- endif -%}
  {%- if c.lookback and c.partition_column is none -%}
    {{ hwm._hwm_config_error('lookback', "needs partition_column: the lookback re-overwrites the newest partitions of that column") }}
  {%- endif -%}
  {{ hwm._hwm_config_error('delete_column', "names column " ~ c.delete_column ~ ", which is part of unique_key: name the column that marks a deleted row, e.g. delete_column='deleted_at'") }}
{%- endmacro %}

{#- schedule_after_refs=true: not with a schedule, and the pipelines of the
    hwm models the model ref()s, which it needs. -#}
{% macro _hwm_after_refs(c) -%}
  {%- if c.schedule is not none -%}
    {{ hwm._hwm_config_error('schedule_after_refs', "is true and config 'schedule' is set too (" ~ c.schedule ~ "): a pipeline runs either every so often (schedule) or whenever the hwm models it ref()s load rows (schedule_after_refs), not both. Drop one of them") }}
  {%- endif -%}
  {%- set ups = hwm._hwm_ref_pipelines() -%}
  {%- if not ups -%}
    {{ hwm._hwm_config_error('schedule_after_refs', "is true, but the model ref()s no hwm or hwm_interval model (directly or through view and ephemeral models; it reads " ~ ((model.depends_on.nodes or []) | join(', ') or 'nothing') ~ "), so nothing would ever run it: ref() an hwm model, or set schedule='...' instead") }}
  {%- endif -%}
  {{- return(ups) -}}
{%- endmacro %}

{#- An hwm_interval model's configuration, into c. -#}
{% macro _hwm_interval_config(c) -%}
  {%- for key in ['delete_column', 'history', 'history_columns', 'valid_from_column', 'valid_to_column'] if config.get(key) not in [none, false] -%}
    {{ hwm._hwm_config_error(key, "is only for materialized='hwm' models: an interval model recomputes whole intervals") }}
  {%- endfor -%}
  {%- do c.update({'history': false, 'history_columns': none, 'valid_from_column': none, 'valid_to_column': none}) -%}
  {%- set tc = config.get('time_column') -%}
  {%- if tc is none or tc is not string or tc == '' -%}
    {{ hwm._hwm_config_error('time_column', "is required: the time column of the source whose finished intervals the model computes, e.g. time_column='created_at'") }}
  {%- endif -%}
  {%- set ti = config.get('time_interval') -%}
  {%- if ti is none or ti is not string or ti == '' -%}
    {{ hwm._hwm_config_error('time_interval', "is required: the length of one interval, e.g. time_interval='1 hour'") }}
  {%- endif -%}
  {%- do c.update({'time_column': tc, 'time_interval': ti,
                   'target_time_column': config.get('target_time_column') or tc,
                   'batched': hwm._hwm_opt_bool('batched', false),
                   'skip_empty': hwm._hwm_opt_bool('skip_empty', false)}) -%}
{%- endmacro %}

{#-
  A history model's configuration (materialized='hwm', history=true: the
  target keeps every version of a key, hwm.create_pipeline(..., history =>
  true)): {history, history_columns (none: hwm's default, every column but
  the key, the watermark and the delete marker), valid_from_column,
  valid_to_column (none unless history)}.  What hwm would refuse for a
  history is refused here, before anything is created: partition_column and
  lookback (an overwrite replaces a partition's rows, deleting the versions
  the source no longer has), reconcile=true (it deletes the rows of keys the
  model no longer returns: in a history, their past), and bounds that
  collide with the key, the watermark column or each other.
-#}
{% macro _hwm_history_config(c) -%}
  {%- set history = hwm._hwm_opt_bool('history', false) -%}
  {%- set hcols = hwm._hwm_name_list('history_columns', config.get('history_columns')) -%}
  {%- if not history -%}
    {%- for key in ['history_columns', 'valid_from_column', 'valid_to_column'] if config.get(key) is not none -%}
      {{ hwm._hwm_config_error(key, "needs history=true: it configures a history model (one that keeps every version of a key), and this model is not one. Set history=true, or leave " ~ key ~ " out") }}
    {%- endfor -%}
    {{- return({'history': false, 'history_columns': none, 'valid_from_column': none, 'valid_to_column': none}) -}}
  {%- endif -%}
  {%- set why = ": a history keeps every version of a key, and " -%}
  {%- if c.partition_column is not none or c.lookback > 0 -%}
    {{ hwm._hwm_config_error('history', "is true, and config '" ~ ('partition_column' if c.partition_column is not none else 'lookback') ~ "' is set too" ~ why
         ~ "partition overwrites (partition_column, lookback) replace a partition's rows with the source's, deleting the versions the source no longer has. Drop partition_column and lookback, or history") }}
  {%- endif -%}
  {%- if config.get('reconcile', false) is sameas true -%}
    {{ hwm._hwm_config_error('history', "is true, and config 'reconcile' is true too" ~ why
         ~ "reconcile deletes the rows of the keys the model no longer returns: in a history, their past. Drop reconcile (a deleted key's version is closed by a row carrying delete_column's marker), or history") }}
  {%- endif -%}
  {%- set vf = hwm._hwm_opt_string('valid_from_column') or 'valid_from' -%}
  {%- set vt = hwm._hwm_opt_string('valid_to_column') or 'valid_to' -%}
  {%- if vf == vt -%}
    {{ hwm._hwm_config_error('valid_to_column', "names column " ~ vt ~ ", as valid_from_column does: a version is valid from one column's value to the other's, so name two columns") }}
  {%- endif -%}
  {%- for b in [('valid_from_column', vf), ('valid_to_column', vt)] -%}
    {%- if b[1] in c.unique_key or b[1] == c.watermark_column or b[1] == c.delete_column -%}
      {{ hwm._hwm_config_error(b[0], "names column " ~ b[1] ~ ", which is the model's " ~ ('unique_key' if b[1] in c.unique_key else 'watermark_column' if b[1] == c.watermark_column else 'delete_column')
           ~ ": the table gets this column in addition to the model's (the watermark value a version is valid " ~ ('from' if loop.first else 'to') ~ "), so name one the model does not return") }}
    {%- endif -%}
  {%- endfor -%}
  {%- for h in (hcols or []) -%}
    {%- if h in c.unique_key or h == c.watermark_column or h == c.delete_column -%}
      {{ hwm._hwm_config_error('history_columns', "names column " ~ h ~ ", the model's " ~ ('unique_key' if h in c.unique_key else 'watermark_column' if h == c.watermark_column else 'delete_column')
           ~ ": list the columns whose change opens a new version (by default every column but the key, the watermark column and the delete marker)") }}
    {%- endif -%}
    {%- if h in hcols[:loop.index0] -%}
      {{ hwm._hwm_config_error('history_columns', "names column " ~ h ~ " twice") }}
    {%- endif -%}
  {%- endfor -%}
  {{- return({'history': true, 'history_columns': hcols, 'valid_from_column': vf, 'valid_to_column': vt}) -}}
{%- endmacro %}

{#- The columns of the target's primary key: unique_key, and for a history
    valid_from_column (a version is a key and the value it is valid from). -#}
{% macro _hwm_table_key(c) -%}
  {{- return(c.unique_key + [c.valid_from_column] if c.history else c.unique_key) -}}
{%- endmacro %}

{#- The columns a history's table has beyond the model's: [valid_from, valid_to] ([] for other models). -#}
{% macro _hwm_bounds(c) -%}
  {{- return([c.valid_from_column, c.valid_to_column] if c.history else []) -}}
{%- endmacro %}

{#- A table's columns (from _hwm_attributes) that stand for the model's:
    without a history's bounds. -#}
{% macro _hwm_model_side(c, attrs) -%}
  {%- set bounds = hwm._hwm_bounds(c) -%}
  {{- return(attrs | rejectattr('name', 'in', bounds) | list if bounds else attrs) -}}
{%- endmacro %}

{#- The unique index of a history's current versions: one per key whose
    valid_to is NULL (hwm recommends it: it makes a second current version
    of a key impossible, and each run's lookup of the current versions an
    index probe).  PostgreSQL names it. -#}
{% macro _hwm_current_index_sql(c, relation) -%}
  {{- return("create unique index on " ~ relation ~ " (" ~ hwm._hwm_quoted_list(c.unique_key) ~ ") where " ~ adapter.quote(c.valid_to_column) ~ " is null") -}}
{%- endmacro %}

{#- The names of relation's unique partial indexes on the current versions
    (WHERE valid_to IS NULL). -#}
{% macro _hwm_current_indexes(c, relation) -%}
  {%- set r = run_query("select i.indexrelid::pg_catalog.regclass::text from pg_catalog.pg_index i
                          where i.indrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(relation) ~ ") and i.indisunique
                            and pg_catalog.pg_get_expr(i.indpred, i.indrelid) = '(' || pg_catalog.quote_ident(" ~ hwm._hwm_literal(c.valid_to_column) ~ ") || ' IS NULL)'
                            and i.indnkeyatts = " ~ c.unique_key | length ~ "
                          order by 1") -%}
  {{- return(r.columns[0].values() | list) -}}
{%- endmacro %}

{#-
  The pipelines of the hwm and hwm_interval models this model ref()s,
  directly or through view and ephemeral models (whose rows are the hwm
  models' rows as they load them), sorted, each once: config 'pipeline'
  or "schema.alias", as the materializations name them.  Another
  materialization in between (a table, an incremental model) stops the
  walk: its rows change when dbt rebuilds it, not when the hwm model loads.
-#}
{% macro _hwm_ref_pipelines() -%}
  {%- set ns = namespace(todo=(model.depends_on.nodes or []) | list, seen=[], out=[]) -%}
  {#- (dbt's sandbox has no while: a bounded walk of the graph) -#}
  {%- for i in range(1000) if ns.todo | length > 0 -%}
    {%- set id = ns.todo[0] -%}
    {%- set ns.todo = ns.todo[1:] -%}
    {%- if id not in ns.seen -%}
      {%- do ns.seen.append(id) -%}
      {%- set n = graph.nodes.get(id) -%}
      {%- if n is not none and n.resource_type == 'model' -%}
        {%- set mat = n.config.materialized -%}
        {%- if mat in ['hwm', 'hwm_interval'] -%}
          {%- set p = n.config.get('pipeline') or (n.schema ~ '.' ~ (n.alias or n.name)) -%}
          {%- if p not in ns.out -%}{%- do ns.out.append(p) -%}{%- endif -%}
        {%- elif mat in ['view', 'ephemeral'] -%}
          {%- set ns.todo = ns.todo + ((n.depends_on.nodes or []) | list) -%}
        {%- endif -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {{- return(ns.out | sort) -}}
{%- endmacro %}

{#- Check that a config value parses as an SQL type, with an error naming the
    key (a DO block that catches the cast's error: PostgreSQL 15 has no
    pg_input_error_message). -#}
{% macro _hwm_check_cast(key, value, type) -%}
  {%- if value is not none -%}
    {%- do run_query("DO $hwm$ BEGIN PERFORM pg_catalog.set_config('hwm_dbt.cast_error', '', true);
                        PERFORM " ~ hwm._hwm_literal(value) ~ "::" ~ type ~ ";
                      EXCEPTION WHEN others THEN PERFORM pg_catalog.set_config('hwm_dbt.cast_error', SQLERRM, true);
                      END $hwm$") -%}
    {%- set err = run_query("select pg_catalog.current_setting('hwm_dbt.cast_error', true)").rows[0][0] -%}
    {%- if err -%}
      {{ hwm._hwm_config_error(key, "must be a valid " ~ type ~ ": " ~ err ~ " (got " ~ value ~ ")") }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#-
  Checks that need the database but create nothing: the model's columns
  (cols, or else from the model's query probe_sql, LIMIT 0), the keys that
  must name them, the values that must parse, a scheduled model owned by a
  superuser.  Returns the model's column names.  (What only a failing
  check, a history, an interval model or a scheduled one needs is in
  macros of their own: each macro a run calls is compiled in every dbt
  process.)
-#}
{% macro _hwm_check_config(c, probe_sql, cols=none) -%}
  {%- set cols = get_columns_in_query(probe_sql) if cols is none else cols -%}
  {%- if c.flavour != 'hwm' or c.history
         or (c.unique_key + [c.watermark_column, c.partition_column, c.delete_column]) | reject('none') | reject('in', cols) | list -%}
    {%- do hwm._hwm_check_columns(c, cols) -%}
  {%- endif -%}
  {%- for id in model.depends_on.nodes or [] if id.startswith('model.') and c.delay is none -%}
    {%- if loop.first -%}{%- do hwm._hwm_warn_rebuilt_upstreams(c) -%}{%- endif -%}
  {%- endfor -%}
  {%- if c.schedule is not none or c.delay is not none or c.schedule_after_refs -%}
    {%- do hwm._hwm_check_scheduled(c) -%}
  {%- endif -%}
  {{- return(cols) -}}
{%- endmacro %}

{#- _hwm_check_config, when it has something to check: a column the
    configuration names that the model does not return (missing), a
    schedule, a delay, models upstream. -#}
{% macro _hwm_config_checks(c, cols, missing) -%}
  {%- set ns = namespace(check=missing or c.schedule is not none or c.delay is not none or c.schedule_after_refs) -%}
  {%- for id in model.depends_on.nodes or [] if id.startswith('model.') -%}{%- set ns.check = true -%}{%- endfor -%}
  {%- if ns.check -%}
    {%- do hwm._hwm_check_config(c, none, cols) -%}
  {%- endif -%}
{%- endmacro %}

{#- The columns the configuration names, against the model's (cols). -#}
{% macro _hwm_check_columns(c, cols) -%}
  {%- if c.flavour == 'hwm' -%}
    {%- for k in c.unique_key if k not in cols -%}
      {{ hwm._hwm_config_error('unique_key', "names column " ~ k ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
    {%- endfor -%}
    {%- if c.watermark_column not in cols -%}
      {{ hwm._hwm_config_error('watermark_column', "names column " ~ c.watermark_column ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
    {%- endif -%}
    {%- if c.partition_column is not none and c.partition_column not in cols -%}
      {{ hwm._hwm_config_error('partition_column', "names column " ~ c.partition_column ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
    {%- endif -%}
    {%- if c.delete_column is not none and c.delete_column not in cols -%}
      {{ hwm._hwm_config_error('delete_column', "names column " ~ c.delete_column ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
    {%- endif -%}
    {%- if c.history -%}
      {%- for h in (c.history_columns or []) if h not in cols -%}
        {{ hwm._hwm_config_error('history_columns', "names column " ~ h ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
      {%- endfor -%}
      {%- for b in [('valid_from_column', c.valid_from_column), ('valid_to_column', c.valid_to_column)] if b[1] in cols -%}
        {{ hwm._hwm_config_error(b[0], "is " ~ b[1] ~ ", a column the model returns: a history's table has the model's columns plus " ~ c.valid_from_column ~ " and " ~ c.valid_to_column
             ~ ", which hwm fills, so rename the model's column or set " ~ b[0] ~ " to another name") }}
      {%- endfor -%}
      {%- if not run_query("select exists (select from pg_catalog.pg_attribute where attrelid = pg_catalog.to_regclass('hwm.state') and attname = 'valid_from_column')").rows[0][0] -%}
        {{ hwm._hwm_config_error('history', "needs hwm 1.3 or later (history pipelines): update the extension with ALTER EXTENSION hwm UPDATE") }}
      {%- endif -%}
    {%- endif -%}
  {%- else -%}
    {%- for k in (c.unique_key or []) if k not in cols -%}
      {{ hwm._hwm_config_error('unique_key', "names column " ~ k ~ ", which the model does not return (it returns " ~ cols | join(', ') ~ ")") }}
    {%- endfor -%}
    {%- if c.target_time_column not in cols -%}
      {{ hwm._hwm_config_error('target_time_column' if config.get('target_time_column') else 'time_column',
           "names column " ~ c.target_time_column ~ ", which the model does not return (it returns " ~ cols | join(', ')
           ~ "): the model returns the time of each row, whose interval it replaces (set target_time_column if the model names it differently)") }}
    {%- endif -%}
    {{ hwm._hwm_check_cast('time_interval', c.time_interval, 'interval') }}
  {%- endif -%}
{%- endmacro %}

{#- A model with a schedule, schedule_after_refs or a delay: the intervals
    must parse; a scheduled one not as a superuser, and schedule_after_refs
    needs hwm 1.3. -#}
{% macro _hwm_check_scheduled(c) -%}
  {{ hwm._hwm_check_cast('schedule', c.schedule, 'interval') }}
  {{ hwm._hwm_check_cast('delay', c.delay, 'interval') }}
  {%- if c.schedule is none and not c.schedule_after_refs -%}{{- return(none) -}}{%- endif -%}
  {%- set key = 'schedule' if c.schedule is not none else 'schedule_after_refs' -%}
  {%- set r = run_query("select (select rolsuper from pg_catalog.pg_roles where rolname = current_user),
                                pg_catalog.to_regprocedure('hwm.schedule_after(text,text[])') is not null").rows[0] -%}
  {%- if r[0] -%}
    {{ hwm._hwm_config_error(key, "needs dbt to connect as an ordinary role: " ~ target.user ~ " is a superuser, and hwm's background worker runs a pipeline as its owner, so it would run this model with unlimited rights. Connect as a role that owns the model, or drop " ~ key) }}
  {%- endif -%}
  {%- if c.schedule_after_refs and not r[1] -%}
    {{ hwm._hwm_config_error(key, "needs hwm 1.3 or later (hwm.schedule_after): update the extension with ALTER EXTENSION hwm UPDATE, or set schedule='...' instead") }}
  {%- endif -%}
{%- endmacro %}

{#- A model's helper relations (see materializations.sql), as a list:
    its source view, the new view being checked, the staging table of a
    full refresh, its function and the function being made beside it. -#}
{% macro _hwm_helpers(relation) -%}
  {%- set r = [] -%}
  {%- for suffix, type in [('__hwm_src', 'view'), ('__hwm_new', 'view'), ('__hwm_stg', 'table'), ('__hwm_fn', none), ('__hwm_fn2', none)] -%}
    {%- set h = api.Relation.create(database=relation.database, schema=relation.schema, identifier=relation.identifier ~ suffix, type=type) -%}
    {%- do r.append(h if type else h.include(database=False)) -%}
  {%- endfor -%}
  {{- return(r) -}}
{%- endmacro %}

{#- A relation as a text literal for regclass ('"schema"."name"'). -#}
{% macro _hwm_regclass(relation) -%}
  {{- return(hwm._hwm_literal(relation.include(database=False) | string)) -}}
{%- endmacro %}

{#-
  The physical columns of a relation, dropped ones included, in order:
  a list of {name, type, dropped, len, align, notnull, basetype} (basetype:
  without its modifier, as a function's result column has it).
-#}
{% macro _hwm_attributes(relation, prefix='') -%}
  {%- set r = run_query(prefix ~ "select a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attisdropped, a.attlen::int, a.attalign::text, a.attnotnull,
                                pg_catalog.format_type(a.atttypid, null)
                           from pg_catalog.pg_attribute a
                          where a.attrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(relation) ~ ") and a.attnum > 0
                          order by a.attnum") -%}
  {%- set out = [] -%}
  {%- for row in r.rows -%}
    {%- do out.append({'name': row[0], 'type': row[1], 'dropped': row[2], 'len': row[3], 'align': row[4], 'notnull': row[5], 'basetype': row[6]}) -%}
  {%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{#- _hwm_attributes of several relations, in one query: a list of lists. -#}
{% macro _hwm_attributes_of(relations) -%}
  {%- set names = [] -%}
  {%- for r in relations -%}{%- do names.append(hwm._hwm_literal(r.include(database=False) | string)) -%}{%- endfor -%}
  {%- set r = run_query("select n.i::int, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attisdropped, a.attlen::int, a.attalign::text, a.attnotnull,
                                pg_catalog.format_type(a.atttypid, null)
                           from pg_catalog.unnest(ARRAY[" ~ names | join(', ') ~ "]::text[]) with ordinality as n(name, i)
                           join pg_catalog.pg_attribute a on a.attrelid = pg_catalog.to_regclass(n.name) and a.attnum > 0
                          order by n.i, a.attnum") -%}
  {%- set out = [] -%}
  {%- for r in relations -%}{%- do out.append([]) -%}{%- endfor -%}
  {%- for row in r.rows -%}
    {%- do out[row[0] - 1].append({'name': row[1], 'type': row[2], 'dropped': row[3], 'len': row[4], 'align': row[5], 'notnull': row[6], 'basetype': row[7]}) -%}
  {%- endfor -%}
  {{- return(out) -}}
{%- endmacro %}

{% macro _hwm_live(attrs) -%}
  {{- return(attrs | rejectattr('dropped') | list) -}}
{%- endmacro %}

{#- The pipeline's row of hwm.state, as a dict (none: no such pipeline). -#}
{% macro _hwm_state(pipeline) -%}
  {%- set r = run_query("select pipeline, target::text, source::text, pg_catalog.to_json(unique_key)::text, watermark_column::text, partition_column::text,
                                lookback, delay::text, batch_size, schedule::text, watermark, command, time_interval::text,
                                target::oid::text, source::oid::text,
                                (pg_catalog.to_jsonb(st.*) operator(pg_catalog.->) 'after')::text
                           from hwm.state as st where pipeline = " ~ hwm._hwm_literal(pipeline)) -%}
  {%- if r.rows | length == 0 -%}
    {{- return(none) -}}
  {%- endif -%}
  {%- set row = r.rows[0] -%}
  {{- return({'pipeline': row[0], 'target': row[1], 'source': row[2], 'unique_key': fromjson(row[3]), 'watermark_column': row[4],
              'partition_column': row[5], 'lookback': row[6], 'delay': row[7], 'batch_size': row[8], 'schedule': row[9],
              'watermark': row[10], 'command': row[11], 'time_interval': row[12], 'target_oid': row[13] | string, 'source_oid': row[14] | string,
              'after': fromjson(row[15]) if row[15] else none}) -}}
{%- endmacro %}

{#- In one query, which opens dbt's transaction unless one is open: the
    pipeline's row of hwm.state (none: no such pipeline), the newest run id,
    the OIDs and comments of the given relations (none for those that do
    not exist), and the body of the function fn() (fn_body; none when fn
    is none or does not exist).  With view (materialized='hwm': the model's
    view, which prefix makes, after dropping an interrupted run's
    leftovers; relations: the table and the source view), also what every
    kind of run needs of the model's columns, in the same round trip
    (facts.view): [its live columns as [{name, type}], the same as the
    definitions of a function's result columns, whether they are the
    table's (less bounds, a history's) and whether they are the source
    view's (types without modifiers, as a function's result has them)]. -#}
{% macro _hwm_facts(pipeline, relations, fn=none, view=none, prefix='', bounds=[]) -%}
  {%- set names = [] -%}
  {%- for r in relations -%}{%- do names.append(hwm._hwm_regclass(r)) -%}{%- endfor -%}
  {#- (the lists built by the query, as JSON: what a macro computes is
      compiled from Jinja in every dbt process, a query's text is not;
      OIDs as text: dbt's result tables turn numbers into decimals) -#}
  {%- set row = hwm._hwm_query(prefix ~ "select (select coalesce(max(run_id), 0) from hwm.runs), pg_catalog.to_json(s.*)::text,
                                  (select pg_catalog.json_build_array(pg_catalog.json_agg(c.oid::text order by n.i),
                                                                      pg_catalog.json_agg(pg_catalog.obj_description(c.oid, 'pg_class') order by n.i))
                                     from pg_catalog.unnest(ARRAY[" ~ names | join(', ') ~ "]::text[]) with ordinality as n(name, i)
                                     left join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass(n.name))::text,
                                  " ~ ("(select prosrc from pg_catalog.pg_proc where oid = pg_catalog.to_regprocedure(" ~ hwm._hwm_literal(fn | string ~ "()") ~ "))"
                                       if fn is not none else "null::text") ~ ",
                                  " ~ ("(with a as (select n.i, a.attnum, a.attname::text as name, pg_catalog.format_type(a.atttypid, a.atttypmod) as type,
                                                       pg_catalog.format_type(a.atttypid, null) as basetype
                                                  from pg_catalog.unnest(ARRAY[" ~ hwm._hwm_regclass(view) ~ ", " ~ names | join(', ') ~ "]::text[])
                                                       with ordinality as n(name, i)
                                                  join pg_catalog.pg_attribute a on a.attrelid = pg_catalog.to_regclass(n.name) and a.attnum > 0 and not a.attisdropped)
                                        select pg_catalog.json_build_array(
                                                 (select pg_catalog.json_agg(pg_catalog.json_build_object('name', name, 'type', type) order by attnum) from a where i = 1),
                                                 (select pg_catalog.string_agg(pg_catalog.quote_ident(name) || ' ' || type, ', ' order by attnum) from a where i = 1),
                                                 (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, type) order by attnum) from a where i = 1)
                                                   is not distinct from (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, type) order by attnum) from a
                                                                          where i = 2 and name <> all(" ~ hwm._hwm_text_array(bounds) ~ ")),
                                                 (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, basetype) order by attnum) from a where i = 1)
                                                   is not distinct from (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(name, basetype) order by attnum) from a where i = 3))::text)"
                                       if view is not none else "null::text") ~ "
                           from (select 1) as one left join (select pipeline, target::text as target, source::text as source,
                                 unique_key::text[] as unique_key, watermark_column::text as watermark_column,
                                 partition_column::text as partition_column, lookback, delay::text as delay, batch_size,
                                 schedule::text as schedule, watermark, command, time_interval::text as time_interval,
                                 target::oid::text as target_oid, source::oid::text as source_oid, batched, skip_empty,
                                 pg_catalog.to_jsonb(st.*) operator(pg_catalog.->>) 'delete_column' as delete_column,
                                 pg_catalog.to_jsonb(st.*) operator(pg_catalog.->) 'history_columns' as history_columns,
                                 pg_catalog.to_jsonb(st.*) operator(pg_catalog.->>) 'valid_from_column' as valid_from_column,
                                 pg_catalog.to_jsonb(st.*) operator(pg_catalog.->>) 'valid_to_column' as valid_to_column,
                                 pg_catalog.to_jsonb(st.*) operator(pg_catalog.->) 'after' as after
                            from hwm.state as st where pipeline = " ~ hwm._hwm_literal(pipeline) ~ ") as s on true").rows[0] -%}
  {%- set lists = fromjson(row[2]) -%}
  {{- return({'last_run_id': row[0], 'state': fromjson(row[1]) if row[1] else none, 'oids': lists[0], 'comments': lists[1], 'fn_body': row[3],
              'view': fromjson(row[4]) if row[4] else none}) -}}
{%- endmacro %}

{#- Whether two interval texts mean the same interval (none = none). -#}
{% macro _hwm_same_interval(a, b) -%}
  {%- if a is none or b is none -%}
    {{- return(a is none and b is none) -}}
  {%- endif -%}
  {{- return(run_query("select " ~ hwm._hwm_literal(a) ~ "::interval = " ~ hwm._hwm_literal(b) ~ "::interval").rows[0][0]) -}}
{%- endmacro %}

{#- The columns of the target's primary key, in order ([] when none). -#}
{% macro _hwm_primary_key(relation) -%}
  {%- set r = run_query("select a.attname::text
                           from pg_catalog.pg_constraint c
                           cross join lateral pg_catalog.unnest(c.conkey) with ordinality as k(attnum, n)
                           join pg_catalog.pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum
                          where c.conrelid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(relation) ~ ") and c.contype = 'p'
                          order by k.n") -%}
  {{- return(r.columns[0].values() | list) -}}
{%- endmacro %}

{#- A list of names, quoted and joined with commas. -#}
{% macro _hwm_quoted_list(names) -%}
  {%- set out = [] -%}
  {%- for n in names -%}{%- do out.append(adapter.quote(n)) -%}{%- endfor -%}
  {{- return(out | join(', ')) -}}
{%- endmacro %}

{#- A list of names as an SQL text[] literal. -#}
{% macro _hwm_text_array(names) -%}
  {%- set out = [] -%}
  {%- for n in names -%}{%- do out.append(hwm._hwm_literal(n)) -%}{%- endfor -%}
  {{- return("ARRAY[" ~ out | join(', ') ~ "]::text[]") -}}
{%- endmacro %}

{#-
  How the model's columns (of the new view) differ from the target's live
  columns: {'added': [...], 'removed': [...], 'retyped': [{name, old, new}]}.
-#}
{% macro _hwm_column_changes(model_cols, target_cols) -%}
  {%- set tnames = target_cols | map(attribute='name') | list -%}
  {%- set mnames = model_cols | map(attribute='name') | list -%}
  {%- set added = [] -%}{%- set removed = [] -%}{%- set retyped = [] -%}
  {%- for m in model_cols -%}
    {%- if m.name not in tnames -%}
      {%- do added.append(m) -%}
    {%- else -%}
      {%- for t in target_cols if t.name == m.name and t.type != m.type -%}
        {%- do retyped.append({'name': m.name, 'old': t.type, 'new': m.type}) -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for t in target_cols if t.name not in mnames -%}{%- do removed.append(t) -%}{%- endfor -%}
  {{- return({'added': added, 'removed': removed, 'retyped': retyped,
              'any': (added | length + removed | length + retyped | length) > 0}) -}}
{%- endmacro %}

{% macro _hwm_describe_changes(ch) -%}
  {%- set parts = [] -%}
  {%- for a in ch.added -%}{%- do parts.append("new column " ~ a.name ~ " " ~ a.type) -%}{%- endfor -%}
  {%- for r in ch.removed -%}{%- do parts.append("column " ~ r.name ~ " no longer returned") -%}{%- endfor -%}
  {%- for t in ch.retyped -%}{%- do parts.append("column " ~ t.name ~ " changed type from " ~ t.old ~ " to " ~ t.new) -%}{%- endfor -%}
  {{- return(parts | join('; ')) -}}
{%- endmacro %}

{#-
  Apply on_schema_change to an incremental run: alter the target, or raise
  an error saying what to do.  Never leaves the model and the target
  silently different.
-#}
{% macro _hwm_apply_schema_changes(c, target_relation, ch, protected) -%}
  {%- set what = hwm._hwm_describe_changes(ch) -%}
  {%- set osc = c.on_schema_change -%}
  {%- set refresh = "dbt run --full-refresh --select " ~ model.name -%}
  {%- for r in ch.removed + ch.retyped if r.name in protected -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the model changed its key, watermark or partition column (" ~ what ~ "); rebuild it with `" ~ refresh ~ "`") }}
  {%- endfor -%}
  {%- if osc == 'fail' -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the model's columns differ from the table's (" ~ what ~ "), and on_schema_change is 'fail' (the default for hwm models). Either set on_schema_change='append_new_columns' (add new columns), 'sync_all_columns' (add, drop and retype columns to match), or rebuild with `" ~ refresh ~ "`") }}
  {%- elif osc == 'ignore' -%}
    {%- if ch.removed | length > 0 -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": " ~ what ~ "; on_schema_change='ignore' would load NULL into the columns the model no longer returns. Set on_schema_change='sync_all_columns' (drop them), 'append_new_columns' (keep them, NULL in new rows), or rebuild with `" ~ refresh ~ "`") }}
    {%- endif -%}
    {%- do log("hwm model " ~ hwm._hwm_where() ~ ": on_schema_change='ignore': " ~ what ~ ": new columns are not loaded and changed types are cast to the table's", info=true) -%}
  {%- elif osc == 'append_new_columns' -%}
    {%- if ch.retyped | length > 0 -%}
      {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": " ~ what ~ "; on_schema_change='append_new_columns' only adds columns. Set on_schema_change='sync_all_columns' to change the column types (the table is rewritten), or rebuild with `" ~ refresh ~ "`") }}
    {%- endif -%}
    {%- for a in ch.added -%}
      {%- do run_query("alter table " ~ target_relation ~ " add column " ~ adapter.quote(a.name) ~ " " ~ a.type) -%}
    {%- endfor -%}
    {%- do log("hwm model " ~ hwm._hwm_where() ~ ": on_schema_change='append_new_columns': " ~ what ~ (": columns the model no longer returns are kept and get NULL in new rows" if ch.removed else "") ~ "; rows loaded before have NULL in the new columns (`" ~ refresh ~ "` fills them)", info=true) -%}
  {%- else -%}
    {%- do hwm._hwm_check_retype(target_relation, ch) -%}
    {%- for a in ch.added -%}
      {%- do run_query("alter table " ~ target_relation ~ " add column " ~ adapter.quote(a.name) ~ " " ~ a.type) -%}
    {%- endfor -%}
    {%- for r in ch.removed -%}
      {%- do run_query("alter table " ~ target_relation ~ " drop column " ~ adapter.quote(r.name)) -%}
    {%- endfor -%}
    {%- for t in ch.retyped -%}
      {%- do run_query("alter table " ~ target_relation ~ " alter column " ~ adapter.quote(t.name) ~ " type " ~ t.new ~ " using " ~ adapter.quote(t.name) ~ "::" ~ t.new) -%}
    {%- endfor -%}
    {%- do log("hwm model " ~ hwm._hwm_where() ~ ": on_schema_change='sync_all_columns': " ~ what ~ "; rows loaded before have NULL in new columns (`" ~ refresh ~ "` fills them)", info=true) -%}
  {%- endif -%}
{%- endmacro %}

{#-
  A type of the given length and alignment, for the stand-in of a dropped
  column: a table's physical layout keeps its dropped columns, and
  hwm.swap trades storage only between tables of the same layout, with a
  TOAST table on both or on neither.  A table gets its TOAST table when it
  is created (or altered) with a column that may need one, so the stand-in
  of a dropped variable-length column is toastable (text) when the target
  has a TOAST table and of plain storage (int2vector) when it has none.
-#}
{% macro _hwm_standin_type(len, align, toastable) -%}
  {%- set r = run_query("select pg_catalog.format_type(t.oid, null) from pg_catalog.pg_type t
                          where t.typlen = " ~ (len | int) ~ " and t.typalign = " ~ hwm._hwm_literal(align) ~ "
                            and t.typtype = 'b' and t.typisdefined and t.typnamespace = 'pg_catalog'::pg_catalog.regnamespace
                            and t.typname !~ '^(cstring|unknown)$'
                          order by (t.typstorage = 'p') = " ~ ('false' if toastable else 'true') ~ " desc, t.oid limit 1") -%}
  {%- if r.rows | length == 0 -%}
    {{ exceptions.raise_compiler_error("hwm model " ~ hwm._hwm_where() ~ ": the table has a dropped column of length " ~ len ~ " and alignment " ~ align ~ " that no built-in type matches; rebuild it by hand without dropped columns") }}
  {%- endif -%}
  {{- return(r.rows[0][0]) -}}
{%- endmacro %}

{#-
  Create the staging table of a full refresh with the target's physical
  layout: its columns in order, dropped ones as dropped columns, the same
  nullability; its key is the model's unique_key, a primary key when the
  target has that primary key, otherwise a unique index (with_pk false).
-#}
{% macro _hwm_create_staging(c, stg, target_relation, with_pk) -%}
  {%- set toastable = run_query("select reltoastrelid <> 0 from pg_catalog.pg_class where oid = pg_catalog.to_regclass(" ~ hwm._hwm_regclass(target_relation) ~ ")").rows[0][0] -%}
  {%- set defs = [] -%}{%- set standins = [] -%}
  {%- for a in hwm._hwm_attributes(target_relation) -%}
    {%- if a.dropped -%}
      {%- set sname = "hwm_dropped_" ~ loop.index -%}
      {%- do standins.append(sname) -%}
      {%- do defs.append(adapter.quote(sname) ~ " " ~ hwm._hwm_standin_type(a.len, a.align, toastable)) -%}
    {%- else -%}
      {%- do defs.append(adapter.quote(a.name) ~ " " ~ a.type ~ (" not null" if a.notnull else "")) -%}
    {%- endif -%}
  {%- endfor -%}
  {#- (the table, its dropped columns and its primary key in one round trip) -#}
  {%- set stmts = ["create table " ~ stg ~ " (" ~ defs | join(', ') ~ ")"] -%}
  {%- for s in standins -%}
    {%- do stmts.append("alter table " ~ stg ~ " drop column " ~ adapter.quote(s)) -%}
  {%- endfor -%}
  {%- set key = hwm._hwm_table_key(c) -%}
  {%- if c.unique_key and with_pk -%}
    {%- do stmts.append("alter table " ~ stg ~ " add primary key (" ~ hwm._hwm_quoted_list(key) ~ ")") -%}
  {%- endif -%}
  {%- do run_query(stmts | join(";\n")) -%}
  {%- if not c.unique_key -%}
  {%- elif with_pk -%}
    {#- a history's index of the current versions, when the target has
        one (hwm.swap wants the same indexes on both) -#}
    {%- if c.history and hwm._hwm_current_indexes(c, target_relation) -%}
      {%- do run_query(hwm._hwm_current_index_sql(c, stg)) -%}
    {%- endif -%}
  {%- else -%}
    {%- do run_query("create unique index " ~ adapter.quote(stg.identifier ~ "_key") ~ " on " ~ stg ~ " (" ~ hwm._hwm_quoted_list(key) ~ ")") -%}
    {#- (hwm refuses a history whose key or valid_from may be NULL: NOT
        NULL while the staging pipeline loads, dropped again before the
        swap, as the target has none: _hwm_swap_in) -#}
    {%- if c.history -%}
      {%- set nn = [] -%}
      {%- for k in key -%}{%- do nn.append("alter column " ~ adapter.quote(k) ~ " set not null") -%}{%- endfor -%}
      {%- do run_query("alter table " ~ stg ~ " " ~ nn | join(', ')) -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

{#- The id of the newest run in hwm.runs (0: none), to report what a load did. -#}
{% macro _hwm_last_run_id() -%}
  {{- return(run_query("select coalesce(max(run_id), 0) from hwm.runs").rows[0][0]) -}}
{%- endmacro %}

{#-
  Load: CALL hwm.catch_up outside dbt's transaction, so that with
  batch_size each batch commits with its watermark.  A scheduled model
  first tries one run with nowait => true: when the background worker is
  running it, the load is left to that run (nowait semantics).
  Returns true when it loaded, false when a scheduled run was busy.
-#}
{% macro _hwm_load(pipeline, scheduled) -%}
  {#- (the caller has committed: no transaction is open) -#}
  {%- if scheduled -%}
    {%- call statement('hwm_nowait', auto_begin=False) -%}
      DO $hwm$ BEGIN
        PERFORM pg_catalog.set_config('hwm_dbt.busy', 'off', false);
        PERFORM * FROM hwm.run({{ hwm._hwm_literal(pipeline) }}, nowait => true);
      EXCEPTION WHEN lock_not_available THEN
        PERFORM pg_catalog.set_config('hwm_dbt.busy', 'on', false);
      END $hwm$
    {%- endcall -%}
    {%- call statement('hwm_busy', fetch_result=True, auto_begin=False) -%}
      select pg_catalog.current_setting('hwm_dbt.busy', true) = 'on'
    {%- endcall -%}
    {%- if load_result('hwm_busy').table.rows[0][0] -%}
      {{- return(false) -}}
    {%- endif -%}
  {%- endif -%}
  {%- call statement('hwm_catch_up', auto_begin=False) -%}
    CALL hwm.catch_up({{ hwm._hwm_literal(pipeline) }})
  {%- endcall -%}
  {{- return(true) -}}
{%- endmacro %}

{#-
  Load a copy pipeline (materialized='hwm') with batch_size: hwm.run
  again and again, each run committed on its own (as CALL hwm.catch_up
  does, so that each batch commits with its watermark), until the
  watermark stops moving (called by _hwm_load_model, which loads a model
  without batch_size in one run).  The runs' ids are kept, so that what
  this dbt run reports is what it loaded, whatever another dbt run or the
  scheduler loads at the same time.  A scheduled model first tries one run with
  nowait => true: when the background worker is running it, the load is
  left to that run.  (Not a model scheduled after its refs: the worker's
  run was most likely woken by the upstream this dbt run has just loaded,
  and dbt waits for it and loads what is left, so that models downstream
  in this dbt run read it loaded.)
  Returns {'loaded': false when a scheduled run was busy, 'run_ids': [...]}.
  setup: as _hwm_load_model's, committed in the first run's round trip.
-#}
{% macro _hwm_load_copy(pipeline, scheduled, c, cleanup, setup=none) -%}
  {#- (dbt's sandbox caps a range at 100000: up to 10^10 runs) -#}
  {%- set ids = [] -%}
  {%- for i in range(100000) -%}{%- for j in range(100000) -%}
    {%- set nowait = scheduled and ids | length == 0 -%}
    {%- set r = fromjson(hwm._hwm_query((setup ~ "commit;\nbegin;\n" if setup is not none and ids | length == 0 else "")
                                        ~ hwm._hwm_run_do(pipeline, nowait) ~ ";\nselect pg_catalog.current_setting('hwm_dbt.run', true)").rows[0][0]) -%}
    {%- do adapter.commit() -%}
    {%- if r.busy and nowait -%}
      {{- return({'loaded': false, 'run_ids': []}) -}}
    {%- elif r.busy or r.error is defined -%}
      {%- do hwm._hwm_load_failed(pipeline, c, r, cleanup) -%}
    {%- endif -%}
    {%- do ids.append(r.run_id) -%}
    {%- if not r.moved -%}
      {{- return({'loaded': true, 'run_ids': ids}) -}}
    {%- endif -%}
  {%- endfor -%}{%- endfor -%}
  {{- return({'loaded': true, 'run_ids': ids}) -}}
{%- endmacro %}

{#- One hwm.run of pipeline, committed by the caller, as a DO block that
    keeps its outcome in the setting hwm_dbt.run: {run_id, moved (the
    watermark)}, {busy} (nowait found a run in progress) or {error:
    {sqlstate, message, detail, hint}} (the run's error, caught so that it
    can be told in the model's terms). -#}
{% macro _hwm_run_do(pipeline, nowait) -%}
DO $hwm$ DECLARE x record; st text; msg text; det text; hnt text; BEGIN
  PERFORM pg_catalog.set_config('hwm_dbt.run', '', false);
  SELECT r.run_id, r.watermark_before is distinct from r.watermark_after AS moved
    INTO x FROM hwm.run({{ hwm._hwm_literal(pipeline) }}, nowait => {{ 'true' if nowait else 'false' }}) AS r;
  PERFORM pg_catalog.set_config('hwm_dbt.run', pg_catalog.json_build_object('run_id', x.run_id::text, 'moved', x.moved)::text, false);
EXCEPTION
  WHEN lock_not_available THEN
    PERFORM pg_catalog.set_config('hwm_dbt.run', '{"busy": true}', false);
  WHEN others THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    PERFORM pg_catalog.set_config('hwm_dbt.run', pg_catalog.json_build_object('error',
      pg_catalog.json_build_object('sqlstate', st, 'message', msg, 'detail', det, 'hint', hnt))::text, false);
END $hwm$
{%- endmacro %}

{#-
  The load of a copy pipeline (materialized='hwm').  setup: none when the
  caller has committed its setup, or the statements that end it (each
  ending in ";\n", or ''), which run in the setup's open transaction and
  are committed in the load's first round trip.  With batch_size,
  _hwm_load_copy's runs (the caller reports them); without, one hwm.run
  (it loads everything up to the safe watermark: a second would cost a
  model's run a round of hwm's planning to find only what committed
  meanwhile), its commit, the BEGIN of the last transaction and the run's
  report in one round trip, dbt's 'main' statement, with little Jinja
  (each macro a run calls is compiled in every dbt process, at a cost that
  grows with its Jinja, not its text).
  The report (_hwm_report_sql) reads the run's outcome from the setting
  _hwm_run_do keeps it in.  scheduled: a scheduled model's run is nowait:
  it leaves the load to a run in progress (then loaded is false, and the
  report says so).  An error is raised by _hwm_load_failed (after cleanup).  Returns
  what _hwm_load_copy returns, and without batch_size 'reported': true
  and the pipeline's 'watermark' after the run, the last transaction open.
-#}
{% macro _hwm_load_model(pipeline, scheduled, c, cleanup, setup=none) -%}
  {%- if c.batch_size is not none -%}
    {{- return(hwm._hwm_load_copy(pipeline, scheduled, c, cleanup, setup)) -}}
  {%- endif -%}
  {%- call statement('main', fetch_result=True) -%}
{{ setup ~ "commit;\nbegin;\n" if setup is not none }}{{ hwm._hwm_run_do(pipeline, scheduled) }};
commit;
begin;
{{ hwm._hwm_report_sql(pipeline, 'load', "(o.o operator(pg_catalog.->>) 'busy') is not null",
                       "x.run_id = (o.o operator(pg_catalog.->>) 'run_id')::bigint") }}
  {%- endcall -%}
  {%- set table = load_result('main').table -%}
  {%- set row = table.rows[0] -%}
  {%- set r = fromjson(row[4]) -%}
  {%- if r.error is defined or (r.busy and not scheduled) -%}
    {%- do hwm._hwm_load_failed(pipeline, c, r, cleanup) -%}
  {%- endif -%}
  {%- do hwm._hwm_report_row(pipeline, table) -%}
  {{- return({'loaded': not r.busy, 'run_ids': [] if r.busy else [r.run_id], 'reported': true, 'watermark': row[5]}) -}}
{%- endmacro %}

{#- What the report's row (of _hwm_report_sql, in dbt's result table)
    says: the message logged, source rows with a NULL watermark a warning
    dbt counts (WARN=1; an error under --warn-error), and the rows written
    as the adapter response of the 'main' statement. -#}
{% macro _hwm_report_row(pipeline, table) -%}
  {%- set row = table.rows[0] -%}
  {%- do log("hwm " ~ pipeline ~ ": " ~ row[0], info=true) -%}
  {%- if row[2] -%}
    {%- do exceptions.warn("hwm model " ~ hwm._hwm_where() ~ ": " ~ row[2] ~ " source rows have a NULL " ~ row[3] ~ " (the watermark column), and hwm never loads them: give them a value, or filter them out in the model's SQL") -%}
  {%- endif -%}
  {%- do store_raw_result('main', message='HWM ' ~ (row[1] | int), code='HWM', rows_affected=row[1] | int, agate_table=table) -%}
{%- endmacro %}

{#-
  A load that failed (r: the run's outcome, {error: ...}, or {busy} when a
  run that had to wait found the pipeline's lock taken): first undo what a
  first run made (cleanup: a list of statements), then raise the error as
  the database error it is (dbt
  says "Database Error in model ..."), in the model's terms when it is one
  the model can cause: a key repeated in its output (21000); a function
  the model's SQL names without its schema (42883), which dbt's checks
  found on dbt's search_path but hwm, running the model's SQL with
  search_path = pg_catalog, pg_temp, does not.
-#}
{% macro _hwm_load_failed(pipeline, c, r, cleanup) -%}
  {%- if cleanup -%}
    {%- do hwm._hwm_begin() -%}
    {%- for stmt in cleanup -%}{%- do run_query(stmt) -%}{%- endfor -%}
    {%- do adapter.commit() -%}
  {%- endif -%}
  {%- set e = r.error if r.error is defined
               else {'sqlstate': '55P03', 'message': "the pipeline's lock was not available", 'detail': none, 'hint': none} -%}
  {%- set undone = " (the table, its helper view and function and the pipeline made by this first run were dropped again)" if cleanup else "" -%}
  {%- if e.sqlstate == '21000' and c is not none and c.unique_key -%}
    {%- set keys = hwm._hwm_quoted_list(c.unique_key) -%}
    {%- do exceptions.raise_database_error("hwm model " ~ hwm._hwm_where() ~ ": the model returns more than one row for a value of its unique_key (" ~ c.unique_key | join(', ') ~ "), and hwm upserts one row per key" ~ undone ~ ". Make the key unique in the model's SQL, or choose a unique_key that is. The repeated keys: select " ~ keys ~ ", count(*) from (" ~ "<the model's SQL, target/compiled/" ~ model.package_name ~ "/" ~ model.original_file_path ~ ">) as m group by " ~ keys ~ " having count(*) > 1") -%}
  {%- endif -%}
  {%- set hint = e.hint -%}
  {%- if e.sqlstate == '42883' -%}
    {%- set hint = "hwm runs the model's SQL with search_path = pg_catalog, pg_temp (whoever runs the pipeline, dbt or hwm's scheduler, reads what the SQL names), so a function of your own must be named with its schema, e.g. public.my_function(...); dbt's ref() and source() are already qualified"
                   ~ (". " ~ e.hint if e.hint else "") -%}
  {%- endif -%}
  {%- do exceptions.raise_database_error("hwm model " ~ hwm._hwm_where() ~ ": the load of pipeline \"" ~ pipeline ~ "\" failed" ~ undone ~ ": " ~ e.sqlstate ~ ": " ~ e.message
       ~ ("\nDETAIL: " ~ e.detail if e.detail else "") ~ ("\nHINT: " ~ hint if hint else "")) -%}
{%- endmacro %}

{#-
  Log what the load did, from hwm.runs and hwm.state: runs, rows, the
  watermark before and after, and what held it back.  This is the model's
  'main' statement; its adapter response (run_results.json, dbt's log) is
  `HWM <rows>` with rows_affected = the rows written (upserted, and
  inserted or updated by partition overwrites; for an hwm_interval model
  the rows its commands processed).  loaded: true/false, or what
  _hwm_load_copy returned (then only those runs count).  Source rows with a
  NULL watermark are a dbt warning.  (_hwm_load_model reports one run the
  same way, in the run's round trip.)  Returns the message.
-#}
{% macro _hwm_report(pipeline, after_run_id, loaded, label) -%}
  {%- set run_ids = loaded.run_ids if loaded is mapping else none -%}
  {%- set loaded = loaded.loaded if loaded is mapping else loaded -%}
  {%- call statement('main', fetch_result=True) -%}
    {{ hwm._hwm_report_sql(pipeline, label, 'not ' ~ ('true' if loaded else 'false'),
                           "x.run_id = any('{" ~ run_ids | join(',') ~ "}'::bigint[])" if run_ids is not none else "x.run_id > " ~ after_run_id) }}
  {%- endcall -%}
  {%- set table = load_result('main').table -%}
  {%- do hwm._hwm_report_row(pipeline, table) -%}
  {{- return(table.rows[0][0]) -}}
{%- endmacro %}

{#-
  The report's query (_hwm_report, _hwm_load_model): its message (runs,
  rows, the watermark before and after, what held it back), the rows
  written, the source rows with a NULL watermark, the watermark column, and
  the outcome _hwm_run_do keeps (NULL when none), the watermark now.  busy: SQL, true when a
  scheduled run was busy (the message says so); runs: SQL, the condition
  on hwm.runs x of the runs to count; label 'interval': the rows are
  processed, not upserted.  One row, even for a pipeline that is gone.
  (The message is written by the query: what a macro computes is compiled
  from Jinja in every dbt process, a query's text is not.)
-#}
{% macro _hwm_report_sql(pipeline, label, busy, runs) -%}
select case when {{ busy }}
            then 'a scheduled run of the pipeline was busy: this run is left to it (nowait); watermark ' || coalesce(nullif(s.watermark, ''), 'none')
            else r.n || ' run' || case when r.n <> 1 then 's' else '' end || ', ' || r.upserted
                 || case when {{ hwm._hwm_literal(label) }} = 'interval' then ' rows processed'
                         else ' rows upserted' || case when r.partitions <> 0 then ', ' || r.partitions || ' partitions overwritten ('
                                                          || r.deleted || ' rows deleted, ' || r.inserted || ' inserted or updated)' else '' end end
                 || ', watermark ' || coalesce(nullif(case when r.n > 0 then r.wm_before else s.watermark end, ''), 'none')
                 || ' -> ' || coalesce(nullif(case when r.n > 0 then r.wm_after else s.watermark end, ''), 'none') end
       || coalesce('; held back by pid ' || s.held_by_pid || coalesce(' (' || nullif(s.held_by_application, '') || ')', '')
                   || ', in a transaction open for ' || pg_catalog.date_trunc('second', pg_catalog.now() - s.held_since)::text, ''),
       r.upserted + r.inserted, s.null_watermarks, s.watermark_column::text, o.o::text, s.watermark
  from (select nullif(pg_catalog.current_setting('hwm_dbt.run', true), '')::json as o) as o
  left join hwm.state s on s.pipeline = {{ hwm._hwm_literal(pipeline) }}
  left join lateral (
    select count(*) as n, coalesce(sum(x.rows_upserted), 0) as upserted, coalesce(sum(x.partitions_overwritten), 0) as partitions,
           coalesce(sum(x.rows_deleted), 0) as deleted, coalesce(sum(x.rows_inserted), 0) as inserted,
           (pg_catalog.array_agg(x.watermark_before order by x.run_id))[1] as wm_before,
           (pg_catalog.array_agg(x.watermark_after order by x.run_id desc))[1] as wm_after
      from hwm.runs x
     where x.pipeline = s.pipeline and x.kind = 'load' and {{ runs }}) as r on true
{%- endmacro %}

{#-
  The models this one reads that dbt rebuilds wholesale (materialized
  'table' or 'incremental', directly or through 'view' and 'ephemeral'
  models): a rebuild writes old watermark values after hwm may have moved
  past them, and hwm cannot see it coming (it follows hwm models, views and
  its own helpers: README, Chains).  A dbt warning with the remedy, unless
  the model has a delay.  Issue 41.
-#}
{% macro _hwm_warn_rebuilt_upstreams(c) -%}
  {%- if not execute or c.delay is not none -%}{{- return(none) -}}{%- endif -%}
  {%- set ns = namespace(todo=(model.depends_on.nodes or []) | list, seen=[], rebuilt=[]) -%}
  {#- (dbt's sandbox has no while: a bounded walk of the graph) -#}
  {%- for i in range(1000) if ns.todo | length > 0 -%}
    {%- set id = ns.todo[0] -%}
    {%- set ns.todo = ns.todo[1:] -%}
    {%- if id not in ns.seen -%}
      {%- do ns.seen.append(id) -%}
      {%- set n = graph.nodes.get(id) -%}
      {%- if n is not none and n.resource_type == 'model' -%}
        {%- set mat = n.config.materialized -%}
        {%- if mat in ['table', 'incremental'] -%}
          {%- do ns.rebuilt.append(n.name ~ " (" ~ mat ~ ")") -%}
        {%- elif mat in ['view', 'ephemeral'] -%}
          {%- set ns.todo = ns.todo + ((n.depends_on.nodes or []) | list) -%}
        {%- endif -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if ns.rebuilt | length > 0 -%}
    {%- do exceptions.warn("hwm model " ~ hwm._hwm_where() ~ " reads " ~ ns.rebuilt | join(', ')
         ~ ", which dbt rebuilds wholesale: a rebuild writes rows with old watermark values after hwm may have moved past them, and hwm cannot see it coming. Give this model a delay longer than a rebuild and the lag of its rows (config delay='15 minutes'), or make the upstream an hwm model (hwm then holds this one below what that one has loaded)") -%}
  {%- endif -%}
{%- endmacro %}
