#!/usr/bin/env bash
# bench/swing.sh: fair share against an owner that games it (issue 37), one
# command from a fresh machine.
#
# hwm.max_workers = 2.  Owner alice has ALICE pipelines (default 4) due every
# second whose runs swing: a run takes SLOW seconds (default 5) exactly when
# the pipeline's previous run was quick, and is quick after a slow one (each
# reads a view whose function flips a flag per pipeline, once per run, and
# sleeps when the flag said so), so a prediction from the last run alone is
# always wrong.  Owner bob has one pipeline due every second (a copy with
# nothing new: a run takes milliseconds), first in alice's database
# ("same"), then, that one dropped, in another database ("other").  For each
# case, after WARMUP seconds (default 10), over DURATION seconds (default
# 60): bob's succeeded runs per second and the longest time between two of
# them (the window's ends count as runs), alice's succeeded runs per second
# and how many of them were slow, from hwm.runs.  The goal (issue 37): bob
# at least 0.8 runs/s.  Prints the figures, appends them to
# bench/work/swing.tsv and writes them into bench/RESULTS.md ("Fair share
# against a swinging owner"), one row per build and case, replacing that
# build's earlier rows with as many pipelines of alice.  About 2.5 minutes with the defaults.
#
#   bash bench/swing.sh
#   DURATION=60 HWM_BENCH_PGBIN=/path/to/17/bin bash bench/swing.sh
#   HWM_BENCH_SRC=/path/to/older/checkout bash bench/swing.sh   # the build before, to compare
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ALICE=${ALICE:-4}
SLOW=${SLOW:-5}
WARMUP=${WARMUP:-10}
DURATION=${DURATION:-60}
TSV=$WORK/swing.tsv

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
hwm_log "swing benchmark: build $BENCH_COMMIT, $ALICE swinging pipelines of alice (${SLOW}s after a quick run), bob every second, ${WARMUP}s + ${DURATION}s per case (log: $WORK/swing.log)"
bench_cluster swing "hwm.max_workers = 2" "max_worker_processes = 16"
VERSION=$(hwm_psql -At -c "SHOW server_version")

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }

q <<SQL
CREATE EXTENSION hwm;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA a AUTHORIZATION alice;
CREATE SCHEMA b AUTHORIZATION bob;
CREATE DATABASE other;
SET ROLE alice;
CREATE TABLE a.src (id bigint, v text);
INSERT INTO a.src VALUES (1, 'a');
-- one row per pipeline: is its next run slow?
CREATE TABLE a.swing (pipeline text PRIMARY KEY, slow_next boolean NOT NULL);
INSERT INTO a.swing SELECT 'a' || i, true FROM generate_series(1, $ALICE) AS i;
-- Once per transaction (a run may read its source more than once), the
-- pipeline's flag is flipped, and the run sleeps when the flag said so:
-- slow after quick, quick after slow.
CREATE FUNCTION a.swing(p text) RETURNS int LANGUAGE plpgsql VOLATILE AS \$\$
DECLARE
  slow boolean;
BEGIN
  IF pg_catalog.current_setting('swing.done', true) IS DISTINCT FROM 'yes' THEN
    PERFORM pg_catalog.set_config('swing.done', 'yes', true);
    UPDATE a.swing AS s SET slow_next = NOT s.slow_next
     WHERE s.pipeline OPERATOR(pg_catalog.=) p
    RETURNING NOT s.slow_next INTO slow;
    IF slow THEN
      PERFORM pg_catalog.pg_sleep($SLOW);
    END IF;
  END IF;
  RETURN 1;
END \$\$;
RESET ROLE;
SQL
# alice's pipelines, each with its own target
for ((i = 1; i <= ALICE; i++)); do
    # its own view, read by every run (OFFSET 0 keeps the watermark's
    # condition outside)
    q -c "SET ROLE alice" -c "CREATE TABLE a.t$i (id bigint PRIMARY KEY, v text)" \
        -c "CREATE VIEW a.v$i AS SELECT id, v FROM (SELECT id, v, a.swing('a$i') AS w FROM a.src OFFSET 0) AS x" \
        -c "SELECT hwm.create_pipeline('a$i', 'a.v$i', 'a.t$i', '{id}', 'id', schedule => '1 second')" >/dev/null
done
q -d other -c "CREATE EXTENSION hwm" -c "CREATE SCHEMA b AUTHORIZATION bob"

# bob's pipeline in database $1
bob_create() {
    q -d "$1" -c "SET ROLE bob" -c "CREATE TABLE b.src (id bigint, v text)" \
        -c "CREATE TABLE b.tgt (id bigint PRIMARY KEY, v text)" \
        -c "SELECT hwm.create_pipeline('b1', 'b.src', 'b.tgt', '{id}', 'id', schedule => '1 second')" >/dev/null
}
bob_drop() {
    q -d "$1" -c "SET ROLE bob" -c "SELECT hwm.drop_pipeline('b1')" -c "DROP TABLE b.src, b.tgt" >/dev/null
}

RESULTS=()
# measure CASE DATABASE: bob's pipeline in DATABASE
measure() {
    local case=$1 db=$2 start bob gap bad alice slow line
    bob_create "$db"
    sleep "$WARMUP"
    start=$(q -c "SELECT now()")
    sleep "$DURATION"
    sleep 1 # runs that started in the window have been recorded
    local win="started_at >= '$start' AND started_at < '$start'::timestamptz + interval '$DURATION seconds'"
    read -r bob gap bad < <(q -d "$db" -F ' ' <<SQL
WITH r AS (SELECT started_at FROM hwm.runs WHERE pipeline = 'b1' AND status = 'succeeded' AND $win),
     t AS (SELECT started_at FROM r
           UNION ALL SELECT '$start'::timestamptz
           UNION ALL SELECT '$start'::timestamptz + interval '$DURATION seconds'),
     g AS (SELECT started_at - lag(started_at) OVER (ORDER BY started_at) AS gap FROM t)
SELECT (SELECT count(*) FROM r),
       round(extract(epoch FROM (SELECT max(gap) FROM g))::numeric, 1),
       (SELECT count(*) FROM hwm.runs WHERE pipeline = 'b1' AND status NOT IN ('succeeded', 'running') AND $win)
SQL
    )
    read -r alice slow < <(q -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE finished_at - started_at >= interval '$SLOW seconds' * 0.8)
                                          FROM hwm.runs WHERE pipeline LIKE 'a%' AND status = 'succeeded' AND $win")
    bob_drop "$db"
    local bob_rate alice_rate
    bob_rate=$(awk -v n="$bob" -v d="$DURATION" 'BEGIN {printf "%.2f", n / d}')
    alice_rate=$(awk -v n="$alice" -v d="$DURATION" 'BEGIN {printf "%.2f", n / d}')
    hwm_log "bob in $case database: $bob_rate runs/s ($bob succeeded, $bad not), longest gap ${gap}s; alice: $alice_rate runs/s ($slow slow of $alice)"
    line=$(printf '%s\t' "$(date -u +%FT%TZ)" "$BENCH_COMMIT" "$case" "$bob_rate" "$gap" "$bad" "$alice_rate" "$slow" "$alice" "$DURATION")
    printf '%s\n' "${line%$'\t'}" >>"$TSV"
    RESULTS+=("$case|$bob_rate|$gap|$bad|$alice_rate|$slow of $alice")
}

measure same postgres
measure other other
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- bench/RESULTS.md: one row per build and case --------------------------
cmd="DURATION=$DURATION"
[[ $ALICE != 4 ]] && cmd+=" ALICE=$ALICE"
[[ $SLOW != 5 ]] && cmd+=" SLOW=$SLOW"
[[ $WARMUP != 10 ]] && cmd+=" WARMUP=$WARMUP"
[[ -n ${HWM_BENCH_PGBIN:-} ]] && cmd+=" HWM_BENCH_PGBIN=<$(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$("$PG_CONFIG" --version)") bin>"
[[ -n ${HWM_BENCH_SRC:-} ]] && cmd+=" HWM_BENCH_SRC=<checkout of $BENCH_COMMIT>"
cmd+=" bash bench/swing.sh"
NOTE="- build \`$BENCH_COMMIT\`, $ALICE pipelines of alice: \`$cmd\`, $(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $VERSION, $(nproc) cores, load average $LOAD_BEFORE before, $LOAD_AFTER after."
python3 - "$BENCH/RESULTS.md" "$BENCH_COMMIT" "$NOTE" "$ALICE" "$SLOW" "$WARMUP" "$DURATION" "${RESULTS[@]}" <<'PY'
import sys, re
path, build, note, alice, slow, warmup, duration = sys.argv[1:8]
results = sys.argv[8:]
text = open(path).read()
pat = re.compile(r"<!-- swing:start -->.*?<!-- swing:end -->", re.S)
m = pat.search(text)
old = m.group(0).splitlines() if m else []
mark = f"`{build}` | {alice} |"
rows = [l for l in old if l.startswith("| `") and not l.startswith("| " + mark)]
notes = [l for l in old if l.startswith("- build `") and not l.startswith(note.split(":")[0] + ":")]
for r in results:
    case, bob, gap, bad, arate, aslow = r.split("|")
    where = "alice's" if case == "same" else "another"
    rows.append(f"| {mark} {where} | **{bob}** | {gap} s | {bad} | {arate} ({aslow} slow) |")
notes.append(note)
section = "\n".join([
    "<!-- swing:start -->",
    "## Fair share against a swinging owner (issue 37)",
    "",
    f"`bench/swing.sh`: `hwm.max_workers = 2`; owner alice has ALICE pipelines (default 4) due every second whose runs take SLOW s (default 5) exactly when the pipeline's previous run was quick (and are quick after a slow one), so a prediction from the last run alone is always wrong; owner bob has one pipeline due every second (nothing new: a run takes milliseconds), first in alice's database, then in another one. After WARMUP s of warm-up (default 10), the runs that started in a DURATION s window (default 60), from `hwm.runs`: bob's succeeded runs per second, the longest time between two of them (the window's ends count as runs), bob's runs not succeeded, alice's succeeded runs per second (those that took at least 0.8 × SLOW s are slow). Goal: bob at least 0.8 runs/s. One row per build, number of alice's pipelines and case; the machine is shared with other jobs, whose load is noted below.",
    "",
    "| build | alice's pipelines | bob's database | bob runs/s | longest gap | bob not succeeded | alice runs/s |",
    "|---|---|---|---|---|---|---|",
    *rows,
    "",
    *notes,
    "<!-- swing:end -->",
])
text = pat.sub(lambda m: section, text) if m else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the swing section of bench/RESULTS.md"
