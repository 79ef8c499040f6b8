# HwmTest: what the TAP tests in test/t share.
#
#   use HwmTest;
#   my $node = new_node('name', 'hwm.max_workers' => 2, ...);
#   my $node = new_node('name', mock_clock => 1);    # the scheduler's time the test moves
#   sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL);
#   my $standby = new_standby($node, 'standby', 'hwm.enabled' => 'on');
#   sql($node, 'postgres', 'SELECT ...');
#   wait_for($node, 'postgres', 'SELECT count(*) FROM tgt', '10', 'test name');
#   same_rows($node, 'postgres', 'src', 'tgt', 'test name');
#   my $soak = soak_start($node, seconds => 30, writer => $sql, runner => $sql);
#   my ($wout, $werr, $rout, $rerr) = soak_finish($soak);
#   soak_finish_ok($soak);    # the same, and the runner ran without an error
#   soak_start(..., writer => $HwmTest::UPSERT_WRITER, ...)
#   kill9($node, $pid);       # a crash on purpose, declared for the log guard
#   wait_back($node) or die;  # the server accepts connections again
#   pause_key('worker_applies_wakes')             # a pause point's lock key (SQL)
#   advisory_locks_sql(pause_key(...), waiting => 1)  # who waits for it
#
# prove finds this file through `-I test/perl`, which the Makefile adds to
# PG_PROVE_FLAGS (not PROVE_FLAGS: scripts/test.sh sets that one on the
# command line).
package HwmTest;

use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(time);

our @EXPORT = qw(new_node new_standby sql wait_for same_rows soak_start soak_finish soak_finish_ok gated_setup refuse_claim_sql kill9 wait_back allowed_kills pause_key advisory_locks_sql);

# new_node(name, setting => value, ...): a node, initialised and started, with
# shared_preload_libraries = 'hwm' and the settings given, in that order, in
# its postgresql.conf.  Each value is written quoted.  Five keys are not
# settings: shared_preload_libraries replaces 'hwm' (for another library
# beside hwm; '' preloads nothing), mock_clock => 1 preloads the tests' own
# module after it (the scheduler's mock clock, test/modules/hwm_test/clock_mock.c;
# declare its functions with $MOCK_CLOCK_SQL), init => { ... } is passed to
# $node->init (allows_streaming, extra), install_path => $dir makes a node
# of the PostgreSQL installed there (another major version), and start => 0
# leaves the node stopped (for pg_upgrade).
sub new_node
{
	my ($name, @conf) = @_;
	my %init;
	my %new;
	my $preload = 'hwm';
	my $mock_clock = 0;
	my $start = 1;
	my $conf = '';
	while (my ($key, $value) = splice(@conf, 0, 2))
	{
		if ($key eq 'init') { %init = %$value; next; }
		if ($key eq 'shared_preload_libraries') { $preload = $value; next; }
		if ($key eq 'mock_clock') { $mock_clock = $value; next; }
		if ($key eq 'install_path') { $new{install_path} = $value; next; }
		if ($key eq 'start') { $start = $value; next; }
		$conf .= "$key = " . quote($value) . "\n";
	}
	$preload = join(', ', grep { $_ ne '' } $preload, 'hwm_test') if $mock_clock;
	my $node = PostgreSQL::Test::Cluster->new($name, %new);
	if ($mock_clock)
	{
		my $dir = $node->config_data('--pkglibdir');
		BAIL_OUT("the mock clock needs the tests' own module hwm_test in $dir:"
			  . " run 'make install-test-module' (as root, as 'make install')")
		  unless grep { -e "$dir/hwm_test$_" } ('.so', '.dylib', '.dll');
	}
	$node->init(%init);
	$conf = "shared_preload_libraries = " . quote($preload) . "\n" . $conf
	  if $preload ne '';
	$node->append_conf('postgresql.conf', $conf) if $conf ne '';
	$node->start if $start;
	return $node;
}

# new_standby(primary, name, setting => value, ...): a streaming standby of
# primary, from a new backup of it, with the settings given (quoted, after
# the primary's), started and caught up with the primary.
sub new_standby
{
	my ($primary, $name, @conf) = @_;
	my $conf = '';
	while (my ($key, $value) = splice(@conf, 0, 2))
	{
		$conf .= "$key = " . quote($value) . "\n";
	}
	$primary->backup($name);
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, $name, has_streaming => 1);
	$standby->append_conf('postgresql.conf', $conf) if $conf ne '';
	$standby->start;
	$primary->wait_for_catchup($standby);
	return $standby;
}

sub quote
{
	my ($value) = @_;
	return "'" . ($value =~ s/'/''/gr) . "'";
}

# sql(node, database, query): its output; dies when the query fails, with
# psql's error and the server log's last lines (a test that fails once must
# say why: the log is gone once the suite's temp dir is).
sub sql
{
	my ($node, $db, $query) = @_;
	my ($ret, $out, $err) = $node->psql($db, $query);
	return $out if $ret == 0;
	my @log = split /\n/, (-f $node->logfile ? PostgreSQL::Test::Utils::slurp_file($node->logfile) : '');
	splice @log, 0, -40 if @log > 40;
	die "query failed in database $db (psql exit $ret): $query\n$err\n"
	  . "last lines of " . $node->logfile . ":\n" . join("\n", @log) . "\n";
}

# wait_for(node, database, query, expected, test name): one test, that the
# query's output becomes expected (poll_query_until: 't' when expected is
# undef) within the timeout.  When it does not, the database's last ten runs
# are shown (where it has hwm.runs).
sub wait_for
{
	my ($node, $db, $query, $expected, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return 1 if ok($node->poll_query_until($db, $query, $expected), $what);
	my (undef, $runs) = $node->psql($db,
		'SELECT pipeline, status, error_sqlstate, error FROM hwm.runs ORDER BY run_id DESC LIMIT 10');
	diag($runs);
	return 0;
}

# same_rows(node, database, source, target, test name, columns => 'a, b'):
# one test, that two tables (or subqueries with an alias, "(SELECT ...) AS
# g") hold the same rows,
# duplicates counted (EXCEPT ALL both ways), over the columns given (all by
# default).  When they differ, the first twenty rows that one side has more
# of than the other are shown.
sub same_rows
{
	my ($node, $db, $source, $target, $what, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $cols = $o{columns} // '*';
	my $diff = qq{
SELECT 'source' AS side, d::text AS row FROM (SELECT $cols FROM $source EXCEPT ALL SELECT $cols FROM $target) d
UNION ALL
SELECT 'target', d::text FROM (SELECT $cols FROM $target EXCEPT ALL SELECT $cols FROM $source) d};
	my $n = sql($node, $db, "SELECT count(*) FROM ($diff) x");
	return 1 if is($n, '0', $what);
	diag(sql($node, $db, "SELECT * FROM ($diff) x ORDER BY 1, 2 LIMIT 20"));
	return 0;
}

# soak_start(node, seconds => N, writer => script, runner => script,
#            runner_flags => [...]): pgbench against the node's postgres
# database for N seconds, started at once and not waited for: four writer
# clients on two threads running the writer script, one runner client
# running the runner script (with runner_flags added, e.g. '-r').  Both run
# with the environment of the caller (PGOPTIONS: set it before).
sub soak_start
{
	my ($node, %o) = @_;
	my $dir = tempdir(CLEANUP => 1);
	for my $script ('writer', 'runner')
	{
		open my $fh, '>', "$dir/$script.sql" or die "$dir/$script.sql: $!";
		print $fh $o{$script};
		close $fh or die "$dir/$script.sql: $!";
	}
	my @connect = ('-h', $node->host, '-p', $node->port, 'postgres');
	my %soak = (wout => '', werr => '', rout => '', rerr => '');
	$soak{writers} = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', $o{seconds}, '-f', "$dir/writer.sql", @connect ],
		'>', \$soak{wout}, '2>', \$soak{werr});
	$soak{runner} = IPC::Run::start(
		[ 'pgbench', '-n', @{ $o{runner_flags} // [] }, '-c', '1', '-T', $o{seconds},
			'-f', "$dir/runner.sql", @connect ],
		'>', \$soak{rout}, '2>', \$soak{rerr});
	return \%soak;
}

# soak_finish(soak): waits for both pgbench runs to end; returns the writers'
# output and errors, then the runner's.
sub soak_finish
{
	my ($soak) = @_;
	$soak->{writers}->finish;
	$soak->{runner}->finish;
	return @$soak{qw(wout werr rout rerr)};
}

# soak_finish_ok(soak): soak_finish, with both outputs noted, and two tests:
# the runner fired at least once, and none of its statements failed.
# Returns what soak_finish returns.
sub soak_finish_ok
{
	my ($soak) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($wout, $werr, $rout, $rerr) = soak_finish($soak);
	note "writers: $wout $werr";
	note "runner: $rout $rerr";
	like($rout, qr/number of transactions actually processed: [1-9]/, 'the runner fired');
	unlike($rerr, qr/ERROR/, 'no run failed');
	return ($wout, $werr, $rout, $rerr);
}

# The writer of the soaks whose source is src (id bigint primary key, v int,
# updated_at timestamptz DEFAULT now(), seq bigint DEFAULT nextval('src_seq')):
# each transaction upserts two random ids of 5,000 after sleeping up to 200
# ms inside it, so that its rows commit late against their stamps.  Two
# writers updating the same two rows in opposite order may deadlock: that
# writer's transaction aborts, harmlessly (pgbench reports it failed).
our $UPSERT_WRITER = <<'SQL';
\set id random(1, 5000)
\set id2 random(1, 5000)
\set len random(0, 200)
BEGIN;
SELECT 1;
\sleep :len ms
INSERT INTO src (id, v) VALUES (:id, 1)
  ON CONFLICT (id) DO UPDATE SET v = src.v + 1, updated_at = now(), seq = nextval('src_seq');
INSERT INTO src (id, v) VALUES (:id2, 1)
  ON CONFLICT (id) DO UPDATE SET v = src.v + 1, updated_at = now(), seq = nextval('src_seq');
COMMIT;
SQL

# The functions of the scheduler's mock clock (a node made with mock_clock =>
# 1), declared in the database where a test runs it:
# hwm_test_advance_clock(interval) moves the scheduler's time forward (never
# back) and wakes hwm's launcher, returning the scheduler's time;
# hwm_test_clock_offset() is how far that time is ahead of the real clock
# (clock_timestamp() + hwm_test_clock_offset() is the scheduler's now).
# Times that rows record (hwm.runs.finished_at, last_run_finished_at) stay on
# the real clock; next_run_at is on the scheduler's (src/clock.c).
our $MOCK_CLOCK_SQL = <<'SQL';
CREATE FUNCTION hwm_test_advance_clock(interval) RETURNS timestamptz
  LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_advance_clock';
CREATE FUNCTION hwm_test_clock_offset() RETURNS interval
  LANGUAGE c STRICT AS 'hwm_test', 'hwm_test_clock_offset';
SQL

# gated_setup(rows, pipeline): SQL that creates the extension, src (id
# identity, v text) with rows rows, tgt (id primary key, v text) and a
# pipeline loading one into the other every second, whose inserts into tgt
# wait at a gate: while a session holds pg_advisory_lock(4242), a run that
# has rows to write blocks in the middle of its transaction (after the upsert
# started, before the watermark is stored).
sub gated_setup
{
	my ($rows, $pipeline) = @_;
	return qq{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END \$\$;
CREATE TRIGGER gate BEFORE INSERT ON tgt FOR EACH ROW EXECUTE FUNCTION gate();
INSERT INTO src (v) SELECT 'a' || g FROM generate_series(1, $rows) g;
SELECT hwm.create_pipeline('$pipeline', 'src', 'tgt', '{id}', 'id', schedule => '1 second');
};
}

# refuse_claim_sql(pipeline): SQL, run as the catalog's owner, that plants a
# trigger refuse_claim on hwm.runs (function public.refuse_claim()) making the
# scheduler's claim of that pipeline's run fail with "planted fault in
# claiming <pipeline>".
sub refuse_claim_sql
{
	my ($pipeline) = @_;
	return qq{
CREATE FUNCTION public.refuse_claim() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF NEW.pipeline = '$pipeline' AND NEW.status = 'running' THEN
    RAISE EXCEPTION 'planted fault in claiming $pipeline';
  END IF;
  RETURN NEW;
END \$\$;
CREATE TRIGGER refuse_claim BEFORE INSERT ON hwm.runs FOR EACH ROW EXECUTE FUNCTION public.refuse_claim();
};
}

# kill9(node, pid): kill -9 of one of the node's server processes, on
# purpose.  The pid is declared first in <node's log>.signals ("9 <pid>" a
# line), which scripts/test.sh's log guard reads: the postmaster's "(PID n)
# was terminated by signal 9" of that pid is then not a crash.  Any other
# signal, another pid, TRAP: and PANIC: always are.
sub kill9
{
	my ($node, $pid) = @_;
	my $marker = $node->logfile . '.signals';
	open my $fh, '>>', $marker or die "$marker: $!";
	print $fh "9 $pid\n";
	close $fh or die "$marker: $!";
	# (where the log stood: wait_back waits for the restart after it)
	my $offset = -s $node->logfile;
	my $killed = kill 'KILL', $pid;
	$node->{hwm_crash} //= [ $offset, $pid ] if $killed;
	return $killed;
}

# crash_began(node, offset, pid): true once the postmaster has begun the
# restart after kill9 of pid (the log says so after offset), or once pid
# is gone without having been terminated by the signal.  The second case
# is a process that had already exited when the signal came: a zombie (or
# one inside exit()) takes SIGKILL and keeps its own exit status, so no
# restart follows.  The chaos test kills a random worker, and one that had
# just finished its run met it so (090 then waited out the timeout).
sub crash_began
{
	my ($node, $offset, $pid) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $gone_at;
	while (time() < $deadline)
	{
		my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile, $offset);
		return 1 if $log =~ /all server processes terminated; reinitializing/;
		if ($log !~ /\(PID $pid\) was terminated by signal/
			&& !kill(0, $pid) && $!{ESRCH})
		{
			# reaped; the postmaster writes the line right after the reap
			$gone_at //= time();
			if (time() - $gone_at > 1)
			{
				note("pid $pid had exited before kill -9 reached it: no restart follows");
				return 1;
			}
		}
		select(undef, undef, undef, 0.05);
	}
	return 0;
}

# wait_back(node): true once the node accepts connections again after a
# crash (within the harness's default timeout).  Not poll_query_until: it
# writes the query to psql's stdin, and a psql that exits at once because
# the server is still restarting makes that write fail (EPIPE), which
# IPC::Run raises as "ack Broken pipe" and which ended a test with exit 32.
# After a kill9, it first waits for the postmaster to have begun the
# restart (crash_began): right after the kill the server still answered,
# and the next query met it in crash recovery ("the database system is not
# yet accepting connections"; 069 failed so on PostgreSQL 15, 30 ms after
# the kill).
sub wait_back
{
	my ($node) = @_;
	if (my $crash = delete $node->{hwm_crash})
	{
		return 0 unless crash_began($node, @$crash);
	}
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my $up = eval {
			local $SIG{PIPE} = 'IGNORE';
			$node->safe_psql('postgres', 'SELECT true') eq 't';
		};
		return 1 if $up;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# allowed_kills(node): { pid => 1 } of the pids kill9 killed
sub allowed_kills
{
	my ($node) = @_;
	my %pids;
	my $marker = $node->logfile . '.signals';
	return \%pids unless -e $marker;
	open my $fh, '<', $marker or die "$marker: $!";
	while (<$fh>) { $pids{$1} = 1 if /^9 (\d+)$/; }
	close $fh;
	return \%pids;
}

# pause_key(point): the SQL expression of the advisory lock key that a pause
# point of hwm's scheduler waits for when it is armed (hwm_test.pause_points;
# src/clock.h lists the points, test/modules/hwm_test/pause_points.c holds
# them): a test session holds pg_advisory_lock(<key>) to hold the point.
sub pause_key
{
	my ($point) = @_;
	return "hashtextextended('$point', 0)";
}

# advisory_locks_sql(key, waiting => 1): SQL counting the processes that hold
# or wait for the advisory lock of a bigint key (an SQL expression: a pause
# point's, or a gate's number), with waiting => 1 only those that wait.  A
# bigint key shows in pg_locks as classid (its high 32 bits) and objid (its
# low 32).
sub advisory_locks_sql
{
	my ($key, %opt) = @_;
	my $waiting = $opt{waiting} ? 'AND NOT l.granted' : '';
	return qq{SELECT count(*) FROM pg_locks AS l, CAST($key AS bigint) AS k
 WHERE l.locktype = 'advisory' $waiting AND l.objsubid = 1
   AND l.classid = ((k >> 32) & 4294967295)::oid AND l.objid = (k & 4294967295)::oid};
}

1;
