# The scheduler's time, moved by the test instead of waited for (issue 38):
# a cluster that preloads the tests' own module after hwm (mock_clock => 1,
# test/modules/hwm_test/clock_mock.c) moves the scheduler's clock forward
# with hwm_test_advance_clock, which wakes the launcher; hours and days of
# schedule pass in seconds.
#
# 1. A pipeline on a '1 hour' schedule runs at its slot once the clock is
#    past it, and not before: a witness due half an hour after its last run
#    runs first, in a dispatch that left the hourly pipeline alone.
# 2. A missed backlog (five slots) becomes one catch-up run, and the next run
#    is the first slot after it.
# 3. A scheduled reconcile ('1 day') is due at its slot only: a load run
#    half an hour before it does not reconcile, the first load after it does.
# 4. The backoff after the n-th consecutive failure of a pipeline scheduled
#    every 5 minutes is min(every * 2^(n-1), max(every, 1 hour)) after the
#    failure (README, What a schedule means): 5, 10, 20, 40, 60, 60 minutes,
#    three hours of retries; each retry runs at its time, and not a minute
#    before (a witness runs then, and the failing pipeline does not); the
#    first success puts it back on its grid.  (These checks were 040's
#    "each retry waited at least schedule * 2^(failures - 1)" and "the next
#    retry is backed off", which waited on the real clock.)
#
# The scheduler's clock is the real one plus an offset that only grows
# (src/clock.c): next_run_at is on the scheduler's clock, the times rows
# record (finished_at, last_run_finished_at) on the real one, so a backoff
# is finished_at + offset + backoff.
#
# Nothing waits a fixed time: each check polls for a run or a row, and "did
# not run" is checked once a witness, due before the time checked and
# claimed by the same dispatch's due query, has run.  The margins are of
# minutes of the scheduler's time, which passes as the real clock does
# between two moves.
#
# Each check fails without the code it checks (run on PostgreSQL 17 with a
# PG_TEST_TIMEOUT_DEFAULT of 10 or 15 seconds, the code mutated in a copy):
# - without the hook (hwm_clock_of returning the real time): the witness of 1
#   never runs, and every check after it times out;
# - the dispatcher's due test without next_run_at (hwm_state_select_due
#   passed 'infinity' for now): 1's hourly pipeline runs again before its
#   slot;
# - a claim's next slot counted from the slot that was due instead of from
#   now (the pile-up: next_run_at + every): 2's five missed slots are five
#   runs;
# - the worker's reconcile due test given 'infinity': 3's reconcile runs half
#   an hour early; given the real clock: it never runs at its slot;
# - the backoff counted from finished_at on the real clock (without
#   hwm_clock_of): 4's first next_run_at is an offset early; every failure
#   counted as the first (failures = 1): 4's second backoff is 5 minutes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('clock', mock_clock => 1, 'hwm.allow_superuser_pipelines' => 'on',
	'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL . q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
CREATE TABLE wsrc (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE wtgt (id bigint PRIMARY KEY, v text);
INSERT INTO src (v) VALUES ('a');
SELECT hwm.create_pipeline('hourly', 'src', 'tgt', '{id}', 'id');
SELECT hwm.create_pipeline('witness', 'wsrc', 'wtgt', '{id}', 'id');
});

# the scheduler's clock moved forward to a time (a timestamptz), plus an
# interval; it moves on from there as the real clock does
sub advance_to
{
	my ($at, $plus) = @_;
	$plus //= '0';
	sql($node, 'postgres',
		"SELECT hwm_test_advance_clock(greatest('$at'::timestamptz + interval '$plus'"
		  . " - (clock_timestamp() + hwm_test_clock_offset()), '0'))");
}

# finished scheduled load runs of a pipeline
sub runs
{
	my ($pipeline) = @_;
	return "(SELECT count(*) FROM hwm.runs WHERE pipeline = '$pipeline' AND kind = 'load' AND status <> 'running')";
}

sub state
{
	my ($pipeline, $expr) = @_;
	return sql($node, 'postgres', "SELECT $expr FROM hwm.state WHERE pipeline = '$pipeline'");
}

# no scheduled run claimed nor in progress, no worker left (a worker
# decides about its reconcile after its run is recorded, then exits)
sub settled
{
	my ($what) = @_;
	wait_for($node, 'postgres', q{SELECT (SELECT count(*) FROM hwm.runs WHERE status = 'running')
  + (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm worker')}, '0', $what);
}

# 1. due at its slot, and not before
sql($node, 'postgres', "SELECT hwm.schedule('hourly', '1 hour')");
my $a = state('hourly', 'schedule_anchor');
sql($node, 'postgres', "SELECT hwm.schedule('witness', '1 hour', '$a'::timestamptz + interval '30 minutes')");
wait_for($node, 'postgres', runs('hourly'), '1', 'an hourly pipeline scheduled from now runs at once');
wait_for($node, 'postgres', 'SELECT count(*) FROM tgt', '1', 'and loads');
is(state('hourly', "next_run_at = '$a'::timestamptz + interval '1 hour'"), 't',
	'its next run is the next slot, an hour after the anchor');
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('b')");

advance_to($a, '35 minutes');
wait_for($node, 'postgres', runs('witness'), '1', 'the clock moved 35 minutes: the witness due at 30 runs');
is(sql($node, 'postgres', runs('hourly')), '1', 'the hourly pipeline, due at 60 minutes, does not run before its slot');
is(state('hourly', "next_run_at = '$a'::timestamptz + interval '1 hour'"), 't', 'and is still due at its slot');

advance_to($a, '65 minutes');
wait_for($node, 'postgres', runs('hourly'), '2', 'the clock moved past the slot: the hourly pipeline runs');
wait_for($node, 'postgres', 'SELECT count(*) FROM tgt', '2', 'and loads the new row');
is(state('hourly', "next_run_at = '$a'::timestamptz + interval '2 hours'"), 't', 'its next run is the slot after');
is(sql($node, 'postgres', runs('witness')), '1', 'the witness, due at 90 minutes, waits for its own slot');

# 2. a backlog of five slots is one catch-up run
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('c')");
advance_to($a, '6 hours 5 minutes');
wait_for($node, 'postgres', runs('hourly'), '3', 'five slots missed: the hourly pipeline runs');
wait_for($node, 'postgres', runs('witness'), '2', 'and so does the witness');
settled('nothing else is claimed or running');
is(sql($node, 'postgres', runs('hourly')) . ' ' . sql($node, 'postgres', runs('witness')), '3 2',
	'one catch-up run each, not one per missed slot');
is(state('hourly', "next_run_at = '$a'::timestamptz + interval '7 hours'"), 't',
	'the next run is the first slot after the catch-up run');
is(state('witness', "next_run_at = '$a'::timestamptz + interval '6 hours 30 minutes'"), 't',
	"and the witness's too");
is(sql($node, 'postgres', 'SELECT count(*) FROM tgt'), '3', 'the catch-up run loaded what was new');
sql($node, 'postgres', "SELECT hwm.unschedule('hourly'); SELECT hwm.unschedule('witness')");

# 3. a scheduled reconcile, due at its slot only
sql($node, 'postgres', q{
CREATE TABLE rsrc (id bigint PRIMARY KEY, v text);
CREATE TABLE rtgt (id bigint PRIMARY KEY, v text);
INSERT INTO rsrc SELECT g, 'r' || g FROM generate_series(1, 10) g;
SELECT hwm.create_pipeline('rec', 'rsrc', 'rtgt', '{id}', 'id');
BEGIN;
SELECT hwm.schedule('rec', '1 hour');
SELECT hwm.schedule_reconcile('rec', '1 day');
COMMIT;
});
my $r = state('rec', 'reconcile_anchor');
my $reconciles = q{(SELECT count(*) FROM hwm.runs WHERE pipeline = 'rec' AND kind = 'reconcile' AND status = 'succeeded')};
wait_for($node, 'postgres', 'SELECT count(*) FROM rtgt', '10', 'the reconciled pipeline loads');
wait_for($node, 'postgres', "SELECT $reconciles > 0", 't', 'its first reconcile runs at once, after the first load');
settled('the first reconcile is over');
is(state('rec', "reconcile_next_run_at = '$r'::timestamptz + interval '1 day'"), 't',
	"the reconcile's next slot is a day after its anchor");
my $reconciled = sql($node, 'postgres', $reconciles);
sql($node, 'postgres', 'DELETE FROM rsrc WHERE id = 3');

advance_to($r, '23 hours 30 minutes');
wait_for($node, 'postgres', runs('rec'), '2', 'half an hour before the reconcile is due, a load runs');
settled('and its worker is done');
is(sql($node, 'postgres', 'SELECT count(*) FROM rtgt WHERE id = 3'), '1', 'the load run did not reconcile: not due yet');
is(sql($node, 'postgres', $reconciles), $reconciled, 'no reconcile ran');

advance_to($r, '1 day 5 minutes');
wait_for($node, 'postgres', 'SELECT count(*) FROM rtgt WHERE id = 3', '0',
	'the first load after the slot reconciles: the row deleted in the source goes');
settled('that worker is done');
is(sql($node, 'postgres', "SELECT $reconciles > $reconciled"), 't', 'a reconcile run is recorded');
is(state('rec', "reconcile_next_run_at = '$r'::timestamptz + interval '2 days'"), 't',
	'its next slot is the one after');
sql($node, 'postgres', "SELECT hwm.unschedule('rec')");

# 4. the backoff, over three hours of failures
sql($node, 'postgres', q{
CREATE TABLE fbase (id bigint PRIMARY KEY, v text);
CREATE TABLE fflag (fail boolean NOT NULL);
INSERT INTO fflag VALUES (false);
INSERT INTO fbase VALUES (1, 'f');
CREATE FUNCTION fcheck() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT fail FROM public.fflag) THEN RAISE EXCEPTION 'planted failure'; END IF;
  RETURN true;
END $$;
CREATE VIEW fsrc AS SELECT id, v FROM fbase WHERE fcheck();
CREATE TABLE ftgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('flaky', 'fsrc', 'ftgt', '{id}', 'id');
CREATE TABLE w2src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE w2tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('witness2', 'w2src', 'w2tgt', '{id}', 'id');
UPDATE fflag SET fail = true;
SELECT hwm.schedule('flaky', '5 minutes');
});
my $failed = q{(SELECT consecutive_failures FROM hwm.state WHERE pipeline = 'flaky')};
my $witness_runs = 0;
my @backoff = ('5 minutes', '10 minutes', '20 minutes', '40 minutes', '1 hour', '1 hour');
for my $n (1 .. @backoff)
{
	my $expect = $backoff[ $n - 1 ];
	wait_for($node, 'postgres', "SELECT $failed", $n, "failure $n is recorded");
	is(sql($node, 'postgres', q{SELECT error FROM hwm.runs WHERE pipeline = 'flaky' ORDER BY run_id DESC LIMIT 1}),
		'planted failure', "failure $n is the planted one") if $n == 1;
	is(state('flaky', "next_run_at - (last_run_finished_at + hwm_test_clock_offset())"),
		sql($node, 'postgres', "SELECT interval '$expect'"),
		"after failure $n the next run is $expect after it");
	my $next = state('flaky', 'next_run_at');

	# not a minute before: a witness due two minutes before runs, flaky does not
	sql($node, 'postgres', "SELECT hwm.schedule('witness2', '1 day', '$next'::timestamptz - interval '2 minutes')");
	advance_to($next, '-1 minute');
	$witness_runs++;
	wait_for($node, 'postgres', runs('witness2'), $witness_runs, "a minute before retry $n, a witness due before it runs");
	is(sql($node, 'postgres', "SELECT $failed || ' ' || " . runs('flaky')), "$n $n", "retry $n has not run");

	# at its time it runs
	advance_to($next);
}
wait_for($node, 'postgres', "SELECT $failed", scalar(@backoff) + 1, 'the last retry runs at its time and fails');
sql($node, 'postgres', 'UPDATE fflag SET fail = false');
advance_to(state('flaky', 'next_run_at'));
wait_for($node, 'postgres', "SELECT last_status || ' ' || consecutive_failures FROM hwm.state WHERE pipeline = 'flaky'",
	'succeeded 0', 'once fixed, the next retry succeeds and the count resets');
is(sql($node, 'postgres', 'SELECT count(*) FROM ftgt'), '1', 'and loads');
is(state('flaky', "extract(epoch FROM next_run_at - schedule_anchor) % 300 = 0"), 't',
	'the pipeline is back on its grid of 5 minutes');

# the clock never goes back: the scheduler's time is never behind the real one
my $offset = sql($node, 'postgres', 'SELECT hwm_test_clock_offset()');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT hwm_test_advance_clock('-1 minute')");
like($err, qr/moves forward by days, hours, minutes and seconds only/, 'the mock clock refuses to go back');
is(sql($node, 'postgres', 'SELECT hwm_test_clock_offset()'), $offset, 'and stays where it was');

my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|hwm launcher" \(PID \d+\) exited|TRAP:/, 'no process crashed');

$node->stop;
done_testing();
