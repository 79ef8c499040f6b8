# DROP EXTENSION and CREATE EXTENSION while the scheduler works: a run in
# progress finishes (DROP waits for it), the launcher idles while the
# extension is absent and picks the new one up at once, without restarting.
# An extension at an older version (before ALTER EXTENSION hwm UPDATE) is
# skipped, logged, until the update, which the launcher picks up at once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('ext', 'hwm.allow_superuser_pipelines' => 'on');

my $launcher = sql($node, 'postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'hwm launcher'");
ok($launcher > 0, 'the launcher runs before the extension exists');

my $setup = gated_setup(10, 'p');
sql($node, 'postgres', $setup);
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '10', 'the scheduler picks up the new extension');

# a run in the middle of its transaction
my $gate = $node->background_psql('postgres');
$gate->set_query_timer_restart;
$gate->query_safe("SELECT pg_advisory_lock(4242)");
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('late')");
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm worker' AND wait_event = 'advisory'},
	'1', 'a scheduled run is in progress');

# DROP EXTENSION waits for the run, which then commits
my $dropper = $node->background_psql('postgres');
$dropper->set_query_timer_restart;
$dropper->query_until(qr/dropping/, q{SET client_min_messages = warning;
\echo dropping
DROP EXTENSION hwm;
});
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE query = 'DROP EXTENSION hwm;' AND wait_event_type = 'Lock'},
	'1', 'DROP EXTENSION waits for the run in progress');
$gate->query_safe("SELECT pg_advisory_unlock(4242)");
$dropper->query_safe("");
$dropper->quit;
is(sql($node, 'postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'hwm'"), '0', 'the extension is gone');
is(sql($node, 'postgres', "SELECT count(*) FROM tgt"), '11', 'the run in progress finished before the drop');

# absent extension: the launcher idles; a new extension is picked up
sql($node, 'postgres', "DROP TABLE src, tgt; DROP FUNCTION gate()");
sql($node, 'postgres', $setup);
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '10', 'the re-created extension is scheduled at once');
$gate->query_safe("SELECT pg_advisory_lock(4242)");
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('late')");
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm worker' AND wait_event = 'advisory'},
	'1', 'a scheduled run is in progress again');
# this time the extension goes with CASCADE while more runs are due
$dropper = $node->background_psql('postgres');
$dropper->set_query_timer_restart;
$dropper->query_until(qr/dropping/, q{SET client_min_messages = warning;
\echo dropping
DROP EXTENSION hwm CASCADE;
});
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE query = 'DROP EXTENSION hwm CASCADE;' AND wait_event_type = 'Lock'},
	'1', 'DROP EXTENSION waits again');
$gate->query_safe("SELECT pg_advisory_unlock(4242)");
$gate->quit;
$dropper->query_safe("");
$dropper->quit;
sql($node, 'postgres', "DROP TABLE src, tgt; DROP FUNCTION gate()");
sql($node, 'postgres', $setup);
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '10', 'and again');

# An older catalog (hwm 1.1, before ALTER EXTENSION hwm UPDATE): the
# scheduler logs that it skips the database and claims nothing there; the
# update rings the launcher, and the pipeline runs at once.  Its row is
# written by hand, as 1.1 wrote it: this library refuses to write an older
# catalog (README, Upgrades).
sql($node, 'postgres', "SET client_min_messages = warning; DROP EXTENSION hwm CASCADE; DROP TABLE src, tgt; DROP FUNCTION gate()");
my $log_offset = -s $node->logfile;
sql($node, 'postgres', q{
CREATE EXTENSION hwm VERSION '1.1';
CREATE TABLE src (id bigint PRIMARY KEY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
INSERT INTO src SELECT g, 'a' || g FROM generate_series(1, 10) g;
INSERT INTO hwm.state (pipeline, source, target, unique_key, watermark_column, watermark_type, owner,
                       schedule, next_run_at, schedule_anchor)
VALUES ('old', 'src', 'tgt', '{id}', 'id', 'bigint', 'postgres', '1 second', now(), now());
});
$node->wait_for_log(qr/hwm: the scheduler skips database "postgres": its hwm catalog is older than the installed hwm library/,
	$log_offset);
pass('the scheduler logs that it skips a database whose catalog is older than the library');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs"), '0', '... and claims no run there');
sql($node, 'postgres', 'ALTER EXTENSION hwm UPDATE');
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '10',
	'after ALTER EXTENSION hwm UPDATE the scheduler runs the pipeline at once');

is(sql($node, 'postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'hwm launcher'"), $launcher,
	'the same launcher throughout: it never died');
unlike(slurp_file($node->logfile), qr/terminated by signal|exited with exit code/,
	'no process of the scheduler crashed');

$node->stop;
done_testing();
