#!/usr/bin/env bash
# bench/lag_chains.sh: pipelines kept under their target lag by the
# scheduler alone (issue 41), one command from a fresh machine.  CHAINS
# chains of five copy pipelines (raw_c -> s1_c -> ... -> s5_c; 200 chains:
# 1,000 pipelines), every pipeline with target lag LAG and no schedule of its
# own, so the scheduler runs each every half of LAG and wakes a stage when
# the stage before it commits rows.  pgbench writes RATE rows a second into
# random raw tables for WINDOW seconds.  Every SAMPLE seconds hwm.freshness
# is read: the pipelines late at that moment and the greatest lag.  At the
# end the server's log says how many times a pipeline became late (the
# scheduler logs each once), and the rows of every last stage are checked
# against their raw table (0 lost).  Prints one line and appends it to
# bench/work/lag_chains.tsv.
#
#   bash bench/lag_chains.sh
#   CHAINS=200 LAG='30 seconds' RATE=50 WINDOW=300 bash bench/lag_chains.sh
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/lag_chains.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CHAINS=${CHAINS:-200}
LAG=${LAG:-30 seconds}
RATE=${RATE:-50}
WINDOW=${WINDOW:-300}
SAMPLE=${SAMPLE:-5}
bench_cluster lag_chains "hwm.max_workers = 4" "max_worker_processes = 16" "log_min_messages = log"

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }
q -c "CREATE EXTENSION hwm" -c "CREATE ROLE bench LOGIN" -c "GRANT CREATE ON SCHEMA public TO bench"

# busy and total jiffies of the whole machine
cpu() { awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }

started=$SECONDS
q <<SQL
SET ROLE bench;
DO \$\$
BEGIN
  FOR c IN 1..$CHAINS LOOP
    EXECUTE format('CREATE TABLE raw_%s (id bigserial PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now())', c);
    FOR s IN 1..5 LOOP
      EXECUTE format('CREATE TABLE s%s_%s (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL)', s, c);
      PERFORM hwm.create_pipeline(format('p%s_%s', s, c),
                                  CASE WHEN s = 1 THEN format('raw_%s', c) ELSE format('s%s_%s', s - 1, c) END::regclass,
                                  format('s%s_%s', s, c)::regclass, '{id}', 'updated_at');
    END LOOP;
  END LOOP;
END
\$\$;
SQL
q -c "SET ROLE bench" -c "SELECT count(hwm.set_target_lag(pipeline, '$LAG')) FROM hwm.state" >/dev/null
declared=$((SECONDS - started))
# the first runs (every pipeline is due at once) before the window
until [[ $(q -c "SELECT count(*) FROM hwm.state WHERE last_run_id IS NULL") == 0 ]]; do sleep 1; done

script=$WORK/lag_chains.pgbench
printf '\\set c random(1, %s)\nINSERT INTO raw_:c DEFAULT VALUES;\n' "$CHAINS" >"$script"
chmod a+r "$script"
log_start=$(hwm_as_postgres stat -c %s "$HWM_CLUSTER_DIR/server.log")
runs_before=$(q -c "SELECT count(*) FROM hwm.runs WHERE kind = 'load'")
read -r busy0 total0 < <(cpu)
hwm_as_postgres "$PGBIN/pgbench" -n -h "$PGHOST" -p "$PGPORT" -U bench -c 2 -R "$RATE" \
    -T "$WINDOW" -f "$script" postgres >>"$LOG" 2>&1 &
writer=$!
samples=$WORK/lag_chains.samples
: >"$samples"
end=$((SECONDS + WINDOW))
while ((SECONDS < end)); do
    q -c "SELECT count(*) FILTER (WHERE late), round(max(extract(epoch FROM lag))::numeric, 1),
                 count(*) FILTER (WHERE data_as_of IS NULL)
            FROM hwm.freshness" >>"$samples"
    sleep "$SAMPLE"
done
wait "$writer"
read -r busy1 total1 < <(cpu)
runs=$(($(q -c "SELECT count(*) FROM hwm.runs WHERE kind = 'load'") - runs_before))

# drain: once the writers' last rows are below hwm.start_margin, the
# stages in order, so that every last stage catches up with its raw table
sleep 2
q -c "SET ROLE bench" -c "DO \$\$ DECLARE p text; BEGIN
  FOR p IN SELECT pipeline FROM hwm.state ORDER BY split_part(pipeline, '_', 1), pipeline LOOP
    PERFORM * FROM hwm.run(p);
  END LOOP; END \$\$" >/dev/null
# count(*) of each chain's tables (a format with two %s, both the chain), summed
q <<'SQL'
CREATE FUNCTION chain_sum(fmt text, chains int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; m bigint;
BEGIN
  FOR c IN 1..chains LOOP
    EXECUTE format(fmt, c, c) INTO m;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
SQL
chain_sum() { q -c "SELECT chain_sum(\$q\$$1\$q\$, $CHAINS)"; }
rows=$(chain_sum 'SELECT count(*) FROM raw_%s WHERE %s > 0')
lost=$(chain_sum 'SELECT count(*) FROM raw_%s r WHERE NOT EXISTS (SELECT FROM s5_%s s WHERE s.id = r.id)')
late_events=$(hwm_as_postgres tail -c +"$((log_start + 1))" "$HWM_CLUSTER_DIR/server.log" | grep -c 'is late: its data is' || true)
read -r max_late max_lag < <(awk -F'|' '{ if ($1 > l) l = $1; if ($2 > g) g = $2 } END { print l + 0, g + 0 }' "$samples")
n_samples=$(wc -l <"$samples")
cpu_pct=$(awk -v b=$((busy1 - busy0)) -v t=$((total1 - total0)) 'BEGIN { printf "%.0f", 100 * b / t }')
line=$(printf '%s\tcommit %s\tpg %s\tpipelines %d (%d chains of 5)\ttarget lag %s\trate %s rows/s\twindow %ss\trows %s\truns %d (%.1f/s)\tcpu %s%%\tsamples %d\tmost late at once %s\tgreatest lag %ss\tbecame late %s times\tlost %s\tdeclared in %ss' \
    "$(date -u +%F)" "$BENCH_COMMIT" "$("$PG_CONFIG" --version | awk '{print $2}')" \
    $((CHAINS * 5)) "$CHAINS" "$LAG" "$RATE" "$WINDOW" "$rows" "$runs" \
    "$(awk -v r="$runs" -v w="$WINDOW" 'BEGIN { print r / w }')" "$cpu_pct" "$n_samples" \
    "$max_late" "$max_lag" "$late_events" "$lost" "$declared")
echo "$line" | tee -a "$WORK/lag_chains.tsv"
