# A worker serves a queue of due runs of one owner in one database (issue
# 24): a fork and a connection per queue, never shared between roles.  Each
# run of the queue is its own transaction, recorded and notified as before,
# and nothing of one run reaches the next: a first run that tries to take a
# session-level advisory lock (refused inside a run since issue 28, see
# sql/run_owns.sql) and sets a setting for the session leaves neither to the
# second, which runs in the same process.  (Temporary tables
# cannot be made by a run: it runs as a security-restricted operation.)  A run
# that fails in the middle of a queue is recorded as failed and the queue
# goes on; a worker killed with a queue in flight leaves no run 'running',
# and the pipelines run again.  A worker ended by pg_terminate_backend while
# its first run is in progress (issue 37): that run is recorded as failed,
# the runs queued behind it, never started, are handed back and run later,
# and none of them counts as a failure (on main all three were failed).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sched_queue', restart_after_crash => 'on', 'hwm.max_workers' => 1,
	max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.src (id bigint GENERATED ALWAYS AS IDENTITY, v int);
INSERT INTO c.src (v) SELECT g FROM generate_series(1, 3) g;
CREATE TABLE c.seen (pipeline text, pid int, lock_held boolean, work_mem text, search_path text);
-- what a run leaves in its session, if nothing cleans up after it
CREATE FUNCTION c.leave_traces(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  BEGIN
    PERFORM pg_catalog.pg_advisory_lock(4242);
  EXCEPTION WHEN feature_not_supported THEN
    NULL;   -- a session-level lock is refused inside a run
  END;
  PERFORM pg_catalog.set_config('work_mem', '77MB', false);
  INSERT INTO c.seen VALUES (p, pg_catalog.pg_backend_pid(), NULL, NULL, NULL);
END $f$;
-- what the next run of the same worker finds
CREATE FUNCTION c.look(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO c.seen SELECT p, pg_catalog.pg_backend_pid(),
    EXISTS (SELECT FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid()
             AND classid = 0 AND objid = 4242 AND objsubid = 1),
    pg_catalog.current_setting('work_mem'),
    pg_catalog.current_setting('search_path');
END $f$;
CREATE FUNCTION c.fail(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION 'the middle run of the queue fails';
END $f$;
RESET ROLE;
});

# Three pipelines of carol due at the same moment, with one worker: one queue,
# served in the order of their names.
sub declare
{
	my (@funcs) = @_;
	my $i = 0;
	my $sql = "SET ROLE carol;\n";
	for my $f (@funcs)
	{
		$i++;
		$sql .= "SELECT hwm.create_command_pipeline('q$i', 'c.src', 'id', \$\$SELECT c.$f('q$i') WHERE \$2 IS NOT NULL\$\$, schedule => '1 hour');\n";
	}
	sql($node, 'postgres', "BEGIN; $sql COMMIT;");
}

# --- 1. nothing of one run reaches the next ---------------------------------
declare('leave_traces', 'look', 'look');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM hwm.runs WHERE status = 'succeeded'}),
	'the three scheduled runs succeed');
is(sql($node, 'postgres', q{SELECT count(DISTINCT pid) FROM c.seen}), '1', 'the three runs were served by one worker, in turn');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline || ' ' || lock_held || ' ' || work_mem || ' ' || search_path, E'\n' ORDER BY pipeline)
           FROM c.seen WHERE pipeline <> 'q1'}),
	"q2 false 4MB pg_catalog, pg_temp\nq3 false 4MB pg_catalog, pg_temp",
	'the runs after the first see neither its advisory lock nor its setting, and the pinned search_path');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}), '0', 'no run is left running');
is(sql($node, 'postgres', q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242}), '0',
	'and the advisory lock did not outlive the worker');
sql($node, 'postgres', q{SELECT hwm.drop_pipeline(pipeline) FROM hwm.state; TRUNCATE hwm.runs, c.seen});

# --- 2. a failure in the middle of a queue ----------------------------------
declare('look', 'fail', 'look');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM hwm.runs WHERE status <> 'running'}),
	'the three runs of the queue are recorded');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline || ' ' || status, ', ' ORDER BY pipeline) FROM hwm.runs}),
	'q1 succeeded, q2 failed, q3 succeeded', 'the middle one failed, and the queue went on');
is(sql($node, 'postgres', q{SELECT count(DISTINCT pid) FROM c.seen}), '1', '... in the same worker');
like(sql($node, 'postgres', q{SELECT error FROM hwm.runs WHERE pipeline = 'q2'}), qr/the middle run of the queue fails/,
	'the failure is recorded with its error');
sql($node, 'postgres', q{SELECT hwm.drop_pipeline(pipeline) FROM hwm.state; TRUNCATE hwm.runs, c.seen});

# --- 3. a worker killed with a queue in flight ------------------------------
sql($node, 'postgres', q{
SET ROLE carol;
CREATE FUNCTION c.slow(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO c.seen VALUES (p, pg_catalog.pg_backend_pid(), NULL, NULL, NULL);
  PERFORM pg_catalog.pg_sleep(30);
END $f$;
RESET ROLE;
});
declare('slow', 'look', 'look');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'hwm: q1'}),
	'the first run of the queue is in flight');
my $pid = sql($node, 'postgres', q{SELECT pid FROM pg_stat_activity WHERE application_name = 'hwm: q1'});
kill9($node, $pid);    # declared for the log guard
wait_back($node) or die 'the server did not come back after kill -9';
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM hwm.runs WHERE status = 'running'}),
	'after the crash, no run of the killed queue stays running');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline IN ('q2', 'q3') AND status IN ('interrupted', 'failed')}), '2',
	'the runs queued behind it are recorded (interrupted)');
sql($node, 'postgres', q{SELECT hwm.schedule(pipeline, '1 hour') FROM hwm.state WHERE pipeline IN ('q2', 'q3')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM hwm.runs WHERE pipeline IN ('q2', 'q3') AND status = 'succeeded'}),
	'and the pipelines run again');

# --- 4. hwm.enabled turned off while a queue is in flight --------------------
# The first run waits at a gate while scheduling is turned off: it finishes
# (a run in progress does), and the two runs queued behind it are handed
# back, not started, and run once scheduling is on again.
sql($node, 'postgres', q{
SELECT hwm.drop_pipeline(pipeline) FROM hwm.state; TRUNCATE hwm.runs, c.seen;
SET ROLE carol;
CREATE FUNCTION c.gate(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM pg_catalog.pg_advisory_xact_lock(4343);
  INSERT INTO c.seen VALUES (p, pg_catalog.pg_backend_pid(), NULL, NULL, NULL);
END $f$;
RESET ROLE;
});
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4343)');
declare('gate', 'look', 'look');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'hwm: q1' AND wait_event = 'advisory'}),
	'the first run of the queue waits at the gate');
$node->append_conf('postgresql.conf', "hwm.enabled = off\n");
$node->reload;
# a new session sees off once the postmaster has reloaded, which signals the
# worker before that
ok($node->poll_query_until('postgres', q{SELECT current_setting('hwm.enabled')}, 'off'),
	'hwm.enabled is off');
$gate->query_safe('SELECT pg_advisory_unlock(4343)');
$gate->quit;
ok($node->poll_query_until('postgres', q{
	SELECT (SELECT count(*) FROM hwm.runs WHERE status = 'running')
	     + (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm worker') = 0}),
	'the worker ends, no run left running');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline || ' ' || status, ', ' ORDER BY pipeline) FROM hwm.runs}),
	'q1 succeeded', 'the run in progress finished; the two behind it did not start');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline, ', ' ORDER BY pipeline) FROM hwm.state WHERE next_run_at <= now()}),
	'q2, q3', '... they were handed back, due');
$node->append_conf('postgresql.conf', "hwm.enabled = on\n");
$node->reload;
ok($node->poll_query_until('postgres', q{
	SELECT string_agg(pipeline || ' ' || status, ', ' ORDER BY pipeline) FROM hwm.runs},
	'q1 succeeded, q2 succeeded, q3 succeeded'),
	'once scheduling is on again, they run');

# --- 5. a worker terminated while a queue is in flight ----------------------
# The first run waits at the gate; its worker is terminated.  Only that run
# was in progress: it is failed, the two behind it were never started.
sql($node, 'postgres', q{SELECT hwm.drop_pipeline(pipeline) FROM hwm.state; TRUNCATE hwm.runs, c.seen});
$gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4343)');
declare('gate', 'look', 'look');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'hwm: q1' AND wait_event = 'advisory'}),
	'the first run of the queue waits at the gate');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}), '3',
	'the three runs of the queue are claimed');
sql($node, 'postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hwm: q1'});
wait_for($node, 'postgres', q{
	SELECT string_agg(pipeline || ' ' || status, ', ' ORDER BY pipeline) FROM hwm.runs},
	'q1 failed, q2 succeeded, q3 succeeded',
	'the run in progress is failed; the two never started are handed back and run later');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline || ' ' || consecutive_failures, ', ' ORDER BY pipeline) FROM hwm.state}),
	'q1 1, q2 0, q3 0', 'only the run in progress counts as a failure');
like(sql($node, 'postgres', q{SELECT error FROM hwm.runs WHERE pipeline = 'q1'}), qr/exited before it recorded an outcome/,
	'... recorded as its worker exiting');
is(sql($node, 'postgres', q{SELECT count(*) FROM c.seen WHERE pipeline IN ('q2', 'q3')}), '2',
	'q2 and q3 ran once each');
$gate->query_safe('SELECT pg_advisory_unlock(4343)');
$gate->quit;

$node->stop;
done_testing();
