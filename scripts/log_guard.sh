#!/usr/bin/env bash
# scripts/log_guard.sh LOG...: the server logs' crashes, whether or not the
# test that was running noticed them.  scripts/test.sh runs it on the logs of
# every temporary instance of the suite.
#
# A crash is a line of a server log that shows
#   - a process terminated by a signal ("... (PID n) was terminated by signal
#     N: ..."), except a signal 9 (SIGKILL) of a pid the test declared:
#     a test that kills a server process on purpose first writes "9 <pid>"
#     into <its log>.signals (HwmTest::kill9 does); no other signal (11
#     SIGSEGV, 6 SIGABRT, 7 SIGBUS, 4 SIGILL, 8 SIGFPE, ...) is ever allowed;
#   - a failed assertion (TRAP:, on builds with --enable-cassert);
#   - a PANIC.
# Prints each crash as "LOG: line" and exits 1 when there is one; 0 when
# none (logs that do not exist are skipped).
#
# scripts/log_guard.sh --self-test: checks the guard itself on made-up logs
# (scripts/test.sh runs it first): a declared kill -9 passes; an undeclared
# one, a declared pid's other signal, a segmentation fault, TRAP: and PANIC:
# do not.
set -euo pipefail

if [[ ${1:-} == --self-test ]]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    line() { echo "2026-01-01 00:00:00 UTC [1] LOG:  $1"; }
    line 'server process (PID 42) was terminated by signal 9: Killed' >"$dir/declared.log"
    echo "9 42" >"$dir/declared.log.signals"
    line 'server process (PID 43) was terminated by signal 9: Killed' >"$dir/undeclared.log"
    echo "9 42" >"$dir/undeclared.log.signals"
    line 'background worker "hwm dispatcher" (PID 42) was terminated by signal 11: Segmentation fault' >"$dir/segv.log"
    echo "9 42" >"$dir/segv.log.signals"
    line 'server process (PID 42) was terminated by signal 6: Aborted' >"$dir/abort.log"
    echo 'TRAP: failed Assert("x"), File: "y.c", Line: 1, PID: 44' >"$dir/trap.log"
    echo '2026-01-01 00:00:00 UTC [1] PANIC:  could not write' >"$dir/panic.log"
    line 'background worker "hwm launcher" (PID 45) exited with exit code 1' >"$dir/clean.log"
    bash "$0" "$dir/declared.log" "$dir/clean.log" >/dev/null || { echo "log guard: a declared kill -9 failed" >&2; exit 1; }
    for bad in undeclared segv abort trap panic; do
        if bash "$0" "$dir/$bad.log" >/dev/null; then
            echo "log guard: $bad.log passed" >&2
            exit 1
        fi
    done
    exit 0
fi

status=0
for log in "$@"; do
    [[ -f $log ]] || continue
    allowed=" "
    if [[ -f $log.signals ]]; then
        allowed+=$(awk '$1 == 9 && $2 ~ /^[0-9]+$/ { printf "%s ", $2 }' "$log.signals")
    fi
    # (a log may hold bytes that are not text: grep -a)
    while IFS= read -r line; do
        if [[ $line =~ \(PID\ ([0-9]+)\)\ was\ terminated\ by\ signal\ ([0-9]+) ]]; then
            pid=${BASH_REMATCH[1]} sig=${BASH_REMATCH[2]}
            if [[ $sig == 9 && $allowed == *" $pid "* ]]; then
                continue
            fi
        fi
        echo "$log: $line"
        status=1
    done < <(grep -aE 'terminated by signal|TRAP:|PANIC:' "$log" || true)
done
exit "$status"
