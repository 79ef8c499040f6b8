-- An hwm model of the second project; deleted with --vars "{other_orders: false}".
{{ config(enabled=var('other_orders', true), materialized='hwm', unique_key='id',
          watermark_column='updated_at', schedule='1 hour') }}
select id, updated_at, v from {{ source('shop', 'ticks') }}
