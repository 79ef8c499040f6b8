-- Tombstones: a member whose row carries the marker is deleted from the
-- table (delete_column), not loaded; the var removes the marker (alter).
-- A config index, which the first run makes before its load.
{{ config(materialized='hwm', unique_key='id', watermark_column='updated_at',
          delete_column=var('members_delete_column', 'deleted'),
          indexes=[{'columns': ['name']}]) }}
select id, updated_at, name, deleted from {{ source('shop', 'members') }}
