-- partition_exchange: an overwrite whose range covers whole partitions of a
-- declaratively partitioned target builds their new contents aside and
-- trades storage with them (hwm.runs.method = 'exchange'), leaving no dead
-- tuples; what the range leaves of a partition is diffed as before
-- ('exchange+diff'); a partition that cannot be exchanged exactly is
-- overwritten row by row, with a NOTICE saying why.
\i test/setup.sql
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE SCHEMA pex;
SET search_path = pex, public;
SET datestyle = 'ISO, YMD';
SET timezone = 'UTC';

CREATE FUNCTION last_run() RETURNS TABLE (kind text, rows_deleted bigint, rows_inserted bigint, method text)
LANGUAGE sql AS $$
    SELECT kind, rows_deleted, rows_inserted, method FROM hwm.runs ORDER BY run_id DESC LIMIT 1
$$;
-- rows in one table and not the other, both ways
CREATE FUNCTION differences(a regclass, b regclass) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL TABLE %s)) d',
                   a, b, b, a) INTO n;
    RETURN n;
END
$$;

CREATE TABLE src (id int, day date, v text);
INSERT INTO src SELECT g, DATE '2026-01-01' + g % 10, 'v' || g FROM generate_series(1, 200) g;

-- RANGE partitions: one with an extra index, options, a comment and a
-- grant, one unlogged, and a default partition
CREATE TABLE tgt (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE tgt_a PARTITION OF tgt FOR VALUES FROM ('2026-01-01') TO ('2026-01-06')
    WITH (fillfactor = 90, autovacuum_enabled = off);
CREATE TABLE tgt_b PARTITION OF tgt FOR VALUES FROM ('2026-01-06') TO ('2026-01-11')
    WITH (autovacuum_enabled = off);
CREATE UNLOGGED TABLE tgt_c PARTITION OF tgt FOR VALUES FROM ('2026-01-11') TO ('2026-01-21');
CREATE TABLE tgt_other PARTITION OF tgt DEFAULT;
CREATE INDEX tgt_a_v ON tgt_a (v);
COMMENT ON TABLE tgt_a IS 'days 1 to 5';
CREATE ROLE hwm_pex_reader;
GRANT USAGE ON SCHEMA pex TO hwm_pex_reader;
GRANT SELECT ON tgt_a TO hwm_pex_reader;
CREATE TEMP TABLE identity_before AS
    SELECT c.oid, c.relname, c.relacl::text, c.reloptions::text, obj_description(c.oid) AS comment,
           (SELECT string_agg(i.indexrelid::regclass::text || '=' || i.indexrelid, ',' ORDER BY i.indexrelid)
              FROM pg_index i WHERE i.indrelid = c.oid) AS indexes
      FROM pg_class c WHERE c.relname IN ('tgt_a', 'tgt_b');
SELECT hwm.create_pipeline('pex', 'src', 'tgt', ARRAY['id', 'day'], 'id', 'day');

-- the range covers tgt_a and tgt_b exactly: both exchanged
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-01', '2026-01-10');
SELECT * FROM last_run();
SELECT differences('src', 'tgt');
SELECT tableoid::regclass AS partition, count(*) FROM tgt GROUP BY 1 ORDER BY 1;

-- the partitions keep their identity: OID, name, indexes, grant, options,
-- comment; their TOAST tables are named after them; nothing is left over
SELECT b.relname, c.oid = b.oid AS same_oid, c.relacl::text IS NOT DISTINCT FROM b.relacl AS same_grants,
       c.reloptions::text IS NOT DISTINCT FROM b.reloptions AS same_options,
       obj_description(c.oid) IS NOT DISTINCT FROM b.comment AS same_comment,
       (SELECT string_agg(i.indexrelid::regclass::text || '=' || i.indexrelid, ',' ORDER BY i.indexrelid)
          FROM pg_index i WHERE i.indrelid = c.oid) = b.indexes AS same_indexes,
       t.relname = 'pg_toast_' || c.oid AS toast_named_after_it
  FROM identity_before b JOIN pg_class c ON c.oid = b.oid JOIN pg_class t ON t.oid = c.reltoastrelid
 ORDER BY 1;
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'hwm_exchange%';
SET ROLE hwm_pex_reader;
SELECT count(*) FROM tgt_a;
RESET ROLE;
-- the new storage is complete: its indexes find every row, its statistics know its size
SET enable_seqscan = off;
SELECT count(*) AS found_by_index FROM tgt_a WHERE v >= '';
SELECT count(*) AS found_by_key FROM tgt WHERE (id, day) IN (SELECT id, day FROM src);
RESET enable_seqscan;
SELECT relname, reltuples FROM pg_class WHERE relname IN ('tgt_a', 'tgt_b') ORDER BY 1;

-- idempotent: the same rows again (the covered partitions are rewritten)
SELECT test_fingerprint('tgt') AS once \gset
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-01', '2026-01-10');
SELECT test_fingerprint('tgt') = :'once' AS same_rows_after_second_exchange;

-- rolled back with the caller's transaction: the old storage is back
UPDATE src SET v = 'rolled back' WHERE day = '2026-01-02';
BEGIN;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-01', '2026-01-05');
SELECT count(*) FILTER (WHERE v = 'rolled back') AS new_rows_visible_inside FROM tgt;
ROLLBACK;
SELECT test_fingerprint('tgt') = :'once' AS unchanged_after_rollback,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm_exchange%') AS left_over;
UPDATE src SET v = 'v' || id WHERE day = '2026-01-02';

-- n_dead_tup: zero after an exchange, not after the row-by-row overwrite.
-- The same change is applied to tgt (exchanged) and to diffed (overwritten
-- row by row with hwm.partition_exchange off).
CREATE TABLE diffed (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE diffed_a PARTITION OF diffed FOR VALUES FROM ('2026-01-01') TO ('2026-01-06')
    WITH (autovacuum_enabled = off);
CREATE TABLE diffed_b PARTITION OF diffed FOR VALUES FROM ('2026-01-06') TO ('2026-01-11')
    WITH (autovacuum_enabled = off);
INSERT INTO diffed SELECT * FROM tgt;
UPDATE src SET v = 'changed' WHERE id % 3 = 0;
DELETE FROM src WHERE id % 7 = 0;
SET hwm.partition_exchange = off;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('diffed', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT * FROM last_run();
RESET hwm.partition_exchange;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('tgt', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT * FROM last_run();
SELECT differences('src', 'tgt') AS exchanged_differences, differences('src', 'diffed') AS diffed_differences;
-- exact, from the storage itself (pgstattuple)
SELECT 'tgt_a' AS partition, tuple_count, dead_tuple_count FROM pgstattuple('tgt_a')
UNION ALL SELECT 'tgt_b', tuple_count, dead_tuple_count FROM pgstattuple('tgt_b')
UNION ALL SELECT 'diffed_a', tuple_count, dead_tuple_count FROM pgstattuple('diffed_a')
UNION ALL SELECT 'diffed_b', tuple_count, dead_tuple_count FROM pgstattuple('diffed_b');
-- and what autovacuum reads (pg_stat_user_tables, once this session's counters are flushed)
SELECT pg_stat_force_next_flush();
SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables
 WHERE relname IN ('tgt_a', 'tgt_b', 'diffed_a', 'diffed_b') ORDER BY relname;

-- a range that cuts through tgt_a: its days in the range are diffed, tgt_b
-- is exchanged, the days before the range are left alone
UPDATE src SET v = 'partial' WHERE day IN ('2026-01-02', '2026-01-04', '2026-01-07');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-03', '2026-01-10');
SELECT * FROM last_run();
SELECT day, count(*) FILTER (WHERE v = 'partial') AS partial FROM tgt
 WHERE day IN ('2026-01-02', '2026-01-04', '2026-01-07') GROUP BY day ORDER BY day;
SELECT count(*) AS differences_in_range
  FROM ((SELECT * FROM src WHERE day >= '2026-01-03' EXCEPT ALL SELECT * FROM tgt)
        UNION ALL (SELECT * FROM tgt WHERE day >= '2026-01-03' EXCEPT ALL SELECT * FROM src)) d;
-- a range inside one partition: the diff alone, no NOTICE about partitions
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-02', '2026-01-04');
SELECT * FROM last_run();
-- tgt_c (unlogged) covered, tgt_b cut, and the default partition is never exchanged
INSERT INTO src VALUES (1001, '2026-01-15', 'in c'), (1002, '2026-01-25', 'in the default partition');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-08', '2026-01-31');
SELECT * FROM last_run();
SELECT tableoid::regclass AS partition, count(*) FROM tgt WHERE day >= '2026-01-11' GROUP BY 1 ORDER BY 1;
SELECT relpersistence FROM pg_class WHERE oid = 'tgt_c'::regclass;
SELECT differences('src', 'tgt') AS differences_after_whole_range;

-- a backfill exchanges a partition when one partition holds one value (here: daily)
CREATE TABLE daily (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE daily_01 PARTITION OF daily FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE daily_02 PARTITION OF daily FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
CREATE TABLE daily_03 PARTITION OF daily FOR VALUES FROM ('2026-01-03') TO ('2026-01-04');
CREATE TABLE daily_rest PARTITION OF daily FOR VALUES FROM ('2026-01-04') TO ('2026-02-01');
SELECT hwm.create_pipeline('pex_daily', 'src', 'daily', ARRAY['id', 'day'], 'id', 'day');
SET client_min_messages = warning;  -- the backfill's NOTICE shows its id
CALL hwm.backfill('pex_daily', '2026-01-01', '2026-01-05');
RESET client_min_messages;
SELECT from_partition, rows_deleted, rows_inserted, method
  FROM hwm.runs WHERE pipeline = 'pex_daily' ORDER BY run_id;
SELECT count(*) AS differences FROM (SELECT * FROM src WHERE day <= '2026-01-05' EXCEPT SELECT * FROM daily) d;

-- the lookback of hwm.run keeps the diff (it runs often, over partitions
-- still being written, where the diff writes little and locks nothing)
SELECT hwm.drop_pipeline('pex_daily');
SELECT hwm.create_pipeline('pex_daily', 'src', 'daily', ARRAY['id', 'day'], 'id', 'day', lookback => 1);
SELECT partitions_overwritten FROM hwm.run('pex_daily');
SELECT kind, method FROM last_run();

-- other partition column types: a bound is covered when no value of the
-- range's type lies between the range's end and the partition's upper bound
CREATE TABLE isrc (n int, v text);
INSERT INTO isrc SELECT g, 'n' || g FROM generate_series(0, 29) g;
CREATE TABLE itgt (n int PRIMARY KEY, v text) PARTITION BY RANGE (n);
CREATE TABLE itgt_0 PARTITION OF itgt FOR VALUES FROM (0) TO (10);
CREATE TABLE itgt_1 PARTITION OF itgt FOR VALUES FROM (10) TO (20);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('itgt', 'isrc', 'n', '0', '9');
SELECT method FROM last_run();
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('itgt', 'isrc', 'n', '10', '18');
SELECT method FROM last_run();
SELECT count(*) AS differences FROM (SELECT * FROM isrc WHERE n <= 18 EXCEPT SELECT * FROM itgt) d;

CREATE TABLE tssrc (at timestamptz, v text);
INSERT INTO tssrc SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * interval '1 hour', 'h' || g FROM generate_series(0, 47) g;
CREATE TABLE tstgt (at timestamptz PRIMARY KEY, v text) PARTITION BY RANGE (at);
CREATE TABLE tstgt_1 PARTITION OF tstgt FOR VALUES FROM ('2026-01-01 00:00+00') TO ('2026-01-02 00:00+00');
CREATE TABLE tstgt_2 PARTITION OF tstgt FOR VALUES FROM ('2026-01-02 00:00+00') TO ('2026-01-03 00:00+00');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('tstgt', 'tssrc', 'at', '2026-01-01 00:00:00+00', '2026-01-01 23:59:59.999999+00');
SELECT method FROM last_run();
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('tstgt', 'tssrc', 'at', '2026-01-02 00:00:00+00', '2026-01-02 23:59:59+00');
SELECT method FROM last_run();

CREATE TABLE txsrc (k text COLLATE "C", v text);
INSERT INTO txsrc VALUES ('apple', '1'), ('kiwi', '2'), ('m', '3'), ('pear', '4');
CREATE TABLE txtgt (k text COLLATE "C" PRIMARY KEY, v text) PARTITION BY RANGE (k);
CREATE TABLE txtgt_am PARTITION OF txtgt FOR VALUES FROM ('a') TO ('m');
CREATE TABLE txtgt_mz PARTITION OF txtgt FOR VALUES FROM ('m') TO ('z');
-- 'a'..'lzzz' does not cover ['a', 'm'): 'lzzzz' lies in between
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('txtgt', 'txsrc', 'k', 'a', 'lzzz');
SELECT method FROM last_run();
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('txtgt', 'txsrc', 'k', 'a', 'm');
SELECT method FROM last_run();
SELECT * FROM txtgt ORDER BY k;

-- LIST: covered when every value is in the range; a partition that takes
-- NULL is never covered (NULL is in no range)
CREATE TABLE ltgt (id int, day date, v text) PARTITION BY LIST (day);
CREATE TABLE ltgt_12 PARTITION OF ltgt FOR VALUES IN ('2026-01-01', '2026-01-02');
CREATE TABLE ltgt_3 PARTITION OF ltgt FOR VALUES IN ('2026-01-03');
CREATE TABLE ltgt_4null PARTITION OF ltgt FOR VALUES IN ('2026-01-04', NULL);
CREATE TABLE ltgt_59 PARTITION OF ltgt FOR VALUES IN ('2026-01-05', '2026-01-09');
INSERT INTO ltgt VALUES (1, NULL, 'null day'), (2, '2026-01-02', 'stale'), (3, '2026-01-05', 'stale');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('ltgt', 'src', 'day', '2026-01-01', '2026-01-05');
SELECT method FROM last_run();
SELECT tableoid::regclass AS partition, count(*), count(*) FILTER (WHERE v = 'stale') AS stale
  FROM ltgt GROUP BY 1 ORDER BY 1;
SELECT count(*) AS differences
  FROM (SELECT * FROM src WHERE day <= '2026-01-05' EXCEPT SELECT * FROM ltgt) d;

-- not exchanged at all (silently the diff): HASH partitions, a partition
-- key that is not the partition column, hwm.partition_exchange off
CREATE TABLE htgt (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY HASH (day);
CREATE TABLE htgt_0 PARTITION OF htgt FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE htgt_1 PARTITION OF htgt FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('htgt', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
CREATE TABLE idtgt (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (id);
CREATE TABLE idtgt_all PARTITION OF idtgt FOR VALUES FROM (0) TO (10000);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('idtgt', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
SET hwm.partition_exchange = off;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
RESET hwm.partition_exchange;

-- covered partitions that are overwritten row by row, and why
CREATE TABLE prob (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE prob_1 PARTITION OF prob FOR VALUES FROM ('2026-01-01') TO ('2026-01-02');
CREATE TABLE prob_2 PARTITION OF prob FOR VALUES FROM ('2026-01-02') TO ('2026-01-03');
CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER audit BEFORE INSERT ON prob_2 FOR EACH ROW EXECUTE FUNCTION noop();
CREATE TABLE prob_3 PARTITION OF prob FOR VALUES FROM ('2026-01-03') TO ('2026-01-04') PARTITION BY RANGE (id);
CREATE TABLE prob_3_low PARTITION OF prob_3 FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE prob_3_high PARTITION OF prob_3 FOR VALUES FROM (100) TO (MAXVALUE);
CREATE TABLE prob_4 (id int NOT NULL, gone int, day date NOT NULL, v text);
ALTER TABLE prob_4 DROP COLUMN gone;
ALTER TABLE prob ATTACH PARTITION prob_4 FOR VALUES FROM ('2026-01-04') TO ('2026-01-05');
CREATE TABLE prob_5 PARTITION OF prob FOR VALUES FROM ('2026-01-05') TO ('2026-01-06');
SET client_min_messages = error;
CREATE PUBLICATION pex_pub FOR TABLE prob_5;
RESET client_min_messages;
ALTER TABLE prob ADD COLUMN note text DEFAULT 'from prob';
CREATE TABLE prob_6 (id int NOT NULL, day date NOT NULL, v text, note text DEFAULT 'from prob_6');
ALTER TABLE prob ATTACH PARTITION prob_6 FOR VALUES FROM ('2026-01-06') TO ('2026-01-07');
CREATE TABLE prob_7 PARTITION OF prob FOR VALUES FROM ('2026-01-07') TO ('2026-01-08');
INSERT INTO prob_7 VALUES (1, '2026-01-07', 'only one'), (2, '2026-01-07', 'only one');
CREATE UNIQUE INDEX CONCURRENTLY prob_7_v ON prob_7 (v) WHERE v = 'only one';
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('prob', 'src', 'day', '2026-01-01', '2026-01-07');
SELECT * FROM last_run();
SELECT tableoid::regclass AS partition, count(*), min(note) AS note FROM prob GROUP BY 1 ORDER BY 1;
SELECT count(*) AS differences
  FROM (SELECT id, day, v FROM src WHERE day <= '2026-01-07' EXCEPT SELECT id, day, v FROM prob) d;
DROP PUBLICATION pex_pub;

-- foreign keys, from the partitions and to them
CREATE TABLE days (day date PRIMARY KEY);
INSERT INTO days SELECT DATE '2026-01-01' + g FROM generate_series(0, 30) g;
CREATE TABLE fk_from (id int, day date REFERENCES days, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE fk_from_1 PARTITION OF fk_from FOR VALUES FROM ('2026-01-01') TO ('2026-01-11');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('fk_from', 'src', 'day', '2026-01-01', '2026-01-10');
CREATE TABLE fk_to (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE fk_to_1 PARTITION OF fk_to FOR VALUES FROM ('2026-01-01') TO ('2026-01-11');
CREATE TABLE fk_child (id int, day date, FOREIGN KEY (id, day) REFERENCES fk_to);
-- the notice names the foreign key's clone for fk_to_1, which PostgreSQL 18
-- names fk_child_id_day_fkey_1 and earlier versions fk_child_id_day_fkey1:
-- give it one name
DO $$
BEGIN
    EXECUTE format('ALTER TABLE fk_child RENAME CONSTRAINT %I TO fk_child_fk_to_1',
                   (SELECT conname FROM pg_constraint
                     WHERE conrelid = 'fk_child'::regclass AND confrelid = 'fk_to_1'::regclass));
END $$;
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('fk_to', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();

-- an identity column the source does not provide
CREATE TABLE ident (id int, day date, v text, seq bigint GENERATED BY DEFAULT AS IDENTITY,
                    PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE ident_1 PARTITION OF ident FOR VALUES FROM ('2026-01-01') TO ('2026-01-11');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('ident', 'src', 'day', '2026-01-01', '2026-01-10');

-- the exchange runs as the pipeline's owner, who must own the partition,
-- and not under row level security
CREATE ROLE hwm_pex_owner;
CREATE ROLE hwm_pex_loader;
GRANT USAGE, CREATE ON SCHEMA pex TO hwm_pex_owner, hwm_pex_loader;
GRANT SELECT ON src TO hwm_pex_owner, hwm_pex_loader;
CREATE TABLE owned (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE owned_1 PARTITION OF owned FOR VALUES FROM ('2026-01-01') TO ('2026-01-11');
ALTER TABLE owned OWNER TO hwm_pex_owner;
ALTER TABLE owned_1 OWNER TO hwm_pex_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON owned TO hwm_pex_loader;
SET ROLE hwm_pex_owner;
SELECT hwm.create_pipeline('pex_owned', 'src', 'owned', ARRAY['id', 'day'], 'id', 'day');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex_owned', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
SET ROLE hwm_pex_loader;
SELECT hwm.create_pipeline('pex_loaded', 'src', 'owned', ARRAY['id', 'day'], 'id', 'day');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex_loaded', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
SET ROLE hwm_pex_owner;
ALTER TABLE owned ENABLE ROW LEVEL SECURITY;
ALTER TABLE owned FORCE ROW LEVEL SECURITY;
CREATE POLICY everything ON owned USING (true);
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex_owned', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
RESET ROLE;
SELECT relname, pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname IN ('owned_1') ;
SELECT count(*) AS differences
  FROM (SELECT * FROM src WHERE day <= '2026-01-10' EXCEPT SELECT * FROM owned) d;

-- errors stay errors and change nothing: a duplicate key in the source is
-- reported by the row-by-row overwrite, with the target's names
SELECT test_fingerprint('tgt') AS before \gset
INSERT INTO src VALUES (1, '2026-01-02', 'duplicate'), (1, '2026-01-02', 'duplicate');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex', '2026-01-01', '2026-01-10');
DELETE FROM src WHERE v = 'duplicate';
-- a source row that no partition takes fails as it does without exchange
CREATE TABLE short (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE short_1 PARTITION OF short FOR VALUES FROM ('2026-01-01') TO ('2026-01-06');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite_partition('short', 'src', 'day', '2026-01-01', '2026-01-10');
SELECT count(*) AS rows_in_short,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'hwm_exchange%') AS left_over,
       test_fingerprint('tgt') = :'before' AS tgt_unchanged
  FROM short;

-- every kind of index the new storage gets (it builds the partition's
-- indexes after loading the rows): expression, partial, INCLUDE,
-- descending with a collation, unique, and an exclusion constraint; after
-- the exchange each holds exactly the partition's rows, and the constraints
-- still hold
CREATE TABLE kinds (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE kinds_1 PARTITION OF kinds FOR VALUES FROM ('2026-01-01') TO ('2026-01-11');
CREATE INDEX kinds_1_lower ON kinds_1 (lower(v));
CREATE INDEX kinds_1_partial ON kinds_1 (id) WHERE v LIKE 'v1%';
CREATE INDEX kinds_1_incl ON kinds_1 (day) INCLUDE (v);
CREATE INDEX kinds_1_desc ON kinds_1 (v COLLATE "C" DESC NULLS LAST);
CREATE UNIQUE INDEX kinds_1_id_v ON kinds_1 (id, v);
ALTER TABLE kinds_1 ADD CONSTRAINT kinds_1_excl EXCLUDE USING btree (id WITH =);
SELECT hwm.create_pipeline('pex_kinds', 'src', 'kinds', ARRAY['id', 'day'], 'id', 'day');
SELECT rows_deleted, rows_inserted FROM hwm.overwrite('pex_kinds', '2026-01-01', '2026-01-10');
SELECT method FROM last_run();
SELECT c.relname AS index, i.indisvalid AS valid, i.indisunique AS is_unique, i.indisexclusion AS exclusion
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'kinds_1'::regclass ORDER BY 1;
SELECT conname, contype, conindid::regclass AS index FROM pg_constraint
 WHERE conrelid = 'kinds_1'::regclass AND contype <> 'n' ORDER BY 1;
-- the NOT NULL columns, and their NOT NULL constraints, which are
-- pg_constraint rows from PostgreSQL 18 on (one per column) and none before
SELECT attname FROM pg_attribute
 WHERE attrelid = 'kinds_1'::regclass AND attnum > 0 AND attnotnull ORDER BY attnum;
SELECT count(*) = CASE WHEN current_setting('server_version_num')::int >= 180000
                       THEN (SELECT count(*) FROM pg_attribute
                              WHERE attrelid = 'kinds_1'::regclass AND attnum > 0 AND attnotnull)
                       ELSE 0 END AS not_null_constraints_match
  FROM pg_constraint WHERE conrelid = 'kinds_1'::regclass AND contype = 'n';
-- every index holds exactly the partition's rows (amcheck, heapallindexed)
CREATE EXTENSION amcheck;
SELECT count(bt_index_parent_check(i.indexrelid, true)) AS indexes_checked
  FROM pg_index i WHERE i.indrelid = 'kinds_1'::regclass;
DROP EXTENSION amcheck;
SELECT count(*) AS differences_from_src
  FROM ((TABLE kinds EXCEPT ALL SELECT * FROM src WHERE day <= '2026-01-10')
        UNION ALL (SELECT * FROM src WHERE day <= '2026-01-10' EXCEPT ALL TABLE kinds)) d;
-- the same id on another day of the partition: refused by the exclusion constraint
INSERT INTO kinds SELECT id, day + 1, 'again' FROM kinds WHERE day = '2026-01-02' ORDER BY id LIMIT 1;
SELECT count(*) AS left_over FROM pg_class WHERE relname LIKE 'hwm_exchange%';

SELECT hwm.drop_pipeline(p) FROM unnest(ARRAY['pex', 'pex_daily', 'pex_owned', 'pex_loaded', 'pex_kinds']) p;
RESET search_path;
RESET datestyle;
RESET timezone;
SET client_min_messages = warning;
DROP SCHEMA pex CASCADE;
RESET client_min_messages;
DROP OWNED BY hwm_pex_reader, hwm_pex_owner, hwm_pex_loader;
DROP ROLE hwm_pex_reader, hwm_pex_owner, hwm_pex_loader;
