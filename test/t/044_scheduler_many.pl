# 200 pipelines due every second, hwm.max_workers = 2: every pipeline keeps
# running, no two runs of one pipeline overlap, never more than two runs are
# in flight, and no backlog piles up (at most one run per schedule slot).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('many', 'hwm.allow_superuser_pipelines' => 'on', 'hwm.max_workers' => 2,
	max_worker_processes => 8);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO src (v) SELECT 'a' || g FROM generate_series(1, 10) g;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXECUTE format('CREATE TABLE tgt_%s (id bigint PRIMARY KEY, v text)', i);
    PERFORM hwm.create_pipeline('p' || i, 'src', format('tgt_%s', i)::regclass, '{id}', 'id',
                                schedule => '1 second');
  END LOOP;
END $$;
});

ok($node->poll_query_until('postgres', q{
SELECT count(*) FROM (SELECT pipeline FROM hwm.runs WHERE status = 'succeeded'
                       GROUP BY pipeline HAVING count(*) >= 3) d}, '200'),
	'all 200 pipelines ran at least three times');

# a new row reaches every target
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('new')");
ok($node->poll_query_until('postgres', q{
SELECT count(*) FROM hwm.state WHERE watermark = '11'}, '200'),
	'a new source row reaches all 200 targets');

# stop scheduling and let the runs in flight finish
$node->append_conf('postgresql.conf', "hwm.enabled = off\n");
$node->reload;
ok($node->poll_query_until('postgres', "SELECT count(*) FROM hwm.runs WHERE status = 'running'", '0'),
	'no run is left running');

# (a failure shows each other outcome with its error and count)
is(sql($node, 'postgres', q{
SELECT string_agg(status || ' (' || coalesce(error, '') || '): ' || n, E'\n' ORDER BY n DESC)
  FROM (SELECT status, error, count(*) AS n FROM hwm.runs WHERE status <> 'succeeded'
         GROUP BY status, error) o}), '', 'every run succeeded');
is(sql($node, 'postgres', q{
SELECT count(*) FROM hwm.runs a JOIN hwm.runs b
    ON a.pipeline = b.pipeline AND a.run_id < b.run_id AND b.started_at < a.finished_at}),
	'0', 'no two runs of one pipeline overlapped');
is(sql($node, 'postgres', q{
SELECT max(n) <= 2 FROM (
  SELECT count(*) AS n FROM hwm.runs a JOIN hwm.runs b
      ON b.started_at <= a.started_at AND b.finished_at > a.started_at
   GROUP BY a.run_id) c}),
	't', 'never more than hwm.max_workers runs at once');
# each run moves next_run_at to the first slot after it started, so a
# pipeline runs at most once per one-second slot (plus the first run)
is(sql($node, 'postgres', q{
SELECT count(*) FROM (
  SELECT pipeline, count(*) AS n, extract(epoch FROM max(started_at) - min(started_at)) AS span
    FROM hwm.runs GROUP BY pipeline) c
 WHERE n > ceil(span) + 2}),
	'0', 'no pile-up: at most one run per schedule slot');
my $per = sql($node, 'postgres', q{SELECT min(n) || ' ' || max(n) FROM (SELECT count(*) AS n FROM hwm.runs GROUP BY pipeline) c});
note "runs per pipeline (min max): $per";
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.state WHERE consecutive_failures > 0"), '0', 'no failures');

$node->stop;
done_testing();
