-- The same rows, loaded by hwm.
{{ config(materialized='hwm', unique_key='id', watermark_column='created_at') }}
select id, created_at, writer from {{ source('shop', 'traffic') }}
