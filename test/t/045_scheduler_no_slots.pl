# max_worker_processes exhausted: the launcher cannot start as many workers
# as hwm.max_workers allows.  It logs that once, leaves the runs due (no
# 'running' row is left behind, nothing is recorded as failed), and tries
# again; every pipeline still runs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# three background worker slots: hwm's launcher, the logical replication
# launcher, and one more
my $node = new_node('noslots', 'hwm.allow_superuser_pipelines' => 'on', 'hwm.max_workers' => 4,
	max_worker_processes => 3, max_parallel_workers => 0);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO src (v) VALUES ('a');
CREATE TABLE t1 (id bigint PRIMARY KEY, v text);
CREATE TABLE t2 (id bigint PRIMARY KEY, v text);
CREATE TABLE t3 (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('p' || i, 'src', ('t' || i)::regclass, '{id}', 'id', schedule => '1 second')
  FROM generate_series(1, 3) i;
});

ok($node->poll_query_until('postgres', q{
SELECT count(*) FROM (SELECT pipeline FROM hwm.runs WHERE status = 'succeeded'
                       GROUP BY pipeline HAVING count(*) >= 3) d}, '3'),
	'every pipeline runs, one worker at a time');
my $log = slurp_file($node->logfile);
my $said = () = $log =~ /no background worker slot is free/g;
is($said, 1, 'the shortage is logged once');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE status NOT IN ('succeeded', 'running')"), '0',
	'no run was recorded as failed for it');
$node->append_conf('postgresql.conf', "hwm.enabled = off\n");
$node->reload;
ok($node->poll_query_until('postgres', "SELECT count(*) FROM hwm.runs WHERE status = 'running'", '0'),
	'no claimed run is left behind');
unlike($log, qr/terminated by signal|"hwm launcher" \(PID \d+\) exited/, 'the launcher did not crash-loop');

$node->stop;
done_testing();
