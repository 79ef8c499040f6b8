# Owners' history, notifications and a scheduler that says why (issue 28),
# next to 049_hostile_owners.pl.  Each case failed on main before it:
#  1. runs without a pipeline were pruned together: one owner's 40
#     overwrite_partition calls deleted another owner's recorded run; now
#     each owner's runs without a pipeline are a history of their own (by
#     the scheduler's upkeep, and by hand where it does not serve);
#  2. a role with no rights that listened on hwm_runs heard every owner's
#     pipeline names, statuses and SQLSTATEs; now the payload is the
#     database and the run_id, and the run is read under row security
#     (a forged payload leads to nothing the reader may not see);
#  3. ALTER DATABASE ... SET default_transaction_read_only = on by the
#     database's owner made every dispatch fail, seen only in the server
#     log; now the runs are claimed and recorded as failed with the cause,
#     and hwm.status.not_scheduled_because says it; the same for the
#     owner's role setting; and a claim that fails;
#  4. a database's statement_timeout was reported as "its timeout"; now the
#     message says whose;
#  5. a long CALL hwm.catch_up or hwm.rerun_intervals left every run in
#     hwm.runs until the next upkeep; now it prunes as it goes.
# Nothing is timed: the listener of 2. asks until it has heard two runs end.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

# app, ro, loops: served by the scheduler; hand: not (runs by hand prune there)
my $node = new_node('owners_history', 'hwm.database' => 'app, ro, loops', 'hwm.max_workers' => 2,
	'hwm.max_runs_per_pipeline' => 5, max_worker_processes => 12);

sql($node, 'postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE nobody LOGIN;
CREATE DATABASE app OWNER alice;
CREATE DATABASE hand;
});
my $setup = q{
CREATE EXTENSION hwm;
GRANT CREATE ON SCHEMA public TO alice, bob;
CREATE TABLE src (id bigint PRIMARY KEY, d date NOT NULL, v text);
INSERT INTO src SELECT g, date '2026-01-01' + (g % 3), 'r' || g FROM generate_series(1, 9) g;
GRANT SELECT ON src TO alice, bob;
SET ROLE alice;
CREATE TABLE a_tgt (id bigint PRIMARY KEY, d date NOT NULL, v text);
CREATE TABLE a_part (id bigint PRIMARY KEY, d date NOT NULL, v text);
RESET ROLE;
SET ROLE bob;
CREATE TABLE b_part (id bigint PRIMARY KEY, d date NOT NULL, v text);
RESET ROLE;
};
sql($node, $_, $setup) for ('app', 'hand');

# --- 1. runs without a pipeline: pruned per owner ------------------------
# alice's one overwrite_partition run, then bob's 40 (bound: 5)
for my $db ('app', 'hand')
{
	$node->safe_psql($db, q{SELECT * FROM hwm.overwrite_partition('a_part', 'src', 'd', '2026-01-01', '2026-01-03')},
		extra_params => [ '-U', 'alice' ]);
	$node->safe_psql($db, q{
SET client_min_messages = warning;
SELECT count(hwm.overwrite_partition('b_part', 'src', 'd', '2026-01-01', '2026-01-03')) FROM generate_series(1, 40);
}, extra_params => [ '-U', 'bob' ]);
}
is(sql($node, 'hand', q{SELECT count(*) BETWEEN 5 AND 5 + 15 FROM hwm.runs WHERE pipeline IS NULL AND owner = 'bob'::regrole}),
	't', "where the scheduler does not prune, bob's runs without a pipeline prune themselves to the bound (checked every 16th run)");
is(sql($node, 'hand', q{SELECT count(*) FROM hwm.runs WHERE pipeline IS NULL AND owner = 'alice'::regrole}),
	'1', "... and alice's run is kept");
# app: the scheduler's upkeep prunes (alice's 1-second pipeline keeps runs due)
$node->safe_psql('app', q{SELECT hwm.create_pipeline('alice_1s', 'src', 'a_tgt', '{id}', 'id', schedule => '1 second')},
	extra_params => [ '-U', 'alice' ]);
wait_for($node, 'app', q{SELECT count(*) <= 5 FROM hwm.runs WHERE pipeline IS NULL AND owner = 'bob'::regrole},
	undef, "the scheduler prunes bob's runs without a pipeline to the bound");
wait_for($node, 'app', q{SELECT count(*) BETWEEN 1 AND 5 FROM hwm.runs WHERE pipeline = 'alice_1s' AND status = 'succeeded'},
	undef, "and alice's pipeline to the bound");
is(sql($node, 'app', q{SELECT count(*) FROM hwm.runs WHERE pipeline IS NULL AND owner = 'alice'::regrole}),
	'1', "alice's run without a pipeline is kept: bob's runs never count against it");

# a pipeline name dropped by bob and declared again by alice: bob's history
# of it is his, alice's runs do not prune it
$node->safe_psql('app', q{
CREATE TABLE b_named (id bigint PRIMARY KEY, d date NOT NULL, v text);
SELECT hwm.create_pipeline('shared_name', 'src', 'b_named', '{id}', 'id');
SELECT count(hwm.run('shared_name')) FROM generate_series(1, 3);
SELECT hwm.drop_pipeline('shared_name');
}, extra_params => [ '-U', 'bob' ]);
$node->safe_psql('app', q{
SET client_min_messages = warning;
CREATE TABLE a_named (id bigint PRIMARY KEY, d date NOT NULL, v text);
SELECT hwm.create_pipeline('shared_name', 'src', 'a_named', '{id}', 'id');
SELECT count(hwm.run('shared_name')) FROM generate_series(1, 20);
}, extra_params => [ '-U', 'alice' ]);
# the next upkeep after alice's runs (10 s while runs are due)
wait_for($node, 'app', q{SELECT count(*) <= 5 FROM hwm.runs WHERE pipeline = 'shared_name' AND owner = 'alice'::regrole},
	undef, "alice's runs of the name are pruned to the bound");
is(sql($node, 'app', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'shared_name' AND owner = 'bob'::regrole}),
	'3', "bob's runs under the same name are his own history, kept");

# --- 2. notifications tell nothing a listener could not read ---------------
# (psql prints the notifications it received after each statement: the
# listener runs SELECT 1 until two have come, or the harness's timeout)
my $listener = $node->background_psql('app', extra_params => [ '-U', 'nobody' ]);
my $heard = $listener->query_safe('LISTEN hwm_runs');
my @all;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	$heard .= "\n" . $listener->query_safe('SELECT 1');
	@all = $heard =~ /payload "(\{.*?\})" received/g;
	last if @all >= 2;
	select(undef, undef, undef, 0.2);
}
$listener->quit;
cmp_ok(scalar(@all), '>=', 1, 'a role with no rights hears that scheduled runs ended');
my $leaks = grep { !/^\{"database": "app", "run_id": \d+\}$/ } @all;
is($leaks, 0, 'every payload is {"database": ..., "run_id": N}: no pipeline name, status or SQLSTATE');
unlike($heard, qr/alice_1s|succeeded/, 'the payloads do not name the pipeline or its status');
# the newest run heard: history is pruned to 5 runs a pipeline here, and the
# oldest heard may be gone by the next upkeep
my ($run_id) = $all[-1] =~ /"run_id": (\d+)/;
is($node->safe_psql('app', "SELECT count(*) FROM hwm.runs WHERE run_id = $run_id", extra_params => [ '-U', 'nobody' ]),
	'0', 'the listener without rights reads nothing of the run it heard of');
is($node->safe_psql('app', "SELECT pipeline FROM hwm.runs WHERE run_id = $run_id", extra_params => [ '-U', 'alice' ]),
	'alice_1s', 'its owner reads the run from hwm.runs');
# a forged notification: nobody sends one naming alice's run
my $forged = $node->safe_psql('app', qq{
LISTEN hwm_runs;
NOTIFY hwm_runs, '{"database": "app", "run_id": $run_id}';
SELECT count(*) FROM hwm.runs WHERE run_id = $run_id;
}, extra_params => [ '-U', 'nobody' ]);
like($forged, qr/^0$/m, 'a forged payload leads the reader to no row it may not see');

# --- 3. a read-only default stops the runs, and says so --------------------
sql($node, 'postgres', q{CREATE DATABASE ro OWNER alice});
sql($node, 'ro', $setup . q{
GRANT SELECT, INSERT, UPDATE ON a_tgt TO bob;
SET ROLE bob;
CREATE TABLE b_tgt (id bigint PRIMARY KEY, d date NOT NULL, v text);
RESET ROLE;
});
$node->safe_psql('ro', q{SELECT hwm.create_pipeline('ro_alice', 'src', 'a_tgt', '{id}', 'id', schedule => '1 second')},
	extra_params => [ '-U', 'alice' ]);
$node->safe_psql('ro', q{SELECT hwm.create_pipeline('ro_bob', 'src', 'b_tgt', '{id}', 'id')},
	extra_params => [ '-U', 'bob' ]);
wait_for($node, 'ro', q{SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'ro_alice' AND status = 'succeeded'},
	undef, 'the pipeline runs before its database is made read-only');
# the database's owner (not a superuser) makes every transaction read-only
$node->safe_psql('postgres', q{ALTER DATABASE ro SET default_transaction_read_only = on},
	extra_params => [ '-U', 'alice' ]);
wait_for($node, 'ro', q{SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'ro_alice' AND status = 'failed'},
	undef, 'a due run is claimed and recorded as failed (the dispatcher writes its catalog all the same)');
my $err = sql($node, 'ro', q{SELECT error_sqlstate || ' ' || error FROM hwm.runs WHERE pipeline = 'ro_alice' AND status = 'failed' ORDER BY run_id DESC LIMIT 1});
like($err, qr/^25006 cannot execute .* in a read-only transaction/, 'with the SQLSTATE and message of the run');
like($err, qr/the database's default_transaction_read_only, set by ALTER DATABASE/, '... and where the read-only default came from');
like(sql($node, 'ro', q{SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'ro_alice'}),
	qr/read-only by default \(ALTER DATABASE/, 'hwm.status.not_scheduled_because says why');
is(sql($node, 'ro', q{SELECT last_status FROM hwm.status WHERE pipeline = 'ro_alice'}),
	'failed', 'and last_status is failed, not the last success');
is(sql($node, 'ro', q{SELECT count(*) FROM hwm.runs WHERE error LIKE '%exited before it recorded%'}),
	'0', 'no run is left as a worker that exited');
# a role's read-only default
$node->safe_psql('postgres', q{ALTER DATABASE ro RESET default_transaction_read_only}, extra_params => [ '-U', 'alice' ]);
sql($node, 'postgres', q{ALTER ROLE bob IN DATABASE ro SET default_transaction_read_only = on});
sql($node, 'ro', q{SELECT hwm.schedule('ro_bob', '1 second')});
wait_for($node, 'ro', q{SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'ro_bob' AND status = 'failed'},
	undef, "bob's pipeline fails too");
like(sql($node, 'ro', q{SELECT error FROM hwm.runs WHERE pipeline = 'ro_bob' AND status = 'failed' ORDER BY run_id DESC LIMIT 1}),
	qr/the owner's default_transaction_read_only in this database, set by ALTER ROLE \.\.\. IN DATABASE/,
	"the error names the role's setting");
like(sql($node, 'ro', q{SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'ro_bob'}),
	qr/its owner's transactions are read-only by default/, 'hwm.status says so');
sql($node, 'postgres', q{ALTER ROLE bob IN DATABASE ro RESET default_transaction_read_only});
is(sql($node, 'ro', q{SELECT count(*) FROM hwm.status WHERE not_scheduled_because IS NOT NULL}),
	'0', 'once reset, nothing is said');
sql($node, 'ro', q{SELECT hwm.schedule('ro_alice', '1 second')});   # due at once, past its backoff
wait_for($node, 'ro', q{SELECT last_status = 'succeeded' FROM hwm.status WHERE pipeline = 'ro_alice'},
	undef, 'and the pipeline runs again');

# a claim that fails (a trigger planted by the catalog's owner, as in 049):
# recorded against the pipeline, and hwm.status says so
sql($node, 'ro', refuse_claim_sql('ro_bob') . q{
SELECT hwm.schedule('ro_bob', '1 second');
});
wait_for($node, 'ro', q{SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'ro_bob' AND error LIKE '%could not claim%'},
	undef, 'a failing claim is recorded against its pipeline');
like(sql($node, 'ro', q{SELECT not_scheduled_because FROM hwm.status WHERE pipeline = 'ro_bob'}),
	qr/could not claim its last run/, 'and hwm.status says the scheduler could not claim it');
sql($node, 'ro', q{DROP TRIGGER refuse_claim ON hwm.runs; SELECT hwm.unschedule('ro_bob')});

# --- 4. a database's statement_timeout says whose it is ---------------------
sql($node, 'ro', q{
CREATE FUNCTION public.slow(x bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN PERFORM pg_catalog.pg_sleep(0.2); RETURN x; END $f$;
CREATE VIEW slow_src AS SELECT public.slow(id) AS id, d, v FROM src;
GRANT SELECT ON slow_src TO alice;
SET ROLE alice;
CREATE TABLE s_tgt (id bigint PRIMARY KEY, d date NOT NULL, v text);
SELECT hwm.create_pipeline('ro_slow', 'slow_src', 's_tgt', '{id}', 'id');
RESET ROLE;
});
$node->safe_psql('postgres', q{ALTER DATABASE ro SET statement_timeout = '300ms'}, extra_params => [ '-U', 'alice' ]);
sql($node, 'ro', q{SELECT hwm.schedule('ro_slow', '1 second')});
wait_for($node, 'ro', q{SELECT count(*) > 0 FROM hwm.runs WHERE pipeline = 'ro_slow' AND status = 'failed'},
	undef, 'the slow pipeline is cancelled by the database\'s statement_timeout');
like(sql($node, 'ro', q{SELECT error FROM hwm.runs WHERE pipeline = 'ro_slow' AND status = 'failed' ORDER BY run_id DESC LIMIT 1}),
	qr/took longer than its timeout of 300 ms \(statement_timeout of database "ro"\)/,
	'the message says the timeout was the database\'s');
$node->safe_psql('postgres', q{ALTER DATABASE ro RESET statement_timeout}, extra_params => [ '-U', 'alice' ]);

# --- 5. a long catch_up or rerun stays within the bound ---------------------
# (a served database with nothing scheduled: the scheduler's upkeep comes
# every five minutes; the greatest size of the pipeline's history during the
# loops is kept by a trigger)
sql($node, 'postgres', q{CREATE DATABASE loops});
sql($node, 'loops', q{
CREATE EXTENSION hwm;
CREATE TABLE ev (t timestamptz NOT NULL);
INSERT INTO ev SELECT timestamptz '2026-01-01 00:00+00' + g * interval '1 hour' FROM generate_series(0, 199) g;
CREATE TABLE most (pipeline text PRIMARY KEY, n bigint NOT NULL);
CREATE FUNCTION public.count_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.most AS m
  SELECT NEW.pipeline, count(*) FROM hwm.runs WHERE pipeline = NEW.pipeline
  ON CONFLICT (pipeline) DO UPDATE SET n = greatest(m.n, EXCLUDED.n);
  RETURN NULL;
END $$;
CREATE TRIGGER count_history AFTER INSERT ON hwm.runs FOR EACH ROW EXECUTE FUNCTION public.count_history();
GRANT SELECT ON ev TO alice;
});
$node->safe_psql('loops', q{SELECT hwm.create_interval_pipeline('hourly', 'ev', 't', '1 hour', 'SELECT $1, $2', skip_empty => true)},
	extra_params => [ '-U', 'alice' ]);
sql($node, 'loops', q{
SET client_min_messages = warning;
CALL hwm.catch_up('hourly');
});
is(sql($node, 'loops', q{SELECT watermark >= '2026-01-09' FROM hwm.state WHERE pipeline = 'hourly'}), 't',
	'catch_up ran the intervals');
is(sql($node, 'loops', q{SELECT count(*) <= 5 + 15 FROM hwm.runs WHERE pipeline = 'hourly'}), 't',
	'without keeping a run for each');
# (the trigger sees each insert before that run's prune: bound + 16 at most)
cmp_ok(sql($node, 'loops', q{SELECT n FROM most WHERE pipeline = 'hourly'}), '<=', 5 + 16,
	'during CALL hwm.catch_up the history never outgrew the bound (5, checked every 16 runs)');
sql($node, 'loops', q{
SET client_min_messages = warning;
TRUNCATE most;
CALL hwm.rerun_intervals('hourly', '2026-01-01 00:00+00', '2026-01-08 00:00+00');
});
cmp_ok(sql($node, 'loops', q{SELECT n FROM most WHERE pipeline = 'hourly'}), '<=', 5 + 16,
	'nor during CALL hwm.rerun_intervals over 168 intervals (its runs are not kept for its sake)');
is(sql($node, 'loops', q{SELECT status || ' ' || partitions_done FROM hwm.backfills WHERE pipeline = 'hourly'}),
	'succeeded 168', 'the rerun itself is whole');

$node->stop;
done_testing();
