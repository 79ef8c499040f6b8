-- dbt's table model of the same rows with the key hwm's table has (a
-- unique index on id, built after the CREATE TABLE AS, as dbt-postgres
-- builds a model's indexes): what a first load with a key can be
-- compared with.
{{ config(materialized='table', indexes=[{'columns': ['id'], 'unique': true}]) }}
select id, updated_at, customer_id, amount, status, note
  from {{ source('bench', 'src') }}
