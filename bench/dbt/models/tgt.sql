-- bench.tgt as a dbt incremental model: the idiomatic filter, rows newer
-- than the newest already in the target (bench.tgt has an index on
-- updated_at, so the max() is cheap, as is hwm's watermark lookup).
-- Benchmark 5b passes --vars "{lookback: '1 day'}": the usual lookback
-- window for late-arriving rows, which reads the whole slice again.
{{ config(materialized='incremental',
          unique_key='id',
          incremental_strategy=var('strategy', 'merge'),
          on_schema_change='ignore') }}

select id, updated_at, customer_id, amount, status, note
  from bench.src
{% if is_incremental() %}
 where updated_at > (select max(updated_at) from {{ this }}){% if var('lookback', none) %} - interval '{{ var("lookback") }}'{% endif %}
{% endif %}
