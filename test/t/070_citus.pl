# hwm on Citus: a coordinator and two workers.
#
# Source and targets are distributed on the key and co-located, so every
# statement of a run runs shard by shard on the workers.  The test loads by
# hwm.run, catches a late row by the lookback (whose newest-partitions query
# must be one Citus can run: no recursive CTE), overwrites and backfills,
# and after each step checks that the target equals the source through the
# distributed tables (symmetric EXCEPT): an operation that reports rows
# written has changed what queries read.  A partitioned distributed target
# must never take the partition exchange (it would trade the coordinator's
# empty shell partitions and change nothing): the overwrite goes row by row
# with a NOTICE saying why.  hwm.swap and hwm.create_staging refuse Citus
# tables, and create_pipeline refuses the layouts whose statements Citus
# cannot run (a local or reference table with a distributed one, tables not
# co-located, a unique key without the distribution column).
#
# Citus is a test dependency (scripts/citus.sh builds it from
# ../shared/vendor and installs it into a PostgreSQL): without it in the
# PostgreSQL under test, the test is skipped.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => "Citus is not installed in the PostgreSQL under test ($sharedir/extension/citus.control is missing; scripts/citus.sh installs it)"
  unless -f "$sharedir/extension/citus.control";

my @nodes;
for my $name (qw(coordinator worker1 worker2))
{
	my $node = new_node($name, shared_preload_libraries => 'citus,hwm',
		max_prepared_transactions => 20, max_connections => 60,
		'citus.node_conninfo' => 'sslmode=prefer', 'hwm.allow_superuser_pipelines' => 'on',
		max_worker_processes => 16);
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	push @nodes, $node;
}
my ($coord, @workers) = @nodes;
$coord->safe_psql('postgres', sprintf(q{SELECT citus_set_coordinator_host('%s', %d)},
	$coord->host, $coord->port));
for my $w (@workers)
{
	$coord->safe_psql('postgres', sprintf(q{SELECT citus_add_node('%s', %d)}, $w->host, $w->port));
}
is($coord->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'two workers');
# hwm on every node: CREATE EXTENSION on the coordinator is propagated
$coord->safe_psql('postgres', 'CREATE EXTENSION hwm');
for my $w (@workers)
{
	is($w->safe_psql('postgres', q{SELECT count(*) FROM pg_extension WHERE extname = 'hwm'}),
		'1', 'hwm propagated to ' . $w->name);
}

$coord->safe_psql('postgres', q{
SET citus.shard_count = 4;
CREATE TABLE public.events (id bigint PRIMARY KEY, day date NOT NULL,
                            updated_at timestamptz NOT NULL, amount numeric NOT NULL);
SELECT create_distributed_table('public.events', 'id');
CREATE TABLE public.flat (LIKE public.events INCLUDING ALL);
SELECT create_distributed_table('public.flat', 'id', colocate_with => 'public.events');
CREATE TABLE public.parted (id bigint NOT NULL, day date NOT NULL,
                            updated_at timestamptz NOT NULL, amount numeric NOT NULL,
                            PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE public.%I PARTITION OF public.parted FOR VALUES FROM (%L) TO (%L)',
              'parted_' || to_char(d, 'MMDD'), d, d + 1)
  FROM generate_series(0, 9) i, LATERAL (SELECT date '2024-01-01' + i AS d) x \gexec
SELECT create_distributed_table('public.parted', 'id', colocate_with => 'public.events');
INSERT INTO public.events
SELECT i, date '2024-01-01' + i / 20, timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i
  FROM generate_series(0, 99) i;
SELECT hwm.create_pipeline('flat', 'public.events', 'public.flat', '{id}', 'updated_at',
                           partition_column => 'day', lookback => 2);
SELECT hwm.create_pipeline('parted', 'public.events', 'public.parted', '{id,day}', 'updated_at',
                           partition_column => 'day', lookback => 2);
});

# Both directions of EXCEPT are empty, and the counts agree
sub same_as_source
{
	my ($target, $what) = @_;
	my $cols = 'id, day, updated_at, amount';
	is( $coord->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM ((SELECT $cols FROM public.events EXCEPT ALL SELECT $cols FROM public.$target)
                              UNION ALL
                              (SELECT $cols FROM public.$target EXCEPT ALL SELECT $cols FROM public.events)) d)
       || '/' || (SELECT count(*) FROM public.$target)}),
		'0/' . $coord->safe_psql('postgres', 'SELECT count(*) FROM public.events'),
		"$target equals the source $what");
}

# 1. the first loads (the lookback runs too: no recursive CTE on Citus)
for my $p (qw(flat parted))
{
	my ($ret, $out, $err) = $coord->psql('postgres', qq{SELECT rows_upserted FROM hwm.run('$p')});
	is($ret, 0, "first run of $p succeeds") or diag $err;
	unlike($err, qr/exchanged partition/, "$p: no partition exchanged");
	same_as_source($p, 'after the first run');
}

# 2. a late row: committed below the watermark, in a recent partition
$coord->safe_psql('postgres', q{
INSERT INTO public.events VALUES (1000, date '2024-01-05', timestamptz '2024-01-01 00:00+00', 7)});
for my $p (qw(flat parted))
{
	my ($ret, $out, $err) = $coord->psql('postgres', qq{SELECT partitions_overwritten FROM hwm.run('$p')});
	is($ret, 0, "$p: run with lookback succeeds") or diag $err;
	same_as_source($p, 'after the late row (lookback)');
}

# 3. overwrite an old range that changed without touching updated_at
$coord->safe_psql('postgres', q{
UPDATE public.events SET amount = amount + 1000 WHERE day = date '2024-01-02';
DELETE FROM public.events WHERE id = 3;
INSERT INTO public.events VALUES (1001, date '2024-01-01', timestamptz '2023-12-01 00:00+00', 1)});
for my $p (qw(flat parted))
{
	my ($ret, $out, $err) = $coord->psql('postgres',
		qq{SELECT rows_deleted || '/' || rows_inserted FROM hwm.overwrite('$p', '2024-01-01', '2024-01-02')});
	is($ret, 0, "$p: overwrite succeeds") or diag $err;
	same_as_source($p, 'after the overwrite');
}
# pushed down: each statement of the overwrite runs on the workers as one
# task per pair of co-located shards (the commands Citus sends name a shard
# of the target and a shard of the source), nothing is pulled through here
$coord->safe_psql('postgres', q{UPDATE public.events SET amount = amount + 1 WHERE day = date '2024-01-02'});
my ($ret, $out, $err) = $coord->psql('postgres', q{
SET citus.log_remote_commands = on;
SELECT run_id FROM hwm.overwrite('flat', '2024-01-01', '2024-01-02')});
my %tasks;
while ($err =~ /issuing (DELETE FROM|INSERT INTO) public\.flat_(\d+) .*?public\.events_(\d+)/g)
{
	$tasks{$1}{"$2/$3"} = 1;
}
is(scalar(keys %{ $tasks{'DELETE FROM'} || {} }), 4, 'the delete runs as 4 tasks, one per shard pair')
  or diag $err;
is(scalar(keys %{ $tasks{'INSERT INTO'} || {} }), 4, 'the upsert runs as 4 tasks, one per shard pair');
unlike($err, qr/repartition|collect|intermediate result/i, 'no rows are pulled to the coordinator');
same_as_source('flat', 'after the pushed-down overwrite');

# the partitioned target's covered partitions went row by row, with the reason
($ret, $out, $err) = $coord->psql('postgres',
	q{SELECT run_id FROM hwm.overwrite('parted', '2024-01-03', '2024-01-04')});
like($err, qr/not exchanged: it is a Citus table, whose rows live on the shards/,
	'the exchange of a Citus partition gives way to the diff, with a NOTICE');
is($coord->safe_psql('postgres',
	q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'parted' AND method LIKE 'exchange%'}),
	'0', 'no run of the partitioned Citus target recorded an exchange');

# 4. backfill, one partition per transaction
$coord->safe_psql('postgres', q{
UPDATE public.events SET amount = amount * 2 WHERE day BETWEEN date '2024-01-03' AND date '2024-01-04'});
for my $p (qw(flat parted))
{
	($ret, $out, $err) = $coord->psql('postgres', qq{CALL hwm.backfill('$p', '2024-01-01', '2024-01-05')});
	is($ret, 0, "$p: backfill succeeds") or diag $err;
	same_as_source($p, 'after the backfill');
}

# 5. hwm.swap and hwm.create_staging refuse Citus tables, and change nothing
$coord->safe_psql('postgres', q{
CREATE TABLE public.flat_new (LIKE public.flat INCLUDING ALL);
INSERT INTO public.flat_new SELECT * FROM public.events WHERE id < 10});
($ret, $out, $err) = $coord->psql('postgres', q{CALL hwm.swap('public.flat', 'public.flat_new')});
like($err, qr/target public\.flat is a Citus distributed table/, 'swap of a distributed target is refused');
like($err, qr/HINT:.*hwm\.overwrite/, 'the refusal says what to do instead');
($ret, $out, $err) = $coord->psql('postgres', q{CALL hwm.swap('public.flat_new', 'public.flat')});
like($err, qr/staging table public\.flat is a Citus distributed table/, 'swap of a distributed staging table is refused');
($ret, $out, $err) = $coord->psql('postgres', q{SELECT hwm.create_staging('public.flat')});
like($err, qr/is a Citus distributed table/, 'create_staging of a distributed table is refused');
same_as_source('flat', 'after the refused swap');

# 6. layouts: refused at create_pipeline, with the layout that works
$coord->safe_psql('postgres', q{
CREATE TABLE public.local_src (LIKE public.events INCLUDING ALL);
CREATE TABLE public.ref_tgt (LIKE public.events INCLUDING ALL);
SELECT create_reference_table('public.ref_tgt');
CREATE TABLE public.apart (LIKE public.events INCLUDING ALL);
SELECT create_distributed_table('public.apart', 'id', colocate_with => 'none');
CREATE TABLE public.by_day (id bigint, day date NOT NULL, updated_at timestamptz, amount numeric,
                            PRIMARY KEY (day, id));
SELECT create_distributed_table('public.by_day', 'day');
});
my @refused = (
	[ 'local_src', 'flat', '{id}', qr/a pipeline from a table outside Citus's metadata into a Citus distributed table is not supported/ ],
	[ 'events', 'ref_tgt', '{id}', qr/a pipeline from a Citus distributed table into a Citus reference table is not supported/ ],
	[ 'events', 'apart', '{id}', qr/not co-located on the same distribution column/ ],
	[ 'events', 'by_day', '{day,id}', qr/not co-located on the same distribution column/ ],
	[ 'events', 'flat', '{day}', qr/unique key of distributed target public\.flat must include its distribution column id/ ]);
for my $r (@refused)
{
	my ($src, $tgt, $key, $re) = @$r;
	($ret, $out, $err) = $coord->psql('postgres',
		qq{SELECT hwm.create_pipeline('bad', 'public.$src', 'public.$tgt', '$key', 'updated_at')});
	like($err, $re, "$src into $tgt ($key) is refused");
	like($err, qr/DETAIL:.*co-located/s, "... saying which layout works") if $err =~ /not supported|co-located/;
}
is($coord->safe_psql('postgres', q{SELECT count(*) FROM hwm.state WHERE pipeline = 'bad'}),
	'0', 'no refused pipeline was created');
# a delete marker (tombstones) on a distributed target: refused, with a hint
($ret, $out, $err) = $coord->psql('postgres', q{SELECT hwm.alter_pipeline('flat', delete_column => 'day')});
like($err, qr/delete_column is not supported on Citus table public\.flat/, 'a delete marker on a distributed target is refused');
like($err, qr/HINT:/, '... with a hint');
is($coord->safe_psql('postgres', q{SELECT delete_column IS NULL FROM hwm.state WHERE pipeline = 'flat'}),
	't', '... and the pipeline is unchanged');
# a history (issue 40) over co-located distributed tables: refused, with a
# hint, nothing created
$coord->safe_psql('postgres', q{
CREATE TABLE public.events_hist (id bigint NOT NULL, day date, updated_at timestamptz, amount numeric,
                                 valid_from timestamptz NOT NULL, valid_to timestamptz,
                                 PRIMARY KEY (id, valid_from));
SELECT create_distributed_table('public.events_hist', 'id', colocate_with => 'public.events');
});
($ret, $out, $err) = $coord->psql('postgres',
	q{SELECT hwm.create_pipeline('hist', 'public.events', 'public.events_hist', '{id}', 'updated_at', history => true)});
like($err, qr/a history pipeline on Citus tables is not supported/, 'a history on distributed tables is refused');
like($err, qr/HINT:.*local table/, '... with a hint');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM hwm.state WHERE pipeline = 'hist'}),
	'0', '... and nothing is created');

# 8. a pipeline's source that Citus turns into a shard: its table is renamed
# into the shard and a new shell takes its name; the pipeline is refused
# with the way out, never run against the wrong relation
$coord->safe_psql('postgres', q{
CREATE TABLE public.plain_src (LIKE public.events INCLUDING ALL);
CREATE TABLE public.plain_tgt (LIKE public.events INCLUDING ALL);
INSERT INTO public.plain_src SELECT * FROM public.events WHERE id < 50;
SELECT hwm.create_pipeline('plain', 'public.plain_src', 'public.plain_tgt', '{id}', 'updated_at',
                           partition_column => 'day');
SELECT hwm.run('plain');
SELECT citus_add_local_table_to_metadata('public.plain_src');
});
($ret, $out, $err) = $coord->psql('postgres', q{SELECT hwm.overwrite('plain', '2024-01-01', '2024-01-02')});
like($err, qr/source public\.plain_src_\d+ is a shard of Citus table public\.plain_src/,
	'a source that became a shard is refused');
like($err, qr/HINT:  Drop the pipeline and declare it again over public\.plain_src/, '... with the way out');

# 7. a writer connected to a worker: the coordinator's process array does not
# have it, but its start must hold the watermark, or its row, committed
# after a run moved past it, would never be loaded.  The pipeline belongs
# to an ordinary role, to whom pg_stat_activity hides other roles' starts.
$coord->safe_psql('postgres', q{
CREATE ROLE etl LOGIN;
GRANT USAGE ON SCHEMA public TO etl;
CREATE TABLE public.flat2 (LIKE public.events INCLUDING ALL);
SELECT create_distributed_table('public.flat2', 'id', colocate_with => 'public.events');
GRANT SELECT ON public.events TO etl;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.flat2 TO etl;
SET ROLE etl;
SELECT hwm.create_pipeline('by_etl', 'public.events', 'public.flat2', '{id}', 'updated_at');
SELECT hwm.run('by_etl');
});
same_as_source('flat2', 'after the ordinary role\'s first run');
my $late = $workers[0]->background_psql('postgres');
$late->query_safe('BEGIN');
# in an old partition, out of any lookback's reach
$late->query_safe(q{INSERT INTO public.events VALUES (2000, date '2024-01-01', now(), 1)});
my $t2 = $coord->safe_psql('postgres', q{
INSERT INTO public.events VALUES (2001, date '2024-01-10', now(), 1) RETURNING updated_at});
# past hwm.start_margin (1 s): only the worker's transaction can hold it now
$coord->poll_query_until('postgres', qq{SELECT clock_timestamp() > timestamptz '$t2' + interval '2 seconds'})
  or die 'clock did not move';
($ret, $out, $err) = $coord->psql('postgres', q{SET ROLE etl; SELECT watermark_after FROM hwm.run('by_etl')});
is($ret, 0, 'run with a writer in flight on a worker') or diag $err;
ok($coord->safe_psql('postgres', qq{SELECT '$out'::timestamptz < timestamptz '$t2'}) eq 't',
	'the watermark stays below the worker transaction\'s rows');
$late->query_safe('COMMIT');
$late->quit;
$coord->safe_psql('postgres', q{SET ROLE etl; SELECT hwm.run('by_etl')});
same_as_source('flat2', 'after the worker\'s writer committed');

# 7b. a prepared transaction on a worker has no start time: it holds the
# watermark until it is resolved
$workers[1]->safe_psql('postgres', q{
CREATE TABLE public.w_local (i int);
BEGIN;
INSERT INTO public.w_local VALUES (1);
PREPARE TRANSACTION 'hwm_070';
});
my $t3 = $coord->safe_psql('postgres', q{
INSERT INTO public.events VALUES (2002, date '2024-01-10', now(), 1) RETURNING updated_at});
$coord->poll_query_until('postgres', qq{SELECT clock_timestamp() > timestamptz '$t3' + interval '2 seconds'})
  or die 'clock did not move';
is($coord->safe_psql('postgres', q{
SET ROLE etl; SELECT watermark_before = watermark_after FROM hwm.run('by_etl')}),
	't', 'a prepared transaction on a worker holds the watermark');
$workers[1]->safe_psql('postgres', q{COMMIT PREPARED 'hwm_070'});
is($coord->safe_psql('postgres', q{
SET ROLE etl; SELECT watermark_after::timestamptz >= timestamptz '} . $t3 . q{' FROM hwm.run('by_etl')}),
	't', '... and once it is resolved the watermark moves on');
same_as_source('flat2', 'after the prepared transaction');

# 7c. hwm asks every node for its transactions as the superuser: nothing
# the database's search_path names may run with those rights.  A database
# whose search_path (ALTER DATABASE ... SET, open to its owner) puts a
# schema before pg_catalog that has its own "=" for integers: the sessions
# Citus opens to the nodes take that path, and an IS DISTINCT FROM in the
# query hwm sends looked "=" up by it, running evil.eq as the superuser on
# every node.  evil.eq records each call with the query it ran in.
for my $node (@nodes)
{
	$node->safe_psql('postgres', q{
SET citus.enable_ddl_propagation = off;
CREATE SCHEMA evil;
CREATE TABLE evil.calls (who name, query text);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
GRANT INSERT ON evil.calls TO PUBLIC;
CREATE FUNCTION evil.eq(int, int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO evil.calls VALUES (current_user, current_query());
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = evil.eq);
CREATE FUNCTION evil.teq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO evil.calls VALUES (current_user, current_query());
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.teq);
ALTER DATABASE postgres SET search_path = evil, pg_catalog, public;
});
}
($ret, $out, $err) = $coord->psql('postgres', q{SET ROLE etl; SELECT hwm.run('by_etl')});
is($ret, 0, 'a run under a search_path that names another "="') or diag $err;
# The owner's own code may set search_path during a run, after hwm pinned
# it: here the check of the watermark column's domain, which runs when the
# stored watermark is read.  The NULLIF of hwm's query on this node looked
# "=" up by it, as the superuser.  (The query now names no operator by the
# search_path, and the switch to the superuser pins it again: either alone
# would pass here.)
$coord->safe_psql('postgres', q{
CREATE FUNCTION public.evil_path(timestamptz) RETURNS boolean LANGUAGE sql
  AS $$SELECT pg_catalog.set_config('search_path', 'evil, pg_catalog', false) IS NOT NULL$$;
CREATE DOMAIN public.evil_ts AS timestamptz CHECK (public.evil_path(VALUE));
CREATE TABLE public.ev_src (id bigint PRIMARY KEY, updated_at public.evil_ts NOT NULL);
SELECT create_distributed_table('public.ev_src', 'id', colocate_with => 'public.events');
CREATE TABLE public.ev_tgt (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL);
SELECT create_distributed_table('public.ev_tgt', 'id', colocate_with => 'public.events');
GRANT SELECT ON public.ev_src TO etl;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.ev_tgt TO etl;
INSERT INTO public.ev_src VALUES (1, '2024-01-01 00:00+00');
SET ROLE etl;
SELECT hwm.create_pipeline('ev', 'public.ev_src', 'public.ev_tgt', '{id}', 'updated_at');
SELECT hwm.run('ev');
});
($ret, $out, $err) = $coord->psql('postgres', q{
SET search_path = pg_catalog, public; SET ROLE etl; SELECT hwm.run('ev')});
is($ret, 0, 'a run whose domain check sets search_path') or diag $err;
is($coord->safe_psql('postgres', q{
SELECT count(*) FROM evil.calls WHERE who <> 'etl' AND query LIKE '%hwm.run(''ev'')%'}),
	'0', '... ran nothing of it with the superuser\'s rights');
for my $node (@nodes)
{
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM evil.calls WHERE query LIKE '%pg_stat_activity%'}),
		'0', 'hwm\'s query of the transactions on ' . $node->name . ' ran none of it');
}
$coord->safe_psql('postgres', q{
SELECT hwm.drop_pipeline('ev');
DROP TABLE public.ev_src, public.ev_tgt;
DROP DOMAIN public.evil_ts;
DROP FUNCTION public.evil_path(timestamptz);
});
for my $node (@nodes)
{
	$node->safe_psql('postgres', q{
SET citus.enable_ddl_propagation = off;
ALTER DATABASE postgres RESET search_path;
DROP SCHEMA evil CASCADE;
});
}

# 9. the scheduler runs the ordinary role's pipeline on the coordinator
$coord->safe_psql('postgres', q{
INSERT INTO public.events
SELECT i, date '2024-01-09', now(), i FROM generate_series(3000, 3049) i;
SET ROLE etl;
SELECT hwm.schedule('by_etl', '1 second');
});
ok($coord->poll_query_until('postgres',
	q{SELECT count(*) FROM public.flat2 WHERE id BETWEEN 3000 AND 3049}, '50'),
	'a scheduled run loads the new rows')
  or diag $coord->safe_psql('postgres', q{SELECT status, error FROM hwm.runs WHERE pipeline = 'by_etl' ORDER BY run_id DESC LIMIT 5});
$coord->safe_psql('postgres', q{SET ROLE etl; SELECT hwm.unschedule('by_etl')});
# (a run claimed before the unschedule is skipped, saying so: not a failure)
is($coord->safe_psql('postgres', q{
SELECT count(*) FROM hwm.runs WHERE pipeline = 'by_etl' AND status NOT IN ('succeeded', 'running', 'skipped')}),
	'0', 'every run of the ordinary role\'s pipeline succeeded');
same_as_source('flat2', 'after the scheduled runs');

# 10. a backfill killed halfway resumes where it got to.  A session holds a
# row of the target's day 5 locked on its worker, so the backfill commits
# days 1 to 4 and waits there; it is terminated and called again.
$coord->safe_psql('postgres', q{
UPDATE public.flat SET amount = -1;
INSERT INTO public.flat SELECT 90000 + g, date '2024-01-01' + g, now(), 0 FROM generate_series(0, 4) g});
my $gate = $coord->background_psql('postgres');
$gate->query_safe('BEGIN');
$gate->query_safe('SELECT id FROM public.flat WHERE id = 85 FOR UPDATE');
my $bf = $coord->background_psql('postgres', on_error_stop => 0);
$bf->query_until(qr/started/,
	"\\echo started\nCALL hwm.backfill('flat', '2024-01-01', '2024-01-10');\n");
ok($coord->poll_query_until('postgres', q{
SELECT (SELECT done_through FROM hwm.backfills WHERE pipeline = 'flat' ORDER BY backfill_id DESC LIMIT 1) = '2024-01-04'
   AND EXISTS (SELECT FROM citus_lock_waits)}), 'the backfill waits at day 5, days 1 to 4 done');
my $bf_pid = $coord->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity WHERE query LIKE 'CALL hwm.backfill%' AND pid <> pg_backend_pid()});
$coord->safe_psql('postgres', "SELECT pg_terminate_backend($bf_pid)");
$coord->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $bf_pid)")
  or die 'the backfill did not exit';
{
	local $SIG{PIPE} = 'IGNORE';
	eval { $bf->quit; };
}
is($coord->safe_psql('postgres', q{
SELECT status || ' ' || done_through FROM hwm.backfills WHERE pipeline = 'flat' ORDER BY backfill_id DESC LIMIT 1}),
	'running 2024-01-04', 'killed: days 1 to 4 stay done');
$gate->query_safe('ROLLBACK');
$gate->quit;
$coord->safe_psql('postgres', q{CALL hwm.backfill('flat', '2024-01-01', '2024-01-10')});
is($coord->safe_psql('postgres', q{
SELECT status || ' ' || done_through FROM hwm.backfills WHERE pipeline = 'flat' ORDER BY backfill_id DESC LIMIT 1}),
	'succeeded 2024-01-10', 'the killed backfill resumed and finished');
is($coord->safe_psql('postgres', q{
SELECT count(*) FROM hwm.backfills WHERE pipeline = 'flat' AND from_partition = '2024-01-01' AND to_partition = '2024-01-10'}),
	'1', '... as the same backfill');
same_as_source('flat', 'after the resumed backfill');

# 11. Citus converts tables by building new ones and dropping the old: the
# pipelines follow (alter_distributed_table), and a layout that no longer
# works is refused clearly at the next run (undistribute_table)
($ret, $out, $err) = $coord->psql('postgres', q{
SELECT alter_distributed_table('public.events', shard_count := 8, cascade_to_colocated := true)});
is($ret, 0, 'alter_distributed_table of the source and its co-located targets') or diag $err;
like($err, qr/pipeline "flat" follows public\.events to the table Citus converts it into/,
	'the pipeline follows its source, with a NOTICE');
unlike($err, qr/dropped with its source or target/, 'no pipeline is dropped');
is($coord->safe_psql('postgres', q{
SELECT string_agg(pipeline || ':' || source::text || '>' || target::text, ' ' ORDER BY pipeline)
  FROM hwm.state WHERE pipeline IN ('flat', 'parted', 'by_etl')}),
	'by_etl:events>flat2 flat:events>flat parted:events>parted', 'the pipelines name the converted tables');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'public.flat'::regclass}),
	'8', 'which have 8 shards now');
$coord->safe_psql('postgres', q{
INSERT INTO public.events VALUES (4000, date '2024-01-10', now(), 1);
UPDATE public.events SET amount = amount + 1 WHERE id = 10});
for my $p (qw(flat parted))
{
	($ret, $out, $err) = $coord->psql('postgres', qq{SELECT hwm.run('$p'); SELECT hwm.overwrite('$p', '2024-01-01', '2024-01-10')});
	is($ret, 0, "$p runs after the conversion") or diag $err;
	same_as_source($p, 'after the conversion');
}
($ret, $out, $err) = $coord->psql('postgres', q{SELECT undistribute_table('public.flat2')});
like($err, qr/pipeline "by_etl" follows public\.flat2/, 'undistribute_table: the pipeline follows too');
($ret, $out, $err) = $coord->psql('postgres', q{SET ROLE etl; SELECT hwm.run('by_etl')});
like($err, qr/a pipeline from a Citus distributed table into a table outside Citus's metadata is not supported/,
	'... and its next run refuses the layout that no longer works');

$_->stop for @nodes;
done_testing();
