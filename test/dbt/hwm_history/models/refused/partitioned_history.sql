-- Refused at config time, before anything is created: a history cannot
-- have partition overwrites.
{{ config(materialized='hwm', history=true, unique_key='id', watermark_column='changed_at',
          partition_column='day') }}
select id, changed_at, changed_at::date as day, tier from {{ source('crm', 'customer_changes') }}
