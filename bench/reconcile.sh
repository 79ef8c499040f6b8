#!/usr/bin/env bash
# bench/reconcile.sh: CALL hwm.reconcile side by side with the hand-written
# anti-join DELETE (issue 32), on a throwaway cluster.  A 1,000,000-row
# target loaded by hwm from its source; each round deletes 1% of the source
# (10,000 keys spread over the whole key range, a different 1% every round),
# then times, in alternating order (ABBA), each of
#   A  CALL hwm.reconcile('bench_rc', batch_size => BATCH)   (one transaction per batch)
#   B  DELETE FROM tgt AS t WHERE NOT EXISTS (SELECT FROM src AS s WHERE s.id = t.id)
# putting the deleted target rows back (and VACUUM ANALYZE, untimed) after
# each.  Reports the median of each, their ratio, and the longest batch of
# the reconciles (from hwm.runs); writes them into bench/RESULTS.md.
#
#   bash bench/reconcile.sh                        # 5 rounds, 10,000 keys per batch
#   ROUNDS=9 BATCH=50000 bash bench/reconcile.sh
#   HWM_BENCH_PGBIN=/path/to/bin bash bench/reconcile.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${ROUNDS:-5}
BATCH=${BATCH:-10000}
ROWS=${ROWS:-1000000}

bench_cluster reconcile "hwm.allow_superuser_pipelines = on" "shared_buffers = '1GB'" \
    "work_mem = '64MB'" "max_wal_size = '8GB'" "autovacuum = off"
version=$(hwm_psql -At -c "SHOW server_version")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
hwm_log "reconcile benchmark: $ROWS rows, 1% deleted, $ROUNDS rounds, batch_size $BATCH, PostgreSQL $version"

hwm_psql -q <<SQL >>"$LOG" 2>&1
CREATE EXTENSION IF NOT EXISTS hwm;
DROP TABLE IF EXISTS src, tgt, gone;
CREATE TABLE src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, updated_at timestamptz, v text);
INSERT INTO src (id, v) SELECT g, md5(g::text) FROM generate_series(1, $ROWS) g;
SELECT hwm.create_pipeline('bench_rc', 'src', 'tgt', '{id}', 'updated_at');
SELECT rows_upserted FROM hwm.run('bench_rc');
VACUUM ANALYZE src, tgt;
CREATE TABLE gone (LIKE tgt);
SQL

now() { date +%s.%N; }
# run SQL, print its wall time in seconds
timed() {
    local t0 t1
    t0=$(now)
    hwm_psql -q -c "$1" >>"$LOG" 2>&1
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
# put back the target rows of the keys deleted this round (untimed)
restore() {
    hwm_psql -q >>"$LOG" 2>&1 <<'SQL'
INSERT INTO tgt SELECT * FROM gone ON CONFLICT (id) DO NOTHING;
VACUUM ANALYZE tgt;
SQL
}
reconcile_sql="CALL hwm.reconcile('bench_rc', batch_size => $BATCH)"
delete_sql="DELETE FROM tgt AS t WHERE NOT EXISTS (SELECT FROM src AS s WHERE s.id OPERATOR(pg_catalog.=) t.id)"

A=() B=() maxbatch=()
for ((r = 0; r < ROUNDS; r++)); do
    # this round's 1%: keys r mod 100 (different every round), gone from the source
    hwm_psql -q >>"$LOG" 2>&1 <<SQL
TRUNCATE gone;
INSERT INTO gone SELECT * FROM tgt WHERE id % 100 = $r;
DELETE FROM src WHERE id % 100 = $r;
VACUUM ANALYZE src;
SQL
    for side in $( ((r % 2 == 0)) && echo "A B" || echo "B A"); do
        if [[ $side == A ]]; then
            t=$(timed "$reconcile_sql")
            A+=("$t")
            # its batches' runs (the last reconcile's: deleted after each)
            maxbatch+=("$(hwm_psql -At -c "SELECT round(extract(epoch FROM max(finished_at - started_at))::numeric, 3)
                FROM hwm.runs WHERE pipeline = 'bench_rc' AND kind = 'reconcile'")")
            hwm_psql -q -c "DELETE FROM hwm.runs WHERE pipeline = 'bench_rc' AND kind = 'reconcile'" >>"$LOG" 2>&1
        else
            t=$(timed "$delete_sql")
            B+=("$t")
        fi
        deleted=$(hwm_psql -At -c "SELECT count(*) FROM gone g WHERE NOT EXISTS (SELECT FROM tgt t WHERE t.id = g.id)")
        [[ $deleted == "$(hwm_psql -At -c 'SELECT count(*) FROM gone')" ]] ||
            { hwm_log "round $r $side deleted $deleted rows, not all of gone"; exit 1; }
        hwm_log "round $r $side: $t s"
        restore
    done
    hwm_psql -q >>"$LOG" 2>&1 <<'SQL'
INSERT INTO src SELECT * FROM gone;
VACUUM ANALYZE src;
SQL
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ma=$(median "${A[@]}")
mb=$(median "${B[@]}")
mx=$(printf '%s\n' "${maxbatch[@]}" | sort -g | tail -1)
ratio=$(printf '%.2f' "$(echo "$ma / $mb" | bc -l)")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
fmt() { printf '%.3f' "$1"; }
list() { local o='' x; for x in "$@"; do o+="${o:+, }$(fmt "$x")"; done; echo "$o"; }

REPORT=$(printf '%s\n' \
    "| | median (s) | rounds (s) |" "|---|---|---|" \
    "| A: \`CALL hwm.reconcile('bench_rc', batch_size => $BATCH)\` | $(fmt "$ma") | $(list "${A[@]}") |" \
    "| B: \`DELETE FROM tgt AS t WHERE NOT EXISTS (SELECT FROM src AS s WHERE s.id = t.id)\` | $(fmt "$mb") | $(list "${B[@]}") |" \
    "" \
    "Ratio A / B of the medians: **${ratio}x** (goal: at most 1.2x). Longest reconcile batch (one transaction, from hwm.runs): $mx s; B is one transaction over the whole table.")
printf '%s\n' "$REPORT"

SECTION=$(printf '%s\n' "<!-- reconcile:start -->" "## Reconcile (issue 32)" "" \
    "Command: \`ROUNDS=$ROUNDS BATCH=$BATCH bash bench/reconcile.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo unknown), PostgreSQL $version on a throwaway cluster (shared_buffers 1GB, work_mem 64MB, autovacuum off). The machine ($(nproc) cores) is shared with other work and was loaded: load average $load_before before, $load_after after." "" \
    "$ROWS-row target, 1% (10,000 keys spread over the key range, another 1% each round) deleted in the source before each round; each round times A and B in alternating order on the same deleted keys, the target's rows put back (and VACUUM ANALYZE) after each, untimed. Wall time of the psql call." "" \
    "$REPORT" "<!-- reconcile:end -->")
python3 - "$BENCH/RESULTS.md" "$SECTION" <<'PY'
import sys, re
path, section = sys.argv[1], sys.argv[2]
text = open(path).read()
pat = re.compile(r"<!-- reconcile:start -->.*?<!-- reconcile:end -->", re.S)
text = pat.sub(lambda m: section, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
hwm_log "wrote the reconcile section of bench/RESULTS.md"
