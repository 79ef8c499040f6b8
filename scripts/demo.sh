#!/usr/bin/env bash
# scripts/demo.sh: a newcomer's first command.
#
# Installs what is missing, builds and installs hwm, starts a throwaway
# PostgreSQL 15 cluster with hwm preloaded, walks through demo/walkthrough.sql
# (each query is echoed before its result) and stops and deletes the cluster
# on exit.  Exits non-zero if any step or any SQL statement fails.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hwm_install_deps
hwm_build_install
hwm_start_cluster

hwm_log "running demo/walkthrough.sql"
# The script is fed on stdin so the postgres user needs no read access to
# the checkout; -e echoes every query before its output.
hwm_psql -e -f - <"$REPO/demo/walkthrough.sql"
hwm_log "demo finished"
