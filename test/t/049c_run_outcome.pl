# A scheduled run that fails because of its owner's settings (issue 28): the
# worker records the run's real SQLSTATE and message, not "the run's
# background worker exited before it recorded an outcome".  The worker's
# session is the owner's, with the owner's settings; on main, recording the
# failure ran under them too and failed again, so the worker exited and the
# dispatcher recorded the generic message (the cause only in the server log):
#  1. ALTER ROLE ... SET default_transaction_read_only = on: the run fails
#     with 25006, and so did the transaction that recorded it;
#  2. ALTER ROLE ... SET statement_timeout = 1: the run fails with 57014;
#     a cancel the timeout left pending must not fail the recording, nor the
#     runs after it in the queue.
# After each, the owner's settings are back (SET LOCAL in the recording
# transaction only), and the pipeline runs again once they are removed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('run_outcome', 'hwm.database' => '*', 'hwm.max_workers' => 2,
	max_worker_processes => 12);

sql($node, 'postgres', q{
CREATE ROLE ro_owner LOGIN;
CREATE ROLE to_owner LOGIN;
CREATE DATABASE app;
});
sql($node, 'app', q{
CREATE EXTENSION hwm;
CREATE TABLE src (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
INSERT INTO src (v) SELECT 'r' || g FROM generate_series(1, 5) g;
GRANT SELECT ON src TO ro_owner, to_owner;
CREATE TABLE ro_tgt (id bigint PRIMARY KEY, v text);
ALTER TABLE ro_tgt OWNER TO ro_owner;
CREATE TABLE to_log (hi bigint);
ALTER TABLE to_log OWNER TO to_owner;
SET ROLE ro_owner;
SELECT hwm.create_pipeline('ro_p', 'src', 'ro_tgt', '{id}', 'id', schedule => '1 second');
RESET ROLE;
ALTER ROLE ro_owner SET default_transaction_read_only = on;
SET ROLE to_owner;
-- several pipelines, so that a queue holds more than one run
SELECT hwm.create_command_pipeline('to_p' || g, 'src', 'id',
  'INSERT INTO public.to_log SELECT $2 FROM pg_catalog.pg_sleep(0.05)', schedule => '1 second')
  FROM generate_series(1, 4) AS g;
RESET ROLE;
ALTER ROLE to_owner SET statement_timeout = 1;
});

# --- 1. the owner's default_transaction_read_only ---------------------------
wait_for($node, 'app', q{
	SELECT count(*) >= 2 FROM hwm.runs WHERE pipeline = 'ro_p' AND status = 'failed'},
	undef, 'the read-only owner\'s runs are recorded as failed');
# (the run's first write is the upsert's INSERT, or the UPDATE of hwm.state
# that remembers transactions in flight when the other owner's runs overlap
# it: which one depends on timing, and both are the run's own statement)
like(sql($node, 'app', q{
	SELECT error_sqlstate || ': ' || error FROM hwm.runs
	 WHERE pipeline = 'ro_p' AND status = 'failed' ORDER BY run_id LIMIT 1}),
	qr/^25006: cannot execute (INSERT|UPDATE) in a read-only transaction\nDETAIL: Every transaction of the owner's sessions here is read-only by default \(the owner's default_transaction_read_only, set by ALTER ROLE \.\.\. SET\)\.$/,
	'with the real SQLSTATE and message, and where the setting came from');
is(sql($node, 'app', q{
	SELECT count(*) FROM hwm.runs WHERE error LIKE '%exited before it recorded%'}),
	'0', 'no run is recorded as its worker exiting before an outcome');
is(sql($node, 'app', q{
	SELECT last_status || ' ' || consecutive_failures::text || ' ' || left(last_error, 30)
	  FROM hwm.state WHERE pipeline = 'ro_p'}) =~ /^failed [1-9]\d* cannot execute (INSERT|UPDATE)/ ? 1 : 0,
	1, 'hwm.state counts the failures with their message');

# --- 2. the owner's statement_timeout of 1 ms --------------------------------
wait_for($node, 'app', q{
	SELECT count(*) >= 8 FROM hwm.runs WHERE pipeline LIKE 'to\_p%' AND status = 'failed'},
	undef, 'the 1 ms statement_timeout owner\'s runs are recorded as failed');
is(sql($node, 'app', q{
	SELECT string_agg(DISTINCT error_sqlstate, ',') FROM hwm.runs
	 WHERE pipeline LIKE 'to\_p%' AND status = 'failed'}),
	'57014', 'each with SQLSTATE 57014');
is(sql($node, 'app', q{
	SELECT count(*) FROM hwm.runs WHERE error LIKE '%exited before it recorded%'}),
	'0', 'still no run recorded as its worker exiting before an outcome');
unlike(slurp_file($node->logfile), qr/exited with exit code 1/,
	'no worker exited with an error');

# --- the owners' settings stay theirs; without them the pipelines run --------
sql($node, 'app', q{
ALTER ROLE ro_owner RESET default_transaction_read_only;
ALTER ROLE to_owner RESET statement_timeout;
UPDATE hwm.state SET consecutive_failures = 0, next_run_at = now()
 WHERE pipeline = 'ro_p' OR pipeline LIKE 'to\_p%';
});
wait_for($node, 'app', q{
	SELECT count(DISTINCT pipeline) = 5 FROM hwm.runs
	 WHERE status = 'succeeded' AND kind = 'load'},
	undef, 'once the settings are removed, every pipeline runs');
is(sql($node, 'app', 'SELECT count(*) FROM ro_tgt'), '5', 'the read-only owner\'s rows are loaded');

$node->stop;
done_testing();
