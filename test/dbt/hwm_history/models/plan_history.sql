-- A history with an enforced contract (schema.yml), which lists the
-- bounds too, here named since and until; every column but the key, the
-- watermark and the delete marker is tracked (history_columns unset).
{{ config(materialized='hwm', history=true, unique_key='id', watermark_column='changed_at',
          valid_from_column='since', valid_to_column='until') }}
select id, changed_at, tier from {{ source('crm', 'customer_changes') }} where not deleted
