# Chains run by the scheduler (hwm.schedule_after, issue 41): a three-stage
# chain raw -> a -> b -> c, each stage scheduled after the one it reads,
# and d after both a and x (a fan-in).  Every stage runs once its upstream
# commits rows, and only then: a run of an upstream that loads nothing, or
# no run at all, starts nothing downstream.  Any number of upstream
# commits while a stage waits give it one run.  A "did not run" is checked
# once a pipeline on a one-second schedule (tick) has run twice after the
# mark, so that the scheduler had its chances; nothing is timed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('chain_sched', 'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.raw (id bigint PRIMARY KEY, v text);
CREATE TABLE c.a (id bigint PRIMARY KEY, v text);
CREATE TABLE c.b (id bigint PRIMARY KEY, v text);
CREATE TABLE c.c (id bigint PRIMARY KEY, v text);
CREATE TABLE c.xraw (id bigint PRIMARY KEY, v text);
CREATE TABLE c.x (id bigint PRIMARY KEY, v text);
CREATE VIEW c.ax AS SELECT id, v FROM c.a UNION ALL SELECT id + 1000000, v FROM c.x;
CREATE TABLE c.d (id bigint PRIMARY KEY, v text);
CREATE TABLE c.ticks (id bigint PRIMARY KEY);
CREATE TABLE c.ticked (id bigint PRIMARY KEY);
SELECT hwm.create_pipeline('a', 'c.raw', 'c.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'c.a', 'c.b', '{id}', 'id');
SELECT hwm.create_pipeline('c', 'c.b', 'c.c', '{id}', 'id');
SELECT hwm.create_pipeline('x', 'c.xraw', 'c.x', '{id}', 'id');
SELECT hwm.create_pipeline('d', 'c.ax', 'c.d', '{id}', 'id');
SELECT hwm.create_pipeline('tick', 'c.ticks', 'c.ticked', '{id}', 'id', schedule => '1 second');
SELECT hwm.schedule_after('b', '{a}');
SELECT hwm.schedule_after('c', '{b}');
SELECT hwm.schedule_after('d', '{a, x}');
RESET ROLE;
});

# the succeeded load runs of a pipeline
sub runs
{
	my ($p) = @_;
	return sql($node, 'postgres',
		"SELECT count(*) FROM hwm.runs WHERE pipeline = '$p' AND kind = 'load' AND status = 'succeeded'");
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

# 1. a commit upstream runs the chain, stage after stage
scheduler_went_round('before anything was loaded');
is(runs('b') . runs('c') . runs('d'), '000', 'nothing upstream changed: no stage ran');
sql($node, 'postgres', q{INSERT INTO c.raw SELECT g, 'v' || g FROM generate_series(1, 100) g;
                         SET ROLE carol; SELECT hwm.run('a');});
wait_for($node, 'postgres', 'SELECT count(*) FROM c.c', '100', 'a run of a that commits rows runs b, then c');
wait_for($node, 'postgres', 'SELECT count(*) FROM c.d', '100', '... and d, after a');
is(sql($node, 'postgres', q{
SELECT bool_and(rb.started_at > ra.finished_at)
  FROM hwm.runs AS ra, hwm.runs AS rb
 WHERE ra.pipeline = 'a' AND ra.rows_upserted > 0 AND rb.pipeline = 'b' AND rb.status = 'succeeded'}),
	't', 'b ran after the run of a that loaded rows');
scheduler_went_round('after the chain ran');
my ($b1, $c1, $d1) = (runs('b'), runs('c'), runs('d'));
ok($b1 >= 1 && $c1 >= 1 && $d1 >= 1, "each stage ran ($b1, $c1, $d1 runs)");

# 2. idle: a run of a that loads nothing, and no run at all, start nothing
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.run('a');});
scheduler_went_round('after a run of a that loaded nothing');
is(runs('b') . '/' . runs('c') . '/' . runs('d'), "$b1/$c1/$d1",
	'a run of a that loads nothing starts no stage');

# 3. a fan-in: x's commit runs d, not b or c
sql($node, 'postgres', q{INSERT INTO c.xraw SELECT g, 'x' || g FROM generate_series(1, 10) g;
                         SET ROLE carol; SELECT hwm.run('x');});
wait_for($node, 'postgres', 'SELECT count(*) FROM c.d', '110', 'a run of x that commits rows runs d');
scheduler_went_round('after x');
is(runs('b') . '/' . runs('c'), "$b1/$c1", "x's commit starts neither b nor c");

# 4. commits while a stage is paused give it one run at the resume
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.pause('b');});
my ($b2, $c2) = (runs('b'), runs('c'));
for my $i (1 .. 3)
{
	sql($node, 'postgres', "INSERT INTO c.raw VALUES (1000 + $i, 'late'); SET ROLE carol; SELECT hwm.run('a');");
}
scheduler_went_round('while b was paused');
is(runs('b'), $b2, 'a paused stage does not run');
is(sql($node, 'postgres', "SELECT next_run_at IS NOT NULL FROM hwm.state WHERE pipeline = 'b'"), 't',
	'... but it is due: the commits upstream are not forgotten');
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.resume('b');});
wait_for($node, 'postgres', 'SELECT count(*) FROM c.c', '103', 'at the resume the chain loads what came meanwhile');
scheduler_went_round('after the resume');
is(runs('b'), $b2 + 1, 'three commits upstream while paused: one run of b');
is(runs('c'), $c2 + 1, '... and one of c');

# 5. unscheduled: a commit upstream starts nothing
sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.unschedule('c');});
sql($node, 'postgres', q{INSERT INTO c.raw VALUES (2000, 'n'); SET ROLE carol; SELECT hwm.run('a');});
wait_for($node, 'postgres', 'SELECT count(*) FROM c.b', '104', 'b still follows a');
my $c3 = runs('c');
scheduler_went_round('after c was unscheduled');
is(runs('c'), $c3, 'an unscheduled stage runs no more');
is(sql($node, 'postgres', 'SELECT count(*) FROM c.c'), '103', '... and its target waits');

$node->stop;
done_testing();
