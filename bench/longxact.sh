#!/usr/bin/env bash
# bench/longxact.sh: what a long transaction elsewhere in the database costs
# each run (issue 14), one command from a fresh machine.
#
# A source with updated_at timestamptz DEFAULT clock_timestamp() and an index
# on it; before each of RUNS runs, NEW rows are inserted; one run a second.
# Per run it records the WAL the run wrote and its time (both measured in the
# server around the hwm.run call).  Four scenarios, each on fresh tables:
#
#   quiet      no other session;
#   idle       one session idle in transaction since before run 1;
#   idle-1.0   the same, with what a run remembers cleared before each run
#              (hwm.state.reread_from = NULL): how hwm 1.0 behaved;
#   pg_dump    a pg_dump of the database running (and held open) meanwhile.
#
# The figure is the ratio of the last runs to the first (median of the last
# third of the runs over the median of the first third, WAL and time: a
# single run's time moves with the machine); the goal is at most 1.2.
# Writes bench/work/longxact.tsv and replaces the long-transaction section of
# bench/RESULTS.md.  Takes about three minutes.
#
#   RUNS=30 NEW=5000 bash bench/longxact.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

RUNS=${RUNS:-30}
NEW=${NEW:-5000}
TSV=$WORK/longxact.tsv
: >"$TSV"

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
hwm_log "long-transaction benchmark: $RUNS runs of $NEW new rows (log: $WORK/longxact.log)"
# no checkpoint inside a scenario: full-page images would make the runs
# after it look dearer for a reason that has nothing to do with hwm
bench_cluster longxact "max_wal_size = '16GB'" "checkpoint_timeout = '1h'" \
    "hwm.allow_superuser_pipelines = on" "autovacuum = off"

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }
q -c "CREATE EXTENSION hwm"

# setup: fresh tables and pipeline
setup() {
    q <<'EOF'
DROP TABLE IF EXISTS lx_src, lx_tgt;
SELECT hwm.drop_pipeline(pipeline) FROM hwm.state WHERE pipeline = 'lx';
CREATE TABLE lx_src (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                     updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                     v text NOT NULL, n int NOT NULL);
CREATE INDEX ON lx_src (updated_at);
CREATE TABLE lx_tgt (id bigint PRIMARY KEY, updated_at timestamptz, v text, n int);
SELECT hwm.create_pipeline('lx', 'lx_src', 'lx_tgt', '{id}', 'updated_at');
CHECKPOINT;
EOF
}

# one scenario: RUNS times insert NEW rows, wait a second, run and measure
scenario() {
    local name=$1 forget=${2:-0} i
    for ((i = 1; i <= RUNS; i++)); do
        q -c "INSERT INTO lx_src (v, n) SELECT 'row ' || g, g FROM generate_series(1, $NEW) g"
        sleep 1
        if ((forget)); then q -c "UPDATE hwm.state SET reread_from = NULL WHERE pipeline = 'lx'"; fi
        q -v name="$name" -v i="$i" <<'EOF' >>"$TSV"
SELECT pg_catalog.pg_current_wal_insert_lsn() AS l0, pg_catalog.clock_timestamp() AS t0 \gset
SELECT 1 FROM hwm.run('lx') \g /dev/null
\pset format unaligned
\pset tuples_only on
\pset fieldsep '\t'
SELECT :'name', :i,
       pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_insert_lsn(), :'l0')::bigint,
       round((extract(epoch FROM pg_catalog.clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 2),
       (SELECT count(*) FROM lx_src) = (SELECT count(*) FROM lx_tgt);
EOF
    done
}

# a session idle in transaction, from before run 1 until release: psql
# reads its input from a fifo that this script holds open
hold_idle() {
    local fifo=$WORK/longxact.fifo
    rm -f "$fifo"
    mkfifo "$fifo"
    chmod 666 "$fifo"
    hwm_as_postgres "$PGBIN/psql" -X -q -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres \
        -f "$fifo" >/dev/null 2>&1 &
    HOLDER=$!
    exec 3>"$fifo"
    echo "BEGIN; SELECT 1;" >&3
    sleep 1
}
# end the session: psql reads end of file and leaves, its transaction with it
release() {
    exec 3>&-
    wait "$HOLDER" 2>/dev/null || true
    rm -f "$WORK/longxact.fifo"
}

setup
scenario quiet

setup
hold_idle
scenario idle
release

setup
hold_idle
scenario idle-1.0 1
release

# pg_dump's output goes into a fifo that nobody reads until the runs are
# done, so its transaction (and snapshot) stays open throughout
setup
q -c "CREATE TABLE lx_ballast AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 200000) g"
DUMPFIFO=$WORK/longxact.dump
rm -f "$DUMPFIFO"
mkfifo "$DUMPFIFO"
chmod 666 "$DUMPFIFO"
hwm_as_postgres "$PGBIN/pg_dump" -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres -f "$DUMPFIFO" &
DUMPER=$!
exec 4<"$DUMPFIFO"
sleep 2
scenario pg_dump
cat <&4 >/dev/null
exec 4<&-
wait "$DUMPER" 2>/dev/null || true
rm -f "$DUMPFIFO"

# --- report --------------------------------------------------------------------
REPORT=$(python3 - "$TSV" "$RUNS" "$NEW" "$LOAD_BEFORE" <<'PY'
import sys, statistics as st
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
runs, new, load = sys.argv[2], sys.argv[3], sys.argv[4]
by = {}
for name, i, wal, ms, ok in rows:
    by.setdefault(name, []).append((int(i), int(wal), float(ms), ok == 't'))
out = []
k = max(1, int(runs) // 3)
out.append(f"{runs} runs, {new} new rows before each, one run a second; per-run WAL and time measured in the server around `hwm.run`. Ratio = median of the last {k} runs / median of the first {k} (goal: at most 1.2). \"all loaded\": after every run the target had every source row. Load average before: {load}.\n")
out.append("| scenario | WAL run 1 | WAL last | WAL ratio | time run 1 | time last | time ratio | all loaded |")
out.append("|---|---|---|---|---|---|---|---|")
for name in ["quiet", "idle", "idle-1.0", "pg_dump"]:
    if name not in by: continue
    r = sorted(by[name])
    w = [x[1] for x in r]; t = [x[2] for x in r]
    wr = st.median(w[-k:]) / max(st.median(w[:k]), 1)
    tr = st.median(t[-k:]) / max(st.median(t[:k]), 0.001)
    ok = all(x[3] for x in r)
    out.append(f"| {name} | {w[0]/1e6:.2f} MB | {w[-1]/1e6:.2f} MB | {wr:.2f} | {t[0]:.0f} ms | {t[-1]:.0f} ms | {tr:.2f} | {'yes' if ok else 'NO'} |")
print("\n".join(out))
PY
)
echo "$REPORT"
SECTION=$(printf '%s\n' "<!-- longxact:start -->" "## Long transactions (issue 14)" "" \
    "Command: \`RUNS=$RUNS NEW=$NEW bash bench/longxact.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo unknown)." "" \
    "$REPORT" "<!-- longxact:end -->")
python3 - "$BENCH/RESULTS.md" "$SECTION" <<'PY'
import sys, re
path, section = sys.argv[1], sys.argv[2]
try:
    text = open(path).read()
except FileNotFoundError:
    text = ""
pat = re.compile(r"<!-- longxact:start -->.*?<!-- longxact:end -->", re.S)
text = pat.sub(lambda m: section, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the long-transaction section of bench/RESULTS.md"
