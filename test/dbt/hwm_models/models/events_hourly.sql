-- A rollup computed once per finished hour of shop.events.created_at
-- (materialized='hwm_interval'): the model's SQL reads the interval's
-- bounds; each finished hour's rows replace that hour's in the table.
{{ config(materialized='hwm_interval', time_column='created_at', time_interval='1 hour',
          target_time_column='hour', unique_key=['hour', 'kind']) }}
select date_trunc('hour', created_at) as hour, kind, count(*) as n, sum(amount) as amount
  from {{ source('shop', 'events') }}
 where created_at >= {{ hwm.interval_start() }} and created_at < {{ hwm.interval_end() }}
 group by 1, 2
