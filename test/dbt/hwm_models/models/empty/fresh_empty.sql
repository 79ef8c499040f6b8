-- An hwm model whose first dbt run is `dbt run --empty` (issue 29, case 3).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at') }}
select id, updated_at, kind, amount
  from {{ source('shop', 'upstream') }}
