-- The head of a live chain (issue 41): hwm's background worker runs it
-- every second; chain_b runs after it, and chain_hourly after chain_b
-- (through the view chain_v), each as soon as the one before commits rows.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          schedule=var('chain_schedule', '1 second')) }}
select id, updated_at, kind, amount
  from {{ source('shop', 'chain') }}
