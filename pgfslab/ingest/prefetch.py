"""Parse a study's next log files in worker threads while the ingest stores the previous ones.

A study's ingest is a few hundred small files, each parsed with polars (dozens of tiny lazy queries) and
stored by DuckDB. Polars releases the GIL while it computes, and since a new study database stores its rows
in batches (pgfslab.ingest.batch) the storing thread mostly waits for the parsers: two threads parse ahead
(default study: 8.4 -> 6.7 s on 2 cores). What is stored, and in which order, does not change: the storing
stays in the ingest's own thread, file after file, and a file whose parse failed in a worker is parsed
again there, so its error is raised where it always was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import polars as pl

from pgfslab.ingest import parsers

AHEAD = 8  # files parsed ahead at most (their frames wait in memory)
WORKERS = min(2, os.cpu_count() or 1)


def _parse(path: Path, fmt: str | None) -> tuple[str, dict[str, pl.DataFrame]] | None:
    """(format, tables) for a file the polars parsers read (as `fmt`, or the format detected); None for one
    read otherwise (DuckDB's direct loaders read the big per-transaction logs themselves) or whose format is
    unknown."""
    fmt = fmt or parsers.detect_format(path)
    if fmt is None:
        return None
    mod = parsers.FORMATS.get(fmt)
    if mod is None or getattr(mod, "load_direct", None) is not None:
        return None
    return fmt, parsers.parse(path, fmt)


class Prefetch:
    """`take(path)` is `path`'s (format, tables) parsed by a worker, or None (parse it yourself); files (a path,
    or a path and the format to read it as) must be taken in the order given, and the next AHEAD are parsed
    meanwhile. A context manager: the workers end with the block."""

    def __init__(self, files: Iterable[Path | tuple[Path, str]], ahead: int = AHEAD, workers: int = WORKERS) -> None:
        items = [f if isinstance(f, tuple) else (f, None) for f in files]
        self._files = [p for p, _ in items]
        self._formats = {p: fmt for p, fmt in items}
        self._index = {p: i for i, p in enumerate(self._files)}
        self._ahead = ahead
        self._next = 0
        self._futures: dict[Path, Future] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-parse")

    def __enter__(self) -> Prefetch:
        self._fill()
        return self

    def __exit__(self, *exc: object) -> None:
        for fut in self._futures.values():
            fut.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _fill(self) -> None:
        while self._next < len(self._files) and len(self._futures) < self._ahead:
            path = self._files[self._next]
            self._futures[path] = self._pool.submit(_parse, path, self._formats[path])
            self._next += 1

    def take(self, path: Path) -> tuple[str, dict[str, pl.DataFrame]] | None:
        at = self._index.get(path)
        if at is None:
            return None
        for p in [p for p in self._futures if self._index[p] < at]:  # passed over (a left-out run's files)
            self._futures.pop(p).cancel()
        fut = self._futures.pop(path, None)
        self._next = max(self._next, at + 1)
        self._fill()
        if fut is None:
            return None
        try:
            return fut.result()
        except Exception:  # parsed again in the caller's thread, where its error belongs
            return None
