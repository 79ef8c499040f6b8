# HwmChaos: random concurrent use of hwm's scheduler, for test/t/090_chaos.pl
# (about a minute, in the suite) and bench/chaos.sh (ten minutes or more).
#
#   my $c = HwmChaos->new(host => $h, port => $p, seed => $seed, dir => $dir);
#   $c->setup;                           # two databases, 24 pipelines each
#   $c->run(seconds => 60, clients => 4, kill9 => sub { my ($pid) = @_; ... });
#   my @bad = $c->paused_violations;     # scheduled runs started while paused
#   my @late = $c->stalled_pipelines;    # (after waiting) scheduled, not paused, no new run
#   my @crashes = HwmChaos::log_crashes($log_text, { $pid => 1, ... });
#
# Nothing here uses Test::More or PostgreSQL::Test::*: each client is a
# forked process that runs psql once per operation (a new connection each
# time, so that a killed backend or a server restart costs one operation),
# as the superuser, with application_name 'hwm chaos'.  The pipelines belong
# to the role alice, so that the runs of the scheduler are the ones with
# run_by = 'alice' (operations by hand run as the superuser).
#
# Every operation prints the server's clock_timestamp() before it starts and
# after it committed (psql -c ... -c ... -c ..., one transaction each), and
# each client writes one line per operation into DIR/client-N.log:
#   op <TAB> database <TAB> pipeline <TAB> t0 <TAB> t1 <TAB> tend <TAB> ok|error <TAB> message
# (t0, t1: the server's clock, epoch seconds, t1 empty when the operation
# failed; tend: this machine's clock when psql returned).
package HwmChaos;

use strict;
use warnings;
use IPC::Run;
use POSIX ();
use Time::HiRes qw(time sleep);

our @DATABASES = ('chaos_a', 'chaos_b');
our $PIPELINES = 24;    # per database: 1-12 copy, 13-18 command, 19-24 interval

# Operation => weight.  Errors are expected (a dropped pipeline, a busy one):
# only crashes count, and they show in the server log.
our %WEIGHTS = (
	schedule => 5, unschedule => 3, pause => 3, resume => 4, set_timeout => 2,
	drop => 1, create => 4, run => 4, catch_up => 1, rerun_intervals => 1,
	insert => 3, create_database => 1, drop_database => 1,
	terminate_worker => 1, terminate_client => 1, terminate_dispatcher => 1);

sub new
{
	my ($class, %o) = @_;
	my $self = bless { psql => 'psql', user => 'postgres', %o }, $class;
	die "HwmChaos: host, port, seed and dir are required"
	  unless defined $self->{host} && $self->{port} && defined $self->{seed} && $self->{dir};
	return $self;
}

# psql(database, [statements], timeout): (exit status, stdout, stderr);
# each statement a -c of its own (its own transaction).
sub psql
{
	my ($self, $db, $stmts, $timeout) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($self->{psql}, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
		'-h', $self->{host}, '-p', $self->{port}, '-U', $self->{user}, '-d', $db,
		map { ('-c', $_) } @$stmts);
	local $ENV{PGAPPNAME} = 'hwm chaos';
	local $ENV{PGCONNECT_TIMEOUT} = 10;
	# a lock wait never holds a client for long; CALLs are cut at 20 s
	local $ENV{PGOPTIONS} = '-c lock_timeout=5s -c statement_timeout=20s';
	my $ok = eval {
		IPC::Run::run(\@cmd, '<', \undef, '>', \$out, '2>', \$err,
			IPC::Run::timeout($timeout // 60));
		1;
	};
	return (-1, $out, "timeout: $@") unless $ok;
	return ($? >> 8, $out, $err);
}

# safe(database, sql): its output; dies when it fails.
sub safe
{
	my ($self, $db, $sql) = @_;
	my ($rc, $out, $err) = $self->psql($db, [$sql], 300);
	die "HwmChaos: $db: $sql\n$err" if $rc != 0;
	chomp $out;
	return $out;
}

sub kind_of
{
	my ($i) = @_;
	return $i <= 12 ? 'copy' : $i <= 18 ? 'command' : 'interval';
}

# create_sql(i): the statement that declares pipeline i as alice, due every second
sub create_sql
{
	my ($i) = @_;
	my $p = sprintf('p%02d', $i);
	my $kind = kind_of($i);
	my $create;
	if ($kind eq 'copy')
	{
		$create = "SELECT hwm.create_pipeline('$p', 'src', 'tgt_$p', '{id}', 'id', schedule => '1 second')";
	}
	elsif ($kind eq 'command')
	{
		$create = "SELECT hwm.create_command_pipeline('$p', 'src', 'id', \$c\$INSERT INTO public.clog"
		  . " SELECT '$p', pg_catalog.count(*) FROM public.src AS s"
		  . " WHERE (\$1 IS NULL OR s.id OPERATOR(pg_catalog.>) \$1) AND s.id OPERATOR(pg_catalog.<=) \$2\$c\$,"
		  . " schedule => '1 second')";
	}
	else
	{
		my $batched = $i % 2 ? 'true' : 'false';
		$create = "SELECT hwm.create_interval_pipeline('$p', 'src', 't', '1 second', \$c\$INSERT INTO public.ilog"
		  . " SELECT '$p', \$1, pg_catalog.count(*) FROM public.src AS s"
		  . " WHERE s.t OPERATOR(pg_catalog.>=) \$1 AND s.t OPERATOR(pg_catalog.<) \$2\$c\$,"
		  . " batched => $batched, schedule => '1 second')";
	}
	return "SET ROLE alice; $create";
}

# The tables of one database, owned by alice (run by the superuser)
sub tables_sql
{
	my $sql = q{
CREATE EXTENSION IF NOT EXISTS hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, t timestamptz NOT NULL DEFAULT clock_timestamp(), v int);
CREATE TABLE clog (pipeline text, n bigint);
CREATE TABLE ilog (pipeline text, t timestamptz, n bigint);
ALTER TABLE src OWNER TO alice;
ALTER TABLE clog OWNER TO alice;
ALTER TABLE ilog OWNER TO alice;
INSERT INTO src (v) SELECT g FROM generate_series(1, 100) g;
};
	for my $i (1 .. $PIPELINES)
	{
		next unless kind_of($i) eq 'copy';
		my $p = sprintf('p%02d', $i);
		$sql .= "CREATE TABLE tgt_$p (id bigint PRIMARY KEY, t timestamptz, v int);"
		  . " ALTER TABLE tgt_$p OWNER TO alice;\n";
	}
	return $sql;
}

# setup(filler => N): the role alice, the two databases, their tables and
# pipelines; in the second database, N more rows in hwm.state (unscheduled,
# written directly: thousands of hwm.create_pipeline calls would take
# minutes) so that the scheduler's queries over hwm.state take longer and a
# change that commits while one is under way is more likely
sub setup
{
	my ($self, %o) = @_;
	$self->safe('postgres', q{DO $$ BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'alice') THEN CREATE ROLE alice LOGIN; END IF;
	END $$});
	for my $db (@DATABASES)
	{
		$self->safe('postgres', "CREATE DATABASE $db");
		$self->safe($db, tables_sql());
		$self->safe($db, create_sql($_)) for 1 .. $PIPELINES;
	}
	$self->safe($DATABASES[1], "INSERT INTO hwm.state (pipeline, source, target, unique_key,"
		  . " watermark_column, watermark_type, owner)"
		  . " SELECT 'filler' || g, 'src', 'tgt_p01', '{id}', 'id', 'bigint', 'alice'"
		  . " FROM generate_series(1, $o{filler}) AS g; ANALYZE hwm.state")
	  if $o{filler};
	return;
}

# One random operation: (op, database, pipeline, [statements])
sub pick
{
	my ($self) = @_;
	my $total = 0;
	$total += $_ for values %WEIGHTS;
	my $r = rand($total);
	my $op;
	for my $k (sort keys %WEIGHTS)
	{
		$op = $k;
		last if ($r -= $WEIGHTS{$k}) < 0;
	}
	my $db = $DATABASES[ int(rand(@DATABASES)) ];
	my $i = 1 + int(rand($PIPELINES));
	$i = 19 + int(rand(6)) if $op eq 'rerun_intervals';    # the interval pipelines
	my $p = sprintf('p%02d', $i);
	my $extra = 'chaos_x' . (1 + int(rand(2)));
	my %sql = (
		schedule => "SELECT hwm.schedule('$p', '" . (rand() < 0.8 ? '1 second' : '2 seconds') . "')",
		unschedule => "SELECT hwm.unschedule('$p')",
		pause => "SELECT hwm.pause('$p')",
		resume => "SELECT hwm.resume('$p')",
		set_timeout => "SELECT hwm.set_timeout('$p', "
		  . ('NULL', "'30 seconds'", "'1 minute'")[ int(rand(3)) ] . ")",
		drop => "SELECT hwm.drop_pipeline('$p')",
		create => create_sql($i),
		run => "SELECT * FROM hwm.run('$p'" . (rand() < 0.5 ? ', nowait => true' : '') . ")",
		catch_up => "CALL hwm.catch_up('$p')",
		# the last few intervals done (CALL takes no subquery: a DO block, which
		# may commit, called outside a transaction block without a handler)
		rerun_intervals => "DO \$\$ DECLARE w timestamptz; BEGIN"
		  . " SELECT watermark::timestamptz INTO w FROM hwm.state WHERE pipeline = '$p';"
		  . " CALL hwm.rerun_intervals('$p', (w - interval '" . (1 + int(rand(6))) . " seconds')::text, w::text);"
		  . " END \$\$",
		insert => "INSERT INTO src (v) SELECT g FROM generate_series(1, " . (1 + int(rand(200))) . ") g",
		create_database => "CREATE DATABASE $extra",
		drop_database => "DROP DATABASE IF EXISTS $extra" . (rand() < 0.5 ? ' WITH (FORCE)' : ''),
		terminate_worker => "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		  . " WHERE backend_type = 'hwm worker' ORDER BY random() LIMIT 1",
		terminate_dispatcher => "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		  . " WHERE backend_type = 'hwm dispatcher' ORDER BY random() LIMIT 1",
		terminate_client => "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		  . " WHERE application_name = 'hwm chaos' AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1");
	$p = '' if $op =~ /database|terminate|insert/;
	$db = 'postgres' if $op =~ /database|terminate/;
	$db = $extra if $op eq 'create_database';    # (the log line names it)
	return ($op, $db, $p, $sql{$op});
}

# client(n, seconds): one client's loop, in a child process
sub client
{
	my ($self, $n, $deadline) = @_;
	srand($self->{seed} * 100 + $n);
	open my $log, '>', "$self->{dir}/client-$n.log" or die "client-$n.log: $!";
	$log->autoflush(1);
	my $stamp = "SELECT 'ts ' || extract(epoch FROM clock_timestamp())";
	while (time() < $deadline)
	{
		my ($op, $db, $p, $sql) = $self->pick;
		my @stmts = ($stamp, $sql, $stamp);
		my $connect = $db;
		if ($op eq 'create_database')
		{
			# CREATE DATABASE, then hwm and a scheduled pipeline in it
			@stmts = ($stamp, $sql);
			$connect = 'postgres';
		}
		my ($rc, $out, $err) = $self->psql($connect, \@stmts);
		my @ts = $out =~ /^ts (\S+)$/mg;
		if ($op eq 'create_database' && $rc == 0)
		{
			my ($rc2, undef, $err2) = $self->psql($db, [ tables_sql(), create_sql(1) ]);
			($rc, $err) = ($rc2, $err2);
			push @ts, time() if $rc == 0;    # (not compared with anything)
		}
		$err =~ s/\s+/ /g;
		$err = substr($err, 0, 300);
		printf $log "%s\t%s\t%s\t%s\t%s\t%.6f\t%s\t%s\n", $op, $db, $p, $ts[0] // '',
		  $rc == 0 ? ($ts[1] // '') : '', time(), $rc == 0 ? 'ok' : 'error', $rc == 0 ? '' : $err;
	}
	close $log;
	return;
}

# run(seconds => N, clients => N, kill9 => sub, kill9_every => S, terminate => sub):
# the clients for N seconds; meanwhile, every kill9_every seconds (about),
# kill9->(pid) of a random hwm worker (the caller declares the pid and
# sends the signal, then waits for the server to come back).  Returns when the
# clients have finished.
sub run
{
	my ($self, %o) = @_;
	my $clients = $o{clients} // 4;
	my $seconds = $o{seconds} // 60;
	my $deadline = time() + $seconds;
	my @pids;
	for my $n (1 .. $clients)
	{
		my $pid = fork() // die "fork: $!";
		if ($pid == 0)
		{
			# a child: never run the parent's END blocks (the test's cluster)
			my $ok = eval { $self->client($n, $deadline); 1 };
			print STDERR "HwmChaos client $n: $@" unless $ok;
			POSIX::_exit($ok ? 0 : 1);
		}
		push @pids, $pid;
	}
	srand($self->{seed});
	my @killed;
	if ($o{kill9})
	{
		my $every = $o{kill9_every} // 30;
		my $next = time() + $every * (0.5 + rand());
		while (time() < $deadline - 5)
		{
			sleep(0.5);
			next if time() < $next;
			my ($rc, $out) = $self->psql('postgres',
				["SELECT pid FROM pg_stat_activity WHERE backend_type = 'hwm worker' ORDER BY random() LIMIT 1"]);
			chomp $out;
			next unless $rc == 0 && $out =~ /^\d+$/;
			$o{kill9}->($out);
			push @killed, $out;
			$next = time() + $every * (0.5 + rand());
		}
	}
	my $failed = 0;
	for my $pid (@pids)
	{
		waitpid($pid, 0);
		$failed++ if $? != 0;
	}
	die "HwmChaos: $failed client(s) died" if $failed;
	$self->{killed} = \@killed;
	return $self->operations;
}

# operations: every client's log lines, as hashes
sub operations
{
	my ($self) = @_;
	return $self->{ops} if $self->{ops};
	my @ops;
	for my $f (glob("$self->{dir}/client-*.log"))
	{
		open my $fh, '<', $f or die "$f: $!";
		while (my $line = <$fh>)
		{
			chomp $line;
			my %o;
			@o{qw(op db p t0 t1 tend status err)} = split /\t/, $line, 8;
			push @ops, \%o;
		}
	}
	$self->{ops} = \@ops;
	return \@ops;
}

# summary: "op: ok/total" for every operation, and the errors' kinds
sub summary
{
	my ($self) = @_;
	my (%n, %ok, %errs);
	for my $o (@{ $self->operations })
	{
		$n{ $o->{op} }++;
		$ok{ $o->{op} }++ if $o->{status} eq 'ok';
		if ($o->{status} ne 'ok')
		{
			my $e = $o->{err} // '';
			$e =~ s/^.*?(ERROR|FATAL|timeout|could not connect|server closed)/$1/;
			$e =~ s/"[^"]*"/"..."/g;
			$e =~ s/\d+/N/g;
			$errs{ substr($e, 0, 90) }++;
		}
	}
	my $total = 0;
	$total += $_ for values %n;
	my $s = "operations: $total\n";
	$s .= sprintf("  %-22s %5d (%d ok)\n", $_, $n{$_}, $ok{$_} // 0) for sort keys %n;
	$s .= "errors (expected ones: a dropped or busy pipeline, a killed session):\n";
	$s .= sprintf("  %5d  %s\n", $errs{$_}, $_) for sort { $errs{$b} <=> $errs{$a} } keys %errs;
	return $s;
}

# paused_windows: db => pipeline => [[from, to], ...], the times during
# which the pipeline was certainly paused: from a pause's commit (the
# timestamp taken after it) until the start of the first resume or create
# that may have committed after that pause (any that ended after the pause
# began, failed ones included: a failure may come after the commit; a failed
# one ended when its psql returned, tend, on the same machine's clock).
sub paused_windows
{
	my ($self) = @_;
	my (%pauses, %enables);
	for my $o (@{ $self->operations })
	{
		next unless $o->{p} && $o->{t0} ne '';
		if ($o->{op} eq 'pause' && $o->{status} eq 'ok' && $o->{t1} ne '')
		{
			push @{ $pauses{ $o->{db} }{ $o->{p} } }, [ $o->{t0}, $o->{t1} ];
		}
		elsif ($o->{op} eq 'resume' || $o->{op} eq 'create')
		{
			push @{ $enables{ $o->{db} }{ $o->{p} } },
			  [ $o->{t0}, $o->{t1} ne '' ? $o->{t1} : $o->{tend} ];
		}
	}
	my %w;
	for my $db (keys %pauses)
	{
		for my $p (keys %{ $pauses{$db} })
		{
			for my $pause (@{ $pauses{$db}{$p} })
			{
				my ($pb, $pa) = @$pause;
				my $to = 9e99;
				for my $e (@{ $enables{$db}{$p} // [] })
				{
					$to = $e->[0] if $e->[1] > $pb && $e->[0] < $to;
				}
				push @{ $w{$db}{$p} }, [ $pa, $to ] if $to > $pa;
			}
		}
	}
	return \%w;
}

# paused_violations: the scheduled runs (run_by alice, not skipped) that
# started inside a window of paused_windows; one line each
sub paused_violations
{
	my ($self) = @_;
	my $w = $self->paused_windows;
	my @bad;
	$self->{paused_windows} = 0;
	for my $db (sort keys %$w)
	{
		my $runs = $self->safe($db, "SELECT pipeline, run_id, status, extract(epoch FROM started_at)"
			  . " FROM hwm.runs WHERE run_by = 'alice' AND status <> 'skipped' AND pipeline IS NOT NULL");
		my %runs;
		for (split /\n/, $runs)
		{
			my ($p, $id, $status, $at) = split /\|/;
			push @{ $runs{$p} }, [ $id, $status, $at ];
		}
		for my $p (sort keys %{ $w->{$db} })
		{
			for my $win (@{ $w->{$db}{$p} })
			{
				$self->{paused_windows}++;
				for my $r (@{ $runs{$p} // [] })
				{
					push @bad, sprintf("%s: pipeline %s run %d (%s) started at %.3f, paused from %.3f until %s",
						$db, $p, $r->[0], $r->[1], $r->[2], $win->[0], $win->[1] > 1e99 ? 'the end' : sprintf('%.3f', $win->[1]))
					  if $r->[2] >= $win->[0] && $r->[2] < $win->[1];
				}
			}
		}
	}
	return @bad;
}

# mark: the newest run id of each database, before waiting for new runs
sub mark
{
	my ($self) = @_;
	$self->{mark}{$_} = $self->safe($_, 'SELECT coalesce(max(run_id), 0) FROM hwm.runs') for @DATABASES;
	return;
}

# due_query(db): the pipelines of db that are scheduled, not paused and
# have no succeeded scheduled run since mark, as one line
sub due_query
{
	my ($self, $db) = @_;
	return "SELECT coalesce(string_agg(s.pipeline, ',' ORDER BY s.pipeline), '') FROM hwm.state AS s"
	  . " WHERE s.schedule IS NOT NULL AND s.enabled AND NOT EXISTS (SELECT FROM hwm.runs AS r"
	  . " WHERE r.pipeline = s.pipeline AND r.run_id > $self->{mark}{$db} AND r.status = 'succeeded'"
	  . " AND r.run_by = 'alice')";
}

# log_crashes(text, {pid => 1}): the server log's lines that show a crash:
# a process terminated by a signal (signal 9 of an allowed pid excepted),
# a failed assertion (TRAP:) or a PANIC
sub log_crashes
{
	my ($text, $allowed) = @_;
	my @bad;
	for my $line (split /\n/, $text)
	{
		if ($line =~ /\(PID (\d+)\) was terminated by signal (\d+)/)
		{
			push @bad, $line unless $2 == 9 && $allowed->{$1};
		}
		elsif ($line =~ /terminated by signal|TRAP:|PANIC:/)
		{
			push @bad, $line;
		}
	}
	return @bad;
}

1;
