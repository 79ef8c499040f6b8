# The swap changes only catalog rows, so WAL replay must rebuild it exactly:
#  1. a hot standby that has the target cached sees the new rows after
#     replay (heap, TOAST, indexes), amcheck finds both tables sound there;
#  2. kill -9 of a backend (a crash of the instance, then recovery from WAL
#     since the last checkpoint): a committed swap is there after recovery,
#     one in progress or rolled back is not, and the data is intact;
#  3. wal_level = minimal: staging created and loaded in one committed
#     transaction (its WAL skipped, synced at commit) is swapped in and
#     survives a crash; storage created in the swapping transaction is
#     refused;
#  4. unlogged tables: after a swap and a crash both are reset to empty
#     from their init forks, and usable.
# Waits use poll_query_until / wait_for_log / wait_for_catchup, never time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $setup = q{
CREATE EXTENSION IF NOT EXISTS hwm;
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL);
CREATE INDEX t_v ON t (substr(v, 1, 8), id);
INSERT INTO t SELECT g, 'old' || repeat('o', 4000) || g FROM generate_series(1, 300) g;
};

# count, number of toasted values, md5 of the rows: what we compare
sub contents
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || ' ' || min(left(v, 3)) || ' ' || md5(string_agg(id || v, '|' ORDER BY id)) FROM $table");
}

# amcheck: the heap and its TOAST table, each B-tree with heapallindexed
sub amcheck_ok
{
	my ($node, $table, $what) = @_;
	is( $node->safe_psql('postgres', qq{
SELECT count(*) FROM verify_heapam('$table', check_toast => true)}),
		'0', "$what: verify_heapam finds $table sound");
	is( $node->safe_psql('postgres', qq{
SELECT count(*) FROM pg_index i, LATERAL bt_index_check(i.indexrelid, true)
 WHERE i.indrelid IN ('$table'::regclass, (SELECT reltoastrelid FROM pg_class WHERE oid = '$table'::regclass))}),
		$what =~ /unlogged/ ? '2' : '3', "$what: bt_index_check(heapallindexed) passes on the indexes of $table and its TOAST table");
	return;
}

# a session to be killed; hwm's NOTICEs are not errors
sub session
{
	my ($node) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	$session->query_safe('SET client_min_messages = warning');
	return $session;
}

# kill -9 a backend that is in the middle of something and wait for the
# instance to have restarted and recovered
sub crash
{
	my ($node, $session) = @_;
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	my $log_offset = -s $node->logfile;
	kill9($node, $pid);    # declared for the log guard
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
	wait_back($node) or die "the instance did not come back after kill -9";
	local $SIG{PIPE} = 'IGNORE';
	eval { $session->quit; };
	return;
}

# --- 1. hot standby ---------------------------------------------------------
my $primary = new_node('swap_primary', shared_preload_libraries => '',
	init => { allows_streaming => 1 }, restart_after_crash => 'on');
$primary->safe_psql('postgres', $setup);
$primary->safe_psql('postgres', q{
SELECT hwm.create_staging('t');
INSERT INTO t_hwm_staging SELECT g, 'new' || repeat('n', 4000) || g FROM generate_series(1, 500) g;
});
my $standby = new_standby($primary, 'swap_standby');

my $old = contents($primary, 't');
my $new = contents($primary, 't_hwm_staging');
# a standby session reads the target (relcache and plans warm), then waits
my $reader = $standby->background_psql('postgres');
is($reader->query_safe('SELECT count(*) FROM t WHERE id = 42'), '1', 'standby reads the target before the swap');

$primary->safe_psql('postgres', "CALL hwm.swap('t', 't_hwm_staging')");
$primary->wait_for_catchup($standby);
is(contents($standby, 't'), $new, 'standby: the target has the new rows after replay');
is(contents($standby, 't_hwm_staging'), $old, 'standby: staging has the old rows');
is( $reader->query_safe(q{SET enable_seqscan = off; SELECT id || ' ' || left(v, 3) || length(v) FROM t WHERE id = 450}),
	'450 new4006', 'standby: the session that had the target cached finds a new row through the index');
is( $reader->query_safe(q{SELECT count(*) FROM t WHERE substr(v, 1, 8) = 'newnnnnn'}),
	'500', 'standby: the expression index has the new rows');
$reader->quit;
amcheck_ok($standby, 't', 'standby');
amcheck_ok($standby, 't_hwm_staging', 'standby');
$standby->stop;

# --- 2. crashes -------------------------------------------------------------
# a swap in progress when the backend dies: nothing happened
$primary->safe_psql('postgres', 'CHECKPOINT');
my $s = session($primary);
$s->query_safe("BEGIN; CALL hwm.swap('t', 't_hwm_staging'); INSERT INTO t VALUES (1000, 'during');");
crash($primary, $s);
is(contents($primary, 't'), $new, 'crash during the swap: the target is as before');
is(contents($primary, 't_hwm_staging'), $old, 'crash during the swap: staging is as before');
amcheck_ok($primary, 't', 'crash during the swap');

# a swap rolled back, then a crash
$primary->safe_psql('postgres', 'CHECKPOINT');
$s = session($primary);
$s->query_safe("BEGIN; CALL hwm.swap('t', 't_hwm_staging'); ROLLBACK;");
crash($primary, $s);
is(contents($primary, 't'), $new, 'crash after a rolled-back swap: the target is as before');
amcheck_ok($primary, 't_hwm_staging', 'crash after a rolled-back swap');

# a committed swap, and writes after it, replayed from WAL after the crash
$primary->safe_psql('postgres', 'CHECKPOINT');
$s = session($primary);
$s->query_safe("CALL hwm.swap('t', 't_hwm_staging')");
$s->query_safe("INSERT INTO t VALUES (1000, 'after' || repeat('a', 4000))");
$s->query_safe("UPDATE t_hwm_staging SET v = v || 'x' WHERE id = 1");
crash($primary, $s);
is( $primary->safe_psql('postgres', 'SELECT count(*), min(left(v, 3)), max(id) FROM t'),
	'301|aft|1000', 'crash after a committed swap: the target has the swapped rows and the later insert');
is( $primary->safe_psql('postgres', q{SELECT count(*), min(left(v, 3)), max(right(v, 2)) FILTER (WHERE id = 1) FROM t_hwm_staging}),
	'500|new|1x', 'crash after a committed swap: staging has the old target rows and the later update');
amcheck_ok($primary, 't', 'crash after a committed swap');
amcheck_ok($primary, 't_hwm_staging', 'crash after a committed swap');

# unlogged tables: their init forks trade places with the rest of the
# storage, so after a crash both are reset to empty, usable tables
$primary->safe_psql('postgres', q{
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, v text);
INSERT INTO u SELECT g, repeat('u', 3000) FROM generate_series(1, 10) g;
SELECT hwm.create_staging('u');
INSERT INTO u_hwm_staging SELECT g, repeat('s', 3000) FROM generate_series(1, 20) g;
CALL hwm.swap('u', 'u_hwm_staging');
});
is($primary->safe_psql('postgres', 'SELECT count(*) FROM u'), '20', 'unlogged: the target has the staging rows');
$s = session($primary);
crash($primary, $s);
is( $primary->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM u) || ' ' || (SELECT count(*) FROM u_hwm_staging)}),
	'0 0', 'unlogged: after a crash both tables are reset to empty');
$primary->safe_psql('postgres', q{
INSERT INTO u SELECT g, repeat('a', 3000) FROM generate_series(1, 5) g;
INSERT INTO u_hwm_staging SELECT g, repeat('b', 3000) FROM generate_series(1, 7) g;
});
is( $primary->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT (SELECT count(*) FROM u WHERE id = 5) || ' ' || (SELECT count(*) FROM u_hwm_staging WHERE id = 7)}),
	'1 1', 'unlogged: both are usable again, through their indexes too');
amcheck_ok($primary, 'u', 'unlogged after a crash');
amcheck_ok($primary, 'u_hwm_staging', 'unlogged after a crash');
$primary->stop;

# --- 3. wal_level = minimal -------------------------------------------------
my $min = new_node('swap_minimal', shared_preload_libraries => '',
	wal_level => 'minimal', max_wal_senders => 0, restart_after_crash => 'on');
$min->safe_psql('postgres', $setup);
# created and loaded in one transaction: its WAL is skipped, synced at commit
$min->safe_psql('postgres', q{
BEGIN;
SELECT hwm.create_staging('t');
INSERT INTO t_hwm_staging SELECT g, 'new' || repeat('n', 4000) || g FROM generate_series(1, 500) g;
COMMIT;
});
$old = contents($min, 't');
$new = contents($min, 't_hwm_staging');

# storage created in the swapping transaction is refused
my ($rc, $out, $err) = $min->psql('postgres', q{
BEGIN;
CREATE TABLE t_fresh (LIKE t INCLUDING ALL);
INSERT INTO t_fresh VALUES (1, 'fresh');
CALL hwm.swap('t', 't_fresh');
});
like($err, qr/t_fresh was created, truncated or rewritten in the current transaction/,
	'wal_level = minimal: a table created in the swapping transaction is refused');

$min->safe_psql('postgres', 'CHECKPOINT');
$s = session($min);
$s->query_safe("CALL hwm.swap('t', 't_hwm_staging')");
$s->query_safe("INSERT INTO t VALUES (1000, 'after' || repeat('a', 4000))");
crash($min, $s);
is( $min->safe_psql('postgres', 'SELECT count(*), min(left(v, 3)), max(id) FROM t'),
	'501|aft|1000', 'wal_level = minimal: after a crash the target has the swapped rows and the later insert');
is(contents($min, 't_hwm_staging'), $old, 'wal_level = minimal: after a crash staging has the old rows');
amcheck_ok($min, 't', 'wal_level = minimal');
amcheck_ok($min, 't_hwm_staging', 'wal_level = minimal');
$min->stop;

done_testing();
