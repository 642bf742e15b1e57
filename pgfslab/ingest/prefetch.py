"""Parse a study's next log files in a worker thread while the ingest stores the previous ones.

A study's ingest is a few hundred small files, each parsed with polars (hundreds of tiny lazy queries) and
stored by DuckDB in a transaction of its own. Both release the GIL for much of their work, so one thread
parsing ahead keeps the second core busy. What is stored, and in which order, does not change: the storing
stays in the ingest's own thread, file after file, and a file whose parse failed in the worker is parsed
again there, so its error is raised where it always was.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import polars as pl

from pgfslab.ingest import parsers

AHEAD = 8  # files parsed ahead at most (their frames wait in memory)


def _parse(path: Path) -> tuple[str, dict[str, pl.DataFrame]] | None:
    """(format, tables) for a file the polars parsers read; None for one read otherwise (DuckDB's direct
    loaders read the big per-transaction logs themselves) or whose format is unknown."""
    fmt = parsers.detect_format(path)
    mod = parsers.FORMATS.get(fmt) if fmt is not None else None
    if mod is None or getattr(mod, "load_direct", None) is not None:
        return None
    return fmt, parsers.parse(path, fmt)


class Prefetch:
    """`take(path)` is `path`'s (format, tables) parsed by the worker, or None (parse it yourself); files must
    be taken in the order given, and the next AHEAD are parsed meanwhile. A context manager: the worker ends
    with the block."""

    def __init__(self, files: Iterable[Path], ahead: int = AHEAD) -> None:
        self._files = list(files)
        self._index = {p: i for i, p in enumerate(self._files)}
        self._ahead = ahead
        self._next = 0
        self._futures: dict[Path, Future] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-parse")

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
            self._futures[path] = self._pool.submit(_parse, path)
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
