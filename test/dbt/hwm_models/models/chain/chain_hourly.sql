-- An hourly rollup of chain_b, through the view chain_v, run after chain_b
-- (schedule_after_refs follows view and ephemeral models to the hwm models
-- under them).  An hour closes once chain_b has loaded past it.
{{ config(materialized='hwm_interval', time_column='updated_at', time_interval='1 hour',
          target_time_column='hour', unique_key=['hour', 'kind'],
          schedule_after_refs=var('chain_after', true)) }}
select date_trunc('hour', updated_at) as hour, kind, count(*) as n, sum(amount10) as amount10
  from {{ ref('chain_v') }}
 where updated_at >= {{ hwm.interval_start() }} and updated_at < {{ hwm.interval_end() }}
 group by 1, 2
