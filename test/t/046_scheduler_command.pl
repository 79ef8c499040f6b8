# The scheduler runs command and interval pipelines like copy pipelines: a
# scheduled rollup adds each new row once, as the pipeline's owner with
# search_path pinned; a scheduled interval pipeline (not batched) does one
# interval per run; a command that fails is a failed run, recorded with its
# SQLSTATE, that leaves the watermark and the rollup as they were, and the
# next runs go on once the cause is gone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sched_cmd', 'hwm.max_workers' => 2, max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE bob LOGIN;
CREATE SCHEMA b AUTHORIZATION bob;
SET ROLE bob;
CREATE TABLE b.src (id bigint GENERATED ALWAYS AS IDENTITY,
                    t timestamptz NOT NULL DEFAULT now(), kind int NOT NULL);
CREATE TABLE b.roll (kind int PRIMARY KEY, n bigint NOT NULL, by_user name, path text);
CREATE TABLE b.per_second (start timestamptz PRIMARY KEY, n bigint NOT NULL);
INSERT INTO b.src (kind) SELECT g % 3 FROM generate_series(1, 30) g;
SELECT hwm.create_command_pipeline('rollup', 'b.src', 'id', $$
  INSERT INTO b.roll AS r
  SELECT s.kind, count(*), current_user, current_setting('search_path') FROM b.src AS s
   WHERE ($1 IS NULL OR s.id > $1) AND s.id <= $2 GROUP BY s.kind
  ON CONFLICT (kind) DO UPDATE SET n = r.n + EXCLUDED.n, by_user = EXCLUDED.by_user,
                                   path = EXCLUDED.path$$,
  schedule => '1 second');
SELECT hwm.create_interval_pipeline('seconds', 'b.src', 't', '1 second', $$
  INSERT INTO b.per_second SELECT $1, count(*) FROM b.src AS s WHERE s.t >= $1 AND s.t < $2$$,
  skip_empty => true, schedule => '1 second');
RESET ROLE;
});
# 1. the scheduled rollup counts the rows, then the new ones, each once
wait_for($node, 'postgres', "SELECT sum(n) FROM b.roll", '30', 'the first scheduled run of the command pipeline counts the source');
sql($node, 'postgres', "INSERT INTO b.src (kind) SELECT g % 3 FROM generate_series(1, 12) g");
wait_for($node, 'postgres', "SELECT sum(n) FROM b.roll", '42', 'a later scheduled run counts the new rows');
same_rows($node, 'postgres', '(SELECT kind, count(*) AS n FROM b.src GROUP BY kind) AS g', 'b.roll',
	'the rollup equals GROUP BY kind over the source', columns => 'kind, n');
is(sql($node, 'postgres', "SELECT DISTINCT by_user || '/' || path FROM b.roll"), 'bob/pg_catalog, pg_temp',
	"the command ran as the pipeline's owner with search_path pinned");
is(sql($node, 'postgres', "SELECT watermark FROM hwm.state WHERE pipeline = 'rollup'"), '42', 'the watermark is the last id');

# 2. the interval pipeline does every second that has rows, one per run
wait_for($node, 'postgres', "SELECT sum(n) FROM b.per_second", '42', 'the scheduled interval pipeline counts every row');
same_rows($node, 'postgres', q{(SELECT date_bin('1 second', t, '2000-01-01 00:00+00') AS start, count(*) AS n
                        FROM b.src GROUP BY 1) AS g}, 'b.per_second', 'each second counted once');
is(sql($node, 'postgres', q{
SELECT count(*) = (SELECT count(*) FROM b.per_second)
       AND bool_and(to_partition::timestamptz - from_partition::timestamptz = interval '1 second')
  FROM hwm.runs WHERE pipeline = 'seconds' AND status = 'succeeded' AND from_partition IS NOT NULL}),
	't', 'one interval per scheduled run, recorded in hwm.runs');
is(sql($node, 'postgres', "SELECT kind FROM hwm.status WHERE pipeline = 'seconds'"), 'interval', 'hwm.status shows its kind');

# 3. a failing command: a failed run, nothing counted, the watermark stays
sql($node, 'postgres', q{
ALTER TABLE b.roll ADD CONSTRAINT roll_small CHECK (n < 30);
INSERT INTO b.src (kind) SELECT 0 FROM generate_series(1, 20);
});
wait_for($node, 'postgres', q{SELECT count(*) > 0 FROM hwm.runs
            WHERE pipeline = 'rollup' AND status = 'failed' AND error_sqlstate = '23514'},
	't', 'the scheduled run whose command fails is recorded as failed, with its SQLSTATE');
is(sql($node, 'postgres', "SELECT watermark FROM hwm.state WHERE pipeline = 'rollup'"), '42', 'the watermark stayed');
is(sql($node, 'postgres', "SELECT sum(n) FROM b.roll"), '42', 'nothing of the failed range was counted');
like(sql($node, 'postgres', "SELECT last_status || '/' || consecutive_failures FROM hwm.status WHERE pipeline = 'rollup'"),
	qr{^failed/[1-9]}, 'hwm.status shows the failure');
sql($node, 'postgres', "ALTER TABLE b.roll DROP CONSTRAINT roll_small");
wait_for($node, 'postgres', "SELECT sum(n) FROM b.roll", '62', 'once the cause is gone, a later run counts the range once');
same_rows($node, 'postgres', '(SELECT kind, count(*) AS n FROM b.src GROUP BY kind) AS g', 'b.roll',
	'the rollup still equals GROUP BY kind over the source', columns => 'kind, n');

$node->stop;
done_testing();
