-- A model that is not an hwm model, so that a run of the project with its
-- hwm models deleted still has a model to run (dbt runs no on-run-end hook
-- when nothing is selected).
{{ config(materialized='view') }}
select 1 as one
