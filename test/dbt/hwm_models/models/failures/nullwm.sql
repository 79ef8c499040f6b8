-- Source rows with a NULL watermark (issue 29, case 7): a dbt warning.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at') }}
select id, updated_at, v from {{ source('shop', 'nullwm') }}
