-- A model whose columns, key and watermark column change between runs
-- (vars), to exercise on_schema_change and the refusals.
{{ config(materialized='hwm', unique_key=var('ev_key', 'id'),
          watermark_column=var('ev_wm', 'updated_at')) }}
{% if var('ev_osc', none) %}{{ config(on_schema_change=var('ev_osc')) }}{% endif %}
select id, updated_at, seq, {{ var('ev_amount', 'amount') }} as amount{{ var('ev_extra', '') }}
  from {{ source('shop', 'evolving') }}
