"""Samplers that run beside a workload and write /proc snapshots, timestamped on one clock.

Format (parsed by pgfslab.ingest.parsers.meminfo): each sample is a line `@ <epoch seconds>` followed by
the file's verbatim content. Sampling is a thread that sleeps to absolute deadlines, so a slow
sample does not shift later ones; the cost of sampling is measured in `make bench`.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType


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


# pg_stat_bgwriter and pg_stat_database counters, one CSV row per sample (parsed by the `pgstat` format)


def pgstat_columns() -> list[str]:
    """The columns of the format the ingest reads (pgfslab.ingest.parsers.pgstat: one definition). Imported
    when a pgstat sampler is made, before its run: the parsers bring polars, a second or more at the start of
    every run that samples no pgstat otherwise."""
    from pgfslab.ingest.parsers import pgstat as pgstat_format

    return ["ts", *pgstat_format.COUNTERS]


def __getattr__(name: str) -> object:  # sampler.PGSTAT_COLUMNS, read lazily
    if name == "PGSTAT_COLUMNS":
        return pgstat_columns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PGSTAT_SQL = (
    "SELECT extract(epoch FROM clock_timestamp())::float8, b.checkpoints_timed, b.checkpoints_req, "
    "b.buffers_checkpoint, b.buffers_clean, b.buffers_backend, b.buffers_alloc, d.xact_commit, d.xact_rollback, "
    "d.blks_read, d.blks_hit, d.tup_inserted, d.tup_updated, d.tup_deleted, d.temp_bytes, d.deadlocks "
    "FROM pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = current_database()"
)
PGSTAT_HEADER = "# pgfs-lab pgstat v1: pg_stat_bgwriter + pg_stat_database samples"


class PgStatSampler:
    """Sample PostgreSQL's cumulative counters over one connection at `hz` until stopped.

    Each query reads the counters as of that moment (pg_stat snapshots are per transaction, and the
    connection is in autocommit), stamped with the server's clock_timestamp() — the same epoch clock
    as the /proc samplers. A failed sample (server gone) ends sampling quietly: the run's outcome
    says why."""

    def __init__(self, conninfo: str, out: Path, hz: float) -> None:
        self.conninfo = conninfo
        self.out = out
        self.period = 1.0 / hz
        self.samples = 0
        self.error: str | None = None
        self.columns = pgstat_columns()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sampler:pgstat", daemon=True)

    def _loop(self) -> None:
        import psycopg

        with open(self.out, "w") as fh:
            fh.write(PGSTAT_HEADER + "\n" + ",".join(self.columns) + "\n")
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
                    next_t = time.monotonic()
                    while not self._stop.is_set():
                        row = conn.execute(PGSTAT_SQL).fetchone()
                        conn.execute("SELECT pg_stat_clear_snapshot()")
                        fh.write(",".join(f"{v:.6f}" if i == 0 else str(v) for i, v in enumerate(row)) + "\n")
                        self.samples += 1
                        next_t += self.period
                        delay = next_t - time.monotonic()
                        if delay < 0:
                            next_t, delay = time.monotonic(), 0
                        self._stop.wait(delay)
            except Exception as exc:  # the server stopped or crashed under us: keep what we have
                self.error = f"{type(exc).__name__}: {exc}".strip()

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

    def __init__(self, rundir: Path, cfg: dict[str, float], conninfo: str | None = None) -> None:
        import contextlib

        self._stack = contextlib.ExitStack()
        self.items: dict[str, ProcSampler | PgStatSampler] = {}
        for name, src in (("meminfo", "/proc/meminfo"), ("diskstats", "/proc/diskstats"), ("vmstat", "/proc/vmstat")):
            hz = float(cfg.get(f"{name}_hz", 1 if name == "meminfo" else 0))
            if hz > 0:
                self.items[name] = ProcSampler(src, rundir / f"{name}.log", hz)
        if conninfo and float(cfg.get("pgstat_hz", 0)) > 0:
            self.items["pgstat"] = PgStatSampler(conninfo, rundir / "pgstat.csv", float(cfg["pgstat_hz"]))

    def __enter__(self) -> Samplers:
        for s in self.items.values():
            self._stack.enter_context(s)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {f"{k}_samples": s.samples for k, s in self.items.items()}
        err = getattr(self.items.get("pgstat"), "error", None)
        if err:
            out["pgstat_error"] = err
        return out
