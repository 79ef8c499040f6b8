#!/usr/bin/env bash
# bench/citus.sh [PG_CONFIG [ROWS SLICE REPS]]: hwm.run against the
# hand-written upsert between co-located distributed tables on a
# coordinator and two workers (bench/citus.pl); writes bench/CITUS.md.
#
# hwm must be installed in that PostgreSQL (make install PG_CONFIG=...);
# scripts/citus.sh installs the Citus release for that PostgreSQL (built once
# per machine; 13.2.2 on 15 and 17, 14.0.1 on 18), and the report names the
# versions it ran.  The clusters run as postgres in a temp dir, deleted at
# the end.
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PGC=${1:-/usr/lib/postgresql/15/bin/pg_config}
# shellcheck source=scripts/citus.sh
source "$BENCH/../scripts/citus.sh"
hwm_citus_install "$PGC"

tmp=$(mktemp -d /tmp/hwm-citus-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$BENCH/citus.pl" "$tmp/"
chown -R postgres: "$tmp"
perl_lib=$("$PGC" --pgxs | sed 's|/src/makefiles/pgxs.mk$||')/src/test/perl
cd "$tmp"
runuser -u postgres -- env PATH="$("$PGC" --bindir):$PATH" TESTDIR="$tmp" \
    PG_REGRESS="$perl_lib/../regress/pg_regress" \
    perl -I "$perl_lib" citus.pl "${2:-200000}" "${3:-20000}" "${4:-7}" "$tmp/CITUS.md"
cp "$tmp/CITUS.md" "$BENCH/CITUS.md"
echo "==> wrote bench/CITUS.md" >&2
