# Issue 14: what a run remembers about transactions in flight (hwm.state
# reread_*) is only good for the server's lifetime.  After a crash the next
# run reads from the watermark again, and nothing is lost, whether the
# remembered transaction committed before the crash or died with it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# (no database served by the scheduler: its dispatcher's upkeep transaction,
# in flight during a run, would be one more transaction the run remembers)
my $node = new_node('reread_crash', 'hwm.allow_superuser_pipelines' => 'on', 'hwm.start_margin' => 0,
	'hwm.database' => 'none_served');
$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE TABLE src (id int PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now(), v text);
    CREATE TABLE tgt (LIKE src INCLUDING ALL);
    SELECT hwm.create_pipeline('rc', 'src', 'tgt', '{id}', 'updated_at');
});
sub run_once { $node->safe_psql('postgres', q{SET client_min_messages = warning; SELECT rows_upserted FROM hwm.run('rc')}) }
sub memory { $node->safe_psql('postgres', q{SELECT coalesce(cardinality(reread_vxids), -1), reread_epoch = pg_postmaster_start_time() FROM hwm.state WHERE pipeline = 'rc'}) }

# 1. a remembered transaction commits, then the server crashes
my $long = $node->background_psql('postgres', on_error_stop => 0);
$long->query_safe('BEGIN; SELECT 1');
$node->safe_psql('postgres', q{INSERT INTO src (id, v) VALUES (1, 'fast')});
run_once();
is(memory(), '1|t', 'the run remembers the transaction in flight');
$long->query_safe(q{INSERT INTO src (id, v) VALUES (2, 'long, committed before the crash'); COMMIT});
$long->quit;
$node->stop('immediate');
$node->start;
is(memory(), '1|f', 'after the crash the memory is from another server lifetime');
$node->safe_psql('postgres', q{INSERT INTO src (id, v) VALUES (3, 'after the crash')});
run_once();
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM tgt'), '1,2,3',
    'the next run after the crash loads the row committed before it');

# 2. a remembered transaction dies with the crash
$long = $node->background_psql('postgres', on_error_stop => 0);
$long->query_safe('BEGIN; SELECT 1');
$node->safe_psql('postgres', q{INSERT INTO src (id, v) VALUES (4, 'fast')});
run_once();
$long->query_safe(q{INSERT INTO src (id, v) VALUES (5, 'never committed')});
$node->stop('immediate');
$long->quit;
$node->start;
$node->safe_psql('postgres', q{INSERT INTO src (id, v) VALUES (6, 'after the second crash')});
run_once();
run_once();
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM tgt'), '1,2,3,4,6',
    'the transaction that died with the server left nothing, and everything else is loaded');
is($node->safe_psql('postgres', q{SELECT watermark::timestamptz = (SELECT max(updated_at) FROM src) FROM hwm.state WHERE pipeline = 'rc'}),
    't', 'with nothing in flight the watermark catches up');

$node->stop;
done_testing();
