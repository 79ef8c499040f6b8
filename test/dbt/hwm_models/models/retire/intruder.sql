-- Enabled with --vars "{intruder: true}" (issue 42): a model of this project
-- on the relation of test/dbt/hwm_other's model other_orders, in the same
-- schema: refused, naming the project that made it.
{{ config(enabled=var('intruder', false), materialized='hwm', alias='other_orders',
          unique_key='id', watermark_column='updated_at') }}
select id, updated_at, v from {{ source('shop', 'ticks') }}
