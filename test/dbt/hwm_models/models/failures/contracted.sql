-- An hwm model with an enforced contract and constraints (issue 29, case 2).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at') }}
select id, updated_at, amount::{{ var('contract_amount', 'integer') }} as amount
  from {{ source('shop', 'upstream') }}
