# hwm.swap waits for its ACCESS EXCLUSIVE locks at most lock_timeout, then
# fails with a clear error that names the table, and changes nothing; once
# the other session lets go, the same swap goes through.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HwmTest;

my $node = new_node('swap_lock_timeout');

$node->safe_psql('postgres', q{
CREATE EXTENSION hwm;
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'old' FROM generate_series(1, 10) g;
SELECT hwm.create_staging('t');
INSERT INTO t_hwm_staging SELECT g, 'new' FROM generate_series(1, 20) g;
});

# another session reads the target in an open transaction
my $reader = $node->background_psql('postgres');
$reader->query_safe('BEGIN; SELECT count(*) FROM t;');

my ($rc, $out, $err) = $node->psql('postgres',
	"CALL hwm.swap('t', 't_hwm_staging', lock_timeout => '50ms')");
isnt($rc, 0, 'the swap fails while another session holds a lock');
like($err, qr/could not lock target public\.t within 50 ms/, 'the error names the table and the wait');
like($err, qr/HINT:.*pg_locks/s, 'the hint says where to look');
is($node->safe_psql('postgres', "SELECT v, count(*) FROM t GROUP BY v"), 'old|10',
	'the target is unchanged');

$reader->query_safe('COMMIT;');
$reader->quit;
$node->safe_psql('postgres', "CALL hwm.swap('t', 't_hwm_staging', lock_timeout => '50ms')");
is($node->safe_psql('postgres', "SELECT v, count(*) FROM t GROUP BY v"), 'new|20',
	'the same swap goes through once the lock is free');

$node->stop;
done_testing();
