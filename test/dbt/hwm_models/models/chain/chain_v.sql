-- A view between two hwm models: its rows are chain_b's as chain_b loads them.
{{ config(materialized='view') }}
select id, updated_at, kind, amount10
  from {{ ref('chain_b') }}
