# A scheduled run that wakes pipelines of its own owner runs them in its own
# worker, right after it (issue 41): the chain raw -> a -> b -> c of carol,
# b after a and c after b (hwm.schedule_after), and e of erin after a.
#
# Each stage's source is a view that adds pg_backend_pid(), so every row
# says which backend loaded it into each table: the process that ran that
# stage's run.  a is scheduled once (an hour's schedule: its first run at
# once, the next far beyond the test), and nothing else happens meanwhile,
# so every run below is the scheduler's.
#
# 1. b and c ran in the backend that ran a: the worker that ran a took the
#    runs its runs woke into its own queue.  Before, each was claimed by a
#    dispatch after the run before it committed, and served by a worker of
#    its own, another backend.
# 2. Each is still a scheduled run of its own: one run_id each in hwm.runs,
#    succeeded, each started after the run before it finished.
# 3. e, erin's, was woken by the same run but is not carol's worker's to
#    run: the dispatcher runs it, in erin's worker (another backend), and no
#    wake is left over.
#
# hwm.queue_budget is a minute, so that a worker's turn never ends between
# two stages however slow the machine is: nothing here depends on time.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('chain_worker', 'hwm.max_workers' => 2, max_worker_processes => 16,
	'hwm.queue_budget' => '1min');

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE ROLE erin LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
CREATE SCHEMA e AUTHORIZATION erin;
SET ROLE carol;
CREATE TABLE c.raw (id bigint PRIMARY KEY, v text);
CREATE VIEW c.raw_v AS SELECT id, v, pg_backend_pid() AS pid FROM c.raw;
CREATE TABLE c.a (id bigint PRIMARY KEY, v text, pid int);
CREATE VIEW c.a_v AS SELECT id, v, pid AS a_pid, pg_backend_pid() AS pid FROM c.a;
CREATE TABLE c.b (id bigint PRIMARY KEY, v text, a_pid int, pid int);
CREATE VIEW c.b_v AS SELECT id, v, a_pid, pid AS b_pid, pg_backend_pid() AS pid FROM c.b;
CREATE TABLE c.c (id bigint PRIMARY KEY, v text, a_pid int, b_pid int, pid int);
GRANT USAGE ON SCHEMA c TO erin;
GRANT SELECT ON c.a TO erin;
SELECT hwm.create_pipeline('a', 'c.raw_v', 'c.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'c.a_v', 'c.b', '{id}', 'id');
SELECT hwm.create_pipeline('c', 'c.b_v', 'c.c', '{id}', 'id');
SELECT hwm.schedule_after('b', '{a}');
SELECT hwm.schedule_after('c', '{b}');
SET ROLE erin;
CREATE VIEW e.a_v AS SELECT id, v, pid AS a_pid, pg_backend_pid() AS pid FROM c.a;
CREATE TABLE e.copy (id bigint PRIMARY KEY, v text, a_pid int, pid int);
SELECT hwm.create_pipeline('e', 'e.a_v', 'e.copy', '{id}', 'id');
SELECT hwm.schedule_after('e', '{a}');
RESET ROLE;
INSERT INTO c.raw SELECT g, 'v' || g FROM generate_series(1, 100) g;
});

sql($node, 'postgres', q{SET ROLE carol; SELECT hwm.schedule('a', '1 hour');});
wait_for($node, 'postgres', 'SELECT count(*) FROM c.c', '100', 'the run of a ran b, then c');
wait_for($node, 'postgres', 'SELECT count(*) FROM e.copy', '100', '... and e, of another owner');

# 1. one backend ran a, b and c
is(sql($node, 'postgres', 'SELECT count(DISTINCT pid) FROM c.a'), '1', 'one run of a loaded every row');
is(sql($node, 'postgres', q{
SELECT count(*) FILTER (WHERE a_pid = b_pid AND b_pid = pid) || '/' || count(*) FROM c.c}),
	'100/100', 'b and c ran in the backend that ran a: its worker ran the runs its runs woke');

# 2. each a scheduled run of its own, recorded as such, one after the other
is(sql($node, 'postgres', q{
SELECT string_agg(format('%s:%s:%s:%s', pipeline, status, rows_upserted, run_by), ' ' ORDER BY run_id)
  FROM hwm.runs WHERE pipeline IN ('a', 'b', 'c') AND kind = 'load'}),
	'a:succeeded:100:carol b:succeeded:100:carol c:succeeded:100:carol',
	'a, b and c: one succeeded scheduled run each, in the chain\'s order');
is(sql($node, 'postgres', q{
SELECT bool_and(r2.started_at >= r1.finished_at)
  FROM hwm.runs AS r1 JOIN hwm.runs AS r2
    ON (r1.pipeline, r2.pipeline) IN (('a', 'b'), ('b', 'c'))
 WHERE r1.kind = 'load' AND r2.kind = 'load'}),
	't', 'each stage started after the run before it finished');

# 3. erin's e: run by the dispatcher's worker, not carol's
is(sql($node, 'postgres', q{
SELECT count(*) FILTER (WHERE a_pid <> pid) || '/' || count(*) FROM e.copy}),
	'100/100', 'e, of another owner, ran in a worker of its own');
is(sql($node, 'postgres', q{
SELECT format('%s:%s:%s', status, rows_upserted, run_by) FROM hwm.runs WHERE pipeline = 'e'}),
	'succeeded:100:erin', '... as a scheduled run of erin');
wait_for($node, 'postgres', 'SELECT count(*) FROM hwm.wakes', '0', 'no wake is left over');

$node->stop;
done_testing();
