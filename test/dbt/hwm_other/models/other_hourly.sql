-- An hwm_interval model of the second project; deleted with --vars "{other_hourly: false}".
{{ config(enabled=var('other_hourly', true), materialized='hwm_interval', time_column='created_at',
          time_interval='1 hour', target_time_column='hour', unique_key=['hour', 'kind']) }}
select date_trunc('hour', created_at) as hour, kind, count(*) as n
  from {{ source('shop', 'events') }}
 where created_at >= {{ hwm.interval_start() }} and created_at < {{ hwm.interval_end() }}
 group by 1, 2
