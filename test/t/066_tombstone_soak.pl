# Soak test for tombstones (issue 32): writers insert, update and soft-delete
# (set the delete marker) rows under pgbench, in transactions of random
# length so that commits, tombstones included, arrive out of order, while a
# runner fires hwm.run every ~100 ms on two pipelines with delete_column: one
# watermarked by updated_at (timestamptz, now()), whose target has no marker
# column; one by seq (bigint, nextval()), whose target has it.  After the
# writers stop and one final run, each target must hold exactly the source's
# live rows: 0 lost, 0 extra (a tombstone missed leaves a deleted row behind),
# 0 stale.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('tombsoak', max_connections => 50,
    # the test's pipelines are owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE SEQUENCE src_seq;
    CREATE TABLE src (id int PRIMARY KEY,
                      updated_at timestamptz NOT NULL DEFAULT now(),
                      seq bigint NOT NULL DEFAULT nextval('src_seq'),
                      v int NOT NULL,
                      deleted boolean NOT NULL DEFAULT false);
    CREATE TABLE tgt_time (id int PRIMARY KEY, updated_at timestamptz, seq bigint, v int);
    CREATE TABLE tgt_seq (LIKE src);
    ALTER TABLE tgt_seq ADD PRIMARY KEY (id);
    SELECT hwm.create_pipeline('tomb_time', 'src', 'tgt_time', '{id}', 'updated_at', delete_column => 'deleted');
    SELECT hwm.create_pipeline('tomb_seq', 'src', 'tgt_seq', '{id}', 'seq', delete_column => 'deleted');
});

# a third of the transactions soft-delete a row (a tombstone), the rest
# insert or update one (which also brings a deleted row back)
my $writer = <<'SQL';
\set id random(1, 2000)
\set id2 random(1, 2000)
\set op random(1, 3)
\set len random(0, 200)
BEGIN;
SELECT 1;
\sleep :len ms
INSERT INTO src (id, v) VALUES (:id, 1)
  ON CONFLICT (id) DO UPDATE SET v = src.v + 1, deleted = false, updated_at = now(), seq = nextval('src_seq');
\if :op = 1
UPDATE src SET deleted = true, updated_at = now(), seq = nextval('src_seq') WHERE id = :id2;
\else
INSERT INTO src (id, v) VALUES (:id2, 1)
  ON CONFLICT (id) DO UPDATE SET v = src.v + 1, deleted = false, updated_at = now(), seq = nextval('src_seq');
\endif
COMMIT;
SQL
my $runner = <<'SQL';
SELECT rows_upserted FROM hwm.run('tomb_time');
SELECT rows_upserted FROM hwm.run('tomb_seq');
\sleep 100 ms
SQL

# deadlocks between two writers touching the same two rows in opposite
# order are possible and harmless (that transaction aborts): ignored
local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $soak = soak_start($node, seconds => 20, writer => $writer, runner => $runner);
my ($wout, $werr, $rout, $rerr) = soak_finish($soak);
note "writers: $wout $werr";
note "runner: $rout $rerr";
like($rout, qr/number of transactions actually processed: [1-9]/, 'the runner fired');
unlike($rerr, qr/ERROR/, 'no run failed');

$node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    SELECT hwm.run('tomb_time');
    SELECT hwm.run('tomb_seq');
});

my $deleted = $node->safe_psql('postgres', 'SELECT count(*) FROM src WHERE deleted');
my $live = $node->safe_psql('postgres', 'SELECT count(*) FROM src WHERE NOT deleted');
cmp_ok($deleted, '>', 10, "the writers soft-deleted rows ($deleted deleted, $live live)");
my $tombstoned = $node->safe_psql('postgres',
    "SELECT coalesce(sum(rows_deleted), 0) FROM hwm.runs WHERE pipeline = 'tomb_seq'");
cmp_ok($tombstoned, '>', 0, "runs deleted rows by tombstones ($tombstoned)");

same_rows($node, 'postgres', '(SELECT id, updated_at, seq, v FROM src WHERE NOT deleted) AS l', 'tgt_time',
    'tgt_time: exactly the live rows of the source (0 lost, 0 extra, 0 stale)');
same_rows($node, 'postgres', '(SELECT * FROM src WHERE NOT deleted) AS l', 'tgt_seq',
    'tgt_seq: exactly the live rows of the source (0 lost, 0 extra, 0 stale)');

my $runs = $node->safe_psql('postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'tomb_time'");
cmp_ok($runs, '>=', 20, "hwm ran $runs times");

$node->stop;
done_testing();
