"""Samplers that run beside a workload and write /proc snapshots, timestamped on one clock.

Format (parsed by pgfslab.ingest.parsers.meminfo, .diskstats, .vmstat and .procstat): each sample is a line `@ <epoch seconds>` followed by
the file's verbatim content. Sampling is a thread that sleeps to absolute deadlines, so a slow
sample does not shift later ones; the cost of sampling is measured in `make bench`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from types import TracebackType

from pgfslab.config.model import SamplerSettings
from pgfslab.host import pg_stats, postgres
from pgfslab.run import pgstat_format


class ProcSampler:
    """Copy a /proc file into `out` at `hz` samples per second until stopped."""

    def __init__(self, source: str | Path, out: Path, hz: float) -> None:
        self.source = Path(source)
        self.out = out
        self.period = 1.0 / hz
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"sampler:{self.source.name}", daemon=True)

    def _loop(self) -> None:
        next_t = time.monotonic()
        with open(self.out, "w", buffering=1 << 16) as fh:
            while not self._stop.is_set():
                with open(self.source) as src:
                    body = src.read()
                fh.write(f"@ {time.time():.6f}\n{body}")
                self.samples += 1
                next_t += self.period
                delay = next_t - time.monotonic()
                if delay < 0:  # fell behind: skip missed ticks instead of bursting
                    next_t = time.monotonic()
                    delay = 0
                self._stop.wait(delay)
            fh.flush()

    def __enter__(self) -> ProcSampler:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# pg_stat_bgwriter, pg_stat_database and pg_stat_wal counters, one CSV row per sample, in the `pgstat` format
# (pgfslab.run.pgstat_format, which the ingest's parser reads too: one definition)
PG_STAT_WAL_SINCE = 140000  # server_version_num of the first release with pg_stat_wal
PGSTAT_HEADER = pgstat_format.HEADER_V2
PGSTAT_HEADER_V1 = pgstat_format.HEADER_V1
PGSTAT_COLUMNS = pgstat_format.COLUMNS_V2
PGSTAT_COLUMNS_V1 = pgstat_format.COLUMNS_V1


def pgstat_columns(version: int = 2) -> list[str]:
    """The columns of the format's v2 (with pg_stat_wal) or v1."""
    return list(pgstat_format.COLUMNS_V2 if version == 2 else pgstat_format.COLUMNS_V1)


def pgstat_sql(columns: list[str], server_version_num: int = 150000) -> str:
    """The sampler's query for these columns (the format's v1 or v2 list) on a server of that version: the
    counters' sources move between the views from release to release (pgfslab.host.pg_stats)."""
    bgw_from, bgw = pg_stats.bgwriter_sources(server_version_num)
    sql_of = {
        "ts": "extract(epoch FROM clock_timestamp())::float8",
        **bgw,
        **{c: f"d.{c}" for c in pgstat_format.COUNTERS if c not in bgw},
    }
    frm = [bgw_from, "pg_stat_database d"]
    if "wal_sync" in columns:
        wal_from, wal = pg_stats.wal_sources(server_version_num)
        sql_of |= wal
        frm.append(wal_from)
    return f"SELECT {', '.join(sql_of[c] for c in columns)} FROM {', '.join(frm)} WHERE d.datname = current_database()"


PGSTAT_SQL = pgstat_sql(PGSTAT_COLUMNS)


def pgstat_layout(server_version_num: int | None) -> tuple[str, list[str]]:
    """Header line and columns for a server: v2 (with pg_stat_wal) from PostgreSQL 14 on, else v1; a
    server never reached (None) gets v2's header (the file then has no rows either way)."""
    if server_version_num is not None and server_version_num < PG_STAT_WAL_SINCE:
        return PGSTAT_HEADER_V1, pgstat_columns(1)
    return PGSTAT_HEADER, pgstat_columns(2)


def pgstat_line(columns: list[str], row: tuple[object, ...]) -> str:
    """One CSV row: ts with microseconds, the WAL times with three decimals (ms), counters as integers."""
    floats = set(pgstat_format.WAL_TIMES)
    out = []
    for c, v in zip(columns, row, strict=True):
        if c == "ts":
            out.append(f"{float(v):.6f}")  # type: ignore[arg-type]
        elif c in floats:
            out.append(f"{float(v):.3f}")  # type: ignore[arg-type]
        else:
            out.append(str(int(v)))  # type: ignore[call-overload]
    return ",".join(out)


def _field(value: object, digits: int | None = None) -> str:
    """A CSV field: empty for SQL NULL, a float with `digits` decimals, else the value's text (no commas:
    pg_stat_io's names have none, and the lab's CSV has no quoting)."""
    if value is None:
        return ""
    if digits is not None:
        return f"{float(value):.{digits}f}"  # type: ignore[arg-type]
    return str(value).replace(",", ";")


def io_line(row: tuple[object, ...]) -> str:
    """One pgstat_io.csv row (pgfslab.run.pgstat_format.IO_COLUMNS) from a row of pg_stats.stat_io_sql."""
    n_keys, n_counts = len(pgstat_format.IO_KEYS), len(pgstat_format.IO_COUNTERS)
    out = [_field(row[0], 6)]
    out += [_field(v) for v in row[1 : 1 + n_keys]]
    out += [_field(v) for v in row[1 + n_keys : 1 + n_keys + n_counts]]
    out += [_field(v, 3) for v in row[1 + n_keys + n_counts :]]
    return ",".join(out)


def aios_line(row: tuple[object, ...]) -> str:
    """One pg_aios.csv row (pgfslab.run.pgstat_format.AIOS_COLUMNS) from pg_stats.aios_sql's row."""
    return ",".join([_field(row[0], 6), *(str(int(v)) for v in row[1:])])  # type: ignore[call-overload]


class PgStatSampler:
    """Sample PostgreSQL's cumulative counters over one connection at `hz` until stopped: pgstat.csv, and
    beside it pgstat_io.csv (pg_stat_io, PostgreSQL 16+) and pg_aios.csv (pg_aios, 18+) when the server
    has those views.

    Each query reads the counters as of that moment (pg_stat snapshots are per transaction, and the
    connection is in autocommit), stamped with the server's clock_timestamp() — the same epoch clock
    as the /proc samplers. A failed sample (server gone) ends sampling quietly: the run's outcome
    says why."""

    def __init__(self, conninfo: str, rundir: Path, hz: float) -> None:
        self.conninfo = conninfo
        self.out = rundir / "pgstat.csv"
        self.io_out = rundir / "pgstat_io.csv"
        self.aios_out = rundir / "pg_aios.csv"
        self.period = 1.0 / hz
        self.samples = 0
        self.io_samples = 0
        self.aios_samples = 0
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sampler:pgstat", daemon=True)

    def _loop(self) -> None:
        import psycopg

        with open(self.out, "w") as fh, contextlib.ExitStack() as files:
            header, columns = pgstat_layout(None)
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
                    num = conn.info.server_version
                    header, columns = pgstat_layout(num)
                    fh.write(header + "\n" + ",".join(columns) + "\n")
                    sql, io_sql, aios_sql = pgstat_sql(columns, num), pg_stats.stat_io_sql(num), pg_stats.aios_sql(num)
                    io_fh = aios_fh = None
                    if io_sql:
                        io_fh = files.enter_context(open(self.io_out, "w"))
                        io_fh.write(pgstat_format.IO_HEADER + "\n" + ",".join(pgstat_format.IO_COLUMNS) + "\n")
                    if aios_sql:
                        aios_fh = files.enter_context(open(self.aios_out, "w"))
                        aios_fh.write(pgstat_format.AIOS_HEADER + "\n" + ",".join(pgstat_format.AIOS_COLUMNS) + "\n")
                    next_t = time.monotonic()
                    while not self._stop.is_set():
                        row = postgres.one_row(conn, sql)
                        fh.write(pgstat_line(columns, row) + "\n")
                        self.samples += 1
                        if io_fh is not None and io_sql:
                            io_fh.write("".join(io_line(r) + "\n" for r in conn.execute(io_sql).fetchall()))
                            self.io_samples += 1
                        if aios_fh is not None and aios_sql:
                            aios_fh.write(aios_line(postgres.one_row(conn, aios_sql)) + "\n")
                            self.aios_samples += 1
                        conn.execute("SELECT pg_stat_clear_snapshot()")
                        next_t += self.period
                        delay = next_t - time.monotonic()
                        if delay < 0:
                            next_t, delay = time.monotonic(), 0
                        self._stop.wait(delay)
            except Exception as exc:  # the server stopped or crashed under us: keep what we have
                self.error = f"{type(exc).__name__}: {exc}".strip()
            if fh.tell() == 0:  # never connected: the header alone (a valid file without samples)
                fh.write(header + "\n" + ",".join(columns) + "\n")

    def __enter__(self) -> PgStatSampler:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class Samplers:
    """Every sampler of a run, started together and stopped together (contextlib.ExitStack)."""

    def __init__(self, rundir: Path, rates: SamplerSettings, conninfo: str | None = None) -> None:
        self._stack = contextlib.ExitStack()
        self.items: dict[str, ProcSampler | PgStatSampler] = {}
        for name, src, hz in (
            ("meminfo", "/proc/meminfo", rates.meminfo_hz),
            ("diskstats", "/proc/diskstats", rates.diskstats_hz),
            ("vmstat", "/proc/vmstat", rates.vmstat_hz),
            ("stat", "/proc/stat", rates.stat_hz),
        ):
            if float(hz) > 0:
                self.items[name] = ProcSampler(src, rundir / f"{name}.log", float(hz))
        if conninfo and float(rates.pgstat_hz) > 0:
            self.items["pgstat"] = PgStatSampler(conninfo, rundir, float(rates.pgstat_hz))

    def __enter__(self) -> Samplers:
        for s in self.items.values():
            self._stack.enter_context(s)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {f"{k}_samples": s.samples for k, s in self.items.items()}
        pg = self.items.get("pgstat")
        if isinstance(pg, PgStatSampler):
            if pg.io_samples:
                out["pgstat_io_samples"] = pg.io_samples
            if pg.aios_samples:
                out["pg_aios_samples"] = pg.aios_samples
            if pg.error:
                out["pgstat_error"] = pg.error
        return out
