-- A model that hwm's background worker keeps fresh between dbt runs.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          schedule=var('tick_schedule', '1 second')) }}
select id, updated_at, v from {{ source('shop', 'ticks') }}
