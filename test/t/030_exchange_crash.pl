# A partition exchange survives a crash: committed, the partition has the
# new rows (and rows written after the exchange in the same transaction),
# its indexes agree with its heap; not committed, the old rows are back.
# Run with wal_level = replica and with wal_level = minimal, where storage
# created in the transaction skips WAL and is synced (or logged whole) at
# commit: the exchanged partition's new storage must be treated as new for
# the rest of the transaction.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my @setups = (
	[ 'replica', [ wal_level => 'replica' ] ],
	[ 'minimal, logged at commit', [ wal_level => 'minimal', max_wal_senders => 0, wal_skip_threshold => '1GB' ] ],
	[ 'minimal, synced at commit', [ wal_level => 'minimal', max_wal_senders => 0, wal_skip_threshold => 0 ] ],
);

for my $setup (@setups)
{
	my ($label, $conf) = @$setup;
	my $name = $label =~ s/\W+/_/gr;
	my $node = new_node("exchange_$name", shared_preload_libraries => '', @$conf,
		'hwm.allow_superuser_pipelines' => 'on');

	$node->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE EXTENSION amcheck;
CREATE TABLE src (id int, day date, v text);
INSERT INTO src SELECT g, DATE '2026-01-01' + g % 2, repeat('n', 3000) || g FROM generate_series(1, 400) g;
CREATE TABLE tgt (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE tgt_1 PARTITION OF tgt FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE tgt_2 PARTITION OF tgt FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
INSERT INTO tgt SELECT g, DATE '2026-01-01' + g % 2, 'old' FROM generate_series(1, 100) g;
SELECT hwm.create_pipeline('p', 'src', 'tgt', ARRAY['id', 'day'], 'id', 'day');
});

	# committed: the exchange, then writes to the exchanged partition
	$node->safe_psql('postgres', q{
BEGIN;
SELECT hwm.overwrite('p', '2026-01-01', '2026-01-02');
INSERT INTO tgt VALUES (1000, '2026-01-01', 'after');
UPDATE tgt SET v = 'updated' WHERE id = 2;
COMMIT;
});
	$node->stop('immediate');
	$node->start;
	is($node->safe_psql('postgres', q{
SELECT count(*), count(*) FILTER (WHERE v = 'after'), count(*) FILTER (WHERE v = 'updated'),
       count(*) FILTER (WHERE v = 'old')
  FROM tgt}),
		'401|1|1|0', "$label: after a crash the committed exchange and later writes are there");
	is($node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT count(*) FROM tgt WHERE (id, day) IN (SELECT id, day FROM src)}),
		'400', "$label: the primary key finds every row");
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM pg_index i, LATERAL bt_index_check(i.indexrelid, true)
 WHERE i.indrelid IN ('tgt_1'::regclass, 'tgt_2'::regclass)}),
		'2', "$label: amcheck finds the partitions' indexes consistent with their heaps");

	# not committed: the old rows are back
	my $writer = $node->background_psql('postgres');
	$writer->query_safe(q{SET client_min_messages = warning});
	$writer->query_safe(q{UPDATE src SET v = 'uncommitted'});
	$writer->query_safe(q{BEGIN});
	$writer->query_safe(q{SELECT hwm.overwrite('p', '2026-01-01', '2026-01-02')});
	$node->stop('immediate');
	$writer->quit;
	$node->start;
	is($node->safe_psql('postgres', q{
SELECT count(*), count(*) FILTER (WHERE v = 'uncommitted'),
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm_exchange%')
  FROM tgt}),
		'401|0|0', "$label: after a crash the uncommitted exchange is gone");
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM pg_index i, LATERAL bt_index_check(i.indexrelid, true)
 WHERE i.indrelid IN ('tgt_1'::regclass, 'tgt_2'::regclass)}),
		'2', "$label: and the partitions' indexes are consistent");
	$node->stop;
}

done_testing();
