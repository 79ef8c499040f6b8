# The sweep of interrupted runs must not take a live run for a dead one.  A
# dispatcher's upkeep marks 'interrupted' the 'running' runs that no
# worker's slot holds (their worker ended with the server).  It read the
# slots before its statement took its snapshot: a run claimed and committed
# in between by a worker (the next stage of a chain, which a worker claims
# itself after its run: it is in the worker's slot before it commits) was
# in the snapshot and not in the slots read, and was marked interrupted
# while it ran; its worker then found it no longer 'running' and skipped
# it.  Now the snapshot comes first, then the slots.
#
# The chain a -> b of carol, b after a; b's load waits at a gate (an
# advisory lock that c.b's trigger takes).  The test holds a's worker after
# a committed and before it claims b (worker_applies_wakes), and an upkeep
# dispatch after it read the slots (dispatcher_sweeps); lets the worker
# claim b, which runs to the gate; then lets the sweep go.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sweep_claim_race', mock_clock => 1,
	'hwm.max_workers' => 2, max_worker_processes => 16, 'hwm.queue_budget' => '1min',
	'hwm_test.pause_points' => 'worker_applies_wakes, dispatcher_sweeps');

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL);
sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.raw (id bigint PRIMARY KEY, v text);
CREATE TABLE c.a (id bigint PRIMARY KEY, v text);
CREATE TABLE c.b (id bigint PRIMARY KEY, v text);
CREATE FUNCTION c.gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER gate BEFORE INSERT ON c.b FOR EACH ROW EXECUTE FUNCTION c.gate();
SELECT hwm.create_pipeline('a', 'c.raw', 'c.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'c.a', 'c.b', '{id}', 'id');
SELECT hwm.schedule_after('b', '{a}');
RESET ROLE;
INSERT INTO c.raw SELECT g, 'v' || g FROM generate_series(1, 10) g;
});

my $sweep_key = pause_key('dispatcher_sweeps');
my $worker_key = pause_key('worker_applies_wakes');

my $gate = $node->background_psql('postgres');
$gate->query_safe("SELECT pg_advisory_lock(4242), pg_advisory_lock($worker_key)");

# 1. a's scheduled run loads; its worker is held before it claims b
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.schedule('a', '1 hour');});
wait_for($node, 'postgres', advisory_locks_sql($worker_key, waiting => 1), '1',
	"a's worker is held after a committed, before it claims b");

# 2. an upkeep dispatch (one every 10 s of the scheduler's clock) is held
# after it read the slots
$gate->query_safe("SELECT pg_advisory_lock($sweep_key)");
sql($node, 'postgres', q{SELECT hwm_test_advance_clock('11 seconds')});
wait_for($node, 'postgres', advisory_locks_sql($sweep_key, waiting => 1), '1',
	'an upkeep dispatch is held after it read the runs the slots hold');

# 3. a's worker claims b and commits; b runs, to the gate
$gate->query_safe("SELECT pg_advisory_unlock($worker_key)");
wait_for($node, 'postgres', advisory_locks_sql(4242, waiting => 1), '1', "b's run waits at the gate");
is(sql($node, 'postgres', q{SELECT status FROM hwm.runs WHERE pipeline = 'b'}), 'running', 'b is running');

# 4. the sweep goes on, and its dispatch ends
$gate->query_safe("SELECT pg_advisory_unlock($sweep_key)");
wait_for($node, 'postgres', advisory_locks_sql($sweep_key), '0', 'the held dispatch ended');
is(sql($node, 'postgres', q{SELECT status FROM hwm.runs WHERE pipeline = 'b'}), 'running',
	'the sweep left the live run of b alone');

# 5. the gate opens: b's run finishes, and loads
$gate->query_safe('SELECT pg_advisory_unlock(4242)');
$gate->quit;
wait_for($node, 'postgres', 'SELECT count(*) FROM c.b', '10', 'b loaded');
is(sql($node, 'postgres', q{
SELECT string_agg(pipeline || ':' || status, ' ' ORDER BY run_id) FROM hwm.runs WHERE kind = 'load'}),
	'a:succeeded b:succeeded', 'one succeeded run each, none interrupted');

$node->stop;
done_testing();
