# Soak test of command and interval pipelines: four writers insert for 30 s
# (transactions that take their time, now() taken before their insert)
# while a rollup command pipeline, one on the identity column and an
# interval pipeline of one-second intervals (so that many
# intervals end during the test) run every ~100 ms.  At the end every rollup
# equals the same GROUP BY over the whole source: no row lost, none counted
# twice.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('cmdsoak', max_connections => 50,
    # the test's pipelines are owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY,
                      t timestamptz NOT NULL DEFAULT now(), kind int NOT NULL);
    CREATE TABLE roll_time (kind int PRIMARY KEY, n bigint NOT NULL);
    CREATE TABLE roll_id (kind int PRIMARY KEY, n bigint NOT NULL);
    CREATE TABLE roll_interval (start timestamptz, kind int, n bigint NOT NULL,
                                PRIMARY KEY (start, kind));
    SELECT hwm.create_command_pipeline('soak_time', 'src', 't', $$
      INSERT INTO public.roll_time AS r SELECT s.kind, pg_catalog.count(*) FROM public.src AS s
       WHERE ($1 IS NULL OR s.t > $1) AND s.t <= $2 GROUP BY s.kind
      ON CONFLICT (kind) DO UPDATE SET n = r.n + EXCLUDED.n$$);
    SELECT hwm.create_command_pipeline('soak_id', 'src', 'id', $$
      INSERT INTO public.roll_id AS r SELECT s.kind, pg_catalog.count(*) FROM public.src AS s
       WHERE ($1 IS NULL OR s.id > $1) AND s.id <= $2 GROUP BY s.kind
      ON CONFLICT (kind) DO UPDATE SET n = r.n + EXCLUDED.n$$, batch_size => 50);
    SELECT hwm.create_interval_pipeline('soak_interval', 'src', 't', '1 second', $$
      INSERT INTO public.roll_interval SELECT $1, s.kind, pg_catalog.count(*) FROM public.src AS s
       WHERE s.t >= $1 AND s.t < $2 GROUP BY s.kind$$, skip_empty => true);
});

my $writer = <<'SQL';
\set kind random(1, 5)
\set len random(0, 200)
BEGIN;
SELECT 1;
\sleep :len ms
INSERT INTO src (kind) VALUES (:kind);
INSERT INTO src (kind) VALUES (:kind);
COMMIT;
SQL
my $runner = <<'SQL';
SELECT rows_upserted FROM hwm.run('soak_time');
SELECT rows_upserted FROM hwm.run('soak_id');
SELECT rows_upserted FROM hwm.run('soak_interval');
\sleep 100 ms
SQL

local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $soak = soak_start($node, seconds => 30, writer => $writer, runner => $runner);
soak_finish_ok($soak);

# the writers are done: run everything to the end.  A time-typed watermark
# stays hwm.start_margin (1 s) behind now(), and the last one-second interval
# must end, so run until each pipeline is past the newest row.
$node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    CALL hwm.catch_up('soak_id');
});
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz >= (SELECT max(t) FROM src)
      FROM hwm.run('soak_time') AS r;
}) or die 'the command pipeline did not reach the newest row';
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz > (SELECT max(t) FROM src)
      FROM hwm.run('soak_interval') AS r;
}) or die 'the interval pipeline did not reach the newest row';
$node->safe_psql('postgres', q{SET client_min_messages = warning; CALL hwm.catch_up('soak_interval');});

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM src');
cmp_ok($rows, '>', 100, "the writers wrote ($rows rows)");
for my $roll ('roll_time', 'roll_id')
{
    same_rows($node, 'postgres', '(SELECT kind, count(*) AS n FROM src GROUP BY kind) AS g', $roll,
        "$roll equals GROUP BY kind over the source");
}
same_rows($node, 'postgres', q{(SELECT date_bin('1 second', t, '2000-01-01 00:00+00') AS start, kind,
                                 count(*) AS n FROM src GROUP BY 1, 2) AS g}, 'roll_interval',
    'roll_interval equals GROUP BY second, kind over the source', columns => 'start, kind, n');
note $node->safe_psql('postgres', q{
    SELECT kind, g.n, r.n FROM (SELECT kind, count(*) AS n FROM src GROUP BY kind) AS g
      FULL JOIN roll_time AS r USING (kind)});
note $node->safe_psql('postgres', q{
    SELECT pipeline, count(*) AS runs FROM hwm.runs GROUP BY 1 ORDER BY 1});

$node->stop;
done_testing();
