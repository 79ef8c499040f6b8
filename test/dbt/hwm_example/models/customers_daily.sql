-- Hooks outside the model's transaction: before_begin loads mart.customers
-- before the model's transaction starts; after_commit loads refunds after
-- the model has committed.
{{ config(
    pre_hook=before_begin("{{ hwm.hwm_run('customers') }}"),
    post_hook=after_commit("{{ hwm.hwm_run('refunds') }}")
) }}
select day, count(*) as customers
  from {{ source('mart', 'customers') }}
 group by day
