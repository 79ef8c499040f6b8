-- Refused at config time: an enforced contract (schema.yml) that does not
-- list the bounds a history's table gets.
{{ config(materialized='hwm', history=true, unique_key='id', watermark_column='changed_at') }}
select id, changed_at, tier from {{ source('crm', 'customer_changes') }}
