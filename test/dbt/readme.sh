# shellcheck shell=bash
# test/dbt/readme.sh: dbt/hwm/README.md's "Getting started", followed
# literally (issue 29, case 9).  Sourced by test/dbt/run.sh (its cluster,
# venv and TAP helpers).  Each fenced block after a `<!-- dbt-readme: ... -->`
# mark is taken as written: `sql` runs as the superuser (psql, so \connect
# works), `file PATH` is written under $work/readme (next to a copy of the
# package in hwm/dbt/hwm, as the README lays them out), `sh` runs line by
# line in my_project/ with the venv's dbt.  Only the profile's host and port
# are changed to the test cluster's.

readme=$REPO/dbt/hwm/README.md
rdir=$work/readme
mkdir -p "$rdir/hwm/dbt"
cp -r "$REPO/dbt/hwm" "$rdir/hwm/dbt/"
# readme_blocks: "KIND ARG<TAB>base64 of the block" per marked block
readme_blocks() {
    python3 - "$readme" <<'PY'
import base64, re, sys
lines = open(sys.argv[1]).read().split('\n')
i = 0
while i < len(lines):
    m = re.match(r'<!-- dbt-readme: (\w+)(?: (\S+))? -->$', lines[i])
    i += 1
    if not m:
        continue
    while not lines[i].startswith('```'):
        i += 1
    j = i + 1
    while not lines[j].startswith('```'):
        j += 1
    body = '\n'.join(lines[i + 1:j]) + '\n'
    print(m.group(1), (m.group(2) or '-') + '\t' + base64.b64encode(body.encode()).decode())
    i = j + 1
PY
}
nblocks=0
while IFS=$'\t' read -r head body; do
    kind=${head%% *} arg=${head#* }
    text=$(echo "$body" | base64 -d)
    nblocks=$((nblocks + 1))
    case $kind in
    sql)
        if out=$(echo "$text" | hwm_psql -q -o /dev/null 2>&1); then
            ok "README: the SQL block $nblocks runs as a superuser"
        else
            not_ok "README: the SQL block $nblocks runs as a superuser"; echo "$out" | sed 's/^/# /'
        fi ;;
    file)
        mkdir -p "$(dirname "$rdir/$arg")"
        if [[ $arg == */profiles.yml ]]; then
            text=$(echo "$text" | sed -e "s/^\( *host:\).*/\1 127.0.0.1/" -e "s/^\( *port:\).*/\1 $PGPORT/")
        fi
        echo "$text" >"$rdir/$arg" ;;
    sh)
        while read -r cmd; do
            [[ -z $cmd ]] && continue
            log=$work/readme-$nblocks-$RANDOM.log
            if (cd "$rdir/my_project" && PATH=$venv/bin:$PATH bash -c "$cmd") >"$log" 2>&1; then
                ok "README: $cmd"
            else
                not_ok "README: $cmd"; tail -n 20 "$log" | sed 's/^/# /'
            fi
        done <<<"$text" ;;
    esac
done < <(readme_blocks)
check "README: every marked block was found" "t" "$( ((nblocks >= 7)) && echo t || echo f)"
rq() { hwm_psql -qAt -c '\connect analytics' -c "$1"; }
check "README: the model holds raw.orders's rows, loaded by pipeline analytics.orders, owned by dbt_user" "0|dbt_user" \
    "$(rq "SELECT (SELECT count(*) FROM (TABLE raw.orders EXCEPT TABLE analytics.orders) a) + (SELECT count(*) FROM (TABLE analytics.orders EXCEPT TABLE raw.orders) b)")|$(rq "SELECT owner FROM hwm.state WHERE pipeline = 'analytics.orders'")"
check "README: the run-operations ran (hwm_run by model name, then hwm_retire found nothing to retire)" "2" \
    "$(grep -c 'hwm: rows_upserted=0\|hwm_retire: no retired hwm pipeline' "$work"/readme-*.log | awk -F: '{s += $2} END {print s}')"
check "README: the hook example's model read orders after its pre-hook ran hwm_run(model='orders') in its transaction" \
    "$(rq "SELECT count(*) || '|' || sum(amount) FROM raw.orders")|t" \
    "$(rq "SELECT sum(orders) || '|' || sum(amount) FROM analytics.orders_daily")|$(rq "SELECT xmin::text = (SELECT xmin::text FROM pg_class WHERE oid = 'analytics.orders_daily'::regclass)
            FROM hwm.runs WHERE pipeline = 'analytics.orders' ORDER BY run_id DESC LIMIT 1")"
