# Crashes in the middle of a scheduled run: a worker killed with kill -9 and
# an immediate shutdown.  The run is recorded as 'interrupted', the target and
# the watermark stay as the last committed run left them (nothing half-loaded),
# and the next run loads the rest, with nothing lost and nothing doubled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('crash', 'hwm.allow_superuser_pipelines' => 'on', restart_after_crash => 'on');

# The target's trigger takes a shared advisory lock: while the test holds it
# exclusively, a run that has rows to write blocks in the middle of its
# transaction (after the upsert started, before the watermark is stored).
sql($node, 'postgres', gated_setup(100, 'c'));
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '100', 'the first run loads');

# Hold the gate, add rows, and wait for a worker stuck on the gate.
sub block_next_run {
	my ($from, $to) = @_;
	my $gate = $node->background_psql('postgres', on_error_stop => 0);
	$gate->query_safe("SELECT pg_advisory_lock(4242)");
	sql($node, 'postgres', "INSERT INTO src (v) SELECT 'b' || g FROM generate_series($from, $to) g");
	wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity
	           WHERE backend_type = 'hwm worker' AND wait_event = 'advisory'},
		'1', "a scheduled run is in the middle of loading rows $from..$to");
	return $gate;
}

sub consistent {
	my ($rows, $what) = @_;
	# (identity values jump after a crash: compare with the source, not with 1..n)
	is(sql($node, 'postgres', "SELECT count(*) FROM tgt"), $rows, "$what: the target has exactly the committed rows");
	is(sql($node, 'postgres', "SELECT count(*) FROM src WHERE id <= (SELECT max(id) FROM tgt)"), $rows,
		"$what: all of them, none missing");
	is(sql($node, 'postgres', "SELECT watermark = (SELECT max(id) FROM tgt)::text FROM hwm.state WHERE pipeline = 'c'"), 't',
		"$what: the watermark matches the target");
}

# 1. kill -9 of the worker: the server restarts, the run is 'interrupted',
# the next run loads everything once.
my $gate = block_next_run(101, 200);
my $pid = sql($node, 'postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = 'hwm worker'");
kill9($node, $pid);    # declared for the log guard
eval { $gate->quit; };    # its session died with the crash
wait_back($node) or die 'the server did not come back after kill -9';
wait_for($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'c' AND status = 'interrupted'", '1',
	'the killed run is recorded as interrupted');
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '200', 'the next run loads the rows');
consistent(200, 'after kill -9');
is(sql($node, 'postgres', "SELECT count(*) FROM (SELECT id FROM src EXCEPT SELECT id FROM tgt) d"), '0', 'nothing lost');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE status = 'running' AND run_id < (SELECT max(run_id) FROM hwm.runs WHERE status = 'succeeded')"),
	'0', 'no run is left running');

# 2. an immediate shutdown in the middle of a run; restart with scheduling
# off to look at what the crash left.
$gate = block_next_run(201, 300);
$node->stop('immediate');
eval { $gate->quit; };
$node->append_conf('postgresql.conf', "hwm.enabled = off\n");
$node->start;
wait_for($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'c' AND status = 'interrupted'", '2',
	'after restart, the run in progress is recorded as interrupted');
consistent(200, 'after an immediate shutdown');
like(sql($node, 'postgres', "SELECT last_status || ': ' || last_error FROM hwm.state WHERE pipeline = 'c'"),
	qr/^interrupted: the run was interrupted/, 'hwm.status shows the interruption');
$node->append_conf('postgresql.conf', "hwm.enabled = on\n");
$node->reload;
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '300', 'scheduling resumes and loads the rest');
consistent(300, 'after the catch-up run');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'c' AND status = 'failed'"), '0', 'no run failed');

# 3. The harness itself: a kill -9 that comes after the process has exited
# (here a session that ended while the postmaster was stopped, so it is a
# zombie not yet reaped) reaches it but crashes nothing, and wait_back
# returns instead of waiting out its timeout for a restart that does not
# come.  090's random worker had once just finished its run so.
my $late = $node->background_psql('postgres');
my $zombie = $late->query_safe('SELECT pg_backend_pid()');
my $postmaster = $node->{_pid};
my ($state, $killed) = ('', 0);
kill 'STOP', $postmaster;
eval {    # (the postmaster is continued whatever happens here)
	$late->quit;
	for (1 .. 20 * $PostgreSQL::Test::Utils::timeout_default)
	{
		$state = (split ' ', (slurp_file("/proc/$zombie/stat") =~ s/^.*\) //sr))[0];
		last if $state eq 'Z';
		select(undef, undef, undef, 0.05);
	}
	$killed = $state eq 'Z' && kill9($node, $zombie);
	1;
} or diag("while the postmaster was stopped: $@");
kill 'CONT', $postmaster;
is($state, 'Z', 'the ended session waits for the stopped postmaster to reap it');
ok($killed, 'kill -9 reaches the unreaped session');
ok(wait_back($node), 'wait_back returns: no restart follows a kill -9 that came too late');
is(scalar(() = slurp_file($node->logfile) =~ /all server processes terminated; reinitializing/g), 1,
	'the server restarted only after the first kill -9');

$node->stop;
done_testing();
