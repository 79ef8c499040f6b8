-- Enabled with --vars "{unqualified: true}" (issue 42): the model calls a
-- function of the user's without its schema.  dbt's checks find it on dbt's
-- search_path; hwm runs the model's SQL with search_path = pg_catalog,
-- pg_temp, and the load fails with a hint saying so.
{{ config(enabled=var('unqualified', false), materialized='hwm', unique_key='id', watermark_column='updated_at') }}
select id, updated_at, cents(v::numeric) as v_cents from {{ source('shop', 'nullwm') }}
