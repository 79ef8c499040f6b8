-- An ordinary dbt model downstream of the hwm model.
{{ config(materialized='table') }}
select day, count(*) as orders, sum(amount) as amount
  from {{ ref('orders') }}
 group by day
