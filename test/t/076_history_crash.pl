# A history pipeline's run is one statement in one transaction (issue 40):
# kill -9 of its backend in the middle of a big slice (120,000 rows, about
# 20 versions a key, the current versions already closed and 50,000 new ones
# inserted, uncommitted) leaves the history exactly as before the run
# and the watermark where it was; the next run applies the slice once: the
# history equals an oracle computed in plain SQL from the log, nothing
# doubled, one current version a live key.  A rerun of the slice's end
# (hwm.set_watermark back) applies nothing twice and refuses nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $keys = 4000;
my $first = 20_000;
my $slice = 120_000;
my $node = new_node('history_crash', 'hwm.allow_superuser_pipelines' => 'on', restart_after_crash => 'on');

# The log: row g is key g % $keys at 10 ms steps, a tracked change about
# two rows in three, a tombstone one row in ten (keys come back after
# one).  The oracle, by the definition 075_history_soak.pl's oracle spells
# out row by row, here by windows (the other is slow at this size): a row
# opens a group when it is its key's first, a tombstone, after a tombstone,
# or differs from the row before in a tracked column; each group without a
# tombstone is a version, from its first row to the row after its last,
# its tracked columns its first row's, the others its last row's.
sql($node, 'postgres', qq{
CREATE EXTENSION hwm;
CREATE EXTENSION amcheck;
CREATE TABLE log (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k int NOT NULL, at timestamptz NOT NULL,
                  tier text NOT NULL, level int NOT NULL, note int NOT NULL,
                  deleted boolean NOT NULL DEFAULT false, UNIQUE (k, at));
CREATE TABLE hist (k int NOT NULL, id bigint, at timestamptz, tier text, level int, note int,
                   valid_from timestamptz NOT NULL, valid_to timestamptz, PRIMARY KEY (k, valid_from));
CREATE UNIQUE INDEX hist_current ON hist (k) WHERE valid_to IS NULL;
CREATE FUNCTION fill(lo int, hi int) RETURNS void LANGUAGE sql AS \$\$
  INSERT INTO log (k, at, tier, level, note, deleted)
  SELECT g % $keys, '2026-01-01'::timestamptz + g * interval '10 ms',
         CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END, (random() < 0.3)::int, floor(random() * 3)::int,
         random() < 0.1
    FROM generate_series(lo, hi) g \$\$;
SELECT setseed(0.76);
SELECT fill(1, $first);
CREATE VIEW oracle AS
SELECT k, (array_agg(id ORDER BY at DESC))[1] AS id, max(at) AS at,
       (array_agg(tier ORDER BY at))[1] AS tier, (array_agg(level ORDER BY at))[1] AS level,
       (array_agg(note ORDER BY at DESC))[1] AS note, min(at) AS valid_from,
       (array_agg(nxt ORDER BY at DESC))[1] AS valid_to
  FROM (SELECT o.*, sum(opens) OVER (PARTITION BY k ORDER BY at) AS grp
          FROM (SELECT l.*, lead(at) OVER w AS nxt,
                       CASE WHEN lag(at) OVER w IS NULL OR deleted OR lag(deleted) OVER w
                              OR tier IS DISTINCT FROM lag(tier) OVER w
                              OR level IS DISTINCT FROM lag(level) OVER w THEN 1 ELSE 0 END AS opens
                  FROM log l WINDOW w AS (PARTITION BY k ORDER BY at)) o) g
 GROUP BY k, grp
HAVING NOT bool_or(deleted);
SELECT hwm.create_pipeline('hist', 'log', 'hist', '{k}', 'at', history => true,
                           history_columns => '{tier,level}', delete_column => 'deleted');
});
my $opened = sql($node, 'postgres', q{SET client_min_messages = warning; SELECT rows_upserted FROM hwm.run('hist')});
cmp_ok($opened, '>', $keys, "the first run builds the history of $first rows ($opened versions)");
same_rows($node, 'postgres', 'oracle', 'hist', '... equal to the oracle');
my $wm = sql($node, 'postgres', q{SELECT watermark FROM hwm.state WHERE pipeline = 'hist'});

# --- 1. kill -9 in the middle of the run over 120,000 rows --------------------------
# The run is held in the middle: a trigger on the history waits at the
# 50,000th row the run inserts (the current versions closed before, by the
# same statement) while this test holds advisory lock 4242 (the run reads
# with a search_path of its own: the sequence is named with its schema).
sql($node, 'postgres', qq{
SELECT fill($first + 1, $first + $slice);
CREATE TABLE before AS SELECT * FROM hist;
CREATE SEQUENCE gate_seq;
CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF nextval('public.gate_seq') = 50000 THEN PERFORM pg_advisory_xact_lock_shared(4242); END IF;
  RETURN NEW;
END \$\$;
CREATE TRIGGER gate BEFORE INSERT ON hist FOR EACH ROW EXECUTE FUNCTION gate();
});
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe('SELECT pg_advisory_lock(4242)');
my $loader = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $loader->query_safe('SELECT pg_backend_pid()');
$loader->query_until(qr/running/, q{\echo running
SELECT * FROM hwm.run('hist');
});
ok($node->poll_query_until('postgres', qq{
SELECT wait_event_type = 'Lock' AND wait_event = 'advisory' FROM pg_stat_activity WHERE pid = $pid}),
	'the run waits at its 50,000th version inserted');
is(sql($node, 'postgres', q{SELECT last_value FROM gate_seq}), '50000', '... with the versions before it inserted');
kill9($node, $pid);
eval { $loader->quit; };    # its session died with the server's restart
eval { $holder->quit; };
ok(wait_back($node), 'the server is back after the crash');
same_rows($node, 'postgres', 'before', 'hist', 'after the crash the history is exactly as before the run');
is(sql($node, 'postgres', q{SELECT watermark FROM hwm.state WHERE pipeline = 'hist'}), $wm,
	'... and the watermark did not move');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'hist'}), '1',
	'... and the killed run is not recorded');
is(sql($node, 'postgres', q{SELECT count(*) FROM verify_heapam('hist', check_toast => true)}),
	'0', '... verify_heapam finds the history sound');
is(sql($node, 'postgres', q{
SELECT count(*) FROM pg_index i, LATERAL bt_index_check(i.indexrelid, true) WHERE i.indrelid = 'hist'::regclass}),
	'2', '... and bt_index_check(heapallindexed) passes on both its indexes');

# --- 2. the next run applies the slice once ------------------------------------------
sql($node, 'postgres', q{DROP TRIGGER gate ON hist});
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT rows_inserted FROM hwm.run('hist')});
is($ret, 0, 'the next run succeeds');
unlike($err, qr/WARNING/, '... without a warning');
is(sql($node, 'postgres', q{SELECT rows_inserted FROM hwm.runs WHERE pipeline = 'hist' ORDER BY run_id DESC LIMIT 1}),
	$out, "... its result and its record count the same versions opened ($out)");
is(sql($node, 'postgres', q{SELECT watermark::timestamptz = (SELECT max(at) FROM log) FROM hwm.state WHERE pipeline = 'hist'}),
	't', '... its watermark the newest row');
is(sql($node, 'postgres', q{SELECT rows_refused FROM hwm.runs WHERE pipeline = 'hist' ORDER BY run_id DESC LIMIT 1}),
	'0', '... refusing no row');
sql($node, 'postgres', q{CREATE TABLE oracle_m AS SELECT * FROM oracle});
my $versions = sql($node, 'postgres', q{SELECT count(*) FROM oracle_m});
is(sql($node, 'postgres', q{
SELECT count(*) FROM oracle_m o WHERE NOT EXISTS (SELECT 1 FROM hist h WHERE h.k = o.k AND h.valid_from = o.valid_from)}),
	'0', "0 versions lost (of $versions)");
is(sql($node, 'postgres', q{
SELECT count(*) FROM hist h WHERE NOT EXISTS (SELECT 1 FROM oracle_m o WHERE o.k = h.k AND o.valid_from = h.valid_from)}),
	'0', '0 versions doubled or made up');
same_rows($node, 'postgres', 'oracle_m', 'hist', 'the history equals the oracle');
is(sql($node, 'postgres', q{
SELECT count(*) FROM (SELECT DISTINCT ON (k) k, deleted FROM log ORDER BY k, at DESC) l
 WHERE (SELECT count(*) FROM hist h WHERE h.k = l.k AND h.valid_to IS NULL) <> CASE WHEN l.deleted THEN 0 ELSE 1 END}),
	'0', 'one current version for each key whose last row is live, none for a deleted one');

# --- 3. a rerun of the slice's end applies nothing twice ------------------------------
# from 20,000 rows before the end: rows absorbed into current versions, rows
# that opened closed ones, tombstones; every one agrees with the history
my $back = sql($node, 'postgres', qq{SELECT at FROM log WHERE id = $first + $slice - 20000});
sql($node, 'postgres', qq{CREATE TABLE after_run AS SELECT * FROM hist; SELECT hwm.set_watermark('hist', '$back')});
($ret, $out, $err) = $node->psql('postgres', q{SELECT rows_inserted FROM hwm.run('hist')});
is($ret, 0, 'a rerun of the last 20,000 rows succeeds');
is($out, '0', '... its result counting no version opened');
unlike($err, qr/WARNING/, '... without a warning');
is(sql($node, 'postgres', q{SELECT rows_inserted || ' ' || rows_refused FROM hwm.runs WHERE pipeline = 'hist' ORDER BY run_id DESC LIMIT 1}),
	'0 0', '... opening no version and refusing no row');
same_rows($node, 'postgres', 'after_run', 'hist', '... and leaves the history as it was');

$node->stop;
done_testing();
