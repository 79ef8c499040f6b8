-- A column whose type changes under a view that reads it (issue 29, case 8).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at', on_schema_change=var('typed_osc', 'fail')) }}
select id, updated_at, amount::{{ var('typed_amount', 'integer') }} as amount
  from {{ source('shop', 'upstream') }}
