# A target lag schedules a pipeline that has no schedule of its own
# (hwm.set_target_lag, issue 41), and a pipeline that becomes late is said
# once.
#
# 1. up (raw -> mid) and down (reads mid through a view -> out) have target
#    lags and nothing else: the scheduler runs each (nobody calls hwm.run),
#    and a run of up that commits rows wakes down at once, which loads them:
#    the downstream of a lag-driven chain runs after its upstream, not on its
#    own clock.  Both stay under their goals (an hour: far above any pause
#    of the scheduler, so nothing here depends on the machine's speed; and
#    half of it is longer than the test, so only a wake runs down again).
#    A run of up that loads nothing wakes down too: up found its source
#    complete up to then, so down's data can be fresher.
# 2. A pipeline whose data falls behind its goal (a paused one) is logged
#    and notified once, with a payload that names nothing, and only once
#    while it stays late; it counts again once it is no longer late.
# 3. hwm.unschedule stops a lag-driven pipeline: the goal goes with it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('target_lag', 'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE dave LOGIN;
CREATE ROLE nobody LOGIN;
CREATE SCHEMA l AUTHORIZATION dave;
SET ROLE dave;
-- (rows stamped a minute back: below hwm.start_margin, so that a run just
-- after their commit moves the watermark, and the chain knows its time)
CREATE TABLE l.raw (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 minute');
CREATE TABLE l.mid (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
CREATE VIEW l.mid_v AS SELECT id, updated_at FROM l.mid;
CREATE TABLE l.out (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
CREATE TABLE l.slow_src (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE l.slow (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
SELECT hwm.create_pipeline('up', 'l.raw', 'l.mid', '{id}', 'updated_at');
SELECT hwm.create_pipeline('down', 'l.mid_v', 'l.out', '{id}', 'updated_at');
SELECT hwm.create_pipeline('slow', 'l.slow_src', 'l.slow', '{id}', 'updated_at');
RESET ROLE;
});

# the succeeded load runs of a pipeline
sub runs
{
	my ($p) = @_;
	return sql($node, 'postgres',
		"SELECT count(*) FROM hwm.runs WHERE pipeline = '$p' AND kind = 'load' AND status = 'succeeded'");
}

# --- 1. run to stay under the goal, the downstream after its upstream ------
sql($node, 'postgres', q{SET ROLE dave;
SELECT hwm.set_target_lag('up', '1 hour');
SELECT hwm.set_target_lag('down', '1 hour');});
wait_for($node, 'postgres',
	q{SELECT count(DISTINCT pipeline) FROM hwm.runs WHERE pipeline IN ('up', 'down') AND status = 'succeeded'},
	'2', 'with a target lag and no schedule, the scheduler runs each pipeline');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.state WHERE pipeline IN ('up', 'down') AND schedule IS NULL AND after IS NULL}),
	'2', '... which have neither a schedule nor upstreams');

# rows committed upstream reach out through both stages, down woken by the
# run of up that loaded them (up's next slot is half an hour away: this run
# is by hand, as a dbt hook or a script would run it)
sql($node, 'postgres', q{INSERT INTO l.raw (id) SELECT g FROM generate_series(1, 50) g;
                         SET ROLE dave; SELECT hwm.run('up');});
wait_for($node, 'postgres', 'SELECT count(*) FROM l.out', '50',
	'a run of up that commits rows wakes down, which reads its target through a view');
is(sql($node, 'postgres', q{
SELECT count(*) FROM hwm.runs AS rd
 WHERE rd.pipeline = 'down' AND rd.status = 'succeeded' AND rd.rows_upserted = 50
   AND rd.started_at > (SELECT max(ru.finished_at) FROM hwm.runs AS ru
                         WHERE ru.pipeline = 'up' AND ru.rows_upserted = 50)}),
	'1', 'down loaded the rows in a run that started after the run of up that committed them');
is(sql($node, 'postgres', q{
SELECT string_agg(format('%s:%s:%s:%s', pipeline, data_as_of IS NOT NULL, late, late_since IS NULL), ' ' ORDER BY pipeline)
  FROM hwm.freshness WHERE pipeline IN ('up', 'down')}),
	'down:t:f:t up:t:f:t', 'both know how fresh they are, and neither is late');
# a run of up that loads nothing wakes down as well, and down's run makes
# its data as fresh as up's (with hwm.start_margin 0, so that this run, just
# after the last, asks how far its source is complete: see load.c,
# complete_below)
my $down_before = runs('down');
sql($node, 'postgres', q{SET ROLE dave; SET hwm.start_margin = 0; SELECT hwm.run('up');});
wait_for($node, 'postgres', "SELECT count(*) > $down_before FROM hwm.runs WHERE pipeline = 'down' AND status = 'succeeded'",
	't', 'a run of up that loads nothing wakes down too');

# --- 2. a pipeline that becomes late is said once -------------------------
my $listener = $node->background_psql('postgres', extra_params => [ '-U', 'nobody' ]);
my $heard = $listener->query_safe('LISTEN hwm_runs');
my $log_offset = -s $node->logfile;
sql($node, 'postgres', q{INSERT INTO l.slow_src (id) VALUES (1);
SET ROLE dave;
SELECT hwm.run('slow');
SELECT hwm.pause('slow');
SELECT hwm.set_target_lag('slow', '1 second');});
wait_for($node, 'postgres', q{SELECT late_since IS NOT NULL FROM hwm.freshness WHERE pipeline = 'slow'},
	't', 'a paused pipeline falls behind its goal: the scheduler notes since when it is late');
my @late;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	$heard .= "\n" . $listener->query_safe('SELECT 1');
	@late = $heard =~ /payload "(\{[^}]*"late"[^}]*\})" received/g;
	last if @late >= 1;
	select(undef, undef, undef, 0.2);
}
is(join(' ', @late), '{"database": "postgres", "late": true}',
	'listeners hear that a pipeline became late, in a payload that names no pipeline');
unlike($heard, qr/slow/, 'the payloads do not name the pipeline');

# the scheduler goes round (up and down run on their cadence, and a tick
# pipeline on a one-second schedule runs twice): slow stays late, and is not
# said again
sql($node, 'postgres', q{SET ROLE dave;
CREATE TABLE l.ticks (id bigint PRIMARY KEY);
CREATE TABLE l.ticked (id bigint PRIMARY KEY);
SELECT hwm.create_pipeline('tick', 'l.ticks', 'l.ticked', '{id}', 'id', schedule => '1 second');});
my $mark = sql($node, 'postgres', 'SELECT clock_timestamp()');
wait_for($node, 'postgres',
	"SELECT count(*) >= 3 FROM hwm.runs WHERE pipeline = 'tick' AND started_at > '$mark'",
	't', 'the scheduler went round while slow stayed late');
$heard .= "\n" . $listener->query_safe('SELECT 1');
@late = $heard =~ /payload "(\{[^}]*"late"[^}]*\})" received/g;
is(scalar(@late), 1, 'a pipeline that stays late is notified once');
my $log = slurp_file($node->logfile, $log_offset);
my @lines = $log =~ /(hwm: pipeline "slow" is late: [^\n]*)/g;
is(scalar(@lines), 1, 'and logged once');
like($lines[0] // '', qr/is late: its data is .* old, over its target lag of 00:00:01/,
	'the log line says how old its data is and the goal');

# a longer goal: no longer late, and the mark is cleared; a shorter one
# again: late again, said again
sql($node, 'postgres', q{SET ROLE dave; SELECT hwm.set_target_lag('slow', '1 day');});
is(sql($node, 'postgres', q{SELECT late_since IS NULL AND NOT late FROM hwm.freshness WHERE pipeline = 'slow'}),
	't', 'a new goal starts lateness afresh');
sql($node, 'postgres', q{SET ROLE dave; SELECT hwm.set_target_lag('slow', '1 second');});
wait_for($node, 'postgres', q{SELECT late_since IS NOT NULL FROM hwm.freshness WHERE pipeline = 'slow'},
	't', 'late again under the short goal');
$deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	$heard .= "\n" . $listener->query_safe('SELECT 1');
	@late = $heard =~ /payload "(\{[^}]*"late"[^}]*\})" received/g;
	last if @late >= 2;
	select(undef, undef, undef, 0.2);
}
is(scalar(@late), 2, 'each time it becomes late it is said once');
$listener->quit;

# --- 3. hwm.unschedule stops a lag-driven pipeline --------------------------
sql($node, 'postgres', q{SET ROLE dave; SELECT hwm.unschedule('down');});
is(sql($node, 'postgres', q{SELECT target_lag IS NULL AND next_run_at IS NULL FROM hwm.state WHERE pipeline = 'down'}),
	't', 'hwm.unschedule clears the goal and the next run');
my $down_runs = runs('down');
sql($node, 'postgres', q{INSERT INTO l.raw (id) SELECT g FROM generate_series(51, 60) g;
                         SET ROLE dave; SELECT hwm.run('up');});
$mark = sql($node, 'postgres', 'SELECT clock_timestamp()');
wait_for($node, 'postgres',
	"SELECT count(*) >= 2 FROM hwm.runs WHERE pipeline = 'tick' AND started_at > '$mark'",
	't', 'the scheduler went round after up committed rows');
is(runs('down'), $down_runs, 'an unscheduled pipeline is not woken by its upstream');

$node->stop;
done_testing();
