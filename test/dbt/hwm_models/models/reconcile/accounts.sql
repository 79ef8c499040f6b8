-- Rows hard-deleted in the source, which no watermark sees: reconciled with
-- `dbt run-operation hwm_reconcile`, or after every run with reconcile=true.
-- A key of two columns, two rows per id.
{{ config(materialized='hwm', unique_key=['id', 'region'], watermark_column='updated_at',
          reconcile=var('accounts_reconcile', false)) }}
select id, region, updated_at, balance from {{ source('shop', 'accounts') }}
