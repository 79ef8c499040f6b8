# One owner's slow runs do not stop the other owners, in its database or
# another (issue 28): with hwm.max_workers = 2, alice schedules 40 pipelines
# every second over a view that takes 10 seconds to read.  bob's 1-second
# pipeline in the same database, and carol's in another database, keep
# running while alice's slow runs hold a worker: alice holds at most her
# share of the workers (one of two while others have runs due), a database
# at most its share, and a queue of slow runs is handed back once its time
# budget (hwm.queue_budget) is spent, its claimed runs due again, none
# recorded as failed, none run twice.  Then the time limits of scheduled
# runs: the pipeline's timeout, hwm.scheduled_timeout, and the error naming
# which one stopped the run.
# Nothing is timed: each step polls for the runs it needs (before the
# shares, bob's and carol's pipelines did not run at all while alice's runs
# held both workers, and the polls time out).  How often they run, in runs
# a second, is bench/share.sh's figure, not this test's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sched_share', 'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
CREATE DATABASE one;
CREATE DATABASE two;
});
for my $db ('one', 'two')
{
	sql($node, $db, q{CREATE EXTENSION hwm});
}

# alice: 40 pipelines every second over a view that sleeps 10 s per read
# (OFFSET 0 keeps the watermark's condition out of the subquery, so every
# read sleeps, whatever the watermark)
sql($node, 'one', q{
CREATE SCHEMA a AUTHORIZATION alice;
CREATE SCHEMA b AUTHORIZATION bob;
SET ROLE alice;
CREATE TABLE a.src0 (id bigint, v text);
INSERT INTO a.src0 VALUES (1, 'a');
CREATE VIEW a.slow AS
  SELECT id, v FROM (SELECT id, v, pg_catalog.pg_sleep(10) AS w FROM a.src0 OFFSET 0) AS x;
DO $$
BEGIN
  FOR i IN 1..40 LOOP
    EXECUTE format('CREATE TABLE a.tgt_%s (id bigint PRIMARY KEY, v text)', i);
    PERFORM hwm.create_pipeline('a' || i, 'a.slow', format('a.tgt_%s', i)::regclass, '{id}', 'id',
                                schedule => '1 second');
  END LOOP;
END $$;
RESET ROLE;
});
ok($node->poll_query_until('one', q{
SELECT count(*) >= 1 FROM hwm.runs WHERE status = 'running' AND pipeline LIKE 'a%'}),
	"alice's slow runs have started");

# bob's pipeline beside alice's, carol's in the other database
sql($node, 'one', q{
SET ROLE bob;
CREATE TABLE b.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO b.src (v) VALUES ('b');
CREATE TABLE b.tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('b1', 'b.src', 'b.tgt', '{id}', 'id', schedule => '1 second');
RESET ROLE;
});
sql($node, 'two', q{
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO c.src (v) VALUES ('c');
CREATE TABLE c.tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('c1', 'c.src', 'c.tgt', '{id}', 'id', schedule => '1 second');
RESET ROLE;
});

# From here on (a mark taken before bob's and carol's first runs, which wait
# for one of alice's first runs to end: a run is never preempted), bob and
# carol run several times while alice's slow runs go on, and alice starts
# runs of her own too.  Without the shares alice's due runs took both
# workers every time one was free, and none of these polls ended.
my $t0 = sql($node, 'one', q{SELECT clock_timestamp()});
my $times = 5;
# runs of pipelines LIKE $like that started after the mark, succeeded (or,
# with $running, are still running: a run of alice's takes about 30 s)
sub runs_since
{
	my ($like, $running) = @_;
	my $statuses = $running ? q{('succeeded', 'running')} : q{('succeeded')};
	return qq{SELECT count(*) FROM hwm.runs WHERE pipeline LIKE '$like' AND status IN $statuses
   AND started_at > '$t0'};
}
my $alice_running = q{EXISTS (SELECT FROM hwm.runs WHERE pipeline LIKE 'a%' AND status = 'running')};
ok($node->poll_query_until('one', "SELECT (" . runs_since('b1') . ") >= $times AND $alice_running"),
	"bob's 1-second pipeline runs $times times beside alice's slow ones, while they run");
ok($node->poll_query_until('two', "SELECT (" . runs_since('c1') . ") >= $times"),
	"carol's 1-second pipeline in the other database runs $times times");
is(sql($node, 'one', "SELECT $alice_running"), 't', '... while alice still had slow runs in progress');
# (a run of alice's reads the view more than once: about 30 s a run; a
# 'running' row may be a claim queued behind her run in progress, so a
# worker is looked for)
ok($node->poll_query_until('one', qq{
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'hwm worker' AND usename = 'alice'
                  AND state = 'active' AND application_name LIKE 'hwm: a%' AND query_start > '$t0')
    OR (} . runs_since('a%') . ") >= 1"),
	'alice still gets her share: her slow runs go on (one started in a worker after the mark)');
diag(sprintf("after the mark: bob %s runs, carol in the other database %s, alice %s runs claimed or run, in %s s",
	sql($node, 'one', runs_since('b1')), sql($node, 'two', runs_since('c1')), sql($node, 'one', runs_since('a%', 1)),
	sql($node, 'one', qq{SELECT round(extract(epoch FROM clock_timestamp() - '$t0'::timestamptz))})));

# handing back: no run of alice failed or was interrupted, no pipeline ran
# twice at once, and at most one worker serves alice while others wait
is(sql($node, 'one', q{SELECT count(*) FROM hwm.runs WHERE status NOT IN ('succeeded', 'running')}), '0',
	'no run was recorded as failed, skipped or interrupted (queues handed back are not failures)');
is(sql($node, 'one', q{
SELECT count(*) FROM hwm.runs AS x JOIN hwm.runs AS y
    ON x.pipeline = y.pipeline AND x.run_id < y.run_id
   AND y.started_at < coalesce(x.finished_at, 'infinity') AND x.status = 'succeeded' AND y.status = 'succeeded'}),
	'0', 'no pipeline ran twice at once');
is(sql($node, 'one', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm worker' AND usename = 'alice'
   AND state = 'active' AND query_start < now() - interval '1 second'}) <= 1 ? 1 : 0, 1,
	'at most one worker serves alice');

# --- time limits of scheduled runs -------------------------------------------
# A limit applies to the runs that start after it is set.  alice's runs in
# progress then would go on for up to 30 s: they are cancelled (recorded as
# failed, "canceling statement due to user request", which no check below
# matches), so that the next run, under the new limit, starts at once.
sub cancel_alice
{
	sql($node, 'one', q{SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
	                     WHERE backend_type = 'hwm worker' AND usename = 'alice'});
}
# alice keeps one pipeline, then two (the others paused), so that each
# comes round often (a2, resumed later, would hold her worker 30 s before
# a1's turn); a pipeline's timeout cancels its scheduled run, and the
# error says so
sql($node, 'one', q{
SET ROLE alice;
SELECT hwm.pause('a' || i) FROM generate_series(2, 40) AS i;
SELECT hwm.set_timeout('a1', '2 seconds');
RESET ROLE;
});
cancel_alice();
ok($node->poll_query_until('one', q{
SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'a1' AND status = 'failed' AND error_sqlstate = '57014'
   AND error LIKE '%2000 ms (the pipeline''s timeout, set with hwm.set_timeout)%'}),
	"a pipeline's timeout cancels its scheduled run, and the error names the pipeline's timeout");

# hwm.scheduled_timeout: the default limit of scheduled runs, here for alice
sql($node, 'postgres', q{ALTER ROLE alice SET hwm.scheduled_timeout = '3s'});
sql($node, 'one', q{SET ROLE alice; SELECT hwm.resume('a2')});
cancel_alice();
ok($node->poll_query_until('one', q{
SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'a2' AND status = 'failed'
   AND error_sqlstate = '57014'
   AND error LIKE '%3000 ms (hwm.scheduled_timeout of role "alice")%'}),
	'hwm.scheduled_timeout cancels a scheduled run without a timeout of its own, and the error says so');
is(sql($node, 'one', q{
SELECT count(*) FROM hwm.runs WHERE pipeline = 'a1' AND status = 'failed' AND error LIKE '%scheduled_timeout%'}),
	'0', "the pipeline's own timeout comes before the setting");

# an owner cannot raise it for herself
my ($rc, $out, $err) = $node->psql('one', q{SET ROLE alice; SET hwm.scheduled_timeout = 0});
like($err, qr/permission denied to set parameter "hwm.scheduled_timeout"/,
	'a pipeline owner cannot lift hwm.scheduled_timeout');

# the owner's statement_timeout, where neither is set
sql($node, 'postgres', q{ALTER ROLE alice RESET hwm.scheduled_timeout; ALTER ROLE alice SET statement_timeout = '4s'});
ok($node->poll_query_until('one', q{
SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'a2' AND status = 'failed'
   AND error LIKE '%4000 ms (statement_timeout of role "alice")%'}),
	"the owner's statement_timeout applies last, and the error names it");

# ... or the database's
sql($node, 'postgres', q{ALTER ROLE alice RESET statement_timeout; ALTER DATABASE one SET statement_timeout = '5s'});
ok($node->poll_query_until('one', q{
SELECT count(*) >= 1 FROM hwm.runs WHERE pipeline = 'a2' AND status = 'failed'
   AND error LIKE '%5000 ms (statement_timeout of database "one")%'}),
	"the database's statement_timeout, and the error names it");

# --- a queue handed back: the rest is due again, not lost ---------------------
# dave's two pipelines, due hourly, are declared together: one queue.  The
# first run takes 3 s, past hwm.queue_budget (1 s), so the second is handed
# back, due again at once, and run by the next worker, not an hour later.
# (paused, not unscheduled: an unschedule racing a dispatch is issue 28's
# first point, not this test's)
sql($node, 'one', q{SELECT hwm.pause(pipeline) FROM hwm.state WHERE enabled AND schedule IS NOT NULL});
sql($node, 'two', q{SELECT hwm.pause(pipeline) FROM hwm.state WHERE enabled AND schedule IS NOT NULL});
sql($node, 'postgres', q{ALTER DATABASE one RESET statement_timeout; CREATE ROLE dave LOGIN});
sql($node, 'one', q{
CREATE SCHEMA d AUTHORIZATION dave;
SET ROLE dave;
CREATE TABLE d.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO d.src (v) VALUES ('d');
CREATE TABLE d.seen (pipeline text, pid int, at timestamptz DEFAULT clock_timestamp());
BEGIN;
SELECT hwm.create_command_pipeline('d1', 'd.src', 'id',
  $$INSERT INTO d.seen (pipeline, pid) SELECT 'd1', pg_catalog.pg_backend_pid() FROM pg_catalog.pg_sleep(3) WHERE $2 IS NOT NULL$$,
  schedule => '1 hour');
SELECT hwm.create_command_pipeline('d2', 'd.src', 'id',
  $$INSERT INTO d.seen (pipeline, pid) SELECT 'd2', pg_catalog.pg_backend_pid() WHERE $2 IS NOT NULL$$,
  schedule => '1 hour');
COMMIT;
RESET ROLE;
});
ok($node->poll_query_until('one', q{SELECT count(*) = 2 FROM hwm.runs WHERE pipeline IN ('d1', 'd2') AND status = 'succeeded'}),
	'both runs of the queue succeed');
is(sql($node, 'one', q{SELECT count(DISTINCT pid) FROM d.seen}), '2',
	'the second run was handed back and served by another worker');
is(sql($node, 'one', q{SELECT count(*) FROM hwm.runs WHERE pipeline IN ('d1', 'd2') AND status <> 'succeeded'}), '0',
	'the run handed back is not recorded as failed or skipped');
is(sql($node, 'one', q{SELECT count(*) FROM hwm.state WHERE pipeline IN ('d1', 'd2') AND next_run_at > now() + interval '50 minutes'}), '2',
	'and both are due an hour later: the one handed back ran now, not an hour late');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|TRAP:|PANIC/, 'no process of the server crashed');
done_testing();
