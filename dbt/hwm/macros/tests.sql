{#-
  Generic data tests of the package (issue 42).

  null_watermarks: the rows of an hwm model's source (its SQL, through
  <model>__hwm_src) whose watermark column is NULL, which hwm never loads.
  Every dbt run of the model logs them as a dbt warning, but dbt's summary
  counts no warning for a model (a model's result is success or error in
  dbt-core 1.10: RunStatus has no warn); a test's is counted, WARN=1 under
  `dbt test` and `dbt build`, and an error under --warn-error.  Its
  severity is warn unless configured otherwise:

    columns:
      - name: updated_at
        data_tests:
          - hwm.null_watermarks
-#}
{% test null_watermarks(model, column_name) -%}
  {{ config(severity='warn') }}
  select * from {{ adapter.quote(model.schema) }}.{{ adapter.quote(model.identifier ~ '__hwm_src') }}
   where {{ adapter.quote(column_name) }} is null
{%- endtest %}
