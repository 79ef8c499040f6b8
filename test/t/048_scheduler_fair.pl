# hwm.max_workers is shared fairly between databases: a database with 500
# pipelines due every second (each run made slow by its source, so that the
# big one has a backlog however fast the scheduler) does not starve one with
# a single pipeline, whose runs go on while the big one has a backlog, and
# more often than any of the big one's: it is not one pipeline among 501.
# Nothing is timed: the test polls for the single pipeline's runs, and
# compares counts of runs, not runs a second (how many of its slots it
# ran is printed, not asserted: under load every run is late).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('fair', 'hwm.allow_superuser_pipelines' => 'on', 'hwm.max_workers' => 2,
	max_worker_processes => 8);

sql($node, 'postgres', 'CREATE DATABASE db_big');
sql($node, 'postgres', 'CREATE DATABASE db_small');
sql($node, 'db_big', q{
CREATE EXTENSION hwm;
CREATE TABLE src0 (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO src0 (v) VALUES ('a');
CREATE FUNCTION slow(x bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN PERFORM pg_catalog.pg_sleep(0.01); RETURN x; END $f$;
CREATE VIEW src AS SELECT public.slow(id) AS id, v FROM src0;
DO $$
BEGIN
  FOR i IN 1..500 LOOP
    EXECUTE format('CREATE TABLE tgt_%s (id bigint PRIMARY KEY, v text)', i);
    PERFORM hwm.create_pipeline('p' || i, 'src', format('tgt_%s', i)::regclass, '{id}', 'id',
                                schedule => '1 second');
  END LOOP;
END $$;
});
ok($node->poll_query_until('db_big', q{
SELECT count(*) > 100 FROM hwm.state WHERE next_run_at < now() - interval '2 seconds'}),
	'db_big has a backlog: more pipelines due than hwm.max_workers can run');

sql($node, 'db_small', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
INSERT INTO src (v) VALUES ('a');
SELECT hwm.create_pipeline('solo', 'src', 'tgt', '{id}', 'id', schedule => '2 seconds');
CREATE TABLE t0 AS SELECT now() AS t0;
});
ok($node->poll_query_until('db_small', q{
SELECT count(*) >= 8 FROM hwm.runs WHERE pipeline = 'solo' AND status = 'succeeded'}),
	'the single pipeline of db_small runs');

# how many of its slots since it was scheduled did it run?
my $slots = sql($node, 'db_small', q{
SELECT count(*) || ' of ' || ceil(extract(epoch FROM max(started_at) - (SELECT t0 FROM t0)) / 2)
  FROM hwm.runs WHERE pipeline = 'solo' AND status = 'succeeded'});
diag("solo ran $slots slots");
my ($ran) = split / of /, $slots;
# the most runs one of db_big's pipelines had meanwhile (each runs about
# every 500 / (runs a second) seconds; solo every 2 s, when it has its share)
my $big = sql($node, 'db_big', sprintf(q{
SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM hwm.runs WHERE status = 'succeeded'
   AND started_at >= '%s' AND started_at <= '%s' GROUP BY pipeline) AS x},
	sql($node, 'db_small', 'SELECT t0 FROM t0'),
	sql($node, 'db_small', q{SELECT max(started_at) FROM hwm.runs WHERE pipeline = 'solo'})));
diag("the busiest pipeline of db_big ran $big times meanwhile");
cmp_ok($ran, '>', $big, "the single pipeline ran more often than any of db_big's: it is served by its database's share");
ok(sql($node, 'db_big', q{
SELECT count(*) > 100 FROM hwm.state WHERE next_run_at < now() - interval '2 seconds'}) eq 't',
	'while db_big still had its backlog');
is(sql($node, 'db_big', "SELECT count(*) FROM hwm.runs WHERE status NOT IN ('succeeded', 'running')"),
	'0', 'and every run of db_big succeeded');

$node->stop;
done_testing();
