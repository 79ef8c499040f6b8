-- A history of customers from their change log: a change of tier opens a
-- version, a change of email alone updates the current version in place,
-- a row marked deleted closes the current version.  The vars switch
-- history off (refused without --full-refresh) and change the tracked
-- columns (hwm.alter_pipeline).
{{ config(materialized='hwm', history=var('history', true), unique_key='id',
          watermark_column='changed_at', delete_column='deleted',
          history_columns=var('history_columns', ['tier']) if var('history', true) else none) }}
select id, changed_at, tier, email, deleted from {{ source('crm', 'customer_changes') }}
