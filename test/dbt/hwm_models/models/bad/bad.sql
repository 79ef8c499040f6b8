-- Enabled only with --vars "{bad_cfg: {...}}": each bad configuration must
-- fail before anything is created.
{{ config(enabled=var('bad_cfg', none) is not none, materialized='hwm', **var('bad_cfg', {})) }}
select id, day, updated_at, amount from {{ source('shop', 'orders') }}
