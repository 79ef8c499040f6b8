# bench/citus.pl: a slice loaded by hwm.run between co-located distributed
# tables on a coordinator and two workers, against the same statement
# written by hand on the same cluster.  Run it through bench/citus.sh.
#
# Source and the two targets are distributed on id, co-located, 4 shards.
# Each repetition inserts SLICE new rows into the source, then loads them
# into one target by hwm.run and into the other by the hand-written upsert,
# alternating which goes first; the report gives medians and the ratio, and
# the evidence that both ran as one task per pair of co-located shards (the
# commands Citus sent, with citus.log_remote_commands).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time);

my ($rows, $slice, $reps, $out) = @ARGV;
$rows //= 200000;
$slice //= 20000;
$reps //= 7;

my @nodes;
for my $name (qw(coordinator worker1 worker2))
{
	my $node = PostgreSQL::Test::Cluster->new("bench_$name");
	$node->init;
	$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'citus,hwm'
max_prepared_transactions = 20
citus.node_conninfo = 'sslmode=prefer'
hwm.allow_superuser_pipelines = on
max_worker_processes = 16
shared_buffers = 256MB
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	push @nodes, $node;
}
my ($coord, @workers) = @nodes;
$coord->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d)}, $coord->host, $coord->port));
$coord->safe_psql('postgres', sprintf(q{SELECT citus_add_node('%s', %d)}, $_->host, $_->port)) for @workers;
$coord->safe_psql('postgres', 'CREATE EXTENSION hwm');
$coord->safe_psql('postgres', qq{
SET citus.shard_count = 4;
CREATE TABLE public.events (id bigint PRIMARY KEY, day date NOT NULL,
                            updated_at timestamptz NOT NULL, amount numeric NOT NULL);
CREATE INDEX ON public.events (updated_at);
SELECT create_distributed_table('public.events', 'id');
CREATE TABLE public.by_hwm (LIKE public.events INCLUDING ALL);
SELECT create_distributed_table('public.by_hwm', 'id', colocate_with => 'public.events');
CREATE TABLE public.by_hand (LIKE public.events INCLUDING ALL);
SELECT create_distributed_table('public.by_hand', 'id', colocate_with => 'public.events');
CREATE TABLE public.hand_mark (w timestamptz);
INSERT INTO public.hand_mark VALUES ('-infinity');
INSERT INTO public.events
SELECT i, date '2024-01-01' + i % 30, timestamptz '2024-01-01 00:00+00' + i * interval '1 second', i
  FROM generate_series(1, $rows) i;
SELECT hwm.create_pipeline('bench', 'public.events', 'public.by_hwm', '{id}', 'updated_at');
});

# The hand-written load: the same upsert of the rows above the last mark
# (a literal, as a script would pass it), skipping unchanged rows, then the
# mark moves to the greatest value loaded (no safe-watermark logic: the
# comparison is generous to the hand).
sub hand_load
{
	my $w = $coord->safe_psql('postgres', 'SELECT w FROM public.hand_mark');
	my $sql = qq{
INSERT INTO public.by_hand AS t (id, day, updated_at, amount)
SELECT s.id, s.day, s.updated_at, s.amount FROM public.events s
 WHERE s.updated_at > '$w'
ON CONFLICT (id) DO UPDATE SET day = excluded.day, updated_at = excluded.updated_at, amount = excluded.amount
 WHERE (t.day, t.updated_at, t.amount) IS DISTINCT FROM (excluded.day, excluded.updated_at, excluded.amount);
UPDATE public.hand_mark SET w = (SELECT max(updated_at) FROM public.by_hand);};
	my $t0 = time;
	$coord->safe_psql('postgres', $sql);
	return time - $t0;
}
sub hwm_load
{
	my $t0 = time;
	$coord->safe_psql('postgres', q{SELECT hwm.run('bench')});
	return time - $t0;
}

# the first full load of each (not timed)
hand_load();
hwm_load();

my (@t_hwm, @t_hand);
my $next = $rows + 1;
for my $rep (1 .. $reps)
{
	$coord->safe_psql('postgres', qq{
INSERT INTO public.events
SELECT i, date '2024-01-01' + i % 30, timestamptz '2024-01-01 00:00+00' + i * interval '1 second', i
  FROM generate_series($next, $next + $slice - 1) i});
	$next += $slice;
	if ($rep % 2)
	{
		push @t_hwm, hwm_load();
		push @t_hand, hand_load();
	}
	else
	{
		push @t_hand, hand_load();
		push @t_hwm, hwm_load();
	}
}

# both targets equal the source
my $diff = $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (SELECT * FROM public.events EXCEPT SELECT * FROM public.by_hwm) a)
     + (SELECT count(*) FROM (SELECT * FROM public.by_hwm EXCEPT SELECT * FROM public.events) b)
     + (SELECT count(*) FROM (SELECT * FROM public.events EXCEPT SELECT * FROM public.by_hand) c)
     + (SELECT count(*) FROM (SELECT * FROM public.by_hand EXCEPT SELECT * FROM public.events) d)});

# evidence: the commands Citus sends for one more slice, for each
$coord->safe_psql('postgres', qq{
INSERT INTO public.events
SELECT i, date '2024-01-01' + i % 30, now(), i FROM generate_series($next, $next + 99) i});
my (undef, undef, $err_hwm) = $coord->psql('postgres',
	q{SET citus.log_remote_commands = on; SELECT hwm.run('bench')});
my $w = $coord->safe_psql('postgres', 'SELECT w FROM public.hand_mark');
my $explain = $coord->safe_psql('postgres', qq{
EXPLAIN (COSTS OFF) INSERT INTO public.by_hand AS t (id, day, updated_at, amount)
SELECT s.id, s.day, s.updated_at, s.amount FROM public.events s WHERE s.updated_at > '$w'
ON CONFLICT (id) DO UPDATE SET amount = excluded.amount});
my %pairs;
$pairs{"$1/$2"} = 1 while $err_hwm =~ /issuing INSERT INTO public\.by_hwm_(\d+) .*?public\.events_(\d+)/g;
my ($hand_tasks) = $explain =~ /Task Count: (\d+)/;

sub median { my @s = sort { $a <=> $b } @_; return $s[int(@s / 2)]; }
my ($mh, $mb) = (median(@t_hwm), median(@t_hand));
my $versions = $coord->safe_psql('postgres', q{
SELECT substring(citus_version() from '^Citus [0-9.]+') || ', PostgreSQL ' || current_setting('server_version')});
my $report = sprintf(<<'MD', $versions, $rows, $slice, $reps, $mh * 1000, (sort { $a <=> $b } @t_hwm)[0] * 1000, (sort { $a <=> $b } @t_hwm)[-1] * 1000, $mb * 1000, (sort { $a <=> $b } @t_hand)[0] * 1000, (sort { $a <=> $b } @t_hand)[-1] * 1000, $mh / $mb, scalar(keys %pairs), join(', ', sort keys %pairs), $hand_tasks // '?', $diff);
# Citus: a slice loaded by hwm.run against the hand-written upsert

Coordinator and two workers (%s) on one machine,
source and targets distributed on `id`, co-located, 4 shards; %d rows, then
slices of %d new rows, %d repetitions alternating which goes first. Times
are the client's round trip of one call (the hand's includes moving its mark).

| contender | median ms | min – max ms |
|---|---|---|
| `hwm.run` | %.0f | %.0f – %.0f |
| hand-written `INSERT ... SELECT ... ON CONFLICT` | %.0f | %.0f – %.0f |

**ratio hwm / hand (medians): %.2f**

Pushed down: `hwm.run`'s upsert was sent as %d commands, each naming one
shard of the target and one of the source (target/source shard ids: %s); the
hand-written statement's plan has Task Count: %s. Rows differing from the
source after the runs (both targets, both directions of EXCEPT): %s.
MD
print $report;
if ($out)
{
	open my $fh, '>', $out or die "$out: $!";
	print $fh $report;
	close $fh;
}
$_->stop for @nodes;
