# pg_dump + pg_restore of a database with hwm pipelines.
#
# hwm.state names its tables as regclass, its owner as regrole and the
# watermark type as regtype: in a dump they are names, which the restore
# resolves to the OIDs of the restored database (pg_dump loads the data of
# extension configuration tables after every table and view exists).  This
# test proves that every pipeline, watermark, schedule, lookback and the run
# history survive a custom-format dump restored into a new database of the
# same cluster and into a second cluster, and that the restored pipelines
# go on where they stopped: new rows load once, nothing is loaded twice.
# Command and interval pipelines (no target, a command that names its
# tables) come along the same way.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('dump_src', shared_preload_libraries => '');

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION hwm;
CREATE ROLE etl LOGIN;
CREATE ROLE loader LOGIN;
CREATE SCHEMA raw;
CREATE SCHEMA mart;
GRANT USAGE ON SCHEMA raw, mart TO etl, loader;

-- a time-typed watermark, a partition column with lookback, a schedule,
-- a delay, and names that need quoting
CREATE TABLE raw."Events Log" (
    id         bigint PRIMARY KEY,
    day        date NOT NULL,
    updated_at timestamptz NOT NULL,
    payload    text);
CREATE TABLE mart.events (
    id         bigint PRIMARY KEY,
    day        date NOT NULL,
    updated_at timestamptz NOT NULL,
    payload    text);
INSERT INTO raw."Events Log"
SELECT i, date '2024-01-01' + i / 10, timestamptz '2024-01-01 00:00+00' + i * interval '1 minute', 'e' || i
  FROM generate_series(1, 50) i;
GRANT SELECT ON raw."Events Log" TO loader;
GRANT SELECT, INSERT, UPDATE, DELETE ON mart.events TO loader;
SET ROLE loader;
SELECT hwm.create_pipeline('events', 'raw."Events Log"', 'mart.events', '{id}', 'updated_at',
                           partition_column => 'day', lookback => 2,
                           schedule => '15 minutes', delay => '1 second');
RESET ROLE;

-- an integer watermark over a view, owned by an ordinary role
CREATE TABLE raw.orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, amount numeric NOT NULL);
CREATE VIEW raw.orders_v AS SELECT id, amount FROM raw.orders;
CREATE TABLE mart.orders (id bigint PRIMARY KEY, amount numeric NOT NULL);
GRANT SELECT ON raw.orders_v TO etl;
GRANT SELECT, INSERT, UPDATE ON mart.orders TO etl;
INSERT INTO raw.orders (amount) SELECT i FROM generate_series(1, 30) i;
SET ROLE etl;
SELECT hwm.create_pipeline('orders', 'raw.orders_v', 'mart.orders', '{id}', 'id');
RESET ROLE;

-- a pipeline that never ran: watermark NULL, given an initial one later
CREATE TABLE raw.idle (id int PRIMARY KEY, v int);
CREATE TABLE mart.idle (id int PRIMARY KEY, v int);
GRANT SELECT ON raw.idle TO loader;
GRANT SELECT, INSERT, UPDATE ON mart.idle TO loader;
SET ROLE loader;
SELECT hwm.create_pipeline('idle', 'raw.idle', 'mart.idle', '{id}', 'id');
RESET ROLE;

-- a command pipeline (a running total of the orders) and an interval
-- pipeline (hourly counts of the events): no target, a command
CREATE TABLE mart.order_total (k int PRIMARY KEY, total numeric NOT NULL);
CREATE TABLE mart.hourly (hour timestamptz PRIMARY KEY, n bigint NOT NULL);
GRANT SELECT, INSERT, UPDATE ON mart.order_total TO etl;
GRANT SELECT, INSERT ON mart.hourly TO loader;
SET ROLE etl;
SELECT hwm.create_command_pipeline('totals', 'raw.orders_v', 'id', $$
  INSERT INTO mart.order_total AS o SELECT 1, pg_catalog.sum(v.amount) FROM raw.orders_v AS v
   WHERE ($1 IS NULL OR v.id > $1) AND v.id <= $2
  ON CONFLICT (k) DO UPDATE SET total = o.total + EXCLUDED.total$$);
RESET ROLE;
SET ROLE loader;
SELECT hwm.create_interval_pipeline('hourly', 'raw."Events Log"', 'updated_at', '1 hour', $$
  INSERT INTO mart.hourly SELECT $1, pg_catalog.count(*) FROM raw."Events Log" AS e
   WHERE e.updated_at >= $1 AND e.updated_at < $2$$);
RESET ROLE;
});

$node->safe_psql('src', q{SELECT * FROM hwm.run('events')});
$node->safe_psql('src', q{SET ROLE etl; SELECT * FROM hwm.run('orders')});
$node->safe_psql('src', q{SELECT hwm.set_watermark('idle', '7')});
# a finished backfill: a row in hwm.backfills and runs of kind backfill
$node->safe_psql('src', q{CALL hwm.backfill('events', '2024-01-01', '2024-01-02')});
# a second run of events: history with more than one row per pipeline
$node->safe_psql('src', q{
INSERT INTO raw."Events Log" VALUES (51, '2024-01-06', '2024-01-01 00:51+00', 'e51');
SELECT * FROM hwm.run('events');
});
$node->safe_psql('src', q{SET ROLE etl; SELECT * FROM hwm.run('totals')});
$node->safe_psql('src', q{SELECT * FROM hwm.run('hourly')});

# What must survive: every row of every table that the extension marks for
# pg_dump (hwm.state, hwm.runs, hwm.backfills, and any added later), with
# the relations, types and roles of regclass, regtype and regrole columns
# printed as names.
my $config_sql = q{
SELECT string_agg(format('SELECT %L AS t, x::text FROM %s AS x', c::regclass::text, c::regclass::text), ' UNION ALL ')
       || ' ORDER BY 1, 2'
  FROM pg_extension e, unnest(e.extconfig) AS c
 WHERE e.extname = 'hwm' AND (SELECT relkind FROM pg_class WHERE oid = c) = 'r'};
my $state_sql = q{SELECT * FROM hwm.state ORDER BY pipeline};
my $targets_sql = q{
SELECT 'events', count(*), sum(hashtext(e::text)) FROM mart.events e
UNION ALL SELECT 'orders', count(*), sum(hashtext(o::text)) FROM mart.orders o
UNION ALL SELECT 'order_total', count(*), sum(total) FROM mart.order_total
UNION ALL SELECT 'hourly', count(*), sum(n) FROM mart.hourly};

my $state_before   = $node->safe_psql('src', $state_sql);
my $config_before  = $node->safe_psql('src', $node->safe_psql('src', $config_sql));
my $targets_before = $node->safe_psql('src', $targets_sql);
my $max_run_before = $node->safe_psql('src', 'SELECT max(run_id) FROM hwm.runs');
like($state_before, qr/^events\|raw\."Events Log"\|mart\.events\|\{id\}\|updated_at\|timestamp with time zone\|day\|2\|00:00:01\|\|00:15:00\|/m,
	'before the dump: events pipeline with quoted source, lookback, delay and schedule');
like($state_before, qr/^idle\|.*\|7\|loader\|/m, 'before the dump: idle pipeline has its hand-set watermark');
like($state_before, qr/^orders\|raw\.orders_v\|mart\.orders\|.*\|30\|etl\|/m, 'before the dump: orders pipeline owned by etl at watermark 30');

my $dump = "$PostgreSQL::Test::Utils::tmp_check/hwm.dump";
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'src' ], 'pg_dump -Fc of a database with pipelines');

# --- 1. restore into a new database of the same cluster ---------------------
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'dst', $dump ], 'pg_restore into a new database');

check_restored($node, 'dst', 'same cluster');

# In the same cluster the restored tables get new OIDs: had the catalog kept
# OIDs, it would now point at the old database's numbers.
isnt($node->safe_psql('src', q{SELECT 'raw."Events Log"'::regclass::oid}),
	$node->safe_psql('dst', q{SELECT 'raw."Events Log"'::regclass::oid}),
	'the restored source table has another OID than the original');

# --- 2. restore into a second cluster, roles first --------------------------
my $node2 = new_node('dump_dst', shared_preload_libraries => '');
my $globals = "$PostgreSQL::Test::Utils::tmp_check/globals.sql";
$node->command_ok([ 'pg_dumpall', '--globals-only', '-f', $globals ], 'pg_dumpall --globals-only');
# the bootstrap superuser exists already: ignore that one error
$node2->psql('postgres', undef, extra_params => [ '-f', $globals ]);
$node2->safe_psql('postgres', 'CREATE DATABASE dst');
$node2->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'dst', $dump ], 'pg_restore into a second cluster');

check_restored($node2, 'dst', 'second cluster');

# --- 3. a role that is missing is an error, not a silent loss --------------
# owner is a regrole: restoring where the role does not exist fails loudly
# on hwm.state (restore the globals first, as above).
my $node3 = new_node('dump_noroles', shared_preload_libraries => '');
$node3->safe_psql('postgres', 'CREATE DATABASE dst');
my ($stdout, $stderr) = ('', '');
my $ok = PostgreSQL::Test::Utils::run_log(
	[ 'pg_restore', '-d', $node3->connstr('dst'), '--no-owner', '--no-privileges', $dump ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok, 'pg_restore without the pipeline owner role fails');
like($stderr, qr/TABLE DATA state|COPY failed for table "state"/, '... on the data of hwm.state');
like($stderr, qr/role "etl" does not exist/, '... saying which role is missing');
$node3->stop;

# --- 4. a backup role that is not a superuser ------------------------------
# hwm.state and hwm.runs have row security (owners see their own pipelines).
# pg_dump refuses to dump a table whose rows row security would hide, so a
# backup role needs BYPASSRLS besides the right to read everything.
$node->safe_psql('postgres', q{
	CREATE ROLE backup_plain LOGIN IN ROLE pg_read_all_data;
	CREATE ROLE backup_bypass LOGIN BYPASSRLS IN ROLE pg_read_all_data;
});
($stdout, $stderr) = ('', '');
$ok = PostgreSQL::Test::Utils::run_log(
	[ 'pg_dump', '-Fc', '-f', "$dump.plain", '-d', $node->connstr('src') . ' user=backup_plain' ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok, 'pg_dump as a role that can read everything but not bypass row security fails');
like($stderr, qr/row-level security/, '... saying that row security is in the way');
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$dump.bypass", '-d', $node->connstr('src') . ' user=backup_bypass' ],
	'pg_dump as a role with BYPASSRLS and pg_read_all_data succeeds');
$node->safe_psql('postgres', 'CREATE DATABASE dst_bypass');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'dst_bypass', "$dump.bypass" ], '... and restores');
is($node->safe_psql('dst_bypass', $node->safe_psql('dst_bypass', $config_sql)),
	$node->safe_psql('src', $node->safe_psql('src', $config_sql)),
	'... with every pipeline and the whole history');

$node->stop;
$node2->stop;
done_testing();

# Everything about the restored database $db on $n: same catalog and
# history, OIDs resolved to the restored objects, and the pipelines resume.
sub check_restored
{
	my ($n, $db, $where) = @_;

	is($n->safe_psql($db, $state_sql), $state_before, "$where: every pipeline, watermark, schedule, lookback and last-run fact restored");
	is($n->safe_psql($db, $n->safe_psql($db, $config_sql)), $config_before,
		"$where: every row of every configuration table restored (run history and backfills too)");
	is($n->safe_psql($db, $targets_sql), $targets_before, "$where: the targets restored");
	is($n->safe_psql($db, q{
		SELECT count(*) FROM hwm.state s
		 WHERE s.source::oid = CASE s.pipeline WHEN 'events' THEN 'raw."Events Log"'::regclass
		                                       WHEN 'orders' THEN 'raw.orders_v'::regclass
		                                       ELSE 'raw.idle'::regclass END::oid
		   AND s.target::oid = CASE s.pipeline WHEN 'events' THEN 'mart.events'::regclass
		                                       WHEN 'orders' THEN 'mart.orders'::regclass
		                                       ELSE 'mart.idle'::regclass END::oid
		   AND s.owner::oid = (SELECT oid FROM pg_roles WHERE rolname = CASE s.pipeline WHEN 'orders' THEN 'etl' ELSE 'loader' END)}),
		'3', "$where: source, target and owner resolve to the restored tables and roles");
	is($n->safe_psql($db, q{
		SELECT count(*) FROM hwm.state s
		 WHERE s.target IS NULL AND s.command IS NOT NULL
		   AND s.source::oid = CASE s.pipeline WHEN 'totals' THEN 'raw.orders_v'::regclass
		                                       ELSE 'raw."Events Log"'::regclass END::oid
		   AND s.owner::oid = (SELECT oid FROM pg_roles WHERE rolname = CASE s.pipeline WHEN 'totals' THEN 'etl' ELSE 'loader' END)}),
		'2', "$where: the command and interval pipelines' sources and owners resolve, with no target");
	is($n->safe_psql($db, q{SELECT pipeline, watermark, lookback, schedule, kind FROM hwm.status ORDER BY 1}),
		"events|2024-01-01 00:51:00+00|2|00:15:00|copy\nhourly|2024-01-01 01:00:00+00|0||interval\n"
		. "idle|7|0||copy\norders|30|0||copy\ntotals|30|0||command",
		"$where: hwm.status reads the restored catalog");
	is($n->safe_psql($db, q{SELECT pg_get_serial_sequence('hwm.runs', 'run_id')::regclass}),
		'hwm.runs_run_id_seq', "$where: the run_id sequence is still the column's");

	# The catalog is still protected: the grants of the extension came along.
	my ($rc, $out, $err) = $n->psql($db, q{SET ROLE etl; UPDATE hwm.state SET watermark = NULL});
	like($err, qr/permission denied for table state/, "$where: an ordinary role still cannot write hwm.state");

	# Resume: the runs pick up where the original stopped.
	$n->safe_psql($db, q{
		INSERT INTO raw."Events Log" VALUES (52, '2024-01-06', '2024-01-01 00:52+00', 'e52'),
		                                   (53, '2024-01-06', '2024-01-01 00:53+00', 'e53');
		INSERT INTO raw.orders (amount) VALUES (31), (32), (33);
		INSERT INTO raw.idle VALUES (5, 5), (8, 8), (9, 9);
	});
	is($n->safe_psql($db, q{SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('events')}),
		'2|2024-01-01 00:51:00+00|2024-01-01 00:53:00+00',
		"$where: restored time pipeline loads only the two new rows");
	is($n->safe_psql($db, q{SET ROLE etl; SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('orders')}),
		'3|30|33', "$where: restored pipeline runs as its restored owner and loads only the three new rows");
	is($n->safe_psql($db, q{SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('idle')}),
		'2|7|9', "$where: restored hand-set watermark holds: rows at or below 7 are not loaded");
	is($n->safe_psql($db, q{
		SELECT (SELECT count(*) FROM mart.events) || ' ' || (SELECT count(DISTINCT id) FROM mart.events)
		       || ' ' || (SELECT count(*) FROM raw."Events Log")
		       || ' / ' || (SELECT count(*) FROM mart.orders) || ' ' || (SELECT count(*) FROM raw.orders)}),
		'53 53 53 / 33 33', "$where: targets equal their sources, nothing doubled");
	is($n->safe_psql($db, q{SELECT rows_upserted || '|' || rows_deleted || '|' || rows_inserted FROM hwm.run('events')}),
		'0|0|0', "$where: a second run changes nothing, lookback included");
	# the command pipeline adds the three new orders once, as its owner; the
	# interval pipeline goes on with the next hour
	is($n->safe_psql($db, q{SET ROLE etl; SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('totals')}),
		'1|30|33', "$where: restored command pipeline runs its command over the new range as its owner");
	is($n->safe_psql($db, q{SELECT total FROM mart.order_total}), '561',
		"$where: the running total equals the sum of every order, none counted twice");
	is($n->safe_psql($db, q{SELECT rows_upserted, watermark_before, watermark_after FROM hwm.run('hourly')}),
		'1|2024-01-01 01:00:00+00|2024-01-01 02:00:00+00',
		"$where: restored interval pipeline runs the next hour");
	# The history goes on from the restored sequence: a sequence that had
	# started over would collide with the restored run_ids.
	is($n->safe_psql($db, "SELECT count(*) FROM hwm.runs WHERE run_id > $max_run_before"),
		'6', "$where: the six new runs got run_ids after the restored ones");
	# The same for hwm.backfills and its own sequence.
	$n->safe_psql($db, q{CALL hwm.backfill('events', '2024-01-06', '2024-01-06')});
	is($n->safe_psql($db, q{SELECT count(*), count(DISTINCT backfill_id), string_agg(status, ',' ORDER BY backfill_id) FROM hwm.backfills}),
		'2|2|succeeded,succeeded', "$where: a new backfill gets a fresh backfill_id after the restored one");
	return;
}
