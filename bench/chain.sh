#!/usr/bin/env bash
# bench/chain.sh: a three-stage chain run after its upstreams against the
# same chain on fixed schedules (issue 41), one command from a fresh machine.
#
# The chain (bench/sql/chain.sql): raw -> t1 -> t2 -> t3, three copy
# pipelines on the key id and the watermark updated_at (now() of the
# writer's transaction), copied through.  Writers: pgbench, WRITERS clients
# (default 3) inserting one row per transaction into raw, RATE rows a second
# in all (default 30).  Modes (default: commit, clock), one after the other on one throwaway
# cluster, each on its own tables and pipelines:
#
#   commit  stage 1 on hwm.schedule_on_commit(..., COMMIT_SPACING, default
#          '750 milliseconds'): run after the writers' commits, at most
#          once per COMMIT_SPACING; stages 2 and 3 on hwm.schedule_after
#          the stage before: no clock anywhere;
#   after  stage 1 on hwm.schedule(..., '1 second'), stages 2 and 3 on
#          hwm.schedule_after(stage, ARRAY[the stage before]) (not run by
#          default: MODES="commit after clock");
#   clock  each stage on hwm.schedule(..., '1 second') (the default
#          start_at, as a user would call it: anchors a few ms apart),
#          scheduled in the chain's order, stage 1 first;
#   clock_rev  the same, scheduled in the reverse order, stage 3 first
#          (not run by default: MODES="after clock clock_rev").  The due
#          runs of one owner are queued by next_run_at, so stages whose
#          anchors are in the chain's order mostly run back to back in
#          one worker, and in the reverse order each hop waits a slot;
#   clock_phase  each stage on hwm.schedule(..., '1 second') with its own
#          anchor, at a random point of the second (PHASE_SEED, default 1):
#          one-second schedules made at different moments, as independent
#          jobs get them (not run by default).
#
# Each mode lasts HWM_BENCH_MINUTES (default 10): writers for all but the
# last HWM_BENCH_IDLE_MINUTES (default 3), then nothing is written.  Per mode:
#
#   latency  per row written, the commit time of the transaction that wrote
#            it into t3 minus the commit time of the writer's transaction
#            (track_commit_timestamp = on, pg_xact_commit_timestamp(xmin)):
#            median, 99th percentile and maximum, and the median of each hop;
#   runs     each stage's runs (hwm.runs) that started in the mode's window,
#            while writing, while draining (from the writers' end to the
#            run of stage 3 whose watermark reached the last row's) and while
#            idle (from there to the end of the window);
#   lost     raw rows missing from t3 at the end (goal 0), and row updates in
#            the targets (a row rewritten after it arrived would make its
#            latency wrong: 0 expected, the rows never change).
#
# The scheduler runs with the defaults a user has (hwm.max_workers = 2,
# hwm.queue_budget = 1s...); hwm.max_runs_per_pipeline = 0 keeps every run
# for the counts.  Writes bench/work/chain.tsv and the section "A chain
# scheduled after its upstreams" of bench/RESULTS.md (a run shorter than 10
# minutes a mode is a smoke run: bench/work/chain-smoke.md instead).
#
#   bash bench/chain.sh                                    # 2 x 10 min
#   HWM_BENCH_MINUTES=2 HWM_BENCH_IDLE_MINUTES=0.5 bash bench/chain.sh   # smoke
#   HWM_BENCH_PGBIN=/path/to/17/bin bash bench/chain.sh    # another PostgreSQL
#   MODES="clock after" RATE=20 WRITERS=2 bash bench/chain.sh
set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
MINUTES=${HWM_BENCH_MINUTES:-10}
IDLE_MINUTES=${HWM_BENCH_IDLE_MINUTES:-3}
RATE=${RATE:-30}
WRITERS=${WRITERS:-3}
read -r -a MODES <<<"${MODES:-commit clock}"
COMMIT_SPACING=${COMMIT_SPACING:-750 milliseconds}
TOTAL_S=$(awk -v m="$MINUTES" 'BEGIN {printf "%d", m * 60}')
IDLE_S=$(awk -v m="$IDLE_MINUTES" 'BEGIN {printf "%d", m * 60}')
WRITE_S=$((TOTAL_S - IDLE_S))
if ((WRITE_S < 10 || IDLE_S < 10)); then
    echo "chain.sh: need at least 10 s of writers and 10 s idle (HWM_BENCH_MINUTES=$MINUTES, HWM_BENCH_IDLE_MINUTES=$IDLE_MINUTES)" >&2
    exit 2
fi
for mode in "${MODES[@]}"; do
    [[ $mode == commit || $mode == after || $mode == clock || $mode == clock_rev || $mode == clock_phase ]] || {
        echo "chain.sh: unknown mode $mode (commit, after, clock, clock_rev, clock_phase)" >&2
        exit 2
    }
done
TSV=$WORK/chain.tsv
# clock_phase: each stage's anchor, ms into the second (seeded, so a run can be repeated)
RANDOM=${PHASE_SEED:-1}
PHASES=($((RANDOM % 1000)) $((RANDOM % 1000)) $((RANDOM % 1000)))

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
hwm_log "chain benchmark: build $BENCH_COMMIT, modes ${MODES[*]}, ${MINUTES} min each (${WRITE_S} s of $WRITERS writers at $RATE rows/s, then ${IDLE_S} s idle) (log: $WORK/chain.log)"
bench_cluster chain "track_commit_timestamp = on" "hwm.max_runs_per_pipeline = 0"
VERSION=$(hwm_psql -At -c "SHOW server_version")

q() { hwm_psql -q -At "$@" 2>>"$LOG"; }
q -c "CREATE EXTENSION hwm" -c "CREATE ROLE bench LOGIN"

# seconds from now (the server's clock) until timestamp $1, at least 0
until_ts() { q -c "SELECT greatest(0, extract(epoch FROM '$1'::timestamptz - clock_timestamp()))::numeric(10, 1)"; }

# runs STAGE-PIPELINE FROM TO: the runs of that pipeline that started in
# [FROM, TO), as "all not_succeeded"
runs() {
    q -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE status <> 'succeeded') FROM hwm.runs
                  WHERE pipeline = '$1' AND kind = 'load' AND status <> 'running'
                    AND started_at >= '$2' AND started_at < '$3'"
}

declare -A R # R[mode.key] = figure
run_mode() {
    local mode=$1 s=m_$1 seed t0 t_stop t_end drained= left i
    hwm_log "mode $mode: setting up"
    q -v mode="$mode" -f "$BENCH/sql/chain.sql" >>"$LOG"
    seed=$(q -c "SELECT max(id) FROM $s.raw")
    R[$mode.load_before]=$(cut -d' ' -f1-3 /proc/loadavg)
    if [[ $mode == commit ]]; then
        q -c "SELECT hwm.schedule_on_commit('commit_1', '$COMMIT_SPACING')" \
            -c "SELECT hwm.schedule_after('commit_2', '{commit_1}')" \
            -c "SELECT hwm.schedule_after('commit_3', '{commit_2}')" >/dev/null
    elif [[ $mode == after ]]; then
        q -c "SELECT hwm.schedule('after_1', '1 second')" \
            -c "SELECT hwm.schedule_after('after_2', '{after_1}')" \
            -c "SELECT hwm.schedule_after('after_3', '{after_2}')" >/dev/null
    elif [[ $mode == clock ]]; then
        q -c "SELECT hwm.schedule('clock_1', '1 second')" \
            -c "SELECT hwm.schedule('clock_2', '1 second')" \
            -c "SELECT hwm.schedule('clock_3', '1 second')" >/dev/null
    elif [[ $mode == clock_phase ]]; then
        # (anchors in the next whole second, plus each stage's phase)
        q -c "SELECT hwm.schedule('clock_phase_1', '1 second', date_trunc('second', now()) + interval '1 second' + interval '${PHASES[0]} ms')" \
            -c "SELECT hwm.schedule('clock_phase_2', '1 second', date_trunc('second', now()) + interval '1 second' + interval '${PHASES[1]} ms')" \
            -c "SELECT hwm.schedule('clock_phase_3', '1 second', date_trunc('second', now()) + interval '1 second' + interval '${PHASES[2]} ms')" >/dev/null
    else
        q -c "SELECT hwm.schedule('clock_rev_3', '1 second')" \
            -c "SELECT hwm.schedule('clock_rev_2', '1 second')" \
            -c "SELECT hwm.schedule('clock_rev_1', '1 second')" >/dev/null
    fi
    t0=$(q -c "SELECT clock_timestamp()")
    t_end=$(q -c "SELECT '$t0'::timestamptz + interval '$TOTAL_S seconds'")
    hwm_log "mode $mode: $WRITERS writers for $WRITE_S s from $t0"
    echo "INSERT INTO $s.raw (payload) VALUES (md5(random()::text));" >"$WORK/chain-insert.sql"
    "$PGBIN/pgbench" -n -h "$PGHOST" -p "$PGPORT" -U postgres -c "$WRITERS" -j 1 -R "$RATE" -T "$WRITE_S" \
        -f "$WORK/chain-insert.sql" postgres >>"$LOG" 2>&1
    t_stop=$(q -c "SELECT clock_timestamp()")
    hwm_log "mode $mode: writers stopped at $t_stop, $(q -c "SELECT count(*) - 1 FROM $s.raw") rows; idle until $t_end"

    # drained: t3 holds every row and stage 3's watermark reached the last
    # row's (so every stage's has: a watermark never passes its upstream's)
    drain_query="SELECT min(r.finished_at) FROM hwm.runs AS r
                  WHERE r.pipeline = '${mode}_3' AND r.status = 'succeeded' AND r.started_at >= '$t_stop'
                    AND r.watermark_after::timestamptz >= (SELECT max(updated_at) FROM $s.raw)
                    AND (SELECT count(*) FROM $s.t3) = (SELECT count(*) FROM $s.raw)"
    # until the window ends (or, when the chain has not drained by then,
    # at most 2 minutes more, for the count of lost rows)
    while :; do
        [[ -z $drained ]] && drained=$(q -c "$drain_query")
        left=$(until_ts "$t_end")
        if [[ $left == 0.0 ]]; then
            [[ -n $drained ]] && break
            left=$(until_ts "$(q -c "SELECT '$t_end'::timestamptz + interval '2 minutes'")")
            [[ $left == 0.0 ]] && break
        fi
        sleep 1
    done
    q -c "SELECT hwm.unschedule(p) FROM unnest(ARRAY['${mode}_1', '${mode}_2', '${mode}_3']) AS p" >/dev/null
    for i in $(seq 1 60); do # the runs in progress end
        [[ $(q -c "SELECT count(*) FROM hwm.runs WHERE pipeline IN ('${mode}_1', '${mode}_2', '${mode}_3') AND status = 'running'") == 0 ]] && break
        sleep 1
    done
    R[$mode.load_after]=$(cut -d' ' -f1-3 /proc/loadavg)
    hwm_log "mode $mode: drained at ${drained:-never}"

    R[$mode.t0]=$t0 R[$mode.t_stop]=$t_stop R[$mode.t_end]=$t_end R[$mode.drained]=$drained
    local lat
    lat=$(q -F ' ' <<SQL
WITH l AS (
  SELECT extract(epoch FROM pg_xact_commit_timestamp(c.xmin) - pg_xact_commit_timestamp(r.xmin)) AS e2e,
         extract(epoch FROM pg_xact_commit_timestamp(a.xmin) - pg_xact_commit_timestamp(r.xmin)) AS h1,
         extract(epoch FROM pg_xact_commit_timestamp(b.xmin) - pg_xact_commit_timestamp(a.xmin)) AS h2,
         extract(epoch FROM pg_xact_commit_timestamp(c.xmin) - pg_xact_commit_timestamp(b.xmin)) AS h3
    FROM $s.raw AS r JOIN $s.t1 AS a USING (id) JOIN $s.t2 AS b USING (id) JOIN $s.t3 AS c USING (id)
   WHERE r.id > $seed)
SELECT count(e2e),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY e2e)::numeric, 3),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY e2e)::numeric, 3),
       round(max(e2e)::numeric, 3),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h1)::numeric, 3),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h2)::numeric, 3),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h3)::numeric, 3)
  FROM l
SQL
)
    read -r R[$mode.measured] R[$mode.p50] R[$mode.p99] R[$mode.max] R[$mode.h1] R[$mode.h2] R[$mode.h3] <<<"$lat"
    # (the log: the five slowest rows, for a look at what they waited for)
    q <<SQL >>"$LOG"
SELECT r.id, pg_xact_commit_timestamp(r.xmin) AS raw_commit,
       round(extract(epoch FROM pg_xact_commit_timestamp(a.xmin) - pg_xact_commit_timestamp(r.xmin))::numeric, 3) AS h1,
       round(extract(epoch FROM pg_xact_commit_timestamp(b.xmin) - pg_xact_commit_timestamp(a.xmin))::numeric, 3) AS h2,
       round(extract(epoch FROM pg_xact_commit_timestamp(c.xmin) - pg_xact_commit_timestamp(b.xmin))::numeric, 3) AS h3
  FROM $s.raw AS r JOIN $s.t1 AS a USING (id) JOIN $s.t2 AS b USING (id) JOIN $s.t3 AS c USING (id)
 WHERE r.id > $seed
 ORDER BY pg_xact_commit_timestamp(c.xmin) - pg_xact_commit_timestamp(r.xmin) DESC LIMIT 5
SQL
    R[$mode.written]=$(q -c "SELECT count(*) FROM $s.raw WHERE id > $seed")
    R[$mode.lost]=$(q -c "SELECT count(*) FROM $s.raw AS r WHERE NOT EXISTS
                            (SELECT FROM $s.t3 AS c WHERE c.id = r.id AND c.updated_at = r.updated_at AND c.payload = r.payload)")
    R[$mode.updates]=$(q -c "SELECT coalesce(sum(n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables
                              WHERE schemaname = '$s' AND relname IN ('t1', 't2', 't3')")

    local st from to a b key
    for st in 1 2 3; do
        for key in all writing drain idle; do
            case $key in
            all) from=$t0 to=$t_end ;;
            writing) from=$t0 to=$t_stop ;;
            drain) from=$t_stop to=${drained:-$t_end} ;;
            idle) from=${drained:-$t_end} to=$t_end ;;
            esac
            if [[ $key == idle && -z $drained ]]; then
                a=- b=-
            else
                read -r a b < <(runs "${mode}_$st" "$from" "$to")
            fi
            R[$mode.$key.$st]=$a R[$mode.$key.bad.$st]=$b
        done
    done
    if [[ -n $drained ]]; then
        R[$mode.drain_s]=$(q -c "SELECT round(extract(epoch FROM '$drained'::timestamptz - '$t_stop'::timestamptz)::numeric, 1)")
        R[$mode.idle_s]=$(q -c "SELECT round(extract(epoch FROM '$t_end'::timestamptz - '$drained'::timestamptz)::numeric, 1)")
    else
        R[$mode.drain_s]="not drained" R[$mode.idle_s]=0
    fi
    hwm_log "mode $mode: ${R[$mode.written]} rows written, ${R[$mode.measured]} measured: latency median ${R[$mode.p50]} s, p99 ${R[$mode.p99]} s, max ${R[$mode.max]} s (hops ${R[$mode.h1]} / ${R[$mode.h2]} / ${R[$mode.h3]} s); runs ${R[$mode.all.1]} / ${R[$mode.all.2]} / ${R[$mode.all.3]}; idle ${R[$mode.idle_s]} s: runs ${R[$mode.idle.1]} / ${R[$mode.idle.2]} / ${R[$mode.idle.3]}; lost ${R[$mode.lost]}, updates ${R[$mode.updates]}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$BENCH_COMMIT" "$mode" \
        "$MINUTES" "$IDLE_MINUTES" "$RATE" "${R[$mode.written]}" "${R[$mode.p50]}" "${R[$mode.p99]}" "${R[$mode.max]}" \
        "${R[$mode.all.1]}" "${R[$mode.all.2]}" "${R[$mode.all.3]}" \
        "${R[$mode.idle.1]}" "${R[$mode.idle.2]}" "${R[$mode.idle.3]}" "${R[$mode.lost]}" >>"$TSV"
    # the next mode's chain has the scheduler to itself
    q -c "SELECT hwm.drop_pipeline(p) FROM unnest(ARRAY['${mode}_3', '${mode}_2', '${mode}_1']) AS p" >/dev/null
}

for mode in "${MODES[@]}"; do
    run_mode "$mode"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the report -------------------------------------------------------------
sum3() { awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN {print a + b + c}'; }
ROWS=()
for mode in "${MODES[@]}"; do
    bad=$(sum3 "${R[$mode.all.bad.1]}" "${R[$mode.all.bad.2]}" "${R[$mode.all.bad.3]}")
    ROWS+=("| \`$mode\` | ${R[$mode.written]} (${R[$mode.measured]} measured) | **${R[$mode.p50]} s** | **${R[$mode.p99]} s** | ${R[$mode.max]} s | ${R[$mode.h1]} / ${R[$mode.h2]} / ${R[$mode.h3]} s | ${R[$mode.all.1]} / ${R[$mode.all.2]} / ${R[$mode.all.3]} = **$(sum3 "${R[$mode.all.1]}" "${R[$mode.all.2]}" "${R[$mode.all.3]}")** | ${R[$mode.writing.1]} / ${R[$mode.writing.2]} / ${R[$mode.writing.3]} | ${R[$mode.drain_s]} s: ${R[$mode.drain.1]} / ${R[$mode.drain.2]} / ${R[$mode.drain.3]} | ${R[$mode.idle_s]} s: **${R[$mode.idle.1]} / ${R[$mode.idle.2]} / ${R[$mode.idle.3]}** | $bad | ${R[$mode.lost]} | ${R[$mode.updates]} |")
done

# The goal is the chain's (commit when it ran, else after) against clock:
# lower latency at the median and the 99th percentile, fewer runs, no run
# while idle (of any stage for commit; of stages 2 and 3 for after, whose
# stage 1 has a clock), nothing lost.
VERDICT=""
CM=
[[ -n ${R[after.p50]:-} ]] && CM=after
[[ -n ${R[commit.p50]:-} ]] && CM=commit
if [[ -n $CM && -n ${R[clock.p50]:-} ]]; then
    verdict() {
        awk -v cm="$CM" -v a50="${R[$CM.p50]}" -v c50="${R[clock.p50]}" -v a99="${R[$CM.p99]}" -v c99="${R[clock.p99]}" \
            -v aruns="$(sum3 "${R[$CM.all.1]}" "${R[$CM.all.2]}" "${R[$CM.all.3]}")" \
            -v cruns="$(sum3 "${R[clock.all.1]}" "${R[clock.all.2]}" "${R[clock.all.3]}")" \
            -v i1="${R[$CM.idle.1]}" -v i2="${R[$CM.idle.2]}" -v i3="${R[$CM.idle.3]}" \
            -v lost="$(sum3 "${R[$CM.lost]}" "${R[clock.lost]}" 0)" 'BEGIN {
            lat = (a50 < c50 && a99 < c99); runs = (aruns < cruns)
            idle = (i2 == "0" && i3 == "0" && (cm != "commit" || i1 == "0"))
            printf "%s: latency `%s` / `clock` %.2f (median) and %.2f (p99): %s; runs %d / %d = %.2f: %s; runs while idle (%s): %s: %s; rows lost: %d.",
                (lat && runs && idle && lost == 0) ? "**Goal met**" : "**Goal not met**",
                cm, a50 / c50, a99 / c99, lat ? "lower" : "NOT lower",
                aruns, cruns, aruns / cruns, runs ? "fewer" : "NOT fewer",
                cm == "commit" ? "stages 1 / 2 / 3" : "stages 2 / 3",
                cm == "commit" ? i1 " / " i2 " / " i3 : i2 " / " i3, idle ? "none" : "NOT zero", lost
        }'
    }
    VERDICT=$(verdict)
fi
if [[ -n $CM && -n ${R[clock_rev.p50]:-} ]]; then
    VERDICT+=$(awk -v cm="$CM" -v a50="${R[$CM.p50]}" -v c50="${R[clock_rev.p50]}" -v a99="${R[$CM.p99]}" -v c99="${R[clock_rev.p99]}" 'BEGIN {
        printf " `%s` against `clock_rev`: latency %.2f (median) and %.2f (p99).", cm, a50 / c50, a99 / c99 }')
fi
if [[ -n $CM && -n ${R[clock_phase.p50]:-} ]]; then
    VERDICT+=$(awk -v cm="$CM" -v a50="${R[$CM.p50]}" -v c50="${R[clock_phase.p50]}" -v a99="${R[$CM.p99]}" -v c99="${R[clock_phase.p99]}" 'BEGIN {
        printf " `%s` against `clock_phase`: latency %.2f (median) and %.2f (p99).", cm, a50 / c50, a99 / c99 }')
fi
if [[ $CM == commit && -n ${R[after.p50]:-} ]]; then
    VERDICT+=$(awk -v a50="${R[after.p50]}" -v c50="${R[clock.p50]}" -v a99="${R[after.p99]}" -v c99="${R[clock.p99]}" 'BEGIN {
        printf " `after` against `clock`: latency %.2f (median) and %.2f (p99).", a50 / c50, a99 / c99 }')
fi
REV=""
[[ " ${MODES[*]} " == *" clock_phase "* ]] &&
    REV+=" \`clock_phase\`: each stage on \`hwm.schedule(..., '1 second')\` anchored at its own point of the second, ${PHASES[0]}, ${PHASES[1]} and ${PHASES[2]} ms (PHASE_SEED=${PHASE_SEED:-1}), as one-second schedules made at different moments are."
[[ " ${MODES[*]} " == *" clock_rev "* ]] &&
    REV+=" \`clock_rev\`: the same as \`clock\`, scheduled in the reverse order, stage 3 first (the due runs of one owner are queued by \`next_run_at\`, then name, so in \`clock\` the three stages mostly run back to back in one worker, in the chain's order, as its hop medians show; here each hop waits for the next slot)."

cmd="bash bench/chain.sh"
[[ $MINUTES != 10 ]] && cmd="HWM_BENCH_MINUTES=$MINUTES $cmd"
[[ $IDLE_MINUTES != 3 ]] && cmd="HWM_BENCH_IDLE_MINUTES=$IDLE_MINUTES $cmd"
[[ $RATE != 30 ]] && cmd="RATE=$RATE $cmd"
[[ $WRITERS != 3 ]] && cmd="WRITERS=$WRITERS $cmd"
[[ ${MODES[*]} != "commit clock" ]] && cmd="MODES=\"${MODES[*]}\" $cmd"
[[ $COMMIT_SPACING != "750 milliseconds" && " ${MODES[*]} " == *" commit "* ]] && cmd="COMMIT_SPACING='$COMMIT_SPACING' $cmd"
[[ -n ${HWM_BENCH_SRC:-} ]] && cmd="HWM_BENCH_SRC=<checkout of $BENCH_COMMIT> $cmd"
[[ -n ${HWM_BENCH_PGBIN:-} ]] && cmd="HWM_BENCH_PGBIN=<copy of $(sed -E 's/^PostgreSQL ([0-9]+).*/\1/' <<<"$("$PG_CONFIG" --version)") bin> $cmd"

LOADS=""
for mode in "${MODES[@]}"; do
    LOADS+="\`$mode\` ${R[$mode.load_before]} before, ${R[$mode.load_after]} after; "
done
SECTION=$(
    cat <<EOF
<!-- chain:start -->
## A chain scheduled after its upstreams (issue 41)

\`bench/chain.sh\`: a three-stage chain of copy pipelines, raw -> t1 -> t2 -> t3 (\`bench/sql/chain.sql\`: key \`id\`, watermark \`updated_at\`, the \`now()\` of the writer's transaction, copied through), under steady writers: pgbench, $WRITERS clients, one row per transaction, $RATE rows/s in all. Modes \`${MODES[*]}\`, one after the other on one throwaway cluster, each on its own tables and pipelines, each for $MINUTES min: writers for $WRITE_S s, then $IDLE_S s with nothing written. \`commit\`: stage 1 on \`hwm.schedule_on_commit(..., '$COMMIT_SPACING')\` (run after the writers' commits, at most once per $COMMIT_SPACING between run starts), stages 2 and 3 on \`hwm.schedule_after\` the stage before: no clock anywhere. \`after\`: stage 1 on \`hwm.schedule(..., '1 second')\`, stages 2 and 3 on \`hwm.schedule_after\` the stage before. \`clock\`: each stage on \`hwm.schedule(..., '1 second')\`, with the default \`start_at\` (now(): the three anchors a few ms apart, as a user scheduling them one after the other gets).$REV Latency of a row: the commit time of the run that wrote it into t3 minus that of the writer's transaction (\`track_commit_timestamp = on\`, \`pg_xact_commit_timestamp(xmin)\`), over every row written; per hop, the median of the same difference between consecutive tables. Runs: each stage's runs in \`hwm.runs\` that started in the mode's window, as stage 1 / 2 / 3; *drain* runs from the writers' end to the run of stage 3 whose watermark reached the last row's (every row then in t3, every stage's watermark at the last row's), *idle* runs from there to the end of the window. Scheduler settings: the defaults (\`hwm.max_workers = 2\`, \`hwm.queue_budget = 1s\`); \`hwm.max_runs_per_pipeline = 0\` keeps every run for the counts. "Lost": rows of raw not in t3 at the end; "updates": row updates in t1..t3 (\`pg_stat_user_tables\`; 0 means no row was rewritten after it arrived, so its commit time is its arrival).

Command: \`$cmd\`, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $BENCH_COMMIT, PostgreSQL $VERSION, $(nproc) cores. The machine was shared with another engineer's builds and tests throughout; load average before the run $LOAD_BEFORE, per mode: ${LOADS%; }; after $LOAD_AFTER.

| mode | rows written | latency median | p99 | max | median per hop (raw->t1 / t1->t2 / t2->t3) | runs in the window (1 / 2 / 3 = all) | while writing | drain: time, runs | idle: time, runs | runs not succeeded | lost | updates |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")

$VERDICT
<!-- chain:end -->
EOF
)
echo "$SECTION"
if awk -v m="$MINUTES" 'BEGIN {exit !(m < 10)}'; then
    OUT=$WORK/chain-smoke.md
    printf '%s\n' "$SECTION" >"$OUT"
    hwm_log "a smoke run (less than 10 minutes a mode): wrote $OUT, bench/RESULTS.md left alone"
else
    python3 - "$BENCH/RESULTS.md" "$SECTION" <<'PY'
import re, sys
path, section = sys.argv[1:3]
text = open(path).read()
pat = re.compile(r"<!-- chain:start -->.*?<!-- chain:end -->", re.S)
text = pat.sub(lambda m: section, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
    hwm_log "wrote the chain section of bench/RESULTS.md"
fi
