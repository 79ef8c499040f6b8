#!/usr/bin/env bash
# scripts/test.sh: the one command that runs the whole test suite from a
# fresh machine (CI runs it through .ci/run with CI=true).
#
#   bash scripts/test.sh            # on PostgreSQL 15, 17 and 18
#   bash scripts/test.sh 17         # on 17 only (HWM_PG_VERSIONS="17 18" too)
#   bash scripts/test.sh --quick    # the edit-test loop: regression,
#                                   # isolation and a TAP smoke test on the
#                                   # first version (15), in about 2 minutes
#
# For each PostgreSQL major version (arguments, else HWM_PG_VERSIONS, else
# "15 17 18"), one after another ("setting up"):
#  1. provides it (scripts/pg.sh: the system's install, or a build from the
#     source archive cached outside the repository, made once per machine);
#  2. copies the repository into a temp dir of its own (objects built for
#     one version never reach another), builds hwm there (warnings are
#     errors under CI=true or HWM_WERROR=1) and installs it into that
#     version, with the tests' own module (test/modules/hwm_test, which
#     hwm's make install leaves out) and Citus, pg_cron and pg_incremental
#     where they apply.
# Each version's suites start as soon as it is set up, in lanes that run
# side by side (HWM_TEST_LANES=1: one lane, everything in turn): the
# versions but the last, one after another; the last version; and dbt (step
# 3, on the last version).  So on a new machine the first version (the
# system's 15) is tested while the later ones build.  A version's suites
# are `make installcheck` there as postgres, once per suite, so that a
# failing suite does not hide the next one: pg_regress (sql/),
# pg_isolation_regress (test/specs/) and prove (test/t/*.pl,
# HWM_PROVE_JOBS scripts at a time, 4 by default, the longest first).  Each
# starts its own temporary instances, so no server needs to be running.
#  3. test/dbt/run.sh, the dbt package in a real dbt project (it drives
#     hwm's SQL functions, which the suites above already run on each
#     version; what it adds is dbt's side, the same on every server), in
#     three parts side by side (HWM_DBT_PART=models1, models2 and hooks);
#  4. pgspot on hwm--*.sql, which does not depend on the server version
#     (run while the lanes run): any finding fails the run (set
#     HWM_PGSPOT_STRICT=0 to only report them);
#  5. after the lanes, the release archive (scripts/dist.sh) unpacked on
#     its own, built, installed into the first version (hwm, then the
#     tests' module) and its regression suite run there, as a user
#     installing from it would.
#
# Every section header and every line of a suite's output names its version
# ("==> [pg17] regression tests", "[pg17] ok 1 - install"); the lanes'
# lines interleave.  Every step runs even when an earlier one failed, except
# that a version's tests are skipped when its build or install failed (they
# would test a stale hwm).  The last line is always `tests: N passed, N
# failed`, over all versions; a failed step that is not a single test
# (build, a suite that broke down, strict pgspot) counts as one failure.
# Exit status is non-zero when anything failed.  HWM_KEEP_TMP=1 keeps the
# temp dir (pgN/repo/results/, tmp_check*/log) for a look.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/citus.sh
source "$(dirname "${BASH_SOURCE[0]}")/citus.sh"
# shellcheck source=scripts/peers.sh
source "$(dirname "${BASH_SOURCE[0]}")/peers.sh"

quick=0
if [[ ${1:-} == --quick ]]; then
    quick=1
    shift
fi
if (($# > 0)); then
    versions=("$@")
else
    read -r -a versions <<<"${HWM_PG_VERSIONS:-15 17 18}"
fi
# --quick: the first version only, no dbt, no pgspot, no Citus
((quick == 0)) || versions=("${versions[0]}")

tmp=$(mktemp -d /tmp/hwm-test.XXXXXX)
if [[ ${HWM_KEEP_TMP:-} == 1 ]]; then
    hwm_log "keeping $tmp"
else
    hwm_on_exit "rm -rf '$tmp'"
fi
# postgres runs the suites in $tmp/pgN and must get there
chown postgres: "$tmp"
# The TAP scripts of both lanes take their ports from one list of
# reservations (PostgreSQL::Test::Cluster), not one per copy of the
# repository.
export PG_TEST_PORT_DIR=$tmp/portlock
mkdir -p "$PG_TEST_PORT_DIR"
chown postgres: "$PG_TEST_PORT_DIR"

# Results: the lanes run in subshells, so every count goes to one file,
# a line each ("pass N", "fail N STEP" or "step STEP" for a step that
# failed after failing tests, which were counted already), appended in one
# write; the report adds them up.
results=$tmp/results
: >"$results"
record() { printf '%s\n' "$*" >>"$results"; }

# try CMD...: run CMD in a subshell with `set -e` in force (bash ignores it
# under `if`, `||` and `&&`) and leave its exit status in $rc.
try() {
    set +e
    (set -e; "$@")
    rc=$?
    set -e
}

# A step that is not one test failed: it counts as one failure.
# Step names that belong to a version carry its tag: "[pg17] regress".
step_failed() {
    HWM_LOG_TAG='' hwm_log "FAILED: $1 (exit $rc)"
    record "fail 1 $1"
}

# --- 1. dependencies -------------------------------------------------------
try hwm_install_deps
((rc == 0)) || step_failed "install dependencies"

# run_suite TAG WORK NAME MAKE_VARS...: `make installcheck` in WORK with the
# other suites switched off (an empty make variable on the command line turns
# it off).  Output goes to the terminal, each line prefixed with [TAG], and
# unprefixed to $tmp/TAG/NAME.log for counting.
run_suite() {
    local tag=$1 work=$2 name=$3
    shift 3
    hwm_as_postgres make -C "$work" --no-print-directory installcheck \
        PG_CONFIG="$PG_CONFIG" "$@" 2>&1 | tee "$tmp/$tag/$name.log" | sed -u "s/^/[$tag] /"
}

# count_suite LOG KIND STEP STATUS: count the test lines of LOG.  KIND says
# which lines are results:
#   regress: pg_regress / pg_isolation_regress.  Up to 15, alone or in a
#     parallel group:
#       test foo                          ... ok           12 ms
#            bar                          ... FAILED       40 ms
#     16 on, TAP style ('-' a test alone, '+' in a parallel group):
#       ok 1         - foo                                        12 ms
#       not ok 2     + bar                                        40 ms
#   tap: TAP lines at the start of the line, as test/dbt/run.sh prints them
#     and as every TAP script writes them into its own log (LOG is then
#     those logs, regress_log_*, one after another; prove runs the scripts
#     side by side and prints only their summaries).  A subtest's own lines
#     are indented and not counted; its summary line is:
#       ok 3 - name   /   not ok 4 - name
# Each line matches one pattern of one kind only, so nothing is counted
# twice.  A suite that failed without any failing test line (crash, setup
# error, a TAP script that died) counts as one failure.
count_suite() {
    local log=$1 kind=$2 step=$3 status=$4 ok bad
    case $kind in
    regress)
        ok=$(grep -cE '^(test )? *[^ ]+ +\.\.\. +(ok|failed \(ignored\))( |$)|^ok [0-9]+ +[-+] ' "$log" || true)
        bad=$(grep -cE '^(test )? *[^ ]+ +\.\.\. +FAILED|^not ok [0-9]+ +[-+] ' "$log" || true)
        ;;
    tap)
        ok=$(grep -cE '^ok [0-9]+|^not ok [0-9]+.*# *TODO' "$log" || true)
        bad=$(grep -E '^not ok [0-9]+' "$log" | grep -cvE '# *TODO' || true)
        ;;
    esac
    record "pass $ok"
    ((bad == 0)) || record "fail $bad $step"
    HWM_LOG_TAG='' hwm_log "$step: $ok passed, $bad failed"
    if ((status != 0)); then
        if ((bad > 0)); then record "step $step"; else step_failed "$step"; fi
    fi
}

# strip_stamps LOG...: the TAP scripts' logs without the time stamp that
# PostgreSQL::Test::Utils puts before each line ("[12:00:01.234](0.5s) ")
strip_stamps() {
    (($# > 0)) && [[ -f $1 ]] || return 0
    sed -E 's/^\[[0-9:.]+\]\([0-9.]+s\) //' "$@"
}

# count_tap TAG WORK STATUS: the TAP suite of WORK.  prove printed one line
# per script to $tmp/TAG/tap.log; each script's results are in its own log,
# tmp_check/log/regress_log_NAME.  A script that died before its plan
# (prove: "No plan found") is one more failure.
count_tap() {
    local tag=$1 work=$2 status=$3 all=$tmp/$1/tap-results.log died
    strip_stamps "$work"/tmp_check/log/regress_log_* >"$all"
    count_suite "$all" tap "[$tag] tap" "$status"
    died=$(grep -cE '^ *Parse errors: No plan found' "$tmp/$tag/tap.log" || true)
    ((died == 0)) || record "fail $died [$tag] tap: a script died before its plan"
}

provide() { hwm_pg_provide "$1" >"$2"; }

# tap_failures TAG LOG LOGDIR: for the report at the end (CI keeps only the
# output's tail), for each script that prove's summary (LOG) names as
# failed, its failing lines with the diagnostics after each, from its own
# log (LOGDIR/regress_log_NAME), then that log's last lines.
tap_failures() {
    local tag=$1 log=$2 dir=$3 script f
    [[ -f $log ]] || return 0
    # (grep finds nothing for a version whose scripts all passed: not an
    # error, which under pipefail would end the report here)
    { grep -oE '^[^ ]*t/[^ ]+\.pl +\(Wstat' "$log" || true; } | sed 's/ *(Wstat$//' | sort -u |
        while read -r script; do
            script=${script##*/}
            f=$dir/regress_log_${script%.pl}
            echo "===== [$tag] $script failed"
            [[ -f $f ]] || continue
            strip_stamps "$f" | awk '/^not ok [0-9]+/ && !/# *TODO/ { print; diag = 12; next }
                 diag > 0 && /^ *(#|$)/ { print "    " $0; diag--; next }
                 { diag = 0 }'
            echo "----- [$tag] last lines of ${f##*/} -----"
            tail -n 60 "$f"
        done
}
# dbt_failures PART: the same for the TAP lines of test/dbt/run.sh's PART
dbt_failures() {
    local log=$tmp/dbt-$1.log
    [[ -f $log ]] || return 0
    awk -v part="$1" '/^not ok [0-9]+/ && !/# *TODO/ { print "===== dbt " part ": " $0; diag = 12; next }
         diag > 0 && /^ *(#|$)/ { print "    " $0; diag--; next }
         { diag = 0 }' "$log"
}

# guard_logs STEP LOG...: the log guard (scripts/log_guard.sh) over the
# server logs a step wrote: each log that shows a process terminated by a
# signal the test did not declare, a failed assertion (TRAP:) or a PANIC
# counts as one failure, named after the log, whether or not the step's
# tests noticed.  Run right after each step: the next one may delete them
# (the TAP suite starts with rm -rf tmp_check).
guard_logs() {
    local step=$1 log out
    shift
    for log in "$@"; do
        [[ -f $log ]] || continue
        if ! out=$(bash "$REPO/scripts/log_guard.sh" "$log"); then
            printf '%s\n' "$out" | head -n 20 | sed "s/^/[$tag] /"
            HWM_LOG_TAG='' hwm_log "FAILED: $step: a crash in ${log#"$tmp"/}"
            record "fail 1 $step: crash in ${log##*/}"
        fi
    done
}

# the log guard itself, on made-up logs, before it is trusted
try bash "$REPO/scripts/log_guard.sh" --self-test
((rc == 0)) || step_failed "log guard self-test"

# The TAP scripts, the longest first, so that the last to finish is not a
# long one started late; the rest in name order.  (Measured one at a time
# on PostgreSQL 17; a script missing here still runs, among the rest.)
tap_order() {
    local slow=(090_chaos 071_keys_differential 04b_scheduler_share 040_scheduler
        049b_owners_history 049_hostile_owners 063_command_soak 001_soak
        003_soak_long_xact 067_reconcile_soak 072_chain_soak 068_reconcile_scheduled
        064_pg_incremental 075_history_soak 066_tombstone_soak 069_first_load_crash
        076_history_crash 048_scheduler_fair
        070_citus 04d_claims) name f list=()
    for name in "${slow[@]}"; do
        [[ -f $REPO/test/t/$name.pl ]] && list+=("test/t/$name.pl")
    done
    for f in "$REPO"/test/t/*.pl; do
        name=${f##*/}
        [[ " ${list[*]} " == *" test/t/$name "* ]] || list+=("test/t/$name")
    done
    echo "${list[*]}"
}
# --quick: a TAP smoke test, a few short scripts that start servers with hwm
# preloaded and run its scheduler and a crash
tap_quick="test/t/002_no_preload.pl test/t/020_backfill_kill.pl test/t/041_scheduler_crash.pl test/t/046_scheduler_command.pl"

# --- 2. each version: set up, then its suites in a lane ----------------------
# setup_version V: provide PostgreSQL V, build and install hwm (and the
# peers) for it in $tmp/pgV/repo.  Leaves $tmp/pgV/ready (its bin dir) or
# $tmp/pgV/skip.
upgrade_from=
setup_version() {
    local v=$1 tag=pg$1 work PGBIN started=$SECONDS
    HWM_LOG_TAG=$tag
    mkdir -p "$tmp/$tag"
    hwm_log "setting up PostgreSQL $v"
    try provide "$v" "$tmp/$tag/bindir"
    if ((rc != 0)); then
        step_failed "[$tag] provide PostgreSQL $v"
        touch "$tmp/$tag/skip"
        return 0
    fi
    PGBIN=$(<"$tmp/$tag/bindir") PG_CONFIG=$PGBIN/pg_config

    # A copy of the repository, owned by postgres: pg_regress writes
    # results/, tmp_check/ and regression.diffs next to the tests and runs as
    # postgres, which may not write into the checkout.  No build output of
    # the checkout comes along.
    work=$tmp/$tag/repo
    mkdir "$work"
    tar -C "$REPO" -cf - --exclude=./.git --exclude=./results --exclude='./tmp_check*' \
        --exclude=./output_iso --exclude=./regression.diffs --exclude=./regression.out \
        --exclude=./log --exclude=./.hwm-build-pg --exclude='*.o' --exclude='*.so' --exclude='*.bc' . |
        tar -C "$work" -xf -
    try hwm_build_install "$work"
    # the tests' own module (test/modules/hwm_test), next to hwm
    if ((rc == 0)); then try hwm_test_module_install "$work"; fi
    if ((rc != 0)); then
        step_failed "[$tag] build and install"
        hwm_log "tests skipped: the build failed"
        touch "$tmp/$tag/skip"
        return 0
    fi
    if ((quick == 0)); then
        # Citus for test/t/070_citus.pl (which skips without it) on every
        # version: the release scripts/citus.sh picks for it (13.2.2 on 15
        # and 17, 14.0.1 on 18), built once per machine from
        # ../shared/vendor, copied into this PostgreSQL.
        hwm_log "Citus"
        try hwm_citus_install "$PG_CONFIG"
        ((rc == 0)) || step_failed "[$tag] build and install Citus"
        # pg_cron and pg_incremental for test/t/064_pg_incremental.pl (which
        # skips without them): where Debian has pg_cron for this PostgreSQL
        hwm_log "pg_cron and pg_incremental"
        try hwm_peers_install "$PG_CONFIG" "$v"
        ((rc == 0)) || step_failed "[$tag] install pg_cron and pg_incremental"
    fi
    chown -R postgres: "$tmp/$tag"
    # test/t/065_major_upgrade.pl moves clusters of the versions set up
    # before this one (hwm is installed there) to this one
    echo "$upgrade_from" >"$tmp/$tag/upgrade_from"
    upgrade_from+="${upgrade_from:+ }$v:${PGBIN%/bin}"
    echo "$PGBIN" >"$tmp/$tag/ready"
    hwm_log "PostgreSQL $v: set up in $((SECONDS - started)) s (at $SECONDS s)"
    HWM_LOG_TAG=
}

# test_version V: V's suites, once it is set up (waits for it).
test_version() {
    local v=$1 tag=pg$1 work=$tmp/pg$1/repo started=$SECONDS PGBIN
    until [[ -f $tmp/$tag/ready || -f $tmp/$tag/skip ]]; do sleep 1; done
    [[ -f $tmp/$tag/ready ]] || return 0
    PGBIN=$(<"$tmp/$tag/ready") PG_CONFIG=$PGBIN/pg_config
    export HWM_PG=$v HWM_PGBIN=$PGBIN HWM_LOG_TAG=$tag
    HWM_UPGRADE_FROM=$(<"$tmp/$tag/upgrade_from")
    export HWM_UPGRADE_FROM

    # pg_regress: sql/*.sql against expected/*.out.
    hwm_log "regression tests"
    try run_suite "$tag" "$work" regress ISOLATION= TAP_TESTS=
    count_suite "$tmp/$tag/regress.log" regress "[$tag] regress" "$rc"
    # (pg_regress's temporary instance logs into OUTPUTDIR/log/postmaster.log)
    guard_logs "[$tag] regress" "$work"/log/*.log "$work"/tmp_check/log/*.log

    # pg_isolation_regress: test/specs/*.spec against test/expected/*.out.
    hwm_log "isolation tests"
    try run_suite "$tag" "$work" isolation REGRESS= TAP_TESTS=
    count_suite "$tmp/$tag/isolation.log" regress "[$tag] isolation" "$rc"
    guard_logs "[$tag] isolation" "$work"/output_iso/log/*.log "$work"/tmp_check_iso/log/*.log

    # TAP tests: prove runs HWM_PROVE_JOBS scripts at a time and prints a
    # line per script; the results are counted from the scripts' own logs.
    local tests jobs=${HWM_PROVE_JOBS:-4}
    if ((quick)); then tests=$tap_quick; else tests=$(tap_order); fi
    hwm_log "TAP tests ($jobs at a time)"
    try run_suite "$tag" "$work" tap REGRESS= ISOLATION= PROVE_TESTS="$tests" PROVE_FLAGS="--timer -j$jobs"
    count_tap "$tag" "$work" "$rc"
    # the server logs of every node (NNN_test_node.log), not the tests' own
    # output (regress_log_NNN_test, which may quote a crash it found)
    guard_logs "[$tag] tap" "$work"/tmp_check/log/[0-9]*.log

    hwm_log "PostgreSQL $v: tested in $((SECONDS - started)) s (at $SECONDS s)"
}

# --- 3. dbt, once ------------------------------------------------------------
# The package in dbt/hwm driven by the example project in test/dbt (dbt in
# a virtualenv cached like the builds, its own cluster, ok / not ok lines),
# on the last version set up.
test_dbt() {
    local v bin started
    v=${versions[-1]}
    until [[ -f $tmp/pg$v/ready || -f $tmp/pg$v/skip ]]; do sleep 1; done
    for v in $(printf '%s\n' "${versions[@]}" | tac); do
        [[ -f $tmp/pg$v/ready ]] && break
    done
    if [[ ! -f $tmp/pg$v/ready ]]; then
        hwm_log "dbt tests skipped: no version was built"
        return 0
    fi
    bin=$(<"$tmp/pg$v/ready")
    started=$SECONDS
    # its parts side by side (in turn with HWM_TEST_LANES=1), each with a
    # cluster and a copy of the projects of its own: the models
    # (test/dbt/models.sh) in two halves of about the same time, and the
    # rest (hooks, the package README)
    HWM_LOG_TAG=pg$v hwm_log "dbt tests"
    local part pid pids=()
    for part in "${dbt_parts[@]}"; do
        if [[ ${HWM_TEST_LANES:-3} == 1 ]]; then
            dbt_part "$v" "$bin" "$part"
        else
            dbt_part "$v" "$bin" "$part" &
            pids+=($!)
        fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    HWM_LOG_TAG=pg$v hwm_log "dbt: tested in $((SECONDS - started)) s (at $SECONDS s)"
}
# test/dbt/run.sh's parts (HWM_DBT_PART), the longest first
dbt_parts=(models1 models2 hooks)
# dbt_part V BIN PART: test/dbt/run.sh with HWM_DBT_PART=PART, counted
dbt_part() {
    local v=$1 bin=$2 part=$3
    try env HWM_PG="$v" HWM_PGBIN="$bin" HWM_LOG_TAG="pg$v" HWM_DBT_PART="$part" \
        HWM_KEEP_SERVER_LOG="$tmp/dbt-$part-server.log" bash -c \
        'set -o pipefail; bash "$1/test/dbt/run.sh" 2>&1 | tee "$2/dbt-$3.log" | sed -u "s/^/[$HWM_LOG_TAG dbt-$3] /"' _ "$REPO" "$tmp" "$part"
    count_suite "$tmp/dbt-$part.log" tap "[pg$v] dbt $part" "$rc"
    tag=pg$v guard_logs "[pg$v] dbt $part" "$tmp/dbt-$part-server.log"
}

# The lanes: the versions but the last, one after another; the last
# version; dbt (on the last version, once it is set up).  Each lane is a
# subshell; `set -e` is off in it (every step is under try).
# The dbt lane runs at a lower priority (nice 10): its three parts are dbt
# processes one after another, each busy on a core (parsing the project)
# for most of its seconds and waiting on no clock, while the versions' TAP
# scripts mostly wait on their servers' schedulers, each wait bounded by a
# timeout: a loaded run where the versions gave way to dbt instead ended 40
# minutes in, with three scheduler waits timed out (the dbt parts 310 s
# before the first version lane); the scheduler's CPU when it needs it is
# what the versions lanes lack, and dbt soaks up the cores they leave idle.
lane_rest() {
    set +e
    local v
    for v in "${versions[@]:0:${#versions[@]}-1}"; do test_version "$v"; done
}
lane_last() {
    set +e
    test_version "${versions[-1]}"
}
lane_dbt() {
    set +e
    renice -n 10 -p "$BASHPID" >/dev/null
    ((quick)) || test_dbt
}
lanes=()
# a run stopped (Ctrl-C, CI's limit) stops its lanes and what they started
stop_lanes() {
    local pid
    for pid in "${lanes[@]}"; do
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
}
hwm_on_exit stop_lanes
# (version_lanes: those of the versions, which the release archive waits for)
version_lanes=()
if [[ ${HWM_TEST_LANES:-3} == 1 ]]; then
    for v in "${versions[@]}"; do setup_version "$v"; done
    (lane_rest; lane_last; lane_dbt) &
    lanes+=($!)
    version_lanes+=($!)
else
    setup_version "${versions[0]}"
    if ((${#versions[@]} > 1)); then
        lane_rest &
        lanes+=($!)
        version_lanes+=($!)
        for v in "${versions[@]:1}"; do setup_version "$v"; done
    fi
    lane_last &
    lanes+=($!)
    version_lanes+=($!)
    lane_dbt &
    lanes+=($!)
fi

# --- 4. pgspot: security lint of the extension scripts, once ---------------
# Installed with pip into a venv in the temp dir.  Findings are always shown
# and, like a failed install, fail the run unless HWM_PGSPOT_STRICT=0 (the
# install script must stay free of unqualified references and of SECURITY
# DEFINER functions without a pinned search_path).  It runs while the lanes
# do; its output is gathered and shown after them.
pgspot_check() {
    local sql=$REPO/hwm--1.0.sql venv=$tmp/venv
    if [[ ! -f $sql ]]; then
        echo "pgspot: no hwm--1.0.sql yet, skipped"
        return 0
    fi
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        hwm_apt_install python3 python3-venv
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check pgspot
    # the install script, then each upgrade script (hwm--A--B.sql) too
    local f status=0
    for f in "$REPO"/hwm--*.sql; do
        echo "pgspot ${f##*/}"
        "$venv/bin/pgspot" "$f" || status=1
    done
    return "$status"
}
if ((quick == 0)); then
    try pgspot_check >"$tmp/pgspot.log" 2>&1
    pgspot_rc=$rc
fi

for pid in "${version_lanes[@]}"; do
    wait "$pid" || true
done

# --- 5. the release archive, as a user installs it ---------------------------
# scripts/dist.sh's archive (the files git tracks at HEAD, PGXN's layout),
# unpacked on its own, built and installed into the first version and its
# regression suite run from there.  After the versions' lanes: the install
# replaces hwm in a PostgreSQL that test/t/065_major_upgrade.pl may be
# starting.  The dbt lane may still be running, on the last version set up:
# when that is the first one too (one version, or only one set up), it
# waits for dbt as well.
release_check() {
    local v tag dir=$tmp/release archive src
    for v in "${versions[@]}"; do [[ -f $tmp/pg$v/ready ]] && break; done
    tag=pg$v
    [[ -f $tmp/$tag/ready ]] || return 0
    PGBIN=$(<"$tmp/$tag/ready") PG_CONFIG=$PGBIN/pg_config HWM_LOG_TAG=$tag
    hwm_log "release archive"
    mkdir -p "$dir"
    try bash "$REPO/scripts/dist.sh" "$dir/out"
    if ((rc != 0)); then step_failed "[$tag] release archive: scripts/dist.sh"; return 0; fi
    archive=$(echo "$dir"/out/hwm-*.zip)
    hwm_log "unpacking ${archive##*/}"
    python3 -m zipfile -e "$archive" "$dir"
    src=$(echo "$dir"/hwm-*/)
    try hwm_build_install "${src%/}"
    if ((rc == 0)); then try hwm_test_module_install "${src%/}"; fi
    if ((rc != 0)); then step_failed "[$tag] release archive: build and install"; return 0; fi
    chown -R postgres: "$dir"
    try run_suite "$tag" "${src%/}" release ISOLATION= TAP_TESTS=
    count_suite "$tmp/$tag/release.log" regress "[$tag] release archive regress" "$rc"
    guard_logs "[$tag] release archive regress" "${src%/}"/log/*.log "${src%/}"/tmp_check/log/*.log
    HWM_LOG_TAG=
}
ready=()
for v in "${versions[@]}"; do [[ -f $tmp/pg$v/ready ]] && ready+=("$v"); done
if ((${#ready[@]} < 2)); then
    for pid in "${lanes[@]}"; do wait "$pid" || true; done
fi
if ((quick == 0)); then
    release_check
fi
for pid in "${lanes[@]}"; do
    wait "$pid" || true
done

if ((quick == 0)); then
    hwm_log "pgspot"
    cat "$tmp/pgspot.log"
    rc=$pgspot_rc
    if ((rc != 0)); then
        if [[ ${HWM_PGSPOT_STRICT:-1} != 0 ]]; then
            step_failed pgspot
        else
            hwm_log "pgspot reported problems (exit $rc); not fatal because HWM_PGSPOT_STRICT=0"
        fi
    fi
fi

# --- report ----------------------------------------------------------------
passed=$(awk '$1 == "pass" { n += $2 } END { print n + 0 }' "$results")
failed=$(awk '$1 == "fail" { n += $2 } END { print n + 0 }' "$results")
mapfile -t failed_steps < <(sed -nE 's/^fail [0-9]+ //p; s/^step //p' "$results" | sort -u)
if ((${#failed_steps[@]} > 0)); then
    for v in "${versions[@]}"; do
        work=$tmp/pg$v/repo
        for diffs in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
            if [[ -s $diffs ]]; then
                echo "===== [pg$v] ${diffs#"$work"/} ====="
                cat "$diffs"
            fi
        done
    done
    for v in "${versions[@]}"; do
        tap_failures "pg$v" "$tmp/pg$v/tap.log" "$tmp/pg$v/repo/tmp_check/log"
    done
    for part in "${dbt_parts[@]}"; do
        dbt_failures "$part"
    done
    echo "failed steps: ${failed_steps[*]}"
fi
echo "tests: $passed passed, $failed failed"
((${#failed_steps[@]} == 0 && failed == 0))
