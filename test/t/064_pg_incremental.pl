# Side by side with pg_incremental 1.3.0 (Crunchy Data; built from
# ../shared/vendor with Debian's pg_cron): the same one-second rollup of the
# same traffic by a pg_incremental time-interval pipeline (min_delay 0,
# source_table_name set, so that it waits for the source's writers) and by
# an hwm interval pipeline, both batched, run one after the other every
# ~100 ms.  The writers take their now() when their transaction begins and
# insert up to 200 ms later, as any transaction that does some work first.
# At the end each rollup is compared with the same GROUP BY over the whole
# source: the rows each lost are reported, hwm must lose none, and neither
# may count a row twice.  The time per run of each (pgbench -r) is reported
# as a ratio.  Skipped when pg_cron or pg_incremental is not installed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# a node never started, to ask where the PostgreSQL under test keeps things
my $probe = PostgreSQL::Test::Cluster->new('probe');
my $libdir = $probe->config_data('--pkglibdir');
my $sharedir = $probe->config_data('--sharedir');
plan skip_all => 'pg_cron and pg_incremental are not installed'
  unless -e "$libdir/pg_cron.so" && -e "$libdir/pg_incremental.so"
  && -e "$sharedir/extension/pg_incremental.control";

my $node = new_node('incr', shared_preload_libraries => 'pg_cron, hwm',
    'cron.database_name' => 'postgres', max_connections => 50,
    # the test's pipelines are owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

my $rollup = q{
  INSERT INTO public.%s AS r
  SELECT pg_catalog.date_bin('1 second', s.t, '2000-01-01 00:00+00'), s.kind, pg_catalog.count(*)
    FROM public.src AS s WHERE s.t >= $1 AND s.t < $2 GROUP BY 1, 2
  ON CONFLICT (start, kind) DO UPDATE SET n = r.n + EXCLUDED.n};
$node->safe_psql('postgres', qq{
    SET client_min_messages = warning;
    CREATE EXTENSION pg_cron;
    CREATE EXTENSION pg_incremental CASCADE;
    CREATE EXTENSION hwm;
    CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY,
                      t timestamptz NOT NULL DEFAULT now(), kind int NOT NULL);
    CREATE INDEX ON src (t);
    CREATE TABLE roll_inc (start timestamptz, kind int, n bigint NOT NULL, PRIMARY KEY (start, kind));
    CREATE TABLE roll_hwm (start timestamptz, kind int, n bigint NOT NULL, PRIMARY KEY (start, kind));
    SELECT incremental.create_time_interval_pipeline('inc', '1 second',
      \$cmd\$ @{[sprintf($rollup, 'roll_inc')]} \$cmd\$,
      batched := true, start_time := pg_catalog.date_trunc('second', now()),
      source_table_name := 'src', schedule := NULL, min_delay := '0',
      execute_immediately := false);
    SELECT hwm.create_interval_pipeline('hwm_p', 'src', 't', '1 second',
      \$cmd\$ @{[sprintf($rollup, 'roll_hwm')]} \$cmd\$,
      start_at => pg_catalog.date_trunc('second', now())::text, batched => true);
});

my $writer = <<'SQL';
\set kind random(1, 5)
\set len random(0, 200)
BEGIN;
SELECT 1;
\sleep :len ms
INSERT INTO src (kind) VALUES (:kind);
COMMIT;
SQL
my $runner = <<'SQL';
CALL incremental.execute_pipeline('inc');
SELECT 1 FROM hwm.run('hwm_p');
\sleep 100 ms
SQL

local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $soak = soak_start($node, seconds => 20, writer => $writer, runner => $runner, runner_flags => ['-r']);
my (undef, undef, $rout, $rerr) = soak_finish($soak);
note "runner: $rout $rerr";
unlike($rerr, qr/ERROR/, 'no run of either failed');

# the writers are done: let the last second end (and hwm.start_margin pass),
# then run both to the end
$node->poll_query_until('postgres',
    q{SELECT now() > (SELECT max(t) FROM src) + interval '2.5 seconds'})
  or die 'the clock did not move';
$node->safe_psql('postgres', q{CALL incremental.execute_pipeline('inc')});
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz > (SELECT max(t) FROM src)
      FROM hwm.run('hwm_p') AS r;
}) or die 'the hwm pipeline did not reach the newest row';

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM src');
cmp_ok($rows, '>', 100, "the writers wrote ($rows rows)");
my %lost;
for my $roll ('roll_inc', 'roll_hwm')
{
    my ($lost, $doubled) = split /\|/, $node->safe_psql('postgres', qq{
        SELECT coalesce(sum(g.n - coalesce(r.n, 0)) FILTER (WHERE coalesce(r.n, 0) < g.n), 0),
               count(*) FILTER (WHERE r.n > g.n OR g.n IS NULL)
          FROM (SELECT date_bin('1 second', t, '2000-01-01 00:00+00') AS start, kind,
                       count(*) AS n FROM src GROUP BY 1, 2) AS g
          FULL JOIN $roll AS r USING (start, kind)});
    $lost{$roll} = $lost;
    is($doubled, '0', "$roll counts no row twice");
}
is($lost{roll_hwm}, '0', 'hwm loses no row');

# time per run: pgbench -r's average latency of each statement
my ($inc_ms) = $rout =~ /^\s+([\d.]+)\s+(?:\d+\s+)?CALL incremental\.execute_pipeline/m;
my ($hwm_ms) = $rout =~ /^\s+([\d.]+)\s+(?:\d+\s+)?SELECT 1 FROM hwm\.run/m;
my $runs = $node->safe_psql('postgres',
    q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'hwm_p' AND from_partition IS NOT NULL});
diag(sprintf('side by side, %d rows: rows lost by pg_incremental %d (%.2f%%), by hwm %d; '
        . 'time per run pg_incremental %s ms, hwm %s ms, ratio hwm/pg_incremental %s; '
        . 'hwm runs that ran the command %d',
    $rows, $lost{roll_inc}, 100 * $lost{roll_inc} / $rows, $lost{roll_hwm},
    $inc_ms // '?', $hwm_ms // '?',
    ($inc_ms && $hwm_ms) ? sprintf('%.2f', $hwm_ms / $inc_ms) : '?', $runs));

$node->stop;
done_testing();
