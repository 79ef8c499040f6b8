-- An hwm model over another model, with a schedule: its pipeline, watermark,
-- history and schedule outlive every rebuild of up_stage.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at', schedule='1 hour') }}
select id, updated_at, kind, amount * 10 as amount10
  from {{ ref('up_stage') }}
