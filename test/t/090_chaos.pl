# Chaos: four clients for a minute issue random schedule, unschedule, pause,
# resume, set_timeout, drop_pipeline, create_*_pipeline, hwm.run, CALL
# hwm.catch_up, CALL hwm.rerun_intervals, CREATE/DROP DATABASE with hwm,
# inserts and pg_terminate_backend of a worker, a dispatcher or a client,
# over 48 pipelines due every second in two databases (test/perl/HwmChaos.pm;
# the second one has 50,000 more, unscheduled, rows in hwm.state, so that the
# scheduler's queries take long enough for changes to commit while they run);
# now and then a worker is killed with kill -9 (the server restarts).  Errors
# of the calls themselves are expected.  It passes when no process was
# terminated by a signal the test did not send (no TRAP:, no PANIC: on the
# assert-enabled builds), when every pipeline scheduled and not paused at
# the end gets a new successful scheduled run, and when no scheduled run
# started while its pipeline was certainly paused (after the pause committed,
# before a resume or a new declaration began).
#
# The seed is printed; HWM_CHAOS_SEED=n replays the same operations (their
# timing differs), HWM_CHAOS_SECONDS=n runs longer (bench/chaos.sh: minutes).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(time);
use HwmTest;
use HwmChaos;

my $seed = $ENV{HWM_CHAOS_SEED} // (int(time() * 1000) ^ $$) % 1000000;
my $seconds = $ENV{HWM_CHAOS_SECONDS} // 60;
diag("chaos seed $seed (replay: HWM_CHAOS_SEED=$seed), $seconds s");

my $node = new_node('chaos',
	'hwm.max_workers' => 4,
	max_connections => 60,
	max_worker_processes => 16,
	restart_after_crash => 'on',
	log_min_messages => 'warning');

my $chaos = HwmChaos->new(host => $node->host, port => $node->port, seed => $seed,
	dir => tempdir(CLEANUP => 1));
$chaos->setup(filler => $ENV{HWM_CHAOS_FILLER} // 50000);
for my $db (@HwmChaos::DATABASES)
{
	wait_for($node, $db, "SELECT count(DISTINCT pipeline) FROM hwm.runs WHERE status = 'succeeded'",
		$HwmChaos::PIPELINES, "$db: all pipelines run before the chaos");
}

my $started = time();
$chaos->run(seconds => $seconds, clients => 4, kill9_every => 30,
	kill9 => sub {
		my ($pid) = @_;
		note("kill -9 of hwm worker $pid");
		kill9($node, $pid);
		# the server restarts; the clients' calls fail meanwhile
		wait_back($node) or die 'the server did not come back after kill -9';
	});
note($chaos->summary);
my $ops = $chaos->operations;
cmp_ok(scalar(@$ops), '>=', 100, sprintf('the clients made %d calls in %.0f s', scalar(@$ops), time() - $started));
ok(wait_back($node), 'the server accepts connections after the chaos');

# every pipeline scheduled and not paused runs again
$chaos->mark;
for my $db (@HwmChaos::DATABASES)
{
	my $n = sql($node, $db, 'SELECT count(*) FROM hwm.state WHERE schedule IS NOT NULL AND enabled');
	wait_for($node, $db, $chaos->due_query($db), '',
		"$db: each of its $n pipelines scheduled and not paused has a new successful scheduled run");
}

# no scheduled run started while its pipeline was paused
my @late = $chaos->paused_violations;
is(scalar(@late), 0, "no scheduled run started after its pause committed ($chaos->{paused_windows} pauses checked)")
  or diag(join("\n", @late));

# no crash: every "terminated by signal" is a kill -9 of this test
my @crashes = HwmChaos::log_crashes(slurp_file($node->logfile), allowed_kills($node));
is(scalar(@crashes), 0, 'no process was terminated by a signal the test did not send, no TRAP:, no PANIC:')
  or diag(join("\n", @crashes));
diag("chaos seed $seed: " . scalar(@crashes) . ' crash line(s)') if @crashes;

$node->stop;
done_testing();
