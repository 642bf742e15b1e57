"""The lab's pgstat.csv, defined once: its header lines and columns, as the run's sampler
(pgfslab.run.sampler) writes them and the ingest's parser (pgfslab.ingest.parsers.pgstat) reads them.

The definition lives with the writer: the ingest stage may import the run stage, not the other way round.
"""

from __future__ import annotations

COMMENT = "# pgfs-lab pgstat v"  # both versions
COMMENT_V1 = "# pgfs-lab pgstat v1"
COMMENT_V2 = "# pgfs-lab pgstat v2"
HEADER_V1 = "# pgfs-lab pgstat v1: pg_stat_bgwriter + pg_stat_database samples"
HEADER_V2 = "# pgfs-lab pgstat v2: pg_stat_bgwriter + pg_stat_database + pg_stat_wal samples"

COUNTERS = [
    "checkpoints_timed",
    "checkpoints_req",
    "buffers_checkpoint",
    "buffers_clean",
    "buffers_backend",
    "buffers_alloc",
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "temp_bytes",
    "deadlocks",
]
# pg_stat_wal (PostgreSQL 14+), v2 only: counters, then the two times in milliseconds
WAL_COUNTERS = ["wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync"]
WAL_TIMES = ["wal_write_time", "wal_sync_time"]
WAL_COLUMNS = [*WAL_COUNTERS, *WAL_TIMES]

# the columns of each version, in the file's order (`ts`: the server's clock_timestamp() in epoch seconds)
COLUMNS_V1 = ["ts", *COUNTERS]
COLUMNS_V2 = [*COLUMNS_V1, *WAL_COLUMNS]
