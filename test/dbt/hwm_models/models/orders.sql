-- The model says which rows exist; hwm loads the new ones (no is_incremental()).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          partition_column='day', lookback=1, batch_size=20,
          grants={'select': ['analyst']}, persist_docs={'relation': true, 'columns': true}) }}
select id, day, updated_at, amount, status
  from {{ source('shop', 'orders') }}
