#!/usr/bin/env bash
# scripts/demo.sh: a newcomer's first command.
#
# Installs what is missing, builds and installs hwm, starts a throwaway
# PostgreSQL cluster with hwm preloaded, walks through demo/walkthrough.sql
# (each query is echoed before its result) and stops and deletes the cluster
# on exit.  Exits non-zero if any step or any SQL statement fails.
#
# The PostgreSQL major version is the first argument or HWM_PG (default 15):
# `bash scripts/demo.sh 17`.  A version not installed in /usr/lib/postgresql
# is built once from source (see scripts/pg.sh).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hwm_use_pg "${1:-${HWM_PG:-15}}"
hwm_install_deps
hwm_build_install
hwm_start_cluster

hwm_log "running demo/walkthrough.sql"
# The script is fed on stdin so the postgres user needs no read access to
# the checkout; -e echoes every query before its output.
hwm_psql -e -f - <"$REPO/demo/walkthrough.sql"
hwm_log "demo finished"
