{#-
  Reconcile (issue 32): delete the target rows whose unique key the source
  no longer has (rows hard-deleted in the source, which no watermark sees),
  with CALL hwm.reconcile.

  - `dbt run-operation hwm_reconcile --args '{model: orders}'` (or
    `pipeline: NAME`; from_key, to_key, batch_size, dry_run as in
    hwm.reconcile).  dbt-postgres runs every statement inside a transaction
    block, where one CALL hwm.reconcile does all its batches in one
    transaction; so the macro walks the target's keys itself, batch_size
    keys of the key's first column at a time, and CALLs hwm.reconcile for
    each batch's range in a transaction of its own, committed.  Each CALL
    takes the pipeline's lock and reads the source after it, as any
    reconcile does.  A failed batch leaves the batches before it done;
    running the operation again walks the keys again (it deletes only what
    is still absent).  dry_run: hwm.reconcile's dry run (which checks
    everything and changes nothing; its NOTICE does not reach dbt's log),
    then what it would delete (hwm.reconcile_preview), logged.
  - In a hook, hwm_reconcile returns the CALL, which runs in the hook's
    transaction (all batches in it).
  - config reconcile=true on a materialized='hwm' model: every incremental
    run reconciles the whole target after its load, in batches of 10000
    keys, as above (first runs and --full-refresh load the model whole, so
    there is nothing to delete after them).
-#}

{% macro hwm_reconcile(pipeline=none, from_key=none, to_key=none, batch_size=10000, dry_run=false, model=none) -%}
  {%- if batch_size is not number or batch_size is boolean or batch_size != (batch_size | int) or batch_size < 1 -%}
    {{ exceptions.raise_compiler_error("hwm_reconcile: batch_size must be an integer of at least 1 (keys per transaction), got " ~ batch_size) }}
  {%- endif -%}
  {%- if dry_run is not boolean -%}
    {{ exceptions.raise_compiler_error("hwm_reconcile: dry_run must be true or false, got " ~ dry_run) }}
  {%- endif -%}
  {%- if (pipeline is none) == (model is none) -%}
    {{ exceptions.raise_compiler_error("hwm_reconcile: give either pipeline or model (the name of an hwm model)") }}
  {%- endif -%}
  {%- set p = pipeline if model is none else hwm._hwm_reconcile_model_pipeline(model) -%}
  {%- set call = hwm._hwm_reconcile_call(p, from_key, to_key, batch_size | int, dry_run) -%}
  {%- if flags.WHICH != 'run-operation' -%}
    {{- return(call) -}}
  {%- endif -%}
  {%- if execute -%}
    {%- if dry_run -%}
      {%- do hwm._hwm_reconcile_dry_run(p, from_key, to_key, batch_size | int) -%}
    {%- else -%}
      {%- set r = hwm._hwm_reconcile_batches(p, from_key, to_key, batch_size | int) -%}
      {%- do log("hwm_reconcile " ~ p ~ ": " ~ r.batches ~ " batch" ~ ("es" if r.batches != 1 else "") ~ " of up to " ~ (batch_size | int) ~ " keys, " ~ r.deleted ~ " target rows deleted (their keys are no longer in the source)", info=true) -%}
    {%- endif -%}
  {%- endif -%}
  {{- return("") -}}
{%- endmacro %}

{#- The pipeline of an hwm model named model_name (its config 'pipeline',
    or "schema.alias", as the materialization names it); a name that is
    not an hwm model of the project is an error saying which are. -#}
{% macro _hwm_reconcile_model_pipeline(model_name) -%}
  {%- if not execute -%}{{- return(none) -}}{%- endif -%}
  {%- set hwm_models = [] -%}
  {%- for node in graph.nodes.values() if node.resource_type == 'model' -%}
    {%- if node.name == model_name -%}
      {%- if node.config.materialized != 'hwm' -%}
        {{ exceptions.raise_compiler_error("hwm_reconcile: model " ~ model_name ~ " is materialized as '" ~ node.config.materialized ~ "', not 'hwm': only an hwm model's pipeline can be reconciled (an hwm_interval model's target is what its intervals computed; rebuild intervals with hwm_rerun_intervals)") }}
      {%- endif -%}
      {{- return(node.config.get('pipeline') or (node.schema ~ '.' ~ (node.alias or node.name))) -}}
    {%- endif -%}
    {%- if node.config.materialized == 'hwm' -%}{%- do hwm_models.append(node.name) -%}{%- endif -%}
  {%- endfor -%}
  {{ exceptions.raise_compiler_error("hwm_reconcile: no model named " ~ model_name ~ " in this project; the hwm models are: " ~ ((hwm_models | sort | join(', ')) or 'none') ~ " (or give pipeline: NAME)") }}
{%- endmacro %}

{% macro _hwm_reconcile_call(pipeline, from_key, to_key, batch_size, dry_run) -%}
  {{- return("CALL hwm.reconcile(" ~ hwm._hwm_literal(pipeline)
             ~ ", " ~ hwm._hwm_literal(from_key)
             ~ ", " ~ hwm._hwm_literal(to_key)
             ~ ", batch_size => " ~ batch_size
             ~ ", dry_run => " ~ hwm._hwm_bool(dry_run) ~ ")") -}}
{%- endmacro %}

{#- What the walk needs of the pipeline: {target (regclass text), source,
    key_cols (quoted names)}, or none when hwm.state has no such pipeline (the
    CALL then says what is wrong). -#}
{% macro _hwm_reconcile_facts(pipeline) -%}
  {%- set r = run_query("select s.target::text, s.source::text, pg_catalog.to_json(s.unique_key)::text from hwm.state s
                          where s.pipeline = " ~ hwm._hwm_literal(pipeline)) -%}
  {%- if r.rows | length == 0 or not fromjson(r.rows[0][2]) -%}{{- return(none) -}}{%- endif -%}
  {%- set keys = [] -%}
  {%- for k in fromjson(r.rows[0][2]) -%}{%- do keys.append(adapter.quote(k)) -%}{%- endfor -%}
  {{- return({'target': r.rows[0][0], 'source': r.rows[0][1], 'key_cols': keys}) -}}
{%- endmacro %}

{#- " and t.k1 >= 'from' and t.k1 <= 'to'": the range on the key's first
    column (the literals take the column's type). -#}
{% macro _hwm_reconcile_range(k1, lo, hi) -%}
  {{- return((" and t." ~ k1 ~ " >= " ~ hwm._hwm_literal(lo) if lo is not none else "")
             ~ (" and t." ~ k1 ~ " <= " ~ hwm._hwm_literal(hi) if hi is not none else "")) -}}
{%- endmacro %}

{#-
  A reconcile under dbt, one committed transaction per batch: from lo, the
  batch_size-th key of the target's first key column bounds the batch
  (inclusive), the next key after it starts the next one; the last batch
  runs to to_key.  Returns {batches, deleted} (deleted: the rows of those
  batches in hwm.runs).
-#}
{% macro _hwm_reconcile_batches(pipeline, from_key, to_key, batch_size) -%}
  {%- do hwm._hwm_begin() -%}
  {%- set f = hwm._hwm_reconcile_facts(pipeline) -%}
  {%- set after = run_query("select coalesce(max(run_id), 0) from hwm.runs").rows[0][0] -%}
  {%- do adapter.commit() -%}
  {%- set ns = namespace(lo=from_key, done=false, batches=0) -%}
  {%- if f is none -%}
    {#- (no such pipeline: hwm.reconcile raises the error) -#}
    {%- do run_query(hwm._hwm_reconcile_call(pipeline, from_key, to_key, batch_size, false)) -%}
    {%- do adapter.commit() -%}
    {{- return({'batches': 1, 'deleted': 0}) -}}
  {%- endif -%}
  {%- set k1 = f.key_cols[0] -%}
  {#- (dbt's sandbox caps a range at 100000: up to 10^10 batches) -#}
  {%- for i in range(100000) -%}
    {%- if ns.done -%}{%- break -%}{%- endif -%}
    {%- for j in range(100000) -%}
      {%- do hwm._hwm_begin() -%}
      {%- set b = run_query("select x.k::text, (select min(t." ~ k1 ~ ")::text from " ~ f.target ~ " t
                                                  where t." ~ k1 ~ " > x.k" ~ hwm._hwm_reconcile_range(k1, none, to_key) ~ ")
                               from (select t." ~ k1 ~ " as k from " ~ f.target ~ " t
                                      where t." ~ k1 ~ " is not null" ~ hwm._hwm_reconcile_range(k1, ns.lo, to_key) ~ "
                                      order by t." ~ k1 ~ " offset " ~ (batch_size - 1) ~ " limit 1) x").rows -%}
      {%- set hi = b[0][0] if b | length > 0 and b[0][1] is not none else to_key -%}
      {%- do run_query(hwm._hwm_reconcile_call(pipeline, ns.lo, hi, batch_size, false)) -%}
      {%- do adapter.commit() -%}
      {%- set ns.batches = ns.batches + 1 -%}
      {%- if b | length == 0 or b[0][1] is none -%}
        {%- set ns.done = true -%}
        {%- break -%}
      {%- endif -%}
      {%- set ns.lo = b[0][1] -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- do hwm._hwm_begin() -%}
  {%- set deleted = run_query("select coalesce(sum(rows_deleted), 0) from hwm.runs
                                where pipeline = " ~ hwm._hwm_literal(pipeline) ~ " and kind = 'reconcile' and run_id > " ~ after).rows[0][0] -%}
  {%- do adapter.commit() -%}
  {{- return({'batches': ns.batches, 'deleted': deleted}) -}}
{%- endmacro %}

{#-
  dry_run under dbt: hwm.reconcile's dry run (it checks the pipeline, the
  range and the owner's rights, and changes nothing), then its result as
  a row (hwm.reconcile_preview: the count of the target rows it would
  delete, the first and last of their keys), logged.
-#}
{% macro _hwm_reconcile_dry_run(pipeline, from_key, to_key, batch_size) -%}
  {%- do hwm._hwm_begin() -%}
  {%- do run_query(hwm._hwm_reconcile_call(pipeline, from_key, to_key, batch_size, true)) -%}
  {#- hwm's own count, by the key's one definition and the source's live
      rows (README, Keys): the same that the reconcile deletes -#}
  {%- set r = run_query("select rows_to_delete, first_key, last_key from hwm.reconcile_preview("
                        ~ hwm._hwm_literal(pipeline) ~ ", " ~ hwm._hwm_literal(from_key) ~ ", "
                        ~ hwm._hwm_literal(to_key) ~ ")").rows[0] -%}
  {%- do adapter.commit() -%}
  {%- if r[0] == 0 -%}
    {%- do log("hwm_reconcile " ~ pipeline ~ ": dry run: no target row to delete; nothing was changed", info=true) -%}
  {%- else -%}
    {%- do log("hwm_reconcile " ~ pipeline ~ ": dry run: " ~ r[0] ~ " target rows would be deleted, keys " ~ r[1] ~ " to " ~ r[2] ~ "; nothing was changed (run it with dry_run: false to delete them)", info=true) -%}
  {%- endif -%}
{%- endmacro %}

{#- config reconcile: true or false (the default); checked before the
    materialization creates anything. -#}
{% macro _hwm_reconcile_config() -%}
  {%- set v = config.get('reconcile', false) -%}
  {%- if v is not boolean -%}
    {{ hwm._hwm_config_error('reconcile', "must be true (reconcile the target after every incremental run: delete the rows whose key the model no longer returns) or false, got " ~ v) }}
  {%- endif -%}
  {{- return(v) -}}
{%- endmacro %}

{#- After an incremental run of a model with reconcile=true (no transaction
    open): reconcile the whole target, batch by batch, and log it. -#}
{% macro _hwm_reconcile_after_run(pipeline) -%}
  {%- set r = hwm._hwm_reconcile_batches(pipeline, none, none, 10000) -%}
  {%- do log("hwm " ~ pipeline ~ ": reconcile (config reconcile=true): " ~ r.deleted ~ " target rows deleted whose key the model no longer returns, " ~ r.batches ~ " batch" ~ ("es" if r.batches != 1 else ""), info=true) -%}
{%- endmacro %}
