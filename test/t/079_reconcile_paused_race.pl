# A scheduled reconcile must not start on a pipeline its owner paused after
# the reconcile was found due.  The worker finds a reconcile due, and
# commits its next time, in one transaction; it starts the reconcile in the
# next, which waits for the pipeline's lock.  A pause committed in between
# (while a session held the lock, say an overwrite by hand) did not stop
# it: the reconcile then deleted the target's rows that the source no
# longer had, on a pipeline paused because its source was being reloaded.
# Now the worker asks again under the lock, and does not start it.
#
# The test holds the worker at the pause point worker_starts_reconcile
# (src/clock.h; the tests' module, test/modules/hwm_test/pause_points.c),
# after the reconcile was found due and before it takes the lock, pauses
# the pipeline, and lets the worker go.  The target has five rows the
# source has not: a reconcile would delete them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use HwmTest;

my $node = new_node('reconcile_paused_race', mock_clock => 1,
	'hwm.max_workers' => 2, max_worker_processes => 16,
	'hwm_test.pause_points' => 'worker_starts_reconcile');

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL);
sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.src (id bigint PRIMARY KEY, v text);
CREATE TABLE c.tgt (id bigint PRIMARY KEY, v text);
INSERT INTO c.src SELECT g, 'v' || g FROM generate_series(1, 5) g;
INSERT INTO c.tgt SELECT g, 'v' || g FROM generate_series(1, 10) g;
SELECT hwm.create_pipeline('p', 'c.src', 'c.tgt', '{id}', 'id');
RESET ROLE;
});

my $key = pause_key('worker_starts_reconcile');
my $waiting = advisory_locks_sql($key, waiting => 1);

my $gate = $node->background_psql('postgres');
$gate->query_safe("SELECT pg_advisory_lock($key)");

# the scheduled run loads; its reconcile, due at once, is held at the point
sql($node, 'postgres', q{
SET ROLE carol;
BEGIN;
SELECT hwm.schedule('p', '1 hour');
SELECT hwm.schedule_reconcile('p', '1 hour');
COMMIT;
});
wait_for($node, 'postgres', $waiting, '1', 'the worker found the reconcile due and is held before starting it');
is(sql($node, 'postgres', q{SELECT status FROM hwm.runs WHERE pipeline = 'p' AND kind = 'load'}),
	'succeeded', 'the scheduled run loaded');

# the owner pauses the pipeline; the worker goes on
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.pause('p')});
my $log_offset = -s $node->logfile;
$gate->query_safe("SELECT pg_advisory_unlock($key)");
$gate->quit;

# whichever comes: the worker says it did not start the reconcile, or a
# reconcile ran (before the fix)
my $ended = 0;
for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
{
	$ended = 1, last
	  if $node->log_contains(qr/the scheduled reconcile of pipeline "p" did not start: the pipeline was paused/,
		$log_offset);
	$ended = 2, last
	  if sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'p' AND kind = 'reconcile'}) ne '0';
	usleep(100_000);
}
is($ended, 1, 'the worker did not start the reconcile of the paused pipeline, and said so');
is(sql($node, 'postgres', q{
SELECT (SELECT count(*) FROM c.tgt) || ' ' || (SELECT count(*) FROM hwm.backfills WHERE pipeline = 'p')}),
	'10 0', 'the target keeps its rows: no reconcile began');

$node->stop;
done_testing();
