-- The same rows as an hwm model: no filter, hwm loads what is new.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at') }}
select id, updated_at, customer_id, amount, status, note
  from {{ source('bench', 'src') }}
