-- dbt's incremental model (merge), with the documented filter; with
-- --vars "{lookback: '1 day'}" it re-reads a day below its newest row, as
-- a lookback window for late-arriving rows does.
{{ config(materialized='incremental', unique_key='id', incremental_strategy='merge') }}
select id, updated_at, customer_id, amount, status, note
  from {{ source('bench', 'src') }}
{% if is_incremental() %}
 where updated_at > (select max(updated_at) from {{ this }}){% if var('lookback', none) %} - interval '{{ var("lookback") }}'{% endif %}
{% endif %}
