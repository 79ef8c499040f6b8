# Pipelines run on their source's commits (hwm.schedule_on_commit, issue
# 41): a pipeline runs once when scheduled so, then after each commit that
# writes its source's tables (an INSERT, COPY, a write to a view's table),
# at most once per min_interval, and once more a start margin after a run
# that loaded rows (which settles its watermark), never while nothing is
# written, and once after a restart (its watches are in shared memory).  A chain whose first
# stage runs on commit and whose next stages run after it (schedule_after)
# has no clock at all.  A "did not run" is checked once a pipeline on a
# one-second schedule (tick) has run twice after the mark, so that the
# scheduler had its chances (each of tick's runs is a dispatch, which looks
# at the watches); nothing is timed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('on_commit', 'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE dora LOGIN;
CREATE SCHEMA o AUTHORIZATION dora;
SET ROLE dora;
CREATE TABLE o.raw (id bigint PRIMARY KEY, v text);
CREATE TABLE o.a (id bigint PRIMARY KEY, v text);
CREATE TABLE o.b (id bigint PRIMARY KEY, v text);
CREATE TABLE o.raw2 (id bigint PRIMARY KEY, v text);
CREATE VIEW o.raw2_v AS SELECT id, upper(v) AS v FROM o.raw2;
CREATE TABLE o.q (id bigint PRIMARY KEY, v text);
CREATE TABLE o.ticks (id bigint PRIMARY KEY);
CREATE TABLE o.ticked (id bigint PRIMARY KEY);
SELECT hwm.create_pipeline('a', 'o.raw', 'o.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'o.a', 'o.b', '{id}', 'id');
SELECT hwm.create_pipeline('q', 'o.raw2_v', 'o.q', '{id}', 'id');
SELECT hwm.create_pipeline('tick', 'o.ticks', 'o.ticked', '{id}', 'id', schedule => '1 second');
SELECT hwm.schedule_on_commit('a', '0');
SELECT hwm.schedule_after('b', '{a}');
SELECT hwm.schedule_on_commit('q', '0');
RESET ROLE;
});

# the succeeded load runs of a pipeline
sub runs
{
	my ($p) = @_;
	return sql($node, 'postgres',
		"SELECT count(*) FROM hwm.runs WHERE pipeline = '$p' AND kind = 'load' AND status = 'succeeded'");
}

# wait until pipeline p has had n succeeded load runs
sub wait_runs
{
	my ($p, $n, $what) = @_;
	wait_for($node, 'postgres',
		"SELECT count(*) FROM hwm.runs WHERE pipeline = '$p' AND kind = 'load' AND status = 'succeeded'",
		$n, $what);
}

# wait until tick has run twice after now: the scheduler had its chances
sub scheduler_went_round
{
	my ($what) = @_;
	my $mark = sql($node, 'postgres', "SELECT clock_timestamp()");
	wait_for($node, 'postgres',
		"SELECT count(*) >= 2 FROM hwm.runs WHERE pipeline = 'tick' AND started_at > '$mark'",
		't', "the scheduler went round ($what)");
}

# 1. scheduled on commit: one run at once, then none while nothing is written
wait_for($node, 'postgres', "SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'a' AND status = 'succeeded'",
	't', 'a pipeline scheduled on commit runs once at once');
wait_for($node, 'postgres', "SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'q' AND status = 'succeeded'",
	't', '... each of them');
scheduler_went_round('nothing written');
scheduler_went_round('nothing written, again');
is(runs('a') . '/' . runs('q') . '/' . runs('b'), '1/1/0', 'nothing written: no more runs, and none downstream');

# 2. a commit to the source runs it, and the chain after it; a run that
#    loaded rows is followed by one that settles the watermark, then none
sql($node, 'postgres', q{INSERT INTO o.raw SELECT g, 'v' || g FROM generate_series(1, 100) g});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.a', '100', 'a commit to raw runs a');
wait_for($node, 'postgres', 'SELECT count(*) FROM o.b', '100', '... and b after it');
wait_runs('a', 3, 'the run that loaded rows is followed by one more');
is(sql($node, 'postgres', q{SELECT string_agg(rows_upserted::text, ',' ORDER BY run_id) FROM hwm.runs WHERE pipeline = 'a'}),
	'0,100,0', '... which loads nothing');
scheduler_went_round('after one commit');
my $b0 = runs('b');
scheduler_went_round('after one commit, again');
is(runs('a') . '/' . runs('b'), "3/$b0", 'one commit: one run and one settling run, then none');
ok($b0 >= 1 && $b0 <= 2, "b ran after each run of a that loaded rows or moved its watermark ($b0)");
is(sql($node, 'postgres', q{SELECT watermark FROM hwm.state WHERE pipeline = 'a'}), '100',
	"a's watermark is settled at the last row");
is(runs('q'), '1', "a commit to another table does not run q");

# 3. rolled back: nothing runs; COPY runs it; a write to a view's table runs
#    the pipeline reading the view
sql($node, 'postgres', q{BEGIN; INSERT INTO o.raw VALUES (500, 'x'); ROLLBACK;});
scheduler_went_round('after a rollback');
is(runs('a'), '3', 'a rolled-back write runs nothing');
sql($node, 'postgres', q{COPY o.raw FROM PROGRAM 'printf "101\tc\n102\tc\n"'});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.b', '102', 'COPY FROM runs the chain');
wait_runs('a', 5, '... and a settling run follows');
sql($node, 'postgres', q{INSERT INTO o.raw2 VALUES (1, 'q')});
wait_for($node, 'postgres', q{SELECT v FROM o.q WHERE id = 1}, 'Q', "a write to a view's table runs its pipeline");

# 4. commits while paused: one run at the resume
sql($node, 'postgres', q{SET ROLE dora; SELECT hwm.pause('a');});
scheduler_went_round('after the pause');
my $a1 = runs('a');
for my $i (1 .. 3)
{
	sql($node, 'postgres', "INSERT INTO o.raw VALUES (200 + $i, 'p')");
}
scheduler_went_round('while a is paused');
is(runs('a'), $a1, 'a paused pipeline does not run');
sql($node, 'postgres', q{SET ROLE dora; SELECT hwm.resume('a');});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.b', '105', 'at the resume the chain loads what came meanwhile');
wait_runs('a', $a1 + 2, '... and settles');
scheduler_went_round('after the resume');
is(runs('a'), $a1 + 2, 'three commits while paused: one run at the resume (and its settling run)');

# 5. a restart forgets the watches: each pipeline runs once, then waits again
$node->restart;
wait_runs('a', $a1 + 3, 'after a restart a pipeline scheduled on commit runs once');
scheduler_went_round('after the restart');
scheduler_went_round('after the restart, again');
is(runs('a'), $a1 + 3, '... and then only when its source is written');
sql($node, 'postgres', q{INSERT INTO o.raw VALUES (300, 'r')});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.b', '106', 'a commit after the restart runs the chain');
wait_runs('a', $a1 + 5, '... and a settling run follows');

# 6. min_interval: the next run waits for it after the last run began
sql($node, 'postgres', q{SET ROLE dora; SELECT hwm.schedule_on_commit('a', '1 hour');});
wait_runs('a', $a1 + 6, 'scheduled again: one run at once');
sql($node, 'postgres', q{INSERT INTO o.raw VALUES (301, 'm')});
wait_for($node, 'postgres',
	q{SELECT next_run_at = last_run_started_at + interval '1 hour' FROM hwm.state WHERE pipeline = 'a'},
	't', 'a commit makes it due min_interval after its last run began');
scheduler_went_round('within min_interval');
is(sql($node, 'postgres', 'SELECT count(*) FROM o.a WHERE id = 301'), '0', '... and it waits for then');

# 7. unscheduled: a commit runs nothing
sql($node, 'postgres', q{SET ROLE dora; SELECT hwm.unschedule('q');});
my $q1 = runs('q');
sql($node, 'postgres', q{INSERT INTO o.raw2 VALUES (2, 'u')});
scheduler_went_round('after q was unscheduled');
is(runs('q'), $q1, 'an unscheduled pipeline runs no more');

# 8. a commit does not wait behind a settling run: with a start margin of
#    an hour, the settling run after each load is an hour away, and every
#    commit still runs the pipeline at once
sql($node, 'postgres', q{ALTER SYSTEM SET hwm.start_margin = '1h'; SELECT pg_reload_conf();});
sql($node, 'postgres', q{SET ROLE dora; SELECT hwm.schedule_on_commit('a', '0');});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.a WHERE id = 301', '1', 'scheduled again with no min_interval: it runs at once');
wait_for($node, 'postgres',
	q{SELECT next_run_at > now() + interval '50 minutes' FROM hwm.state WHERE pipeline = 'a'},
	't', 'its settling run is set a start margin after that run');
sql($node, 'postgres', q{INSERT INTO o.raw VALUES (400, 's')});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.a WHERE id = 400', '1', 'a commit brings the run forward');
sql($node, 'postgres', q{INSERT INTO o.raw VALUES (401, 's')});
wait_for($node, 'postgres', 'SELECT count(*) FROM o.a WHERE id = 401', '1', '... every time');

$node->stop;
done_testing();
