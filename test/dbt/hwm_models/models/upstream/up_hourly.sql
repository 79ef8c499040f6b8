-- An hwm_interval model over another model: its intervals done and its
-- pipeline outlive every rebuild of up_stage.
{{ config(materialized='hwm_interval', time_column='updated_at', time_interval='1 hour',
          target_time_column='hour', unique_key=['hour', 'kind']) }}
select date_trunc('hour', updated_at) as hour, kind, count(*) as n, sum(amount) as amount
  from {{ ref('up_stage') }}
 where updated_at >= {{ hwm.interval_start() }} and updated_at < {{ hwm.interval_end() }}
 group by 1, 2
