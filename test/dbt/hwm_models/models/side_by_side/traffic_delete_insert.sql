-- dbt's incremental model as its documentation writes it (delete+insert).
{{ config(materialized='incremental', unique_key='id', incremental_strategy='delete+insert') }}
select id, created_at, writer from {{ source('shop', 'traffic') }}
{% if is_incremental() %}
 where created_at > (select max(created_at) from {{ this }})
{% endif %}
