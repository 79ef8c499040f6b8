# bench/chaos.pl SECONDS SEED SERVER_LOG [FILLER]: the chaos of test/t/090_chaos.pl
# (test/perl/HwmChaos.pm) against the cluster of PGHOST/PGPORT, for SECONDS,
# with a kill -9 of an hwm worker about every two minutes.  Prints a Markdown
# report (what ran, how often, what was found) on stdout; progress on stderr.
# Exit status 1 when something was found.  Run by bench/chaos.sh.
use strict;
use warnings;
use File::Temp qw(tempdir);
use Time::HiRes qw(time sleep);
use HwmChaos;

my ($seconds, $seed, $server_log, $filler) = @ARGV;
die "usage: chaos.pl SECONDS SEED SERVER_LOG [FILLER]\n" unless $server_log;
$filler //= 50000;
my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my $c = HwmChaos->new(host => $ENV{PGHOST}, port => $ENV{PGPORT}, seed => $seed, dir => $dir);

sub say_err { printf STDERR "[chaos %s] %s\n", scalar(gmtime), $_[0]; }

sub server_up
{
	my ($timeout) = @_;
	my $until = time() + $timeout;
	while (time() < $until)
	{
		my ($rc, $out) = $c->psql('postgres', ['SELECT true']);
		return 1 if $rc == 0 && $out =~ /^t/;
		sleep(0.5);
	}
	return 0;
}

say_err("setup: 2 databases, $HwmChaos::PIPELINES pipelines each, due every second");
$c->setup(filler => $filler);
sleep(5);
my %killed;
say_err("$seconds s of chaos, seed $seed");
my $t0 = time();
$c->run(seconds => $seconds, clients => 4, kill9_every => 120,
	kill9 => sub {
		my ($pid) = @_;
		say_err("kill -9 of hwm worker $pid");
		$killed{$pid} = 1;
		kill 'KILL', $pid;
		server_up(300) or die "the server did not come back after kill -9 of $pid\n";
	});
my $elapsed = time() - $t0;
my $up = server_up(300);
say_err('waiting for every pipeline scheduled and not paused to run again');
$c->mark;
my @stalled;
for my $db (@HwmChaos::DATABASES)
{
	my $left = '?';
	my $until = time() + 300;
	while (time() < $until)
	{
		my ($rc, $out) = $c->psql($db, [ $c->due_query($db) ]);
		chomp $out;
		$left = $out, last if $rc == 0 && $out eq '';
		$left = $out if $rc == 0;
		sleep(1);
	}
	push @stalled, "$db: $left" if $left ne '';
}
my %scheduled = map {
	$_ => $c->safe($_, 'SELECT count(*) FROM hwm.state WHERE schedule IS NOT NULL AND enabled')
} @HwmChaos::DATABASES;
my %runs = map {
	$_ => $c->safe($_, "SELECT count(*) FILTER (WHERE run_by = 'alice') || ' scheduled (' ||"
		  . " count(*) FILTER (WHERE run_by = 'alice' AND status = 'succeeded') || ' succeeded), ' ||"
		  . " count(*) FILTER (WHERE run_by <> 'alice') || ' by hand'"
		  . " FROM hwm.runs")
} @HwmChaos::DATABASES;
my @late = $c->paused_violations;
open my $fh, '<', $server_log or die "$server_log: $!";
my $log = do { local $/; <$fh> };
close $fh;
my @crashes = HwmChaos::log_crashes($log, \%killed);

my $n = scalar @{ $c->operations };
print "$seconds s of chaos (seed $seed; ran " . sprintf('%.0f', $elapsed) . " s): 4 clients, each running psql once per"
  . " operation as the superuser, over $HwmChaos::PIPELINES pipelines due every second (12 copy, 6 command,"
  . " 6 interval; owned by alice) in each of two databases (the second with $filler more, unscheduled, rows"
  . " in hwm.state), `hwm.max_workers = 4`; a kill -9 of an hwm"
  . " worker about every 2 minutes (" . scalar(keys %killed) . " sent; the server restarted each time)."
  . " Errors of the calls themselves (a dropped or busy pipeline, a killed session, the server restarting)"
  . " are expected.\n\n";
print "```\n" . $c->summary . "```\n\n";
print "Scheduled runs: " . join('; ', map { "$_: $runs{$_}" } @HwmChaos::DATABASES) . " (the history is pruned"
  . " to 1,000 runs per pipeline).\n\n";
print "| check | result |\n|---|---|\n";
printf "| server up after the chaos | %s |\n", $up ? 'yes' : 'NO';
printf "| processes terminated by a signal not sent by the test, TRAP:, PANIC: in the server log | %s |\n",
  @crashes ? scalar(@crashes) . ': ' . join('<br>', map { s/\|/\\|/gr } @crashes[ 0 .. ($#crashes < 9 ? $#crashes : 9) ]) : 'none';
printf "| pipelines scheduled and not paused at the end without a new succeeded run within 5 min | %s |\n",
  @stalled ? join('; ', @stalled) : 'none (' . join(', ', map { "$scheduled{$_} in $_" } @HwmChaos::DATABASES) . ')';
printf "| scheduled runs started after their pipeline's pause committed (%d pauses) | %s |\n",
  $c->{paused_windows}, @late ? scalar(@late) . ': ' . join('<br>', @late[ 0 .. ($#late < 9 ? $#late : 9) ]) : 'none';
exit((@crashes || @stalled || @late || !$up) ? 1 : 0);
