-- A bitmap heap scan of 20000 accounts (about 330 heap pages) from a random start: with index and sequential
-- scans switched off for this workload (its postgres_settings), the planner reads the pages the bitmap of the
-- primary key names; PostgreSQL 18 prefetches them through a read stream, effective_io_concurrency deep.
\set a random(1, 100000 * :scale - 20000)
SELECT sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 20000;
