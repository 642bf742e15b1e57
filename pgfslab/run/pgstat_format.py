"""The lab's PostgreSQL samples, defined once: the header lines and columns of pgstat.csv, pgstat_io.csv and
pg_aios.csv, as the run's sampler (pgfslab.run.sampler) writes them and the ingest's parsers
(pgfslab.ingest.parsers.pgstat, pgstat_io, pg_aios) read them.

The definition lives with the writer: the ingest stage may import the run stage, not the other way round.
"""

from __future__ import annotations

from pgfslab.host import pg_stats

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

# pg_stat_io (PostgreSQL 16+), pgstat_io.csv: one row per backend type, object and context per sample, the
# view's cumulative counters as PostgreSQL 18 names them (16 and 17: operations times op_bytes), times in ms;
# an empty field is the view's NULL (an operation that combination never does)
IO_COMMENT = "# pgfs-lab pgstat-io v1"
IO_HEADER = IO_COMMENT + ": pg_stat_io samples (PostgreSQL 16+), bytes as 18 counts them"
IO_KEYS = pg_stats.STAT_IO_KEYS
IO_COUNTERS = pg_stats.STAT_IO_COUNTS
IO_TIMES = pg_stats.STAT_IO_TIMES
IO_COLUMNS = ["ts", *IO_KEYS, *IO_COUNTERS, *IO_TIMES]

# pg_aios (PostgreSQL 18+), pg_aios.csv: one row per sample, the asynchronous I/O handles in use at that moment
# summed: how many, how many in each state, of each operation, their bytes, how many synchronous / buffered
AIOS_COMMENT = "# pgfs-lab pg-aios v1"
AIOS_HEADER = AIOS_COMMENT + ": pg_aios summed per sample (PostgreSQL 18+)"
AIOS_COUNTERS = pg_stats.AIOS_COLUMNS
AIOS_COLUMNS = ["ts", *AIOS_COUNTERS]
