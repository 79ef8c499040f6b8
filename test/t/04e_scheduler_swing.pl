# Fair share that cannot be gamed (issue 37): the dispatcher used to judge
# how long a new queue would hold a worker by its pipeline's last run alone,
# so an owner whose runs are slow exactly when the last one was quick took
# the second of two workers for each slow run, and another owner's pipeline
# due every second waited.  Now a run counts against its owner by the time
# it has actually held a worker: as it goes (a run in progress that has held
# its worker for t is expected to hold it t more), and by the longest run of
# the owner in the database lately (slots.c remembers it).
#
# With hwm.max_workers = 2, alice's pipelines read a view that waits at a
# gate (an advisory lock the test holds), each with a quick last run; bob's
# pipeline is due every second.
#  1. alice's a1 holds a worker at the gate for a while; her a2, whose last
#     run was quick, becomes due: it is held back (not claimed) while bob's
#     runs go on in the other worker.  On main a2 took the second worker and
#     waited at the gate too, and bob's pipeline did not run.
#  2. alice's slow run is remembered: once a2 holds a worker at the gate
#     again, her a3 (a quick last run) is held back at once, before a2 has
#     held its worker long, and bob's runs go on.
# Nothing is timed: each step waits for what it needs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sched_swing', 'hwm.max_workers' => 2, max_worker_processes => 12);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA a AUTHORIZATION alice;
CREATE SCHEMA b AUTHORIZATION bob;
SET ROLE alice;
CREATE TABLE a.src (id bigint, v text);
INSERT INTO a.src VALUES (1, 'a');
-- waits while the test holds pg_advisory_lock(4711)
CREATE FUNCTION a.gate() RETURNS int LANGUAGE sql VOLATILE AS
  $$ SELECT 1 FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared(4711)) AS x $$;
-- every run reads it (OFFSET 0 keeps the watermark's condition outside)
CREATE VIEW a.gated AS SELECT id, v FROM (SELECT id, v, a.gate() AS w FROM a.src OFFSET 0) AS x;
CREATE TABLE a.t1 (id bigint PRIMARY KEY, v text);
CREATE TABLE a.t2 (id bigint PRIMARY KEY, v text);
CREATE TABLE a.t3 (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('a' || i, 'a.gated', ('a.t' || i)::regclass, '{id}', 'id', schedule => '1 hour')
  FROM generate_series(1, 3) AS i;
RESET ROLE;
});
wait_for($node, 'postgres', q{SELECT count(*) = 3 FROM hwm.runs WHERE pipeline LIKE 'a_' AND status = 'succeeded'},
	undef, "alice's three pipelines ran once, quickly (the gate open)");

sql($node, 'postgres', q{
SET ROLE bob;
CREATE TABLE b.src (id bigint, v text);
CREATE TABLE b.tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('b1', 'b.src', 'b.tgt', '{id}', 'id', schedule => '1 second');
RESET ROLE;
});
wait_for($node, 'postgres', q{SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'b1' AND status = 'succeeded'},
	undef, "bob's pipeline runs every second");

# schedule(pipeline): due at once, as alice
sub schedule
{
	my ($p) = @_;
	sql($node, 'postgres', "SET ROLE alice; SELECT hwm.schedule('$p', '1 hour');");
}

sub mark
{
	return sql($node, 'postgres', 'SELECT max(run_id) FROM hwm.runs');
}

sub at_gate
{
	my ($p, $held) = @_;
	return qq{SELECT count(*) = 1 FROM pg_stat_activity
	           WHERE application_name = 'hwm: $p' AND wait_event = 'advisory'
	             AND clock_timestamp() - query_start >= interval '$held'};
}

my $gate = $node->background_psql('postgres');

# --- 1. as it goes ------------------------------------------------------------
$gate->query_safe('SELECT pg_advisory_lock(4711)');
schedule('a1');
wait_for($node, 'postgres', at_gate('a1', '2 seconds'), undef,
	"alice's a1 has held a worker at the gate for two seconds");
my $mark = mark();
schedule('a2');
wait_for($node, 'postgres',
	"SELECT count(*) >= 3 FROM hwm.runs WHERE pipeline = 'b1' AND status = 'succeeded' AND run_id > $mark",
	undef, "bob's pipeline runs three times more in the other worker");
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'a2' AND run_id > $mark"), '0',
	"alice's a2, whose last run was quick, was held back: her a1 holds her share");
$gate->query_safe('SELECT pg_advisory_unlock(4711)');
wait_for($node, 'postgres',
	"SELECT (SELECT count(*) FROM hwm.runs WHERE pipeline = 'a1' AND status = 'succeeded') = 2
	    AND (SELECT count(*) FROM hwm.runs WHERE pipeline = 'a2' AND status = 'succeeded' AND run_id > $mark) = 1",
	undef, 'once the gate opens, a1 ends and a2 runs');

# --- 2. remembered ------------------------------------------------------------
$gate->query_safe('SELECT pg_advisory_lock(4711)');
schedule('a2');
wait_for($node, 'postgres', at_gate('a2', '0'), undef, "alice's a2 holds a worker at the gate");
$mark = mark();
schedule('a3');
wait_for($node, 'postgres',
	"SELECT count(*) >= 3 FROM hwm.runs WHERE pipeline = 'b1' AND status = 'succeeded' AND run_id > $mark",
	undef, "bob's pipeline runs three times more in the other worker");
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'a3' AND run_id > $mark"), '0',
	"alice's a3 was held back at once: her runs lately held a worker for seconds");
$gate->query_safe('SELECT pg_advisory_unlock(4711)');
$gate->quit;
wait_for($node, 'postgres',
	"SELECT (SELECT count(*) FROM hwm.runs WHERE pipeline = 'a2' AND status = 'succeeded') = 3
	    AND (SELECT count(*) FROM hwm.runs WHERE pipeline = 'a3' AND status = 'succeeded' AND run_id > $mark) = 1",
	undef, 'once the gate opens, a2 ends and a3 runs');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'failed'}), '0', 'no run failed');

$node->stop;
done_testing();
