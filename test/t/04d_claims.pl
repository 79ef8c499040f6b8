# A claim is true when it is made, and still true when the run starts
# (issue 28).
#
# 1. The dispatcher's due query used to test "enabled, scheduled, due" on one
#    copy of hwm.state and lock another: a row unscheduled and committed
#    between the query's snapshot and its lock came back with its newest
#    values, schedule NULL, and the dispatcher read that NULL and died of
#    SIGSEGV, taking the server down.  The query is made slow here (200,000
#    unscheduled pipelines in hwm.state) so that an hwm.unschedule or
#    hwm.pause committed 0.1 s after the schedule lands in that window almost
#    every time (10 in 10 before the fix); it passes when no process was
#    terminated by a signal.
# 2. A run claimed in a queue waits for the runs before it.  Whatever
#    happened to its pipeline meanwhile (paused, unscheduled, scheduled
#    elsewhere, dropped) wins over the claim: the worker checks under the
#    pipeline's lock, just before the run, and records the run as skipped,
#    saying why.  Before the fix each of them ran (or failed, dropped).
# 3. A claim handed back keeps what changed since: a pipeline moved to
#    tomorrow while its run was claimed does not run.
# Nothing waits a fixed time but the 0.1 s of 1., which is what puts the
# unschedule inside the dispatcher's window (not a wait for an outcome);
# the turn of 3. ends on the scheduler's clock, which the test moves;
# "did not run" is checked once another pipeline, due after it, has run.
# The slow run waits at a gate (an advisory lock) the test holds until what
# it changes behind the run has committed: a slow run of a fixed 3 s let a
# loaded machine's drop_pipeline still be running when the queue reached it
# (the claim then met a busy pipeline, not a dropped one).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# (a queue's turn long enough for the slow run and the claims behind it: a
# shorter one hands them back before they are checked, see 04b)
# (the scheduler's clock is the test's: the turn of 3. ends when the test
# moves it, see test/t/04f_mock_clock.pl)
my $node = new_node('claims', mock_clock => 1, 'hwm.max_workers' => 1, max_worker_processes => 16,
	'hwm.queue_budget' => '1h');

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL . q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.src (id bigint GENERATED ALWAYS AS IDENTITY, v int);
INSERT INTO c.src (v) SELECT g FROM generate_series(1, 3) g;
CREATE TABLE c.ran (pipeline text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION c.mark(p text) RETURNS void LANGUAGE sql AS $f$ INSERT INTO c.ran (pipeline) VALUES (p) $f$;
CREATE FUNCTION c.slow(p text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO c.ran (pipeline) VALUES (p);
  PERFORM pg_catalog.pg_advisory_xact_lock_shared(4242);
END $f$;
RESET ROLE;
});

sub pipeline_sql
{
	my ($name, $func, $extra) = @_;
	$extra //= '';
	return "SELECT hwm.create_command_pipeline('$name', 'c.src', 'id', "
	  . "\$\$SELECT c.$func('$name') WHERE \$2 IS NOT NULL\$\$$extra);\n";
}

# --- 1. the due query's window -----------------------------------------------
sql($node, 'postgres', q{
CREATE TABLE public.pad_src (id int PRIMARY KEY, ts timestamptz);
CREATE TABLE public.pad_tgt (id int PRIMARY KEY, ts timestamptz);
INSERT INTO hwm.state (pipeline, source, target, unique_key, watermark_column, watermark_type, owner)
SELECT 'pad_' || g, 'public.pad_src', 'public.pad_tgt', '{id}', 'ts', 'timestamptz', 'carol'
  FROM generate_series(1, 200000) g;
ANALYZE hwm.state;
});

my $tries = 6;
for my $i (1 .. $tries)
{
	my $how = $i % 2 ? 'unschedule' : 'pause';
	sql($node, 'postgres',
		"SET ROLE carol;\n" . pipeline_sql("race_$i", 'mark', ", schedule => '15 minutes'"));
	# committed while the dispatcher woken by the schedule reads hwm.state
	# (the 0.1 s aims at that window; it is how the race is made, not a wait)
	sql($node, 'postgres', "SELECT pg_sleep(0.1); SET ROLE carol; SELECT hwm.$how('race_$i');");
	# nothing of it is claimed from now on, by this dispatch or a later one;
	# the next try once this dispatch has ended (the dispatcher exits)
	$node->poll_query_until('postgres',
		q{SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'hwm dispatcher')})
	  or die "the dispatcher of try $i did not end";
}
# the dispatcher and workers have had their turns: no runs in progress
wait_for($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}, '0',
	'no scheduled run of the race pipelines is left running');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal/, 'no process of the server was terminated by a signal');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.state WHERE pipeline LIKE 'race_%' AND enabled AND schedule IS NOT NULL}),
	'0', 'every race pipeline is paused or unscheduled');
sql($node, 'postgres', q{
DELETE FROM hwm.state WHERE pipeline LIKE 'pad_%';
SELECT hwm.drop_pipeline(pipeline) FROM hwm.state;
TRUNCATE hwm.runs, c.ran;
});

# hold_gate(): a session holding the gate, which the slow run waits at
sub hold_gate
{
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	return $gate;
}

sub open_gate
{
	my ($gate) = @_;
	$gate->query_safe('SELECT pg_advisory_unlock(4242)');
	$gate->quit;
}

# --- 2. a claimed run re-checks its pipeline before it runs ------------------
# (what a run writes is seen only when it commits: its session is watched)
my $slow_running = q{SELECT EXISTS (SELECT FROM pg_stat_activity
  WHERE application_name = 'hwm: a_slow' AND state = 'active' AND query LIKE '%hwm.run%')};
# One worker, one queue: a_slow first (at the gate), then the others, all claimed in
# the same dispatch (one owner, due at the same moment, in name order).
my $decl = "SET ROLE carol;\n";
$decl .= pipeline_sql('a_slow', 'slow');
$decl .= pipeline_sql($_, 'mark') for qw(b_paused c_unscheduled d_moved e_dropped f_kept);
sql($node, 'postgres', $decl);
my $gate = hold_gate();
sql($node, 'postgres', q{
BEGIN;
SET ROLE carol;
SELECT hwm.schedule(p, '1 hour', now()) FROM unnest(ARRAY['a_slow', 'b_paused', 'c_unscheduled',
       'd_moved', 'e_dropped', 'f_kept']) AS p;
COMMIT;
});
wait_for($node, 'postgres', $slow_running, undef, 'the slow run, first of the queue, starts');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}), '6',
	'the six runs were claimed together');
sql($node, 'postgres', q{
SET ROLE carol;
SELECT hwm.pause('b_paused');
SELECT hwm.unschedule('c_unscheduled');
SELECT hwm.schedule('d_moved', '1 day', now() + interval '1 day');
SELECT hwm.drop_pipeline('e_dropped');
});
open_gate($gate);
wait_for($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}, '0',
	'the queue is served to its end');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline, ' ' ORDER BY pipeline) FROM c.ran}),
	'a_slow f_kept', 'only the runs whose claim still held ran');
is(sql($node, 'postgres', q{SELECT string_agg(pipeline || ': ' || status || coalesce(' (' || error || ')', ''), E'\n' ORDER BY pipeline) FROM hwm.runs}),
	join("\n",
		'a_slow: succeeded',
		'b_paused: skipped (the pipeline was paused after the run was claimed)',
		'c_unscheduled: skipped (the pipeline was unscheduled after the run was claimed)',
		"d_moved: skipped (the pipeline's schedule or pause state changed after the run was claimed)",
		'e_dropped: skipped (the pipeline was dropped after the run was claimed)',
		'f_kept: succeeded'),
	'the others are recorded as skipped, each saying what changed');
is(sql($node, 'postgres', q{SELECT pipeline || ' ' || enabled || ' ' || (next_run_at > now() + interval '23 hours') FROM hwm.state WHERE pipeline IN ('b_paused', 'd_moved') ORDER BY 1}),
	"b_paused false false\nd_moved true true", 'the pause and the new schedule stand');

# A pause undone at once still voids the claim made before it (new rows, so
# that the slow command runs again).
sql($node, 'postgres', q{TRUNCATE hwm.runs, c.ran; INSERT INTO c.src (v) VALUES (4)});
$gate = hold_gate();
sql($node, 'postgres', q{
BEGIN;
SET ROLE carol;
SELECT hwm.schedule(p, '1 hour', now()) FROM unnest(ARRAY['a_slow', 'f_kept']) AS p;
COMMIT;
});
wait_for($node, 'postgres', $slow_running, undef, 'the slow run starts again');
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.pause('f_kept'); SELECT hwm.resume('f_kept');});
open_gate($gate);
wait_for($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}, '0',
	'the queue ends');
is(sql($node, 'postgres', q{SELECT status FROM hwm.runs WHERE pipeline = 'f_kept' ORDER BY run_id LIMIT 1}),
	'skipped', 'a pause and resume after the claim skip the claimed run');

# --- 3. a claim handed back keeps what changed since ------------------------
# With a short turn (hwm.queue_budget), the runs behind the slow one are
# handed back, due again from their claim, unless their pipeline changed
# since: a schedule moved to tomorrow stays tomorrow.
sql($node, 'postgres', q{ALTER SYSTEM SET hwm.queue_budget = '1s'; SELECT pg_reload_conf();
TRUNCATE hwm.runs, c.ran; INSERT INTO c.src (v) VALUES (5)});
$gate = hold_gate();
sql($node, 'postgres', q{
BEGIN;
SET ROLE carol;
SELECT hwm.schedule(p, '1 hour', now()) FROM unnest(ARRAY['a_slow', 'd_moved']) AS p;
COMMIT;
});
wait_for($node, 'postgres', $slow_running, undef, 'the slow run starts a third time');
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.schedule('d_moved', '1 day', now() + interval '1 day');});
# the run outlasts its queue's turn (1 s) on the scheduler's clock, which
# the test moves; then the gate opens
sql($node, 'postgres', q{SELECT hwm_test_advance_clock('2 seconds')});
open_gate($gate);
wait_for($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE status = 'running'}, '0',
	'the slow run ends, and what was behind it is handed back or skipped');
# (had the claim been handed back due now, as before the fix, the next
# dispatch would claim it: f_kept, of the same owner and due after it, is
# scheduled now, and once f_kept has run that dispatch is over)
my $mark = sql($node, 'postgres', q{SELECT coalesce(max(run_id), 0) FROM hwm.runs});
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.schedule('f_kept', '1 hour', now());});
wait_for($node, 'postgres',
	"SELECT count(*) = 1 FROM hwm.runs WHERE pipeline = 'f_kept' AND status = 'succeeded' AND run_id > $mark",
	undef, 'another pipeline of the owner, due now, runs');
is(sql($node, 'postgres', q{SELECT count(*) FROM c.ran WHERE pipeline = 'd_moved'}), '0',
	'the pipeline moved to tomorrow did not run');
is(sql($node, 'postgres', q{SELECT next_run_at > now() + interval '23 hours' FROM hwm.state WHERE pipeline = 'd_moved'}),
	't', 'and its next run is still tomorrow');

$log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|TRAP:|PANIC/, 'no crash, failed assertion or PANIC in the server log');
$node->stop;
done_testing();
