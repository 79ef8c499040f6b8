-- An hwm model that becomes another materialization (issue 29, case 5).
{{ config(materialized=var('switch_mat', 'hwm'), unique_key='id', watermark_column='updated_at') }}
select id, updated_at, v from {{ source('shop', 'ticks') }}
