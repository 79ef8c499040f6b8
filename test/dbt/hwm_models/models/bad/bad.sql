-- Enabled only with --vars "{bad_cfg: {...}}": each bad configuration must
-- fail before anything is created.
{% set cfg = {'materialized': 'hwm'} %}
{% do cfg.update(var('bad_cfg', {})) %}
{{ config(enabled=var('bad_cfg', none) is not none, **cfg) }}
select id, day, updated_at, amount from {{ source('shop', 'orders') }}
