# Soak test for history pipelines (issue 40): writers append versions of 300
# keys to a change log under pgbench, tombstones and re-inserts after
# tombstones among them, each transaction stamping its rows (now(), and an
# identity value drawn at the insert) and sleeping up to 2 s before its
# commit, so that versions commit late and out of order; a runner fires
# hwm.run every 0.2 to 4 s on two history pipelines over the log: one
# watermarked by the timestamptz stamp, one by the bigint identity, so that
# several versions of a key fall between two runs.  After the writers stop
# and the last runs, each history must equal an oracle computed in plain SQL
# from the log: 0 versions lost, 0 doubled, every version's bounds and
# columns as the log says, one current version for each key whose last row
# is not a tombstone, none for the others, and no row refused by any run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('histsoak', max_connections => 50,
	# the test's pipelines are owned by the bootstrap superuser
	'hwm.allow_superuser_pipelines' => 'on',
	# the identity watermark moves only once the writers holding the log's
	# lock have ended; theirs end within 2 s
	'hwm.wait_timeout' => '3000');

# the log: (k, at) unique, as a history needs distinct values of a key
# (the writers skip a clash, which two transactions starting in the same
# microsecond could make); the targets: one with the recommended unique
# index on the current versions, one without (nothing but the oracle keeps
# a second current version out of it)
$node->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE log (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                  k int NOT NULL,
                  at timestamptz NOT NULL DEFAULT now(),
                  tier text NOT NULL,
                  level int NOT NULL,
                  note int NOT NULL,
                  deleted boolean NOT NULL DEFAULT false,
                  UNIQUE (k, at));
CREATE INDEX ON log (k, id);
CREATE TABLE hist_time (k int NOT NULL, id bigint, at timestamptz, tier text, level int, note int,
                        valid_from timestamptz NOT NULL, valid_to timestamptz,
                        PRIMARY KEY (k, valid_from));
CREATE UNIQUE INDEX hist_time_current ON hist_time (k) WHERE valid_to IS NULL;
CREATE TABLE hist_seq (k int NOT NULL, id bigint, at timestamptz, tier text, level int, note int,
                       valid_from bigint NOT NULL, valid_to bigint,
                       PRIMARY KEY (k, valid_from));
SELECT hwm.create_pipeline('hist_time', 'log', 'hist_time', '{k}', 'at', history => true,
                           history_columns => '{tier,level}', delete_column => 'deleted');
SELECT hwm.create_pipeline('hist_seq', 'log', 'hist_seq', '{k}', 'id', history => true,
                           history_columns => '{tier,level}', delete_column => 'deleted');
});

# The oracle of the history by watermark column $wm, from the log alone: a
# row that is not a tombstone opens a version when its key's row before it
# (in $wm order) is missing, a tombstone, or differs in a tracked column; the
# version is valid until the key's next row that is a tombstone or differs
# in a tracked column (NULL: none, current); its tracked columns are its
# first row's, the others (id, at, note) the last row's before its end.
sub oracle
{
	my ($wm) = @_;
	return qq{
SELECT r.k, last.id, last.at, r.tier, r.level, last.note, r.$wm AS valid_from, nx.valid_to
  FROM log r
 CROSS JOIN LATERAL (SELECT min(n.$wm) AS valid_to FROM log n
                      WHERE n.k = r.k AND n.$wm > r.$wm
                        AND (n.deleted OR n.tier IS DISTINCT FROM r.tier OR n.level IS DISTINCT FROM r.level)) nx
 CROSS JOIN LATERAL (SELECT l.id, l.at, l.note FROM log l
                      WHERE l.k = r.k AND l.$wm >= r.$wm AND (nx.valid_to IS NULL OR l.$wm < nx.valid_to)
                      ORDER BY l.$wm DESC LIMIT 1) last
 WHERE NOT r.deleted
   AND NOT EXISTS (SELECT 1 FROM (SELECT p.deleted, p.tier, p.level FROM log p
                                   WHERE p.k = r.k AND p.$wm < r.$wm ORDER BY p.$wm DESC LIMIT 1) p
                    WHERE NOT p.deleted AND p.tier IS NOT DISTINCT FROM r.tier
                      AND p.level IS NOT DISTINCT FROM r.level)};
}

# Each transaction appends up to 80 rows of distinct keys (one stamp each:
# the transaction's now()), 12% tombstones, the tracked columns equal to a
# key's last ones about a third of the time (its current version then
# updated in place), and sleeps up to 2 s before committing.
my $writer = <<'SQL';
\set n random(1, 80)
\set len random(0, 2000)
BEGIN;
INSERT INTO log (k, tier, level, note, deleted)
  SELECT k, CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END, (random() < 0.2)::int,
         floor(random() * 3)::int, random() < 0.12
    FROM (SELECT DISTINCT 1 + floor(random() * 300)::int AS k FROM generate_series(1, :n)) s
  ON CONFLICT DO NOTHING;
\sleep :len ms
COMMIT;
SQL
my $runner = <<'SQL';
\set pause random(200, 4000)
SELECT rows_upserted FROM hwm.run('hist_time');
SELECT rows_upserted FROM hwm.run('hist_seq');
\sleep :pause ms
SQL

local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
my $soak = soak_start($node, seconds => 30, writer => $writer, runner => $runner);
my ($wout, $werr, $rout, $rerr) = soak_finish_ok($soak);
unlike($rerr, qr/WARNING/, 'no run warned (of rows refused)');
like($wout, qr/number of failed transactions: 0 /, 'every writer transaction committed');

# The last runs: the time watermark stays hwm.start_margin behind the clock,
# and a history's run reads nothing above its watermark, so run until each
# watermark is the log's newest value (PGOPTIONS quiets their notices).
wait_for($node, 'postgres', q{
SELECT (SELECT watermark_after FROM hwm.run('hist_time'))::timestamptz = (SELECT max(at) FROM log)},
	't', 'hist_time: the last runs take the watermark to the newest stamp');
wait_for($node, 'postgres', q{
SELECT (SELECT watermark_after FROM hwm.run('hist_seq'))::bigint = (SELECT max(id) FROM log)},
	't', 'hist_seq: the last runs take the watermark to the newest identity');

# what the writers made: tombstones, keys back after one, rows absorbed
# into a version, and (below) several versions of a key in one run's slice
my ($rows, $tombstones, $back) = split /\|/, sql($node, 'postgres', q{
SELECT count(*), count(*) FILTER (WHERE deleted),
       count(*) FILTER (WHERE NOT deleted AND prev_deleted)
  FROM (SELECT deleted, lag(deleted) OVER (PARTITION BY k ORDER BY at) AS prev_deleted FROM log) l});
note "log: $rows rows, $tombstones tombstones, $back keys back after one";
cmp_ok($tombstones, '>', 50, "the writers wrote tombstones ($tombstones of $rows rows)");
cmp_ok($back, '>', 20, "... and keys came back after one ($back)");

for my $p (['hist_time', 'at', 'timestamptz'], ['hist_seq', 'id', 'bigint'])
{
	my ($hist, $wm, $type) = @$p;
	sql($node, 'postgres', "CREATE TABLE oracle_$hist AS " . oracle($wm));
	my $versions = sql($node, 'postgres', "SELECT count(*) FROM oracle_$hist");
	cmp_ok($versions, '<', $rows - $tombstones, "$hist: the oracle has $versions versions, fewer than rows (rows absorbed in place)");
	is(sql($node, 'postgres', qq{
SELECT count(*) FROM oracle_$hist o WHERE NOT EXISTS (SELECT 1 FROM $hist h WHERE h.k = o.k AND h.valid_from = o.valid_from)}),
		'0', "$hist: 0 versions lost");
	is(sql($node, 'postgres', qq{
SELECT count(*) FROM $hist h WHERE NOT EXISTS (SELECT 1 FROM oracle_$hist o WHERE o.k = h.k AND o.valid_from = h.valid_from)}),
		'0', "$hist: 0 versions doubled or made up");
	same_rows($node, 'postgres', "oracle_$hist", $hist,
		"$hist: the history equals the oracle (key, bounds, tracked and other columns)",
		columns => 'k, id, at, tier, level, note, valid_from, valid_to');
	is(sql($node, 'postgres', qq{
SELECT count(*) FROM (SELECT DISTINCT ON (k) k, deleted FROM log ORDER BY k, $wm DESC) l
 WHERE (SELECT count(*) FROM $hist h WHERE h.k = l.k AND h.valid_to IS NULL) <> CASE WHEN l.deleted THEN 0 ELSE 1 END}),
		'0', "$hist: one current version for each key whose last row is live, none for a deleted one");
	is(sql($node, 'postgres', qq{
SELECT count(*) FROM hwm.runs WHERE pipeline = '$hist' AND (status <> 'succeeded' OR coalesce(rows_refused, 0) <> 0)}),
		'0', "$hist: every run succeeded and refused no row");
	my $runs = sql($node, 'postgres', qq{
SELECT count(*) FROM hwm.runs WHERE pipeline = '$hist' AND watermark_after IS DISTINCT FROM watermark_before});
	cmp_ok($runs, '>=', 5, "$hist: $runs runs moved the watermark");
	my $several = sql($node, 'postgres', qq{
SELECT count(*) FROM (SELECT r.run_id, o.k FROM hwm.runs r
  JOIN oracle_$hist o ON o.valid_from > r.watermark_before::$type AND o.valid_from <= r.watermark_after::$type
 WHERE r.pipeline = '$hist' AND r.status = 'succeeded'
 GROUP BY 1, 2 HAVING count(*) >= 2) x});
	cmp_ok($several, '>', 0, "$hist: runs applied several versions of one key at once ($several times)");
}

$node->stop;
done_testing();
