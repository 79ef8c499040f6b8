-- An ordinary dbt model that hwm models read (issue 29, case 1): dbt drops
-- and re-creates it (table: every run; view; incremental: --full-refresh),
-- with CASCADE; the hwm models reading it keep their pipelines.
{{ config(materialized=var('up_mat', 'table'), unique_key='id') }}
select id, updated_at, kind, amount
  from {{ source('shop', 'upstream') }}
