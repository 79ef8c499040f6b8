# The race behind a failure of 075_chain_worker.pl, made to happen on
# purpose: a dispatcher must not take a chain's next stage from the worker
# that is about to run it (issue 41; the fix, src/catalog.c's
# hwm_state_apply_wakes).
#
# A worker whose run woke pipelines says so in its slot (applies_wakes) just
# before that run commits, and applies the run's wakes itself right after:
# the next stage runs in the same worker.  A dispatcher leaves the wakes of
# such runs alone.  It used to read the slots before its statement took the
# snapshot that reads hwm.wakes: a run that set its flag and committed in
# between left wakes the statement saw, with the flag read unset, and the
# dispatcher applied them and ran the next stage in another worker.  Now
# the snapshot comes first: a wake it sees was committed after its run's
# flag was set, so the flag is read set.
#
# The test holds both processes at hwm's pause points (src/clock.h; the
# tests' module, test/modules/hwm_test/pause_points.c): the dispatcher
# after it has read the slots and before its statement
# (dispatcher_applies_wakes), the worker after its run committed and before
# it applies that run's wakes (worker_applies_wakes).  The chain raw -> a ->
# b of carol, b after a; a's load waits at a gate (an advisory lock that
# c.a's trigger takes) so that the dispatcher can be held while a runs.
#
# 1. a is running (held at the gate) when a dispatch is held after reading
#    the slots: a's flag is not set yet.
# 2. a commits its wake of b and its worker is held before applying it.
# 3. The dispatch goes on and ends.  It must leave a's wake alone: before
#    the fix it applied it and ran b in a worker of its own.
# 4. a's worker goes on: it applies the wake and runs b itself.  b ran in
#    the backend that ran a, once; no wake is left.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('chain_worker_race', mock_clock => 1,
	'hwm.max_workers' => 2, max_worker_processes => 16, 'hwm.queue_budget' => '1min',
	'hwm_test.pause_points' => 'dispatcher_applies_wakes, worker_applies_wakes');

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL);
sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.raw (id bigint PRIMARY KEY, v text);
CREATE VIEW c.raw_v AS SELECT id, v, pg_backend_pid() AS pid FROM c.raw;
CREATE TABLE c.a (id bigint PRIMARY KEY, v text, pid int);
CREATE FUNCTION c.gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER gate BEFORE INSERT ON c.a FOR EACH ROW EXECUTE FUNCTION c.gate();
CREATE VIEW c.a_v AS SELECT id, v, pid AS a_pid, pg_backend_pid() AS pid FROM c.a;
CREATE TABLE c.b (id bigint PRIMARY KEY, v text, a_pid int, pid int);
SELECT hwm.create_pipeline('a', 'c.raw_v', 'c.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'c.a_v', 'c.b', '{id}', 'id');
SELECT hwm.schedule_after('b', '{a}');
RESET ROLE;
INSERT INTO c.raw SELECT g, 'v' || g FROM generate_series(1, 100) g;
});

my $dispatcher_key = pause_key('dispatcher_applies_wakes');
my $worker_key = pause_key('worker_applies_wakes');

my $gate = $node->background_psql('postgres');
$gate->set_query_timer_restart;
$gate->query_safe("SELECT pg_advisory_lock(4242), pg_advisory_lock($worker_key)");

# 1. a runs, held at the gate; then a dispatch is held after reading the slots
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.schedule('a', '1 hour');});
wait_for($node, 'postgres', advisory_locks_sql(4242, waiting => 1), '1', "a's scheduled run waits at the gate");
$gate->query_safe("SELECT pg_advisory_lock($dispatcher_key)");
sql($node, 'postgres', q{SELECT hwm_test_advance_clock('1 second')});
wait_for($node, 'postgres', advisory_locks_sql($dispatcher_key, waiting => 1), '1',
	'a dispatch, with a running, is held after it read the slots');

# 2. a commits its wake of b; its worker is held before applying it
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
wait_for($node, 'postgres', advisory_locks_sql($worker_key, waiting => 1), '1',
	"a's worker is held after a committed, before it applies a's wakes");
is(sql($node, 'postgres', q{
SELECT (SELECT status FROM hwm.runs WHERE pipeline = 'a') || ' '
    || (SELECT count(*) FROM hwm.wakes WHERE upstream = 'a')}),
	'succeeded 1', "a's run committed, and with it its wake of b");

# 3. the dispatch goes on, and ends (its transaction, which held the point's lock)
$gate->query_safe("SELECT pg_advisory_unlock($dispatcher_key)");
wait_for($node, 'postgres', advisory_locks_sql($dispatcher_key), '0', 'the held dispatch ended');
is(sql($node, 'postgres', q{
SELECT (SELECT count(*) FROM hwm.wakes WHERE upstream = 'a') || ' '
    || (SELECT count(*) FROM hwm.runs WHERE pipeline = 'b')}),
	'1 0', "the dispatch left a's wake to a's worker: b was not claimed");

# 4. a's worker goes on: it applies the wake and runs b itself
$gate->query_safe("SELECT pg_advisory_unlock($worker_key)");
$gate->quit;
wait_for($node, 'postgres', 'SELECT count(*) FROM c.b', '100', 'b ran');
is(sql($node, 'postgres', q{
SELECT count(*) FILTER (WHERE a_pid = pid) || '/' || count(*) FROM c.b}),
	'100/100', 'b ran in the backend that ran a');
is(sql($node, 'postgres', q{
SELECT string_agg(format('%s:%s:%s', pipeline, status, rows_upserted), ' ' ORDER BY run_id)
  FROM hwm.runs WHERE kind = 'load'}),
	'a:succeeded:100 b:succeeded:100', 'a and b: one succeeded run each');
is(sql($node, 'postgres', 'SELECT count(*) FROM hwm.wakes'), '0', 'no wake is left over');

# The setting takes only a list of names: a typo is refused when it is set,
# not met by a scheduler process at its first point.
my ($rc, $out, $err) = $node->psql('postgres',
	q{ALTER SYSTEM SET hwm_test.pause_points = 'worker_applies_wakes,,'});
like($err, qr/invalid value for parameter "hwm_test.pause_points".*\n.*DETAIL:  hwm_test.pause_points is a comma-separated list/,
	'hwm_test.pause_points refuses what is not a list of names');

$node->stop;
done_testing();
