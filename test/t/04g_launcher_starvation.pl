# No database waits for ever behind databases that always want a dispatch.
# The launcher picks databases with runs due (or that rang) before those
# that only need upkeep; a database whose dispatcher looked before
# CREATE EXTENSION hwm committed was known as "no hwm", and its doorbell
# then asked only for upkeep, so on a busy server where another database
# always wanted a dispatch it never ran (047_scheduler_databases failed so,
# 13 minutes without a run, under CI's load).  Here a client keeps database
# db_a ringing (each hwm.schedule commit rings), and db_x, first seen
# without hwm, gets it afterwards: its pipeline must run while db_a still
# rings.  No time is asserted: the waits poll for the events.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('starve', 'hwm.max_workers' => 2);
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

# db_a, served, and a procedure that rings its doorbell again and again
sql($node, 'postgres', 'CREATE DATABASE db_a');
sql($node, 'db_a', $setup);
sql($node, 'db_a', q{
CREATE PROCEDURE ring(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. n LOOP
    PERFORM hwm.schedule('p', '1 hour');
    COMMIT;
    PERFORM pg_sleep(0.002);
  END LOOP;
END $$;
GRANT EXECUTE ON PROCEDURE ring(int) TO alice;
});
wait_for($node, 'db_a', 'SELECT count(*) FROM tgt', '10', 'db_a runs its pipeline');

# db_x, without hwm, until a dispatcher has looked at it (its transactions
# count in pg_stat_database once it exits; nothing else connects there)
sql($node, 'postgres', 'CREATE DATABASE db_x');
wait_for($node, 'postgres',
	q{SELECT xact_commit > 0 FROM pg_stat_database WHERE datname = 'db_x'}, 't',
	'a dispatcher looked at db_x before it had hwm');

# db_a rings without pause; meanwhile db_x gets hwm and a pipeline
my $ringer = $node->background_psql('db_a', on_error_stop => 0);
$ringer->query_until(qr/ringing/, q{
SET ROLE alice;
\echo ringing
CALL ring(200000);
});
sql($node, 'db_x', $setup);
wait_for($node, 'db_x', 'SELECT count(*) FROM tgt', '10',
	'db_x, which had no hwm when first seen, runs its pipeline while db_a keeps ringing');
is(sql($node, 'db_a', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'CALL ring%'}),
	't', '... and db_a was still ringing');
sql($node, 'db_a', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL ring%'});
$ringer->quit;

$node->stop;
done_testing();
