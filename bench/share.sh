#!/usr/bin/env bash
# bench/share.sh: what one owner's slow runs leave to the others (issue 28),
# one command from a fresh machine: the figure test/t/04b_scheduler_share.pl
# printed and asserted before issue 38 (the test now only polls for the
# runs it needs).
#
# hwm.max_workers = 2.  Owner alice has ALICE pipelines (default 40) due
# every second over a view that sleeps SLOW seconds (default 10) per read
# (a run reads it more than once: about 3 × SLOW a run).  Owner bob has one
# pipeline due every second in alice's database, owner carol one in another
# database (copies with nothing new: a run takes milliseconds).  After
# WARMUP seconds (default 40: a run is never preempted, so bob's and carol's
# first runs wait for one of alice's first ones to end), over DURATION
# seconds (default 60): bob's and carol's succeeded runs per second and the
# longest time between two of them (the window's ends count as runs), their
# runs not succeeded, and alice's succeeded runs that started in the window,
# from hwm.runs.  Prints the figures, appends them to
# bench/work/share.tsv and writes them into bench/RESULTS.md ("One owner's
# slow runs and the others"), one row per build, replacing that build's
# earlier row.  About 2 minutes with the defaults.
#
#   bash bench/share.sh
#   DURATION=60 HWM_BENCH_PGBIN=/path/to/17/bin bash bench/share.sh
#   HWM_BENCH_SRC=/path/to/older/checkout bash bench/share.sh   # the build before, to compare
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ALICE=${ALICE:-40}
SLOW=${SLOW:-10}
WARMUP=${WARMUP:-40}
DURATION=${DURATION:-60}
TSV=$WORK/share.tsv

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
hwm_log "share benchmark: build $BENCH_COMMIT, $ALICE pipelines of alice (${SLOW}s a read), bob and carol every second, ${WARMUP}s + ${DURATION}s (log: $WORK/share.log)"
bench_cluster share "hwm.max_workers = 2" "max_worker_processes = 16"
VERSION=$(hwm_psql -At -c "SHOW server_version")

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }

q <<SQL
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
CREATE DATABASE one;
CREATE DATABASE two;
SQL
q -d one <<SQL
CREATE EXTENSION hwm;
CREATE SCHEMA a AUTHORIZATION alice;
CREATE SCHEMA b AUTHORIZATION bob;
SET ROLE alice;
CREATE TABLE a.src0 (id bigint, v text);
INSERT INTO a.src0 VALUES (1, 'a');
-- every read sleeps (OFFSET 0 keeps the watermark's condition outside)
CREATE VIEW a.slow AS
  SELECT id, v FROM (SELECT id, v, pg_catalog.pg_sleep($SLOW) AS w FROM a.src0 OFFSET 0) AS x;
DO \$\$
BEGIN
  FOR i IN 1..$ALICE LOOP
    EXECUTE format('CREATE TABLE a.tgt_%s (id bigint PRIMARY KEY, v text)', i);
    PERFORM hwm.create_pipeline('a' || i, 'a.slow', format('a.tgt_%s', i)::regclass, '{id}', 'id',
                                schedule => '1 second');
  END LOOP;
END \$\$;
SET ROLE bob;
CREATE TABLE b.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO b.src (v) VALUES ('b');
CREATE TABLE b.tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('b1', 'b.src', 'b.tgt', '{id}', 'id', schedule => '1 second');
SQL
q -d two <<SQL
CREATE EXTENSION hwm;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO c.src (v) VALUES ('c');
CREATE TABLE c.tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('c1', 'c.src', 'c.tgt', '{id}', 'id', schedule => '1 second');
SQL

sleep "$WARMUP"
start=$(q -c "SELECT now()")
sleep "$DURATION"
sleep 1 # runs that started in the window have been recorded
win="started_at >= '$start' AND started_at < '$start'::timestamptz + interval '$DURATION seconds'"

# rate DATABASE PIPELINE: succeeded runs, longest gap, runs not succeeded
rate() {
    q -d "$1" -F ' ' <<SQL
WITH r AS (SELECT started_at FROM hwm.runs WHERE pipeline = '$2' AND status = 'succeeded' AND $win),
     t AS (SELECT started_at FROM r
           UNION ALL SELECT '$start'::timestamptz
           UNION ALL SELECT '$start'::timestamptz + interval '$DURATION seconds'),
     g AS (SELECT started_at - lag(started_at) OVER (ORDER BY started_at) AS gap FROM t)
SELECT (SELECT count(*) FROM r),
       round(extract(epoch FROM (SELECT max(gap) FROM g))::numeric, 1),
       (SELECT count(*) FROM hwm.runs WHERE pipeline = '$2' AND status NOT IN ('succeeded', 'running') AND $win)
SQL
}
read -r bob bob_gap bob_bad < <(rate one b1)
read -r carol carol_gap carol_bad < <(rate two c1)
alice=$(q -d one -c "SELECT count(*) FROM hwm.runs WHERE pipeline LIKE 'a%' AND status = 'succeeded' AND $win")
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
per_s() { awk -v n="$1" -v d="$DURATION" 'BEGIN {printf "%.2f", n / d}'; }
bob_rate=$(per_s "$bob")
carol_rate=$(per_s "$carol")
hwm_log "bob (alice's database): $bob_rate runs/s ($bob succeeded, $bob_bad not), longest gap ${bob_gap}s; carol (another database): $carol_rate runs/s ($carol succeeded, $carol_bad not), longest gap ${carol_gap}s; alice: $alice slow runs succeeded"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$BENCH_COMMIT" "$bob_rate" "$bob_gap" "$bob_bad" \
    "$carol_rate" "$carol_gap" "$carol_bad" "$alice" "$ALICE" "$DURATION" >>"$TSV"

# --- bench/RESULTS.md: one row per build -----------------------------------
cmd="DURATION=$DURATION"
[[ $ALICE != 40 ]] && cmd+=" ALICE=$ALICE"
[[ $SLOW != 10 ]] && cmd+=" SLOW=$SLOW"
[[ $WARMUP != 40 ]] && cmd+=" WARMUP=$WARMUP"
[[ -n ${HWM_BENCH_PGBIN:-} ]] && cmd+=" HWM_BENCH_PGBIN=<$(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$("$PG_CONFIG" --version)") bin>"
[[ -n ${HWM_BENCH_SRC:-} ]] && cmd+=" HWM_BENCH_SRC=<checkout of $BENCH_COMMIT>"
cmd+=" bash bench/share.sh"
NOTE="- build \`$BENCH_COMMIT\`: \`$cmd\`, $(date -u '+%Y-%m-%d %H:%M UTC'), PostgreSQL $VERSION, $(nproc) cores, load average $LOAD_BEFORE before, $LOAD_AFTER after."
ROW="| \`$BENCH_COMMIT\` | $ALICE | **$bob_rate** | $bob_gap s | $bob_bad | **$carol_rate** | $carol_gap s | $carol_bad | $alice |"
python3 - "$BENCH/RESULTS.md" "$BENCH_COMMIT" "$NOTE" "$ROW" <<'PY'
import sys, re
path, build, note, row = sys.argv[1:5]
text = open(path).read()
pat = re.compile(r"<!-- share:start -->.*?<!-- share:end -->", re.S)
m = pat.search(text)
old = m.group(0).splitlines() if m else []
rows = [l for l in old if l.startswith("| `") and not l.startswith(f"| `{build}` |")]
notes = [l for l in old if l.startswith("- build `") and not l.startswith(f"- build `{build}`:")]
rows.append(row)
notes.append(note)
section = "\n".join([
    "<!-- share:start -->",
    "## One owner's slow runs and the others (issue 28)",
    "",
    "`bench/share.sh`, the scenario of `test/t/04b_scheduler_share.pl`, whose figure this was until issue 38 (the test now asserts only that the others run, polling for their runs): `hwm.max_workers = 2`; owner alice has ALICE pipelines (default 40) due every second over a view that sleeps SLOW s (default 10) per read, about 3 × SLOW s a run; owner bob has one pipeline due every second in alice's database, owner carol one in another database (nothing new: a run takes milliseconds). After WARMUP s (default 40: bob's and carol's first runs wait for one of alice's first ones to end, a run is never preempted), the runs that started in a DURATION s window (default 60), from `hwm.runs`: bob's and carol's succeeded runs per second, the longest time between two of them (the window's ends count as runs), their runs not succeeded, alice's succeeded runs (a run of hers in progress and the claims queued behind it are not counted). Before 1.2's shares bob and carol ran 0 times in 60 s (README). One row per build; the machine is shared with other jobs, whose load is noted below.",
    "",
    "| build | alice's pipelines | bob runs/s | bob's longest gap | bob not succeeded | carol runs/s (another database) | carol's longest gap | carol not succeeded | alice's runs succeeded |",
    "|---|---|---|---|---|---|---|---|---|",
    *rows,
    "",
    *notes,
    "<!-- share:end -->",
])
text = pat.sub(lambda m: section, text) if m else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the share section of bench/RESULTS.md"
