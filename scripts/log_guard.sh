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
set -euo pipefail

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
