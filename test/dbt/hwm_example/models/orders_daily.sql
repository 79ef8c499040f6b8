-- In-transaction hooks (dbt's default): the pre-hook loads mart.orders in
-- the same transaction that builds this model, so the model reads exactly
-- what was loaded, and the load commits with the model or not at all.  The
-- post-hook runs the pipeline again in that transaction: a no-op.
{{ config(
    pre_hook="{{ hwm.hwm_run(var('orders_pipeline', 'orders')) }}",
    post_hook="{{ hwm.hwm_run('orders') }}"
) }}
select day, count(*) as orders, sum(amount) as amount
  from {{ source('mart', 'orders') }}
 group by day
