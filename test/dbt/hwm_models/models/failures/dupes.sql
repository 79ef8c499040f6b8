-- Enabled with --vars "{dupes: true}" (issue 29, case 6): the model's output
-- repeats a key, which fails the first run with an error in the model's
-- terms, leaving nothing behind.  dupes_initial_watermark: a value hwm's
-- create_pipeline refuses, in the round trip that also runs the load.
{{ config(enabled=var('dupes', false), materialized='hwm', unique_key='id', watermark_column='updated_at',
          initial_watermark=var('dupes_initial_watermark', none)) }}
select id, updated_at, kind, amount from {{ source('shop', 'upstream') }}
union all
select id, updated_at, kind, amount from {{ source('shop', 'upstream') }} where id = 1
