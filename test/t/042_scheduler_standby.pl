# A hot standby runs nothing: the launcher starts only once recovery has
# finished.  Promotion starts it, and the schedule runs on the new primary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# The primary keeps its launcher idle (hwm.enabled = off), so that anything
# the standby loads would be its own doing.
my $primary = new_node('primary', init => { allows_streaming => 1 },
	'hwm.allow_superuser_pipelines' => 'on', 'hwm.enabled' => 'off');
$primary->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
INSERT INTO src (v) SELECT 'a' || g FROM generate_series(1, 10) g;
SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'id', schedule => '1 second');
});

my $standby = new_standby($primary, 'standby', 'hwm.enabled' => 'on');

# the standby is up, its pipeline due: wait until a scheduled slot has
# passed by two seconds on the standby's clock, then look
ok($standby->poll_query_until('postgres',
		"SELECT next_run_at < now() - interval '2 seconds' FROM hwm.state WHERE pipeline = 'p'"),
	'the pipeline has been due on the standby for a while');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('hwm launcher', 'hwm worker')"),
	'0', 'a hot standby has no hwm launcher nor worker');
is($standby->safe_psql('postgres', "SELECT count(*) FROM tgt"), '0', 'nothing was loaded');
unlike(slurp_file($standby->logfile), qr/hwm launcher started/, 'the launcher never started');

$standby->promote;
ok($standby->poll_query_until('postgres', "SELECT count(*) FROM tgt", '10'),
	'after promotion the schedule runs');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'hwm launcher'"),
	'1', 'the promoted server has a launcher');
$standby->safe_psql('postgres', "INSERT INTO src (v) VALUES ('after promotion')");
ok($standby->poll_query_until('postgres', "SELECT count(*) FROM tgt", '11'),
	'and keeps running it');
is($primary->safe_psql('postgres', "SELECT count(*) FROM tgt"), '0',
	'the old primary (scheduling off) ran nothing');

$standby->stop;
$primary->stop;
done_testing();
