-- Tombstones: a member whose row carries the marker is deleted from the
-- table (delete_column), not loaded; the var removes the marker (alter).
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          delete_column=var('members_delete_column', 'deleted')) }}
select id, updated_at, name, deleted from {{ source('shop', 'members') }}
