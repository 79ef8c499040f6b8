# Issue 31: a first load takes the plain INSERT (no speculative insertion).
# A crash in the middle of it leaves the target as it was (empty) and the
# watermark where it was (none); the next run loads everything, by the same
# path, exactly once.  A writer of the target that takes one of the slice's
# keys while a big plain insert runs sends the run to the upsert, which
# loses and doubles nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $rows = 1_000_000;
my $node = new_node('first_load_crash', 'hwm.allow_superuser_pipelines' => 'on', restart_after_crash => 'on');
sql($node, 'postgres', qq{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text, n int);
INSERT INTO src SELECT g, '2026-01-01'::timestamptz + g * interval '1 second', 'v' || g, g
  FROM generate_series(1, $rows) g;
CREATE TABLE tgt (LIKE src INCLUDING ALL);
SELECT hwm.create_pipeline('first', 'src', 'tgt', '{id}', 'updated_at');
});

# --- 1. kill -9 of the backend while its first load writes -----------------------
my $loader = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $loader->query_safe('SELECT pg_backend_pid()');
$loader->query_until(qr/loading/, q{\echo loading
SELECT * FROM hwm.run('first');
});
# the target's file grows while the insert runs, before anything commits
ok($node->poll_query_until('postgres', q{SELECT pg_relation_size('tgt') > 8 * 1024 * 1024}),
	'the first load is writing the target');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt}), '0', '... and nothing of it is visible yet');
kill9($node, $pid);
eval { $loader->quit; };    # its session died with the server's restart
ok(wait_back($node), 'the server is back after the crash');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt}), '0', 'after the crash the target is as it was: empty');
is(sql($node, 'postgres', q{SELECT coalesce(watermark, 'none') FROM hwm.state WHERE pipeline = 'first'}),
	'none', '... and the watermark did not move');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'first' AND status = 'succeeded'}),
	'0', '... and no run is recorded as done');

# --- 2. the next run loads everything, by the plain insert, once --------------------
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET client_min_messages = debug1; SELECT rows_upserted FROM hwm.run('first')});
is($ret, 0, 'the next run succeeds');
is($out, $rows, '... and loads every row');
like($err, qr/the slice is loaded by plain insert/, '... by the plain insert');
same_rows($node, 'postgres', 'src', 'tgt', '... the target equals the source');
is(sql($node, 'postgres', q{SELECT watermark::timestamptz = (SELECT max(updated_at) FROM src) FROM hwm.state WHERE pipeline = 'first'}),
	't', '... and the watermark is the newest row');

# --- 3. a writer takes a key of a big slice while its plain insert runs -------------
# The writer inserts a key of the slice (not yet in the target) and holds it
# uncommitted; the run's plain insert meets it, waits, and on its commit
# fails with unique_violation: the run goes on to the next path, and the
# writer's row ends with the source's values, once.
sql($node, 'postgres', qq{
INSERT INTO src SELECT g, '2027-01-01'::timestamptz + g * interval '1 second', 'w' || g, g
  FROM generate_series($rows + 1, $rows + 200000) g;
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
same_rows($node, 'postgres', 'src', 'tgt', 'the run loaded the slice exactly once, the writer\'s row with the source\'s values');
is(sql($node, 'postgres', q{SELECT count(*) FROM tgt}), $rows + 200000, '... every key once');

$node->stop;
done_testing();
