# Soak test for issue 14: the same traffic as 001_soak.pl (four writers,
# transactions of random length, commits out of order), plus one transaction
# held open while the writers write: it begins before everything, writes
# rows stamped with its own start (and sequence values) once they have
# written, and commits once they have written more (the soak goes on after
# it).  The runner fires hwm.run every ~100 ms with
# hwm.start_margin = 0, so every run remembers the writers in flight.
#
# Nothing may be lost (each target equals the source at the end, with the
# long transaction's rows), and the cost of a run must not follow the long
# transaction: while it is open, the stored watermarks stay below it (they
# must), but where the runs read from (hwm.state.reread_from) keeps up with
# the writers.
#
# The long transaction's steps wait for the writers, not for the clock: its
# rows are written once the writers have taken 400 sequence values more,
# the check is made once they took 400 more and the runs' reading has
# passed the long transaction (or the harness's timeout: then the check
# fails), and it commits after 200 more.  At the writers' pace (about 80 a
# second) it commits about 12 s into the soak's 30 seconds; on a machine so
# loaded that they write less, a step goes ahead 2 seconds before the soak
# ends rather than wait for writes that will not come.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('soak_long', max_connections => 50, 'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE SEQUENCE src_seq;
    CREATE TABLE src (id int PRIMARY KEY,
                      updated_at timestamptz NOT NULL DEFAULT now(),
                      seq bigint NOT NULL DEFAULT nextval('src_seq'),
                      v int NOT NULL);
    CREATE INDEX ON src (updated_at);
    CREATE INDEX ON src (seq);
    CREATE TABLE tgt_time (LIKE src);
    ALTER TABLE tgt_time ADD PRIMARY KEY (id);
    CREATE TABLE tgt_seq (LIKE src);
    ALTER TABLE tgt_seq ADD PRIMARY KEY (id);
    SELECT hwm.create_pipeline('long_time', 'src', 'tgt_time', '{id}', 'updated_at');
    SELECT hwm.create_pipeline('long_seq', 'src', 'tgt_seq', '{id}', 'seq');
});

# the long transaction: open before anything else happens
my $long = $node->background_psql('postgres');
$long->query_safe('BEGIN');
my $long_pid = $long->query_safe('SELECT pg_backend_pid()');

my $writer = $HwmTest::UPSERT_WRITER;
my $runner = <<'SQL';
SELECT rows_upserted FROM hwm.run('long_time');
SELECT rows_upserted FROM hwm.run('long_seq');
\sleep 100 ms
SQL

local $ENV{PGOPTIONS} = '-c client_min_messages=warning -c hwm.start_margin=0';
my $soak = soak_start($node, seconds => 30, writer => $writer, runner => $runner);

# writers_wrote(n): once the writers have taken n more sequence values (or
# the soak is about to end)
my $soak_end = time() + 30;
sub writers_wrote
{
	my ($n) = @_;
	my $from = $node->safe_psql('postgres', 'SELECT last_value FROM src_seq');
	while (time() < $soak_end - 2)
	{
		return if $node->safe_psql('postgres', "SELECT last_value >= $from + $n FROM src_seq") eq 't';
		select(undef, undef, undef, 0.1);
	}
	note "the soak ends before the writers took $n sequence values more";
}

# half-way: the long transaction writes rows stamped with its own start
writers_wrote(400);
$long->query_safe(q{INSERT INTO src (id, v) VALUES (100001, 1), (100002, 2)});
writers_wrote(400);

# still open: the watermarks stay below it, the reading does not (its own
# rows are visible only to itself: their values come from there)
my ($long_start, $long_seq) = split /\|/,
  $long->query_safe(q{SELECT now(), min(seq) FROM src WHERE id > 100000});
# (the runs' reading passes it as they go: polled, then checked below)
$node->poll_query_until('postgres', qq{
    SELECT bool_and(CASE pipeline WHEN 'long_time' THEN reread_from::timestamptz > '$long_start'
                                  ELSE reread_from::bigint > $long_seq END)
      FROM hwm.state});
my $memory = $node->safe_psql('postgres', qq{
    SELECT pipeline,
           CASE pipeline WHEN 'long_time'
                THEN coalesce(watermark::timestamptz < '$long_start', true)
                ELSE coalesce(watermark::bigint < $long_seq, true) END,
           CASE pipeline WHEN 'long_time'
                THEN reread_from::timestamptz > '$long_start'
                ELSE reread_from::bigint > $long_seq END,
           cardinality(reread_vxids) > 0
      FROM hwm.state ORDER BY pipeline});
is($memory, "long_seq|t|t|t\nlong_time|t|t|t",
    'while the long transaction is open: watermarks held below it, reading starts above it, and it is remembered');

writers_wrote(200);
$long->query_safe('COMMIT');
$long->quit;
soak_finish_ok($soak);

$node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    SELECT hwm.run('long_time');
    SELECT hwm.run('long_seq');
});

cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM src'), '>', 1000, 'the writers wrote');
note $node->safe_psql('postgres', q{SELECT pipeline, watermark, reread_from, reread_vxids, reread_starts FROM hwm.state});
note $node->safe_psql('postgres', q{SELECT run_id, pipeline, started_at, rows_upserted, watermark_before, watermark_after FROM hwm.runs WHERE pipeline = 'long_seq' ORDER BY run_id DESC LIMIT 40});
note "long: $long_start $long_seq";
for my $tgt ('tgt_time', 'tgt_seq')
{
    same_rows($node, 'postgres', 'src', $tgt, "$tgt: the source's rows, nothing missing, extra or stale");
    is($node->safe_psql('postgres', "SELECT count(*) FROM $tgt WHERE id > 100000"),
        '2', "$tgt: the long transaction's rows are there");
}

$node->stop;
done_testing();
