# A backfill killed in the middle, once by pg_terminate_backend and once by
# kill -9 of its backend (a crash of the whole instance), keeps the partitions
# it committed, says where it stopped, and when called again resumes there and
# ends with exactly the rows of a backfill that was never interrupted.
#
# The backfill is held in the middle of a partition by a trigger on its target
# that waits for an advisory lock the test holds: the test waits for that
# (poll_query_until on pg_locks), never for time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('backfill_kill', restart_after_crash => 'on', 'hwm.allow_superuser_pipelines' => 'on');

$node->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE raw (id int, day date, v text);
INSERT INTO raw SELECT g, DATE '2026-03-01' + (g % 10), 'v' || g FROM generate_series(1, 1000) g;
-- two identical stale targets: every third row outdated, ghosts on every day
CREATE TABLE wh_a (id int PRIMARY KEY, day date NOT NULL, v text);
INSERT INTO wh_a SELECT id, day, 'stale' FROM raw WHERE id % 3 = 0;
INSERT INTO wh_a SELECT 100000 + g, DATE '2026-03-01' + g, 'ghost' FROM generate_series(0, 9) g;
CREATE TABLE wh_b (LIKE wh_a INCLUDING ALL);
INSERT INTO wh_b SELECT * FROM wh_a;
SELECT hwm.create_pipeline('a', 'raw', 'wh_a', '{id}', 'id', 'day');
SELECT hwm.create_pipeline('b', 'raw', 'wh_b', '{id}', 'id', 'day');
-- the gate: a row of the gated day waits for advisory lock 4242
CREATE TABLE gate_day (day date);
INSERT INTO gate_day VALUES ('2026-03-05');
CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.day = (SELECT day FROM public.gate_day) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(4242);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER gate BEFORE INSERT OR UPDATE ON wh_a FOR EACH ROW EXECUTE FUNCTION public.gate();
});

# End a background psql whose server connection is already gone (psql has
# exited, so writing \q to it fails with a broken pipe).
sub quit_dead
{
	my ($session) = @_;
	local $SIG{PIPE} = 'IGNORE';
	eval { $session->quit; };
	return;
}

sub fingerprint
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || ' ' || md5(string_agg(r::text, '|' ORDER BY r::text)) FROM $table AS r");
}

# The uninterrupted backfill, for comparison.
$node->safe_psql('postgres', "CALL hwm.backfill('b', '2026-03-01', '2026-03-10')");
my $expected = fingerprint('wh_b');
isnt($expected, fingerprint('wh_a'), 'the targets differ before the backfill');

# Start the backfill of 'a' behind the gate, wait until it waits there with
# the partitions before the gate committed, and return its backend's pid.
my $waiting_pid = q{
SELECT l.pid FROM pg_locks l
 WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objid = 4242
};

sub start_gated_backfill
{
	my ($gate, $done_through) = @_;
	my $bf = $node->background_psql('postgres', on_error_stop => 0);
	$bf->query_until(qr/started/,
		"\\echo started\nCALL hwm.backfill('a', '2026-03-01', '2026-03-10');\n");
	$node->poll_query_until('postgres',
		"SELECT EXISTS ($waiting_pid) AND (SELECT done_through FROM hwm.backfills"
		  . " WHERE pipeline = 'a' ORDER BY backfill_id DESC LIMIT 1) = '$done_through'")
	  or die "the backfill did not reach the gate";
	return ($bf, $node->safe_psql('postgres', $waiting_pid));
}

# --- 1. pg_terminate_backend in the middle of 2026-03-05 ------------------
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(4242)');
my ($bf, $pid) = start_gated_backfill($gate, '2026-03-04');

# while it runs, the same backfill from another session is refused at once
my ($rc, $out, $err) = $node->psql('postgres',
	"CALL hwm.backfill('a', '2026-03-01', '2026-03-10')");
like($err, qr/backfill \d+ is running in another session/,
	'a second CALL of a running backfill is refused');

$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$node->poll_query_until('postgres',
	"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)")
  or die "backend $pid did not exit";
quit_dead($bf);

is( $node->safe_psql('postgres',
		"SELECT status, done_through, partitions_done FROM hwm.backfills WHERE pipeline = 'a'"),
	'running|2026-03-04|4',
	'terminated: progress says 4 partitions done through 2026-03-04');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT * FROM wh_a WHERE day <= '2026-03-04'
                      EXCEPT SELECT * FROM raw) d}),
	'0', 'terminated: the committed partitions are backfilled');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM wh_a WHERE day = '2026-03-05' AND v IN ('stale', 'ghost')"),
	'34', 'terminated: the partition in progress was rolled back');

# --- 2. kill -9 in the middle of 2026-03-08 (the resumed backfill) --------
$node->safe_psql('postgres', "UPDATE gate_day SET day = '2026-03-08'");
($bf, $pid) = start_gated_backfill($gate, '2026-03-07');
kill9($node, $pid);    # declared for the log guard
wait_back($node) or die "the instance did not come back after kill -9";
quit_dead($bf);
quit_dead($gate);

is( $node->safe_psql('postgres',
		"SELECT count(*), min(status), min(done_through), min(partitions_done) FROM hwm.backfills WHERE pipeline = 'a'"),
	'1|running|2026-03-07|7',
	'killed: the same backfill resumed, and its progress survived the crash');

# --- 3. resume to the end --------------------------------------------------
$node->safe_psql('postgres', 'DROP TRIGGER gate ON wh_a');
$node->safe_psql('postgres', "CALL hwm.backfill('a', '2026-03-01', '2026-03-10')");
is( $node->safe_psql('postgres',
		"SELECT count(*), min(status), min(done_through), min(partitions_done) FROM hwm.backfills WHERE pipeline = 'a'"),
	'1|succeeded|2026-03-10|10',
	'resumed: one backfill, finished, all 10 partitions');
is(fingerprint('wh_a'), $expected,
	'resumed: the same rows as the uninterrupted backfill');

$node->stop;
done_testing();
