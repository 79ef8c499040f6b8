# Applying a wake must not undo a schedule changed at the same moment.  A
# dispatcher applies the wakes of upstream runs in one statement: which
# pipelines are woken (b follows a, and a's run changed something) it reads
# from the statement's snapshot, then locks their rows and sets their next
# run to now.  A schedule committed in between (b given a daily schedule
# that starts tomorrow, and no upstream) was read from the snapshot only:
# b's next run was set to now, and b ran at once, at a time its owner had
# not asked for.  Now the locked row must still be woken (READ COMMITTED
# checks only its conditions again on the newest version): b keeps its new
# schedule, and the wake goes at the next dispatch.
#
# The test holds the dispatcher at the pause point dispatcher_applies_wakes
# (src/clock.h; test/modules/hwm_test/pause_points.c), after the snapshot
# of that statement is taken, while b's owner schedules it anew.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('wakes_schedule_race', mock_clock => 1,
	'hwm.max_workers' => 2, max_worker_processes => 16,
	'hwm_test.pause_points' => 'dispatcher_applies_wakes');

sql($node, 'postgres', $HwmTest::MOCK_CLOCK_SQL);
sql($node, 'postgres', q{
CREATE EXTENSION hwm;
CREATE ROLE carol LOGIN;
CREATE SCHEMA c AUTHORIZATION carol;
SET ROLE carol;
CREATE TABLE c.raw (id bigint PRIMARY KEY, v text);
CREATE TABLE c.a (id bigint PRIMARY KEY, v text);
CREATE TABLE c.b (id bigint PRIMARY KEY, v text);
SELECT hwm.create_pipeline('a', 'c.raw', 'c.a', '{id}', 'id');
SELECT hwm.create_pipeline('b', 'c.a', 'c.b', '{id}', 'id');
SELECT hwm.schedule_after('b', '{a}');
RESET ROLE;
INSERT INTO c.raw SELECT g, 'v' || g FROM generate_series(1, 10) g;
});

my $key = pause_key('dispatcher_applies_wakes');
sub point_locks
{
	my ($waiting) = @_;
	return advisory_locks_sql($key, waiting => $waiting);
}

my $gate = $node->background_psql('postgres');
$gate->query_safe("SELECT pg_advisory_lock($key)");

# 1. a runs by hand: its run wakes b, and rings the dispatcher, which is
# held with its snapshot taken (b follows a, its wake is there)
is(sql($node, 'postgres', q{SET ROLE carol; SELECT rows_upserted FROM hwm.run('a')}), '10', 'a loads');
wait_for($node, 'postgres', point_locks(1), '1', 'the dispatch that applies the wake is held');

# 2. b's owner schedules it daily from tomorrow, without upstream
sql($node, 'postgres', q{
SET ROLE carol;
SELECT hwm.schedule('b', '1 day', (clock_timestamp() + hwm_test_clock_offset()) + interval '1 day');
});

# 3. the dispatch goes on, and ends
$gate->query_safe("SELECT pg_advisory_unlock($key)");
$gate->quit;
wait_for($node, 'postgres', point_locks(0), '0', 'the held dispatch ended');
is(sql($node, 'postgres', q{
SELECT (SELECT count(*) FROM hwm.runs WHERE pipeline = 'b') || ' '
    || (SELECT after IS NULL AND next_run_at > (clock_timestamp() + hwm_test_clock_offset()) + interval '23 hours'
          FROM hwm.state WHERE pipeline = 'b')}),
	'0 true', 'b keeps the schedule its owner gave it: not run, its next run tomorrow');
is(sql($node, 'postgres', 'SELECT count(*) FROM c.b'), '0', 'b loaded nothing');

# 4. the next dispatch drops the wake, which wakes nothing now
sql($node, 'postgres', q{SELECT hwm_test_advance_clock('1 second')});
wait_for($node, 'postgres', 'SELECT count(*) FROM hwm.wakes', '0', 'the wake is gone at the next dispatch');
is(sql($node, 'postgres', q{SELECT count(*) FROM hwm.runs WHERE pipeline = 'b'}), '0', 'and b still did not run');

$node->stop;
done_testing();
