-- Runs after chain_a, the hwm model it ref()s (schedule_after_refs).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          schedule_after_refs=var('chain_after', true)) }}
select id, updated_at, kind, amount * 10 as amount10
  from {{ ref('chain_a') }}
