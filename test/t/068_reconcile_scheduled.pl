# A reconcile on a schedule of its own (hwm.schedule_reconcile): the
# scheduler's worker reconciles the whole target after a scheduled run of the
# pipeline succeeded, when the reconcile is due, so that rows hard-deleted in
# the source disappear from the target by themselves; its batches are
# recorded in hwm.runs (kind reconcile); a paused pipeline's reconcile does
# not run; hwm.unschedule_reconcile stops it while the loads go on; a
# reconcile that fails is recorded as a failed run of kind reconcile and
# leaves the load's outcome alone; the pipeline's time limit cuts a long
# reconcile, which the next one resumes.  What must not happen is shown against a
# witness pipeline that goes on reconciling meanwhile, never by the clock.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('rsched', 'hwm.max_workers' => 3, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE bob LOGIN;
CREATE SCHEMA b AUTHORIZATION bob;
SET ROLE bob;
CREATE TABLE b.src (id bigint PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE b.tgt (id bigint PRIMARY KEY, v text, updated_at timestamptz);
CREATE TABLE b.wsrc (id bigint PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE b.wtgt (id bigint PRIMARY KEY, v text, updated_at timestamptz);
CREATE TABLE b.fsrc (id bigint PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE b.ftgt (id bigint PRIMARY KEY, v text, updated_at timestamptz);
INSERT INTO b.src (id, v) SELECT g, 'v' || g FROM generate_series(1, 40) g;
INSERT INTO b.wsrc (id, v) SELECT g, 'w' || g FROM generate_series(1, 10) g;
INSERT INTO b.fsrc (id, v) SELECT g, 'f' || g FROM generate_series(1, 10) g;
SELECT hwm.create_pipeline('r', 'b.src', 'b.tgt', '{id}', 'updated_at', schedule => '1 second');
SELECT hwm.create_pipeline('w', 'b.wsrc', 'b.wtgt', '{id}', 'updated_at', schedule => '1 second');
SELECT hwm.create_pipeline('f', 'b.fsrc', 'b.ftgt', '{id}', 'updated_at', schedule => '1 second');
SELECT hwm.schedule_reconcile('w', '2 seconds');
RESET ROLE;
});
wait_for($node, 'postgres', "SELECT count(*) FROM b.tgt", '40', 'the scheduled runs load the source');

# 1. rows hard-deleted in the source disappear from the target by themselves
sql($node, 'postgres', q{
SET ROLE bob;
SELECT hwm.schedule_reconcile('r', '2 seconds', 7);
DELETE FROM b.src WHERE id % 4 = 0;
});
wait_for($node, 'postgres', "SELECT count(*) FROM b.tgt", '30', 'the scheduled reconcile deletes what the source lost');
same_rows($node, 'postgres', '(SELECT id, v FROM b.src) AS s', '(SELECT id, v FROM b.tgt) AS t',
	'the target equals the source');
wait_for($node, 'postgres',
	"SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile' AND status = 'succeeded' AND rows_deleted > 0",
	't', 'the run history shows the reconcile runs');
is(sql($node, 'postgres', "SELECT sum(rows_deleted) FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile' AND status = 'succeeded'"),
	'10', 'the reconcile runs account for every deleted row');
is(sql($node, 'postgres', "SELECT DISTINCT run_by FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile'"),
	'bob', 'the reconcile runs as the pipeline\'s owner');
wait_for($node, 'postgres',
	"SELECT count(*) > 0 FROM hwm.backfills WHERE pipeline = 'r' AND kind = 'reconcile' AND status = 'succeeded'",
	't', 'its progress is a job of hwm.backfills, finished');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'r' AND status NOT IN ('succeeded', 'running', 'skipped')"),
	'0', 'no run of the pipeline failed');
wait_for($node, 'postgres',
	"SELECT reconcile_schedule = '2 seconds' AND next_reconcile_at IS NOT NULL AND last_reconcile_status = 'succeeded' FROM hwm.status WHERE pipeline = 'r'",
	't', 'hwm.status shows the reconcile\'s schedule, its next time and the last one');

# a reconcile of the witness that started after now(): it is reconciling
sub witness_reconciled_after
{
	my ($since, $what) = @_;
	wait_for($node, 'postgres',
		"SELECT count(DISTINCT date_trunc('second', started_at)) >= 2 FROM hwm.runs WHERE pipeline = 'w' AND kind = 'reconcile' AND started_at > '$since'",
		't', $what);
}

# 2. a paused pipeline's reconcile does not run
sql($node, 'postgres', "SELECT hwm.pause('r')");
wait_for($node, 'postgres', "SELECT count(*) = 0 FROM hwm.runs WHERE pipeline = 'r' AND status = 'running'", 't',
	'the paused pipeline has no run in flight');
# (a scheduled reconcile has no 'running' row, and one that was due before
# the pause finishes its batches, each recorded when it commits: count once
# the witness has reconciled twice since the pause)
my $paused_at = sql($node, 'postgres', "SELECT clock_timestamp()");
witness_reconciled_after($paused_at, 'the witness pipeline reconciled twice since the pause');
my $counted_at = sql($node, 'postgres', "SELECT clock_timestamp()");
my $reconciles = sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile'");
sql($node, 'postgres', "DELETE FROM b.src WHERE id IN (1, 2)");
witness_reconciled_after($counted_at, 'the witness pipeline reconciled twice meanwhile');
is(sql($node, 'postgres', "SELECT count(*) FROM b.tgt WHERE id IN (1, 2)"), '2', 'the paused pipeline\'s target keeps its rows');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile'"), $reconciles,
	'no reconcile of the paused pipeline ran');
sql($node, 'postgres', "SELECT hwm.resume('r')");
wait_for($node, 'postgres', "SELECT count(*) FROM b.tgt WHERE id IN (1, 2)", '0', 'resumed: the reconcile runs again');

# 3. unschedule_reconcile stops it; the loads go on
sql($node, 'postgres', "SET ROLE bob; SELECT hwm.unschedule_reconcile('r')");
wait_for($node, 'postgres', "SELECT count(*) = 0 FROM hwm.runs WHERE pipeline = 'r' AND status = 'running'", 't',
	'no run of the pipeline in flight');
my $unscheduled_at = sql($node, 'postgres', "SELECT clock_timestamp()");
witness_reconciled_after($unscheduled_at, 'the witness pipeline reconciled twice since unschedule_reconcile');
$counted_at = sql($node, 'postgres', "SELECT clock_timestamp()");
$reconciles = sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile'");
sql($node, 'postgres', "DELETE FROM b.src WHERE id IN (3, 5); INSERT INTO b.src (id, v) VALUES (100, 'new')");
wait_for($node, 'postgres', "SELECT count(*) FROM b.tgt WHERE id = 100", '1', 'the scheduled loads go on');
witness_reconciled_after($counted_at, 'the witness pipeline reconciled twice meanwhile');
is(sql($node, 'postgres', "SELECT count(*) FROM b.tgt WHERE id IN (3, 5)"), '2', 'the unscheduled reconcile deletes nothing');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'r' AND kind = 'reconcile'"), $reconciles,
	'no reconcile ran after unschedule_reconcile');
is(sql($node, 'postgres', "SELECT reconcile_schedule IS NULL AND next_reconcile_at IS NULL FROM hwm.status WHERE pipeline = 'r'"),
	't', 'hwm.status shows no reconcile schedule');

# 4. a reconcile that fails is recorded, and the load's outcome is its own:
# the owner may no longer delete from the target
# (after it is scheduled: hwm.schedule_reconcile checks that right too)
sql($node, 'postgres', q{
SET ROLE bob;
SELECT hwm.schedule_reconcile('f', '2 seconds');
RESET ROLE;
ALTER TABLE b.ftgt OWNER TO postgres;
GRANT SELECT, INSERT, UPDATE ON b.ftgt TO bob;
});
wait_for($node, 'postgres',
	"SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'f' AND kind = 'reconcile' AND status = 'failed' AND error_sqlstate = '42501'",
	't', 'the failed reconcile is a failed run of kind reconcile');
sql($node, 'postgres', "INSERT INTO b.fsrc (id, v) VALUES (11, 'f11')");
wait_for($node, 'postgres', "SELECT count(*) FROM b.ftgt", '11', 'the loads go on');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'f' AND kind = 'load' AND status = 'failed'"), '0',
	'no load run is marked failed for it');
is(sql($node, 'postgres', "SELECT consecutive_failures FROM hwm.state WHERE pipeline = 'f'"), '0',
	'the load does not back off for it');

# 5. the pipeline's time limit applies to the reconcile, apart from the run's:
# a reconcile whose deletes are slow (a trigger sleeps 0.4 s per deleted row;
# the loads do not delete) takes longer than it, is cancelled (57014, a
# failed run of kind reconcile), keeps its batches (one key each), and the
# next scheduled reconciles resume after them, until it is done
sql($node, 'postgres', q{
SET ROLE bob;
CREATE TABLE b.tsrc (id bigint PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE b.ttgt (id bigint PRIMARY KEY, v text, updated_at timestamptz);
CREATE FUNCTION b.slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.pg_sleep(0.4);
  RETURN OLD;
END $$;
CREATE TRIGGER slow_delete BEFORE DELETE ON b.ttgt FOR EACH ROW EXECUTE FUNCTION b.slow_delete();
INSERT INTO b.tsrc (id, v) SELECT g, 't' || g FROM generate_series(1, 200) g;
SELECT hwm.create_pipeline('t', 'b.tsrc', 'b.ttgt', '{id}', 'updated_at', schedule => '1 second');
});
wait_for($node, 'postgres', "SELECT count(*) FROM b.ttgt", '200', 'the pipeline with a time limit loads');
sql($node, 'postgres', q{
SET ROLE bob;
SELECT hwm.set_timeout('t', '1 second');
SELECT hwm.schedule_reconcile('t', '2 seconds', 1);
DELETE FROM b.tsrc WHERE id > 190;
});
wait_for($node, 'postgres',
	"SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 't' AND kind = 'reconcile' AND status = 'failed' AND error_sqlstate = '57014'",
	't', 'a reconcile longer than the time limit is cancelled, a failed run of kind reconcile');
wait_for($node, 'postgres', "SELECT count(*) FROM b.ttgt", '190',
	'the next scheduled reconciles resume after the batches done and finish');
same_rows($node, 'postgres', '(SELECT id, v FROM b.tsrc) AS s', '(SELECT id, v FROM b.ttgt) AS t',
	'that target equals its source');

my $log = slurp_file($node->logfile);
like($log, qr/hwm: scheduled reconcile of pipeline "f" failed/, 'the failure is in the server log');
unlike($log, qr/terminated by signal|hwm launcher" \(PID \d+\) exited|TRAP:/, 'no process crashed');

$node->stop;
done_testing();
