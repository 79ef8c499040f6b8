# hwm works without shared_preload_libraries: its functions load the module
# on first use in each session, and a pipeline runs.  With it preloaded, the hwm.*
# settings exist from server start (a typo in the prefix is refused).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# the test's pipeline is owned by the bootstrap superuser (a placeholder
# setting until the module is loaded)
my $node = new_node('no_preload', shared_preload_libraries => '',
	'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE TABLE src (id int, n int);
    CREATE TABLE tgt (id int PRIMARY KEY, n int);
    INSERT INTO src SELECT g, g FROM generate_series(1, 5) g;
    SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'n');
});
is($node->safe_psql('postgres', q{SELECT rows_upserted || ' ' || watermark_after FROM hwm.run('p')}),
    '5 5', 'a run without preloading loads the rows and moves the watermark');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tgt}), '5', 'the target has them');
is($node->safe_psql('postgres', q{SELECT count(*) FROM hwm.run('p'); SHOW hwm.wait_timeout}), "1\n1s",
    'settings exist in a session once a function has loaded the module');

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'hwm'\n");
$node->restart;
is($node->safe_psql('postgres', q{SHOW hwm.start_margin}), '1s',
    'preloaded: settings exist from the start');
my ($ret, $out, $err) = $node->psql('postgres', q{SET hwm.no_such_setting = 1});
like($err, qr/invalid configuration parameter name "hwm.no_such_setting"/,
    'preloaded: the hwm prefix is reserved');
is($node->safe_psql('postgres', q{SELECT rows_upserted FROM hwm.run('p')}), '0',
    'the pipeline still runs after the restart (nothing new)');

$node->stop;
done_testing();
