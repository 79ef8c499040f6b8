# Soak test for issue 32: hard deletes reconciled, nothing lost, nothing extra.
#
# Four writers run one-row transactions of random length (they take their
# start time, sleep up to 150 ms, then insert, update or hard-delete a random
# key of 1..3000, stamped with now()), so deletes, re-inserts of deleted
# keys and updates commit out of order all the time.  Meanwhile a runner
# fires hwm.run every ~100 ms, and another session calls hwm.reconcile in
# small batches (300 keys) every ~200 ms, each batch committed, at the same
# time as the runs.  After the writers stop, one final run and one final
# reconcile: the target must equal the source exactly (every column), no
# key lost (a re-insert that a reconcile's batch did not see and a run then
# loaded), none extra (a hard delete).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('reconcile_soak', max_connections => 50,
    # the test's pipeline is owned by the bootstrap superuser
    'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
    CREATE EXTENSION hwm;
    CREATE TABLE src (id int PRIMARY KEY,
                      updated_at timestamptz NOT NULL DEFAULT now(),
                      v int NOT NULL);
    INSERT INTO src (id, v) SELECT g, 0 FROM generate_series(1, 3000, 2) g;
    CREATE TABLE tgt (LIKE src);
    ALTER TABLE tgt ADD PRIMARY KEY (id);
    SELECT hwm.create_pipeline('soak_rc', 'src', 'tgt', '{id}', 'updated_at');
});

my $writer = <<'SQL';
\set id random(1, 3000)
\set op random(1, 3)
\set len random(0, 150)
BEGIN;
SELECT 1;
\sleep :len ms
\if :op = 3
DELETE FROM src WHERE id = :id;
\else
INSERT INTO src (id, v) VALUES (:id, 1)
  ON CONFLICT (id) DO UPDATE SET v = src.v + 1, updated_at = now();
\endif
COMMIT;
SQL
my $runner = <<'SQL';
SELECT rows_upserted FROM hwm.run('soak_rc');
\sleep 100 ms
SQL

local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $seconds = 30;
my $soak = soak_start($node, seconds => $seconds, writer => $writer, runner => $runner);

# the reconciler: its own pgbench client, beside the runner
my $dir = PostgreSQL::Test::Utils::tempdir();
open my $fh, '>', "$dir/reconcile.sql" or die $!;
print $fh "CALL hwm.reconcile('soak_rc', batch_size => 300);\n\\sleep 200 ms\n";
close $fh or die $!;
my ($cout, $cerr) = ('', '');
my $reconciler = IPC::Run::start(
    [ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-f', "$dir/reconcile.sql",
      '-h', $node->host, '-p', $node->port, 'postgres' ],
    '>', \$cout, '2>', \$cerr);

my ($wout, $werr, $rout, $rerr) = soak_finish($soak);
$reconciler->finish;
note "writers: $wout $werr";
note "runner: $rout $rerr";
note "reconciler: $cout $cerr";
like($rout, qr/number of transactions actually processed: [1-9]/, 'the runner fired');
unlike($rerr, qr/ERROR/, 'no run failed');
like($cout, qr/number of transactions actually processed: [1-9]/, 'the reconciler fired');
unlike($cerr, qr/ERROR/, 'no reconcile failed');
like($wout, qr/number of transactions actually processed: [1-9]/, 'the writers wrote');

my $during = $node->safe_psql('postgres', q{
    SELECT count(*) || ' ' || coalesce(sum(rows_deleted), 0) FROM hwm.backfills
     WHERE pipeline = 'soak_rc' AND kind = 'reconcile' AND status = 'succeeded'});
my ($reconciles, $deleted) = split / /, $during;
cmp_ok($reconciles, '>=', 10, "$reconciles reconciles ran during the soak");
cmp_ok($deleted, '>', 0, "they deleted $deleted target rows of keys deleted in the source");

# one final run and one final reconcile, after the writers have stopped
$node->safe_psql('postgres', q{
    SET client_min_messages = warning;
    SELECT hwm.run('soak_rc');
    CALL hwm.reconcile('soak_rc', batch_size => 300);
});

my $deletes = $node->safe_psql('postgres',
    q{SELECT count(*) FROM generate_series(1, 3000) g WHERE NOT EXISTS (SELECT FROM src WHERE id = g)});
cmp_ok($deletes, '>', 100, "the source lacks $deletes keys at the end");
same_rows($node, 'postgres', 'src', 'tgt', 'the target holds exactly the source\'s rows: 0 lost, 0 extra, 0 stale');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM hwm.runs WHERE pipeline = 'soak_rc' AND status <> 'succeeded'}),
    '0', 'every run and reconcile batch succeeded');

$node->stop;
done_testing();
