# The background scheduler at work: scheduled pipelines load new rows on
# their own, as their owner; a failing pipeline is recorded while the others
# keep running, and recovers (its backoff is 04f_mock_clock.pl's); a time
# limit cancels a slow run; a run by hand makes the scheduled one 'skipped';
# pause/resume and hwm.enabled stop and restart scheduling; run history is
# pruned.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('sched', 'hwm.allow_superuser_pipelines' => 'on', 'hwm.max_workers' => 2,
	max_worker_processes => 16);

sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE tgt (id bigint PRIMARY KEY, v text);
INSERT INTO src (v) SELECT 'a' || g FROM generate_series(1, 10) g;
SELECT hwm.create_pipeline('p', 'src', 'tgt', '{id}', 'id', schedule => '1 second');
});

# 1. a scheduled pipeline loads new source rows on its own
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '10', 'the first scheduled run loads the source');
sql($node, 'postgres', "INSERT INTO src (v) SELECT 'b' || g FROM generate_series(1, 5) g");
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '15', 'a later scheduled run loads the new rows');
is(sql($node, 'postgres', "SELECT watermark FROM hwm.state WHERE pipeline = 'p'"), '15', 'the watermark follows');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'p' AND status NOT IN ('succeeded', 'running')"),
	'0', 'every scheduled run succeeded');
is(sql($node, 'postgres', "SELECT count(*) FROM (SELECT id FROM tgt EXCEPT SELECT id FROM src) d"), '0', 'nothing extra');

# 2. pipelines owned by a non-superuser run with that role's rights: a
# trigger on the target records who the session is
sql($node, 'postgres', q{
CREATE ROLE alice LOGIN;
CREATE SCHEMA a AUTHORIZATION alice;
SET ROLE alice;
CREATE TABLE a.src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE a.tgt (id bigint PRIMARY KEY, v text);
CREATE TABLE a.who (session_user_name name, current_user_name name, search_path text);
CREATE FUNCTION a.note_who() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO a.who VALUES (session_user, current_user, current_setting('search_path'));
  RETURN NEW;
END $$;
CREATE TRIGGER note_who AFTER INSERT ON a.tgt FOR EACH STATEMENT EXECUTE FUNCTION a.note_who();
CREATE TABLE a.secret_src (id bigint, v text);
CREATE TABLE a.secret_tgt (id bigint PRIMARY KEY, v text);
INSERT INTO a.src (v) VALUES ('x'), ('y');
INSERT INTO a.secret_src VALUES (1, 's');
SELECT hwm.create_pipeline('a_ok', 'a.src', 'a.tgt', '{id}', 'id', schedule => '1 second');
SELECT hwm.create_pipeline('a_secret', 'a.secret_src', 'a.secret_tgt', '{id}', 'id');
RESET ROLE;
-- alice loses the right to read her secret source (an administrator took
-- the table over) before the pipeline is scheduled
ALTER TABLE a.secret_src OWNER TO postgres;
SET ROLE alice;
SELECT hwm.schedule('a_secret', '1 second');
RESET ROLE;
});
wait_for($node, 'postgres', "SELECT count(*) FROM a.tgt", '2', "alice's pipeline loads");
is(sql($node, 'postgres', "SELECT DISTINCT session_user_name || '/' || current_user_name || '/' || search_path FROM a.who"),
	'alice/alice/pg_catalog, pg_temp',
	'the run is a session of the owner, not of a superuser, with search_path pinned');
is(sql($node, 'postgres', "SELECT DISTINCT run_by FROM hwm.runs WHERE pipeline = 'a_ok' AND status = 'succeeded'"),
	'alice', 'hwm.runs says who ran it');

wait_for($node, 'postgres', "SELECT consecutive_failures >= 1 FROM hwm.state WHERE pipeline = 'a_secret'", 't',
	'the pipeline whose source alice cannot read fails');
is(sql($node, 'postgres', "SELECT error_sqlstate || ' ' || split_part(error, E'\n', 1) FROM hwm.runs WHERE pipeline = 'a_secret' AND status = 'failed' ORDER BY run_id LIMIT 1"),
	'42501 permission denied for source table a.secret_src',
	'the failure is recorded with its SQLSTATE and message');
is(sql($node, 'postgres', "SELECT last_status || ' ' || split_part(last_error, E'\n', 1) FROM hwm.state WHERE pipeline = 'a_secret'"),
	'failed permission denied for source table a.secret_src', 'hwm.state shows the last error');
is(sql($node, 'postgres', "SELECT count(*) FROM a.secret_tgt"), '0', 'nothing of the secret table was copied');
sql($node, 'postgres', "INSERT INTO a.src (v) VALUES ('z')");
wait_for($node, 'postgres', "SELECT count(*) FROM a.tgt", '3', 'the other pipeline keeps running');

# 3. once the failing pipeline can read its source, it recovers.  (Its
# retries back off: after the n-th consecutive failure the next run is due
# min(schedule * 2^(n-1), max(schedule, 1 hour)) after it; that is
# 04f_mock_clock.pl's, over hours of a clock it moves, where this test
# waited for four failures on the real one.)
sql($node, 'postgres', "GRANT SELECT ON a.secret_src TO alice");
wait_for($node, 'postgres', "SELECT last_status || consecutive_failures FROM hwm.state WHERE pipeline = 'a_secret'",
	'succeeded0', 'once fixed, the pipeline recovers and its failure count resets');
is(sql($node, 'postgres', "SELECT count(*) FROM a.secret_tgt"), '1', 'and loads');

# an owner that cannot log in: recorded, not a crash loop
sql($node, 'postgres', q{
CREATE ROLE nologin_owner NOLOGIN;
GRANT USAGE ON SCHEMA a TO nologin_owner;
GRANT SELECT ON a.src TO nologin_owner;
CREATE TABLE a.nl_tgt (id bigint PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE ON a.nl_tgt TO nologin_owner;
SET ROLE nologin_owner;
SELECT hwm.create_pipeline('nl', 'a.src', 'a.nl_tgt', '{id}', 'id', schedule => '1 hour');
RESET ROLE;
});
wait_for($node, 'postgres', "SELECT last_status || ' ' || error_sqlstate FROM hwm.state JOIN hwm.runs ON run_id = last_run_id WHERE state.pipeline = 'nl'",
	'failed 28000', 'an owner without LOGIN fails with a clear error');

# 4. a time limit cancels a slow run, and it is recorded
sql($node, 'postgres', q{
CREATE TABLE slow_base (id bigint, v text);
INSERT INTO slow_base VALUES (1, 'slow');
CREATE VIEW slow_src AS SELECT id, v FROM slow_base WHERE pg_sleep(30) IS NOT NULL;
CREATE TABLE slow_tgt (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('slow', 'slow_src', 'slow_tgt', '{id}', 'id');
SELECT hwm.set_timeout('slow', '200 milliseconds');
SELECT hwm.schedule('slow', '1 hour');
});
wait_for($node, 'postgres', "SELECT status || ' ' || error_sqlstate FROM hwm.runs WHERE pipeline = 'slow' ORDER BY run_id DESC LIMIT 1",
	'failed 57014', 'a run over its time limit is cancelled and recorded as failed');
like(sql($node, 'postgres', "SELECT error FROM hwm.runs WHERE pipeline = 'slow' ORDER BY run_id DESC LIMIT 1"),
	qr/took longer than its timeout of 200 ms/, 'the error says why');
sql($node, 'postgres', "SELECT hwm.unschedule('slow')");

# 5. a run by hand holds the pipeline: the scheduled run is skipped, not
# doubled.  The hand run is held in the middle by a gate (an advisory lock
# that the target's trigger waits for) while the pipeline is paused; then the
# pipeline is resumed.
sql($node, 'postgres', q{
CREATE TABLE h_src (id bigint GENERATED ALWAYS AS IDENTITY, v text);
CREATE TABLE h_tgt (id bigint PRIMARY KEY, v text);
CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER gate BEFORE INSERT ON h_tgt FOR EACH ROW EXECUTE FUNCTION gate();
SELECT hwm.create_pipeline('h', 'h_src', 'h_tgt', '{id}', 'id');
SELECT hwm.pause('h');
SELECT hwm.schedule('h', '1 second');
INSERT INTO h_src (v) VALUES ('by hand');
});
my $gate = $node->background_psql('postgres');
$gate->set_query_timer_restart;
$gate->query_safe("SELECT pg_advisory_lock(4242)");
my $hand = $node->background_psql('postgres');
$hand->set_query_timer_restart;
$hand->query_until(qr/started/, q{SET client_min_messages = warning;
\echo started
SELECT rows_upserted FROM hwm.run('h');
});
wait_for($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event = 'advisory'},
	'1', 'a run by hand is in progress');
sql($node, 'postgres', "SELECT hwm.resume('h')");
wait_for($node, 'postgres', "SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'h' AND status = 'skipped'", 't',
	'a scheduled run meeting a run by hand is skipped');
is(sql($node, 'postgres', "SELECT error_sqlstate FROM hwm.runs WHERE pipeline = 'h' AND status = 'skipped' LIMIT 1"),
	'55P03', 'with the lock-not-available SQLSTATE');
$gate->query_safe("SELECT pg_advisory_unlock(4242)");
$gate->quit;
is($hand->query_safe(""), '1', 'the run by hand loads the row');
$hand->quit;
is(sql($node, 'postgres', "SELECT count(*) || ' ' || count(DISTINCT id) FROM h_tgt"), '1 1', 'once');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'h' AND status = 'failed'"), '0',
	'a skipped run is not a failure');
sql($node, 'postgres', "SELECT hwm.drop_pipeline('h')");

# 6. pause and resume one pipeline; hwm.enabled switches all scheduling
sql($node, 'postgres', "SELECT hwm.pause('p')");
wait_for($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'p' AND status = 'running'", '0', 'paused');
my $runs_p = sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'p'");
my $runs_a = sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'a_ok' AND status = 'succeeded'");
wait_for($node, 'postgres', "SELECT count(*) >= $runs_a + 2 FROM hwm.runs WHERE pipeline = 'a_ok' AND status = 'succeeded'", 't',
	'other pipelines run on');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs WHERE pipeline = 'p'"), $runs_p, 'a paused pipeline does not run');
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('after pause')");
sql($node, 'postgres', "SELECT hwm.resume('p')");
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '16', 'a resumed pipeline runs again');

$node->append_conf('postgresql.conf', "hwm.enabled = off\n");
$node->reload;
# (a dispatcher started before the reload may still commit claims, and their
# workers run them: wait until none is left, nor any run claimed or running)
wait_for($node, 'postgres', q{SELECT (SELECT count(*) FROM hwm.runs WHERE status = 'running')
  + (SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('hwm dispatcher', 'hwm worker'))},
	'0', 'hwm.enabled = off: no runs');
my $all_runs = sql($node, 'postgres', "SELECT count(*) FROM hwm.runs");
# the scheduler still sweeps and prunes; wait until a scheduled slot of p has passed
sql($node, 'postgres', "INSERT INTO src (v) VALUES ('while disabled')");
wait_for($node, 'postgres', "SELECT next_run_at < now() - interval '2 seconds' FROM hwm.state WHERE pipeline = 'p'", 't',
	'time passes');
is(sql($node, 'postgres', "SELECT count(*) FROM hwm.runs"), $all_runs, 'nothing ran while disabled');
is(sql($node, 'postgres', "SELECT count(*) FROM tgt"), '16', 'nothing loaded while disabled');
$node->append_conf('postgresql.conf', "hwm.enabled = on\n");
$node->reload;
wait_for($node, 'postgres', "SELECT count(*) FROM tgt", '17', 'hwm.enabled = on: scheduling resumes');
# (the next slot is taken from the claim's time, a little before the run
# starts: a slot may begin in between, so the next run may be due already,
# but never a missed slot, all over 2 seconds before the run)
is(sql($node, 'postgres', q{SELECT next_run_at > (SELECT max(started_at) - interval '1 second' FROM hwm.runs
                                WHERE pipeline = 'p' AND status = 'succeeded' AND rows_upserted = 1)
           FROM hwm.state WHERE pipeline = 'p'}),
	't', 'the missed slots became one catch-up run: the next run is on the grid after it');

# 7. bounded history
$node->append_conf('postgresql.conf', "hwm.max_runs_per_pipeline = 3\n");
$node->reload;
wait_for($node, 'postgres', "SELECT max(n) FROM (SELECT count(*) AS n FROM hwm.runs WHERE kind = 'load' AND status <> 'running' GROUP BY pipeline) c",
	'3', 'the launcher prunes the history to hwm.max_runs_per_pipeline');

# the launcher survived all of that
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|hwm launcher" \(PID \d+\) exited/, 'the launcher never died');

$node->stop;
done_testing();
