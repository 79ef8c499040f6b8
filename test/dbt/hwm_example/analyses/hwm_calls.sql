-- The statements the macros give a hook; test/dbt/run.sh compiles this
-- file and compares it line by line (quoting, NULL, named arguments).
{{ hwm.hwm_run('orders') }};
{{ hwm.hwm_run("it's", nowait=true) }};
{{ hwm.hwm_overwrite('events', '2024-01-01', '2024-01-02') }};
{{ hwm.hwm_backfill('extra', '2024-01-01', '2024-01-03', batch_size=2) }};
{{ hwm.hwm_backfill('extra', '2024-01-01', '2024-01-03', dry_run=true) }};
{{ hwm.hwm_catch_up('orders') }};
{{ hwm.hwm_set_watermark('orders', none) }};
{{ hwm.hwm_reconcile('orders', to_key=100, batch_size=500) }};
