# Soak test for chains (issue 41): no row lost when a pipeline reads another
# pipeline's target, or reads a sequence through a view, under writers that
# commit late.
#
# Four writers insert rows stamped with now() (raw) or drawn from an
# identity column (raw_seq) and commit 0 to 2 s later (half of them at
# once), so that commits arrive out of order all the time.  Meanwhile a
# runner fires, in a random order, one run every few ms of:
#   up        raw -> mid, watermark updated_at
#   down      mid -> out, watermark updated_at (a copy of a copy)
#   roll      an interval pipeline over mid counting its rows per second
#   seq_view  raw_seq_v (a view over raw_seq) -> seq_tgt, watermark id
# up loads a row that committed late long after its stamp, and below values
# it loaded before: down and roll stay at or below up's committed watermark,
# and seq_view waits for the writers of the view's table.  After the writers
# stop and the pipelines run to the newest row, out and seq_tgt equal their
# sources and every interval of roll counts every raw row in it: 0 lost.
# Every stage starts with no watermark, so the first runs of down and roll
# are over an upstream that has loaded nothing (here, before that case was
# fixed, down lost the first late rows: chain_empty_upstream.spec).
#
# The same traffic feeds naive loaders (the greatest value seen so far is
# the watermark): one over mid, a rollup over mid that closes an interval
# once a newer row is there, one over the view.  They lose rows, which
# shows that the traffic reproduces the losses of issue 41.  Built without
# the chain's cap and the view's writers (upstream_cap returning at once,
# source_relations returning the source alone), hwm lost 14 to 24 rows of
# out, 8 to 16 rows of roll (4 to 8 intervals short) and 15 to 19 rows of
# seq_tgt in each of three runs; with them, none.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('chainsoak', max_connections => 50,
    # the test's pipelines are owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE TABLE raw (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                      updated_at timestamptz NOT NULL DEFAULT now(),
                      v int NOT NULL);
    CREATE TABLE mid (id bigint PRIMARY KEY, updated_at timestamptz, v int);
    CREATE TABLE out (id bigint PRIMARY KEY, updated_at timestamptz, v int);
    CREATE TABLE roll (start timestamptz PRIMARY KEY, n bigint NOT NULL);
    SELECT hwm.create_pipeline('up', 'raw', 'mid', '{id}', 'updated_at');
    SELECT hwm.create_pipeline('down', 'mid', 'out', '{id}', 'updated_at');
    SELECT hwm.create_interval_pipeline('roll', 'mid', 'updated_at', '1 second', $$
      INSERT INTO public.roll SELECT $1, pg_catalog.count(*) FROM public.mid AS m
       WHERE m.updated_at >= $1 AND m.updated_at < $2$$);

    CREATE TABLE raw_seq (id bigint GENERATED ALWAYS AS IDENTITY, v int NOT NULL);
    CREATE VIEW raw_seq_v AS SELECT id, v FROM raw_seq;
    CREATE TABLE seq_tgt (id bigint PRIMARY KEY, v int);
    SELECT hwm.create_pipeline('seq_view', 'raw_seq_v', 'seq_tgt', '{id}', 'id');

    -- the naive loaders: strict > on the greatest value loaded so far
    CREATE TABLE naive_out (LIKE out INCLUDING ALL);
    CREATE TABLE naive_seq (LIKE seq_tgt INCLUDING ALL);
    CREATE TABLE naive_roll (LIKE roll INCLUDING ALL);
    CREATE TABLE naive_state (copy_wm timestamptz, seq_wm bigint, roll_next timestamptz);
    INSERT INTO naive_state VALUES ('-infinity', 0, NULL);
    CREATE FUNCTION naive_copy() RETURNS void LANGUAGE plpgsql AS $f$
    DECLARE
        old timestamptz := (SELECT copy_wm FROM naive_state);
    BEGIN
        INSERT INTO naive_out SELECT * FROM mid WHERE updated_at > old
        ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, v = EXCLUDED.v;
        UPDATE naive_state SET copy_wm = greatest(copy_wm, (SELECT max(updated_at) FROM mid));
    END $f$;
    CREATE FUNCTION naive_seq() RETURNS void LANGUAGE plpgsql AS $f$
    DECLARE
        old bigint := (SELECT seq_wm FROM naive_state);
    BEGIN
        INSERT INTO naive_seq SELECT * FROM raw_seq_v WHERE id > old
        ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
        UPDATE naive_state SET seq_wm = greatest(seq_wm, (SELECT max(id) FROM raw_seq_v));
    END $f$;
    -- an interval is done once mid holds a row past its end
    CREATE FUNCTION naive_roll() RETURNS void LANGUAGE plpgsql AS $f$
    DECLARE
        nxt timestamptz := (SELECT roll_next FROM naive_state);
        top timestamptz := (SELECT max(updated_at) FROM mid);
    BEGIN
        IF top IS NULL THEN RETURN; END IF;
        nxt := coalesce(nxt, date_bin('1 second', (SELECT min(updated_at) FROM mid), '2000-01-01 00:00+00'));
        WHILE nxt + interval '1 second' <= top LOOP
            INSERT INTO naive_roll SELECT nxt, count(*) FROM mid
             WHERE updated_at >= nxt AND updated_at < nxt + interval '1 second';
            nxt := nxt + interval '1 second';
        END LOOP;
        UPDATE naive_state SET roll_next = nxt;
    END $f$;
});

# Each transaction takes now() with its first statement, inserts, and
# commits at once (half of them) or up to 2 s later; two thirds write raw
# (two rows), one third raw_seq (one row, its id drawn at the insert).
my $writer = <<'SQL';
\set v random(1, 1000000)
\set len random(0, 1) * random(0, 2000)
\set which random(1, 3)
BEGIN;
\if :which = 3
INSERT INTO raw_seq (v) VALUES (:v);
\else
INSERT INTO raw (v) VALUES (:v);
INSERT INTO raw (v) VALUES (:v + 1);
\endif
\sleep :len ms
COMMIT;
SQL

# one run at a time, in any order; each naive loader runs with its hwm
# counterpart
my $runner = <<'SQL';
\set op random(1, 4)
\set pause random(0, 30)
\if :op = 1
SELECT rows_upserted FROM hwm.run('up');
\elif :op = 2
SELECT rows_upserted FROM hwm.run('down');
SELECT naive_copy();
\elif :op = 3
SELECT rows_upserted FROM hwm.run('roll');
SELECT naive_roll();
\else
SELECT rows_upserted FROM hwm.run('seq_view');
SELECT naive_seq();
\endif
\sleep :pause ms
SQL

# seq_view waits for the view's writers at most 200 ms (not 1 s) per run,
# so that the runner keeps interleaving the other stages
local $ENV{PGOPTIONS} = '-c client_min_messages=warning -c hwm.wait_timeout=200';
my $soak = soak_start($node, seconds => 25, writer => $writer, runner => $runner);
soak_finish_ok($soak);

# The writers are done.  A last row, stamped at the start of the second
# after the newest: up's watermark is the newest value it has loaded, so
# roll, capped there, closes the interval of raw's newest row only once a
# newer row is in mid.  Then run each stage up to the newest row, upstream
# first (a time-typed watermark stays hwm.start_margin, 1 s, behind now()).
$node->safe_psql('postgres', q{
    INSERT INTO raw (updated_at, v)
    SELECT date_bin('1 second', max(updated_at), '2000-01-01 00:00+00') + interval '1 second', 0 FROM raw;
});
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz >= (SELECT max(updated_at) FROM raw)
      FROM hwm.run('up') AS r;
}) or die 'up did not reach the newest row';
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz >= (SELECT max(updated_at) FROM raw)
      FROM hwm.run('down') AS r;
}) or die 'down did not reach the newest row';
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::timestamptz >= (SELECT max(updated_at) FROM raw)
      FROM hwm.run('roll') AS r;
}) or die 'roll did not reach the last row';
$node->safe_psql('postgres', q{CALL hwm.catch_up('roll');});
$node->poll_query_until('postgres', q{
    SELECT r.watermark_after::bigint >= (SELECT max(id) FROM raw_seq)
      FROM hwm.run('seq_view') AS r;
}) or die 'seq_view did not reach the newest id';
is($node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    SELECT (SELECT rows_upserted FROM hwm.run('up')) + (SELECT rows_upserted FROM hwm.run('down'))
         + (SELECT rows_upserted FROM hwm.run('seq_view'));
}), '0', 'a last run of up, down and seq_view loads nothing: they have settled');
$node->safe_psql('postgres', q{
    SELECT naive_copy();
    SELECT naive_roll();
    SELECT naive_seq();
});

my $raw = $node->safe_psql('postgres', 'SELECT count(*) FROM raw');
my $seq = $node->safe_psql('postgres', 'SELECT count(*) FROM raw_seq');
cmp_ok($raw, '>', 100, "the writers wrote raw ($raw rows)");
cmp_ok($seq, '>', 20, "the writers wrote raw_seq ($seq rows)");
note $node->safe_psql('postgres', q{
    SELECT pipeline, count(*) AS runs,
           count(*) FILTER (WHERE watermark_after IS DISTINCT FROM watermark_before) AS moved,
           coalesce(sum(rows_upserted), 0) AS rows
      FROM hwm.runs GROUP BY 1 ORDER BY 1});
for my $p ('up', 'down', 'roll', 'seq_view')
{
    my $moved = $node->safe_psql('postgres', qq{
        SELECT count(*) FROM hwm.runs
         WHERE pipeline = '$p' AND watermark_after IS DISTINCT FROM watermark_before});
    cmp_ok($moved, '>', 0, "$p moved its watermark during the soak ($moved runs)");
}

# 1. a copy of a copy
my $lost_copy = $node->safe_psql('postgres', 'SELECT count(*) FROM (TABLE raw EXCEPT TABLE out) d');
my $naive_copy = $node->safe_psql('postgres', 'SELECT count(*) FROM (TABLE raw EXCEPT TABLE naive_out) d');
note "copy of a copy: hwm lost $lost_copy of $raw rows, the naive loader over mid $naive_copy";
same_rows($node, 'postgres', 'raw', 'out', 'out equals raw through mid: 0 rows lost, none extra');
same_rows($node, 'postgres', 'raw', 'mid', 'mid equals raw');

# 2. an interval rollup of a copy: every interval done counts every raw row
# in it, and every raw row but the last lies in an interval done
my $roll_wm = $node->safe_psql('postgres', "SELECT watermark FROM hwm.state WHERE pipeline = 'roll'");
is($node->safe_psql('postgres', "SELECT count(*) FROM raw WHERE updated_at >= '$roll_wm'"), '1',
    "roll has done every interval before the last row's ($roll_wm)");
my $grouped = qq{(SELECT date_bin('1 second', updated_at, '2000-01-01 00:00+00') AS start, count(*) AS n
                    FROM raw WHERE updated_at < '$roll_wm' GROUP BY 1)};
my $short = sub {
    my ($roll) = @_;
    return $node->safe_psql('postgres', qq{
        SELECT count(*), coalesce(sum(g.n - coalesce(r.n, 0)), 0)
          FROM $grouped AS g LEFT JOIN $roll AS r USING (start)
         WHERE coalesce(r.n, 0) < g.n});
};
my ($short_n, $lost_roll) = split /\|/, $short->('roll');
my ($naive_short_n, $naive_roll) = split /\|/, $short->('naive_roll');
my $intervals = $node->safe_psql('postgres', 'SELECT count(*) FROM roll');
note "interval rollup of a copy: hwm had $short_n of $intervals intervals short, $lost_roll rows missing;"
  . " the naive rollup over mid $naive_short_n intervals short, $naive_roll rows missing";
same_rows($node, 'postgres', "$grouped AS g", '(SELECT * FROM roll WHERE n > 0) AS r',
    'roll counts every raw row in its interval: no interval short, none over');

# 3. a sequence through a view
my $lost_seq = $node->safe_psql('postgres', 'SELECT count(*) FROM (TABLE raw_seq EXCEPT TABLE seq_tgt) d');
my $naive_seq = $node->safe_psql('postgres', 'SELECT count(*) FROM (TABLE raw_seq EXCEPT TABLE naive_seq) d');
note "sequence through a view: hwm lost $lost_seq of $seq rows, the naive loader over the view $naive_seq";
same_rows($node, 'postgres', 'raw_seq', 'seq_tgt', 'seq_tgt equals raw_seq read through the view');

# the traffic reproduces the losses: the naive loaders lost rows
cmp_ok($naive_copy + $naive_roll + $naive_seq, '>', 0,
    "the naive loaders lost rows under the same traffic ($naive_copy, $naive_roll, $naive_seq)");

$node->stop;
done_testing();
