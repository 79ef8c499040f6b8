# Soak test for issue 3: no row lost, none doubled, under real concurrency.
#
# Four writers run transactions of random length (they take their start
# time, sleep up to 200 ms, then insert or update rows stamped with now() and
# with a sequence value), so commits arrive out of order all the time.
# Meanwhile a runner fires hwm.run every ~100 ms for 30 s on two pipelines
# with lookback = 0: one watermarked by updated_at (timestamptz, now()), one
# by seq (bigint, nextval()).  After the writers stop and one final run, each
# target must equal the source exactly, with no key twice.
#
# The same traffic feeds a naive loader (advance to the newest value seen,
# what most hand-written loaders do); it must lose rows, which shows that the
# test can fail.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('soak', max_connections => 50,
    # the test's pipelines are owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE SEQUENCE src_seq;
    CREATE TABLE src (id int PRIMARY KEY,
                      updated_at timestamptz NOT NULL DEFAULT now(),
                      seq bigint NOT NULL DEFAULT nextval('src_seq'),
                      v int NOT NULL);
    CREATE TABLE tgt_time (LIKE src);
    ALTER TABLE tgt_time ADD PRIMARY KEY (id);
    CREATE TABLE tgt_seq (LIKE src);
    ALTER TABLE tgt_seq ADD PRIMARY KEY (id);
    CREATE TABLE tgt_naive (LIKE src);
    ALTER TABLE tgt_naive ADD PRIMARY KEY (id);
    SELECT hwm.create_pipeline('soak_time', 'src', 'tgt_time', '{id}', 'updated_at');
    SELECT hwm.create_pipeline('soak_seq', 'src', 'tgt_seq', '{id}', 'seq');

    -- the naive loader: strict > on the stored watermark, then move it to
    -- the newest value loaded
    CREATE TABLE naive_state (wm timestamptz);
    INSERT INTO naive_state VALUES ('-infinity');
    CREATE FUNCTION naive_run() RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        old timestamptz := (SELECT wm FROM naive_state);
    BEGIN
        INSERT INTO tgt_naive SELECT * FROM src WHERE updated_at > old
        ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq, v = EXCLUDED.v;
        UPDATE naive_state SET wm = greatest(wm, (SELECT max(updated_at) FROM src WHERE updated_at > old));
    END $$;
});

my $writer = $HwmTest::UPSERT_WRITER;
my $runner = <<'SQL';
SELECT rows_upserted FROM hwm.run('soak_time');
SELECT rows_upserted FROM hwm.run('soak_seq');
SELECT naive_run();
\sleep 100 ms
SQL

# writers and runner at once; deadlocks between two writers updating the
# same two rows in opposite order are possible and harmless (that writer
# transaction aborts), so pgbench may report failed transactions: ignore.
local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $soak = soak_start($node, seconds => 30, writer => $writer, runner => $runner);
soak_finish_ok($soak);

# one final run, after the writers have stopped
$node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    SELECT hwm.run('soak_time');
    SELECT hwm.run('soak_seq');
    SELECT naive_run();
});

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM src');
cmp_ok($rows, '>', 1000, "the writers wrote ($rows rows)");

for my $tgt ('tgt_time', 'tgt_seq')
{
    same_rows($node, 'postgres', 'src', $tgt, "$tgt: the source's rows, nothing missing, extra or stale");
    is($node->safe_psql('postgres',
            "SELECT count(*) FROM (SELECT id FROM $tgt GROUP BY id HAVING count(*) > 1) d"),
        '0', "$tgt: no key twice");
}

my $lost = $node->safe_psql('postgres', 'SELECT count(*) FROM (TABLE src EXCEPT TABLE tgt_naive) d');
cmp_ok($lost, '>', 0, "the naive loader lost or left stale $lost rows under the same traffic");

my $runs = $node->safe_psql('postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'soak_time'");
cmp_ok($runs, '>=', 100, "hwm ran $runs times");

$node->stop;
done_testing();
