# shellcheck shell=bash
# test/dbt/models.sh: materialized='hwm' (and 'hwm_interval') in a real dbt
# project, test/dbt/hwm_models.  Sourced by test/dbt/run.sh after its own
# checks: it uses that script's cluster, venv, profile and TAP helpers (ok,
# not_ok, check, q, same_as_source's way of comparing).  dbt connects as the
# ordinary login role "dbt" (target "test"); the superuser target "su" is
# used only to check that a scheduled model refuses it.
#
# The checks are in two halves of about the same time (a dbt call takes
# seconds of CPU, one after another): test/dbt/models1.sh (the first run,
# incremental runs, late commits, full refresh, schema changes, bad
# configuration, reconcile, hwm_interval, side by side with dbt's own
# models) and test/dbt/models2.sh (hwm models over other models, --empty,
# rows_affected, failures, contracts, retiring, two projects, schedule, a
# live chain).  HWM_DBT_PART=models1 or models2 runs one of them, so that
# scripts/test.sh runs both at once, each in a run.sh of its own (its own
# cluster and copy of the projects); otherwise both, in turn, on one
# cluster.  Each half needs only what this file sets up: the sources below,
# the helpers and `dbt deps`; a section's own tables it makes itself.

mproject=$work/repo/test/dbt/hwm_models
hwm_psql -q -o /dev/null <<'SQL'
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, day date NOT NULL,
                          updated_at timestamptz NOT NULL DEFAULT now(),
                          amount numeric(10,2), status text);
INSERT INTO shop.orders
SELECT i, date '2024-01-01' + i / 10, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i, 'new'
  FROM generate_series(1, 50) i;
CREATE TABLE shop.evolving (id int PRIMARY KEY, updated_at timestamptz NOT NULL, seq bigint NOT NULL, amount int);
INSERT INTO shop.evolving
SELECT i, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i, i FROM generate_series(1, 10) i;
-- events over the last four hours and the current one, for the hourly rollup
CREATE TABLE shop.events (id serial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                          kind text NOT NULL, amount int NOT NULL);
INSERT INTO shop.events (created_at, kind, amount)
SELECT date_trunc('hour', now()) - interval '4 hours' + i * interval '7 minutes', (ARRAY['a', 'b', 'c'])[1 + i % 3], i
  FROM generate_series(0, 40) i;
CREATE TABLE shop.ticks (id int PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), v int);
INSERT INTO shop.ticks (id, v) SELECT i, i FROM generate_series(1, 5) i;
-- soft-deleted members, for delete_column (tombstones)
CREATE TABLE shop.members (id int PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), name text,
                           deleted boolean NOT NULL DEFAULT false);
INSERT INTO shop.members (id, name, updated_at) SELECT i, 'm' || i, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour'
  FROM generate_series(1, 5) i;
CREATE ROLE analyst;
CREATE ROLE viewer;
GRANT USAGE ON SCHEMA shop TO dbt;
GRANT SELECT ON ALL TABLES IN SCHEMA shop TO dbt;
SQL

# mdbt NAME ARGS...: run dbt in the models project, expect success.
# mdbt_fails NAME PATTERN ARGS...: expect failure, with PATTERN (grep -E) in
# dbt's output.  mdbt_run ARGS...: run it, true when dbt succeeds.  The
# output of the last call is in $mlog (run.sh's dbt_in).
mdbt_run() {
    local rc=0
    dbt_in "$mproject" "$@" || rc=1
    mlog=$dbt_log
    return $rc
}
mdbt() {
    dbt_pass "$1" "$mproject" "${@:2}"
    mlog=$dbt_log
}
mdbt_fails() {
    dbt_fail "$1" "$2" "$mproject" "${@:3}"
    mlog=$dbt_log
}
# mlogged NAME PATTERN: the last dbt call's output has PATTERN (grep -E).
mlogged() { dbt_said "$1" "$2" "$mlog"; }
# same_rows NAME TARGET SOURCE_QUERY: the target holds exactly those rows.
same_rows() {
    check "$1" "0" "$(q "SELECT (SELECT count(*) FROM (TABLE $2 EXCEPT $3) a) + (SELECT count(*) FROM ($3 EXCEPT TABLE $2) b)")"
}

# dbt deps: in each half's copy of the project (counted once, by models1)
if mdbt_run deps; then
    once_ok "dbt deps installs hwm into the models project"
else
    not_ok "dbt deps installs hwm into the models project"
    tail -n 30 "$mlog" | sed 's/^/# /'
fi

case ${HWM_DBT_PART:-all} in
models1)
    # shellcheck source=test/dbt/models1.sh
    source "$REPO/test/dbt/models1.sh" ;;
models2)
    # shellcheck source=test/dbt/models2.sh
    source "$REPO/test/dbt/models2.sh" ;;
*)
    source "$REPO/test/dbt/models1.sh"
    source "$REPO/test/dbt/models2.sh" ;;
esac
