# Issue 31: a first load into an empty target is built aside (a table made
# LIKE the target, filled, indexed) and traded in.  A crash in the middle of
# it leaves the target as it was (empty), the watermark where it was (none)
# and no table aside; the next run loads everything, by the same path,
# exactly once.  A writer holding an uncommitted key in the target makes it
# non-empty: the run takes the plain insert, meets the key, and goes on to
# the upsert, which loses and doubles nothing.  A reader holding the target
# longer than hwm.exchange_lock_timeout makes the run give up the trade and
# load by the plain insert.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $rows = 1_000_000;
# streaming (wal_level replica: the harness's default, minimal, refuses the
# aside path), for a standby that replays the trade
my $node = new_node('first_load_crash', 'hwm.allow_superuser_pipelines' => 'on', restart_after_crash => 'on',
	init => { allows_streaming => 1 });
sql($node, 'postgres', qq{
CREATE EXTENSION hwm;
CREATE EXTENSION amcheck;
CREATE TABLE src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text, n int);
INSERT INTO src SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', 'v' || g, g
  FROM generate_series(1, $rows) g;
CREATE TABLE tgt (LIKE src INCLUDING ALL);
SELECT hwm.create_pipeline('first', 'src', 'tgt', '{id}', 'updated_at');
});

# --- 1. kill -9 of the backend while its first load builds the table aside --------
# The run is held in the middle: a reader's ACCESS SHARE lock on the target
# makes the trade wait (hwm.exchange_lock_timeout of 10 minutes) once the
# table aside is built, and the kill comes while it waits.  (A poll for the
# database's growth alone raced the run: on a loaded machine the whole load
# had committed before the poll saw it grow.)
my $db_size = sql($node, 'postgres', q{SELECT pg_database_size(current_database())});
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe('BEGIN; SELECT count(*) FROM tgt');
my $loader = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $loader->query_safe('SELECT pg_backend_pid()');
$loader->query_until(qr/loading/, q{\echo loading
SET hwm.exchange_lock_timeout = '10min';
SELECT * FROM hwm.run('first');
});
ok($node->poll_query_until('postgres',
	qq{SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid}),
	'the first load waits to trade the table aside in');
# the table aside (invisible to others until commit) grew the database's
# files while the target stayed empty
cmp_ok(sql($node, 'postgres', q{SELECT pg_database_size(current_database())}), '>', $db_size + 40 * 1024 * 1024,
	'... the table aside is built');
# (asked in the holder's transaction, which has the target's lock: another
# session's request would queue behind the run's)
is($holder->query_safe(q{SELECT pg_relation_size('tgt')}), '0', '... and the target has not been written');
kill9($node, $pid);
eval { $loader->quit; };    # its session died with the server's restart
eval { $holder->quit; };
ok(wait_back($node), 'the server is back after the crash');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt}), '0', 'after the crash the target is as it was: empty');
is(sql($node, 'postgres', q{SELECT pg_relation_size('tgt')}), '0', '... without a block');
is(sql($node, 'postgres', q{SELECT coalesce(watermark, 'none') FROM hwm.state WHERE pipeline = 'first'}),
	'none', '... and the watermark did not move');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'first' AND status = 'succeeded'}),
	'0', '... and no run is recorded as done');
is(sql($node, 'postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%'}),
	'0', '... and no table aside is left');

# --- 2. the next run loads everything, built aside, once ----------------------------
# (a standby, made now, replays the trade)
my $standby = new_standby($node, 'first_load_standby');
my $node_before = sql($node, 'postgres', q{SELECT pg_relation_filenode('tgt')});
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET client_min_messages = debug1; SELECT rows_upserted FROM hwm.run('first')});
is($ret, 0, 'the next run succeeds');
is($out, $rows, '... and loads every row');
like($err, qr/the slice is loaded by building it aside/, '... built aside');
isnt(sql($node, 'postgres', q{SELECT pg_relation_filenode('tgt')}), $node_before, '... its storage traded in');
same_rows($node, 'postgres', 'src', 'tgt', '... the target equals the source');
is(sql($node, 'postgres', q{SELECT watermark::timestamptz = (SELECT max(updated_at) FROM src) FROM hwm.state WHERE pipeline = 'first'}),
	't', '... and the watermark is the newest row');
is(sql($node, 'postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%'}),
	'0', '... and no table aside is left');
is(sql($node, 'postgres', q{SELECT bool_and(indisvalid) FROM pg_index WHERE indrelid = 'tgt'::regclass}),
	't', '... its indexes valid');
$node->wait_for_catchup($standby);
for my $n ([$node, 'primary'], [$standby, 'standby'])
{
	my ($on, $what) = @$n;
	is($on->safe_psql('postgres', q{SELECT count(*) FROM verify_heapam('tgt', check_toast => true)}),
		'0', "$what: verify_heapam finds the target sound");
	is($on->safe_psql('postgres', q{
SELECT count(*) FROM pg_index i, LATERAL bt_index_check(i.indexrelid, true) WHERE i.indrelid = 'tgt'::regclass}),
		'1', "$what: bt_index_check(heapallindexed) passes on its index");
	is($on->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) || ' ' || min(v) FROM tgt WHERE id = 424242}),
		'1 v424242', "$what: the primary key finds a row");
}
$standby->stop;

# --- 3. a writer holds an uncommitted key of a big slice in an empty target ---------
# The target is emptied and the watermark set to the first load's end, so the
# slice is 200k new rows.  The writer's uncommitted row gives the target a
# block: not empty, so no aside.  The run's plain insert meets the key, waits,
# and on the writer's commit fails with unique_violation: the run goes on to
# the next path, and the writer's row ends with the source's values, once.
my $wm = sql($node, 'postgres', q{SELECT watermark FROM hwm.state WHERE pipeline = 'first'});
sql($node, 'postgres', qq{
INSERT INTO src SELECT g, '2027-01-01'::timestamptz + g * interval '1 second', 'w' || g, g
  FROM generate_series($rows + 1, $rows + 200000) g;
CREATE VIEW slice AS SELECT * FROM src WHERE id > $rows;
TRUNCATE tgt;
SELECT hwm.set_watermark('first', '$wm');
});
my $writer = $node->background_psql('postgres');
$writer->query_safe(qq{BEGIN; INSERT INTO tgt VALUES ($rows + 150000, now(), 'the writer''s', -1)});
$loader = $node->background_psql('postgres', on_error_stop => 0);
$loader->query_until(qr/loading/, q{\echo loading
SET client_min_messages = debug1;
SELECT rows_upserted FROM hwm.run('first');
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%hwm.run%'}),
	'the run waits for the writer\'s uncommitted key');
$writer->query_safe('COMMIT');
$writer->quit;
$loader->quit;
like($loader->{stderr}, qr/the slice's plain insert failed/, '... the plain insert ran (the target was not empty) and met the key');
unlike($loader->{stderr}, qr/built aside|building it aside/, '... and nothing was built aside');
same_rows($node, 'postgres', 'slice', 'tgt', 'the run loaded the slice exactly once, the writer\'s row with the source\'s values');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt}), 200000, '... every key once');

# --- 4. a reader holds the empty target past hwm.exchange_lock_timeout -------------
# The build aside goes on beside the reader's ACCESS SHARE lock; the trade's
# ACCESS EXCLUSIVE lock is not granted within the timeout, so the run gives
# the trade up (the table aside rolled back) and loads by the plain insert.
sql($node, 'postgres', qq{TRUNCATE tgt; SELECT hwm.set_watermark('first', '$wm');});
my $reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM tgt});
($ret, $out, $err) = $node->psql('postgres',
	q{SET client_min_messages = debug1; SET hwm.exchange_lock_timeout = 100; SELECT rows_upserted FROM hwm.run('first')});
$reader->query_safe('COMMIT');
$reader->quit;
is($ret, 0, 'the run beside a reader succeeds');
is($out, 200000, '... and loads every row of the slice');
like($err, qr/the first load is not built aside: its lock was not granted within hwm.exchange_lock_timeout \(100 ms\)/,
	'... giving up the trade when the lock is not granted in time');
like($err, qr/the slice is loaded by plain insert/, '... and loading by the plain insert');
same_rows($node, 'postgres', 'slice', 'tgt', '... the target holds the slice once');
is(sql($node, 'postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%'}),
	'0', '... and no table aside is left');

# --- 5. a writer writes the empty target while the run waits for its lock ----------
# The writer holds ROW EXCLUSIVE (it has not written yet): the run finds the
# target empty, builds the slice aside and waits for its lock; the writer
# inserts a row and commits.  Under the lock the run finds the target no
# longer empty, gives the trade up and loads by the plain insert.
sql($node, 'postgres', qq{TRUNCATE tgt; SELECT hwm.set_watermark('first', '$wm');});
$writer = $node->background_psql('postgres');
$writer->query_safe(q{BEGIN; LOCK TABLE tgt IN ROW EXCLUSIVE MODE});
$loader = $node->background_psql('postgres', on_error_stop => 0);
$loader->query_until(qr/loading/, q{\echo loading
SET client_min_messages = debug1;
SET hwm.exchange_lock_timeout = '5min';
SELECT rows_upserted FROM hwm.run('first');
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%hwm.run%'}),
	'the run, its slice built aside, waits for the target\'s lock');
$writer->query_safe(q{INSERT INTO tgt VALUES (0, now(), 'the writer''s', 0); COMMIT});
$writer->quit;
$loader->quit;
like($loader->{stderr}, qr/the first load is not built aside: it is no longer empty/,
	'... and under the lock finds the target written: it gives the trade up');
like($loader->{stderr}, qr/the slice is loaded by plain insert/, '... and loads by the plain insert');
same_rows($node, 'postgres', 'slice', '(SELECT * FROM tgt WHERE id <> 0) t', '... the slice once');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt WHERE id = 0}), '1', '... beside the writer\'s row');
is(sql($node, 'postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm\_exchange\_%'}),
	'0', '... and no table aside is left');

# --- 6. wal_level = minimal: not aside -----------------------------------------------
$node->stop;
$node->append_conf('postgresql.conf', "wal_level = minimal\nmax_wal_senders = 0\n");
$node->start;
sql($node, 'postgres', qq{TRUNCATE tgt; SELECT hwm.set_watermark('first', '$wm');});
($ret, $out, $err) = $node->psql('postgres',
	q{SET client_min_messages = debug1; SELECT rows_upserted FROM hwm.run('first')});
is($out, 200000, 'with wal_level = minimal the run loads the slice');
like($err, qr/the first load is not built aside: wal_level is minimal/, '... not built aside, saying why');
like($err, qr/the slice is loaded by plain insert/, '... by the plain insert');

$node->stop;
done_testing();
