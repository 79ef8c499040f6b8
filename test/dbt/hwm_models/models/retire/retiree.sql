-- An hwm model that is deleted from the project (issue 29, case 5): enabled
-- only with --vars "{retiree: true}".
{{ config(enabled=var('retiree', false), materialized='hwm', unique_key='id',
          watermark_column='updated_at', schedule='1 hour') }}
select id, updated_at, v from {{ source('shop', 'ticks') }}
