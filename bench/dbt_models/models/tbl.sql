-- dbt's table model of the same rows: only its first run is timed (the
-- `first` kind), as what a first load can be compared with.
{{ config(materialized='table') }}
select id, updated_at, customer_id, amount, status, note
  from {{ source('bench', 'src') }}
