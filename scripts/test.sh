#!/usr/bin/env bash
# scripts/test.sh: the one command that runs the whole test suite from a
# fresh machine (CI runs it through .ci/run with CI=true).
#
#   bash scripts/test.sh            # on PostgreSQL 15, 17 and 18
#   bash scripts/test.sh 17         # on 17 only (HWM_PG_VERSIONS="17 18" too)
#
# For each PostgreSQL major version (arguments, else HWM_PG_VERSIONS, else
# "15 17 18"):
#  1. provides it (scripts/pg.sh: the system's install, or a build from the
#     source archive cached outside the repository, made once per machine);
#  2. copies the repository into a temp dir of its own (objects built for
#     one version never reach another), builds hwm there (warnings are
#     errors under CI=true or HWM_WERROR=1), installs it into that version,
#     and runs `make installcheck` there as postgres, once per suite, so that
#     a failing suite does not hide the next one: pg_regress (sql/),
#     pg_isolation_regress (test/specs/) and prove (TAP_TESTS).  Each starts
#     its own temporary instance (--temp-instance), so no server needs to be
#     running.
# Then, once, on the last version whose build succeeded:
#  3. test/dbt/run.sh, the dbt package in a real dbt project (it drives
#     hwm's SQL functions, which the suites above already run on each
#     version; what it adds is dbt's side, the same on every server);
#  4. pgspot on hwm--*.sql, which does not depend on the server version: any
#     finding fails the run (set HWM_PGSPOT_STRICT=0 to only report them).
#
# Every section header and every line of a suite's output names its version
# ("==> [pg17] regression tests", "[pg17] ok 1 - install").  Every step runs
# even when an earlier one failed, except that a version's tests are skipped
# when its build or install failed (they would test a stale hwm).  The last
# line is always `tests: N passed, N failed`, over all versions; a failed
# step that is not a single test (build, a suite that broke down, strict
# pgspot) counts as one failure.  Exit status is non-zero when anything
# failed.  HWM_KEEP_TMP=1 keeps the temp dir (pgN/repo/results/,
# tmp_check*/log) for a look.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/citus.sh
source "$(dirname "${BASH_SOURCE[0]}")/citus.sh"
# shellcheck source=scripts/peers.sh
source "$(dirname "${BASH_SOURCE[0]}")/peers.sh"

passed=0 failed=0
failed_steps=()

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
    failed_steps+=("$1")
    failed=$((failed + 1))
}

if (($# > 0)); then
    versions=("$@")
else
    read -r -a versions <<<"${HWM_PG_VERSIONS:-15 17 18}"
fi

tmp=$(mktemp -d /tmp/hwm-test.XXXXXX)
if [[ ${HWM_KEEP_TMP:-} == 1 ]]; then
    hwm_log "keeping $tmp"
else
    hwm_on_exit "rm -rf '$tmp'"
fi
# postgres runs the suites in $tmp/pgN and must get there
chown postgres: "$tmp"

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

# count_suite LOG KIND STEP STATUS: count the test lines of LOG into
# passed/failed.  KIND says which lines are results:
#   regress: pg_regress / pg_isolation_regress.  Up to 15, alone or in a
#     parallel group:
#       test foo                          ... ok           12 ms
#            bar                          ... FAILED       40 ms
#     16 on, TAP style ('-' a test alone, '+' in a parallel group):
#       ok 1         - foo                                        12 ms
#       not ok 2     + bar                                        40 ms
#   tap: TAP, printed by prove --verbose or by test/dbt/run.sh, at the start
#     of the line (a subtest's own lines are indented and not counted; its
#     summary line is):   ok 3 - name   /   not ok 4 - name
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
        # a TAP script that died before its plan: one more failure each
        bad=$((bad + $(grep -cE '^ *Parse errors: No plan found' "$log" || true)))
        ;;
    esac
    passed=$((passed + ok))
    failed=$((failed + bad))
    HWM_LOG_TAG='' hwm_log "$step: $ok passed, $bad failed"
    if ((status != 0)); then
        if ((bad > 0)); then failed_steps+=("$step"); else step_failed "$step"; fi
    fi
}

provide() { hwm_pg_provide "$1" >"$2"; }

# tap_failures TAG LOG LOGDIR: for the report at the end (CI keeps only the
# output's tail), each failing TAP line of LOG with the script it belongs to
# and the diagnostics after it, then the last lines of that script's own log
# (LOGDIR/regress_log_NAME) when there is one.
tap_failures() {
    local tag=$1 log=$2 dir=$3 script
    [[ -f $log ]] || return 0
    awk -v tag="$tag" '
        /^[^ ]*t\/[^ ]+\.pl \.\./ { script = $1; next }
        /^not ok [0-9]+/ && !/# *TODO/ { print "===== [" tag "] " script ": " $0; diag = 12; next }
        /Parse errors: No plan found|Dubious, test returned/ { print "===== [" tag "] " script ": " $0; next }
        diag > 0 && /^ *#/ { print "    " $0; diag--; next }
        { diag = 0 }
    ' "$log"
    [[ -n $dir ]] || return 0
    awk '/^[^ ]*t\/[^ ]+\.pl \.\./ { script = $1 }
         (/^not ok [0-9]+/ && !/# *TODO/) || /Parse errors: No plan found|Dubious, test returned/ { print script }' "$log" |
        sort -u | while read -r script; do
            script=${script##*/}
            local f=$dir/regress_log_${script%.pl}
            if [[ -f $f ]]; then
                echo "----- [$tag] last lines of ${f##*/} -----"
                tail -n 60 "$f"
            fi
        done
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
            failed_steps+=("$step: crash in ${log##*/}")
            failed=$((failed + 1))
        fi
    done
}

# the log guard itself, on made-up logs, before it is trusted
try bash "$REPO/scripts/log_guard.sh" --self-test
((rc == 0)) || step_failed "log guard self-test"

# --- 2. each version: provide it, build and install hwm, run the suites ----
tested=()
last_bin=
upgrade_from=
for v in "${versions[@]}"; do
    tag=pg$v
    HWM_LOG_TAG=$tag
    started=$SECONDS
    mkdir -p "$tmp/$tag"
    hwm_log "PostgreSQL $v"
    try provide "$v" "$tmp/$tag/bindir"
    if ((rc != 0)); then
        step_failed "[$tag] provide PostgreSQL $v"
        HWM_LOG_TAG=
        continue
    fi
    PGBIN=$(<"$tmp/$tag/bindir") PG_CONFIG=$PGBIN/pg_config
    export HWM_PG=$v HWM_PGBIN=$PGBIN

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
    if ((rc != 0)); then
        step_failed "[$tag] build and install"
        hwm_log "tests skipped: the build failed"
        HWM_LOG_TAG=
        continue
    fi
    chown -R postgres: "$tmp/$tag"
    tested+=("$v")
    last_bin=$PGBIN
    # test/t/065_major_upgrade.pl moves clusters of the versions tested
    # before this one (hwm is installed there) to this one
    export HWM_UPGRADE_FROM=${upgrade_from:-}
    upgrade_from+="${upgrade_from:+ }$v:${PGBIN%/bin}"

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

    # Citus for test/t/070_citus.pl (which skips without it) on every
    # version: the release scripts/citus.sh picks for it (13.2.2 on 15 and
    # 17, 14.0.1 on 18), built once per machine from ../shared/vendor,
    # copied into this PostgreSQL.
    hwm_log "Citus"
    try hwm_citus_install "$PG_CONFIG"
    ((rc == 0)) || step_failed "[$tag] build and install Citus"
    # pg_cron and pg_incremental for test/t/064_pg_incremental.pl (which
    # skips without them): where Debian has pg_cron for this PostgreSQL
    hwm_log "pg_cron and pg_incremental"
    try hwm_peers_install "$PG_CONFIG" "$v"
    ((rc == 0)) || step_failed "[$tag] install pg_cron and pg_incremental"

    # TAP tests (TAP_TESTS = 1, PROVE_TESTS = test/t/*.pl in the Makefile);
    # --verbose makes prove print the ok / not ok lines counted.
    hwm_log "TAP tests"
    try run_suite "$tag" "$work" tap REGRESS= ISOLATION= PROVE_FLAGS=--verbose
    count_suite "$tmp/$tag/tap.log" tap "[$tag] tap" "$rc"
    # the server logs of every node (NNN_test_node.log), not the tests' own
    # output (regress_log_NNN_test, which may quote a crash it found)
    guard_logs "[$tag] tap" "$work"/tmp_check/log/[0-9]*.log

    hwm_log "PostgreSQL $v: built and tested in $((SECONDS - started)) s"
    HWM_LOG_TAG=
done

# --- 3. dbt, once ------------------------------------------------------------
# The package in dbt/hwm driven by the example project in test/dbt (installs
# dbt from PyPI into a venv, starts its own cluster, prints ok / not ok
# lines; an unreachable PyPI is a failure), on the last version tested.
if ((${#tested[@]} > 0)); then
    v=${tested[-1]}
    HWM_LOG_TAG=pg$v
    hwm_log "dbt tests"
    try env HWM_PG="$v" HWM_PGBIN="$last_bin" HWM_LOG_TAG="pg$v" HWM_KEEP_SERVER_LOG="$tmp/dbt-server.log" bash -c \
        'set -o pipefail; bash "$1/test/dbt/run.sh" 2>&1 | tee "$2/dbt.log" | sed -u "s/^/[$HWM_LOG_TAG] /"' _ "$REPO" "$tmp"
    count_suite "$tmp/dbt.log" tap "[pg$v] dbt" "$rc"
    tag=pg$v guard_logs "[pg$v] dbt" "$tmp/dbt-server.log"
    HWM_LOG_TAG=
else
    hwm_log "dbt tests skipped: no version was built"
fi

# --- 4. pgspot: security lint of the extension scripts, once ---------------
# Installed with pip into a venv in the temp dir.  Findings are always shown
# and, like a failed install, fail the run unless HWM_PGSPOT_STRICT=0 (the
# install script must stay free of unqualified references and of SECURITY
# DEFINER functions without a pinned search_path).
pgspot_check() {
    local sql=$REPO/hwm--1.0.sql venv=$tmp/venv
    if [[ ! -f $sql ]]; then
        hwm_log "pgspot: no hwm--1.0.sql yet, skipped"
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
        hwm_log "pgspot ${f##*/}"
        "$venv/bin/pgspot" "$f" || status=1
    done
    return "$status"
}
hwm_log "pgspot"
try pgspot_check
if ((rc != 0)); then
    if [[ ${HWM_PGSPOT_STRICT:-1} != 0 ]]; then
        step_failed pgspot
    else
        hwm_log "pgspot reported problems (exit $rc); not fatal because HWM_PGSPOT_STRICT=0"
    fi
fi

# --- report ----------------------------------------------------------------
if ((${#failed_steps[@]} > 0)); then
    for v in "${tested[@]}"; do
        work=$tmp/pg$v/repo
        for diffs in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
            if [[ -s $diffs ]]; then
                echo "===== [pg$v] ${diffs#"$work"/} ====="
                cat "$diffs"
            fi
        done
    done
    for v in "${tested[@]}"; do
        tap_failures "pg$v" "$tmp/pg$v/tap.log" "$tmp/pg$v/repo/tmp_check/log"
    done
    [[ -f $tmp/dbt.log ]] && tap_failures dbt "$tmp/dbt.log" ""
    echo "failed steps: ${failed_steps[*]}"
fi
echo "tests: $passed passed, $failed failed"
((${#failed_steps[@]} == 0 && failed == 0))
