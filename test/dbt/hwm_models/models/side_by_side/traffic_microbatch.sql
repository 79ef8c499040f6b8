-- dbt's microbatch model: hourly batches of created_at (the source's
-- event_time), each run redoing the current batch and lookback=1 before it.
{{ config(materialized='incremental', incremental_strategy='microbatch', unique_key='id',
          event_time='created_at', batch_size='hour', lookback=1,
          begin=var('traffic_begin', '2024-01-01')) }}
select id, created_at, writer from {{ source('shop', 'traffic') }}
