# One launcher serves every database that has hwm: databases created after
# the server started, a database dropped while its runs are in progress
# (DROP DATABASE terminates them, as it does autovacuum), an extension dropped
# and created again, hwm.database narrowing the list at a reload; each
# finished scheduled run is notified on hwm_runs; a hot standby runs nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('dbs', init => { allows_streaming => 1 }, 'hwm.max_workers' => 2);

# pipelines owned by alice, who can log in; the scheduler runs them as her
sql($node, 'postgres', 'CREATE ROLE alice LOGIN');
my $setup = q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
ALTER TABLE src OWNER TO alice;
ALTER TABLE tgt OWNER TO alice;
INSERT INTO src (v) SELECT 'a' || g FROM generate_series(1, 10) g;
SET ROLE alice;
SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'id', schedule => '1 second');
RESET ROLE;
};
for my $db (qw(db_a db_drop db_ext))
{
	sql($node, 'postgres', "CREATE DATABASE $db");
	sql($node, $db, $setup);
}
for my $db (qw(db_a db_drop db_ext))
{
	wait_for($node, $db, 'SELECT count(*) FROM tgt', '10', "$db, created after the start, runs its pipeline");
	is(sql($node, $db, "SELECT string_agg(DISTINCT run_by, ',') FROM hwm.runs WHERE status = 'succeeded'"),
		'alice', "$db: as its owner");
}
is(sql($node, 'postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm launcher'"),
	'1', 'one launcher for all of them');

# DROP DATABASE while a run is in progress there: the run is terminated
sql($node, 'db_drop', q{
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(300); RETURN NEW; END $$;
CREATE TRIGGER slow BEFORE INSERT ON tgt FOR EACH ROW EXECUTE FUNCTION slow();
INSERT INTO src (v) VALUES ('late');
});
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'hwm worker' AND datname = 'db_drop' AND wait_event = 'PgSleep'},
	'1', 'a run is in progress in db_drop');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE db_drop');
is($ret, 0, 'DROP DATABASE succeeds while a run is in progress')
  or diag($err);
wait_for($node, 'postgres', "SELECT count(*) FROM pg_stat_activity WHERE datname = 'db_drop'", '0',
	'nothing of hwm is left in the dropped database');

# DROP EXTENSION and CREATE EXTENSION again in db_ext
sql($node, 'db_ext', 'DROP EXTENSION hwm; DROP TABLE src, tgt');
sql($node, 'db_ext', $setup);
wait_for($node, 'db_ext', 'SELECT count(*) FROM tgt', '10', 'db_ext runs again after CREATE EXTENSION');

# a failing run is notified on hwm_runs, with its database and run_id (the
# listener reads the rest from hwm.runs)
sql($node, 'db_a', q{
CREATE TABLE bad_tgt (id bigint PRIMARY KEY, v text);
ALTER TABLE bad_tgt OWNER TO alice;
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON bad_tgt FOR EACH ROW EXECUTE FUNCTION refuse();
SET ROLE alice;
SELECT hwm.create_pipeline('bad', 'src', 'bad_tgt', '{id}', 'id');
});
my $listen = q{
LISTEN hwm_runs;
SET ROLE alice;
SELECT hwm.schedule('bad', '1 hour');
RESET ROLE;
DO $$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
  FOR i IN 1 .. 1800 LOOP
    EXIT WHEN EXISTS (SELECT FROM hwm.runs WHERE pipeline = 'bad' AND status = 'failed')
      AND EXISTS (SELECT FROM hwm.runs WHERE pipeline = 'p' AND status = 'succeeded'
                  AND started_at > t0 + interval '100 ms');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT 'done';
};
($ret, $out, $err) = $node->psql('db_a', $listen);
my $run_id = sql($node, 'db_a', "SELECT run_id FROM hwm.runs WHERE pipeline = 'bad' AND status = 'failed'");
like($out,
	qr/Asynchronous notification "hwm_runs" with payload "\{"database": "db_a", "run_id": $run_id\}"/,
	'a listener hears of the failed run, with its payload');
my @heard = $out =~ /with payload "\{"database": "db_a", "run_id": (\d+)\}"/g;
is(sql($node, 'db_a', 'SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = \'p\' AND status = \'succeeded\''
		. ' AND run_id IN (' . join(', ', @heard) . ')'),
	't', 'and of successful runs, which it reads from hwm.runs by their run_id');

# hwm.database narrows the list at a reload; '*' widens it again
$node->append_conf('postgresql.conf', "hwm.database = 'db_ext'\n");
$node->reload;
($ret, $out, $err) = $node->psql('db_a', "SELECT hwm.schedule('p', '1 second')");
like($err, qr/is scheduled, but the scheduler serves database "db_ext"/,
	'a database left out of hwm.database is warned about');
$node->append_conf('postgresql.conf', "hwm.database = 'db_ext, db_a'\n");
$node->reload;
($ret, $out, $err) = $node->psql('db_a', "SELECT hwm.schedule('p', '1 second')");
unlike($err, qr/WARNING/, 'a list of databases is accepted');
sql($node, 'db_a', "INSERT INTO src (v) VALUES ('listed')");
wait_for($node, 'db_a', 'SELECT count(*) FROM tgt', '11', 'a listed database is served');

# a hot standby runs nothing, however many databases it has (the primary
# stops scheduling, so that anything the standby did would be its own)
$node->append_conf('postgresql.conf', "hwm.enabled = off\nhwm.database = '*'\n");
$node->reload;
my $standby = new_standby($node, 'standby', 'hwm.enabled' => 'on');
ok($standby->poll_query_until('db_a',
		"SELECT next_run_at < now() - interval '2 seconds' FROM hwm.state WHERE pipeline = 'p'"),
	'the pipelines have been due on the standby for a while');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'hwm %'"),
	'0', 'the standby has no process of hwm');
$standby->stop;

my $log = slurp_file($node->logfile);
unlike($log, qr/"hwm launcher" \(PID \d+\) exited|"hwm dispatcher" \(PID \d+\) exited with exit code [^0]/,
	'neither the launcher nor a dispatcher crashed');
$node->stop;
done_testing();
