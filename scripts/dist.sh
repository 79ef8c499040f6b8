#!/usr/bin/env bash
# scripts/dist.sh: the release archive, in PGXN's layout.
#
#   bash scripts/dist.sh [OUTDIR]     # writes OUTDIR/hwm-VERSION.zip (default: .)
#
# The archive holds the files git tracks at HEAD (`git archive`: commit
# first; what .gitattributes marks export-ignore stays out, such as .ci/),
# under one folder hwm-VERSION/, VERSION being META.json's.  Before it
# writes anything it checks that the release is described the same way
# everywhere: META.json's version and its provides.hwm.version are
# hwm.control's default_version with a patch number (1.2 -> 1.2.0), and
# provides.hwm.file is that version's install script, which exists.  It
# prints the archive's path.  scripts/test.sh builds the archive, unpacks
# it on its own, builds and installs hwm from it and runs the regression
# suite there, as someone installing from PGXN would (`make && make
# install`, `make install-test-module` for the tests' own module, then
# `make installcheck`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-.}

default=$(sed -nE "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'([^']+)'.*/\1/p" hwm.control)
read -r version provided file < <(python3 - <<'PY'
import json
m = json.load(open('META.json'))
p = m['provides']['hwm']
print(m['version'], p['version'], p['file'])
PY
)
fail() { echo "scripts/dist.sh: $*" >&2; exit 1; }
[[ -n $default ]] || fail "no default_version in hwm.control"
[[ $version == "$default".* ]] ||
    fail "META.json's version $version is not hwm.control's default_version $default (expected $default.0 or $default.N)"
[[ $provided == "$version" ]] || fail "META.json's provides.hwm.version $provided differs from its version $version"
[[ $file == "hwm--$default.sql" ]] || fail "META.json's provides.hwm.file $file is not hwm--$default.sql"
git ls-files --error-unmatch "$file" >/dev/null 2>&1 || fail "$file is not tracked by git"

mkdir -p "$out"
archive=$(cd "$out" && pwd)/hwm-$version.zip
git archive --format=zip --prefix="hwm-$version/" -o "$archive" HEAD
echo "$archive"
