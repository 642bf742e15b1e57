"""Rows held back while a new study database is built, then stored with one INSERT per table.

Storing a file costs a few fixed milliseconds per statement in DuckDB whatever its size (registering a
frame, binding an INSERT, committing): about 20 ms per file, so most of a study's ingest (381 files of the
default study: 9 s) went to statements, not rows. A new study database is all-or-nothing already (it is
built beside the old one and renamed into place only when everything succeeded, `study.new_study_database`),
so while it is built the rows of many files are held here and stored together, in one transaction, in the
order they came: the same tables, the same rows in the same order.

What stays immediate: a file's number (`files.file_no`, from the database's sequence) and the checks for
an earlier copy of a file or run (`store.forget`, `load.store_run`). Those look in the database, so a
batch that holds rows of the same file or run is stored first (`holds_*`); DuckDB's direct loaders (the
big per-transaction logs) store in a transaction of their own, also after what is held.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import duckdb
import polars as pl

from pgfslab.ingest.store import insert_row, rollback

MAX_ROWS = 2_000_000  # rows held at most before they are stored (memory)


class Batch:
    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        insert: Callable[[duckdb.DuckDBPyConnection, str, pl.DataFrame], None],
        max_rows: int = MAX_ROWS,
    ) -> None:
        self.con = con
        self._insert = insert  # the immediate insert of one frame
        self.max_rows = max_rows
        # per table, in the order they came: frames, and runs of rows given as dicts
        self._pieces: dict[str, list[pl.DataFrame | list[dict[str, Any]]]] = defaultdict(list)
        self._held = 0
        self._files: set[tuple[str, str | None]] = set()
        self._sources: set[str] = set()
        self._runs: set[str] = set()

    def frame(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height == 0:
            return
        self._pieces[table].append(frame)
        self._held += frame.height
        if table == "runs":
            self._runs.update(frame["run_id"].to_list())
        if self._held >= self.max_rows:
            self.flush()

    def row(self, table: str, row: dict[str, Any]) -> None:
        pieces = self._pieces[table]
        if pieces and isinstance(pieces[-1], list):
            pieces[-1].append(row)
        else:
            pieces.append([row])
        self._held += 1
        if table == "runs":
            self._runs.add(row["run_id"])

    def file(self, file_id: str, run_id: str | None, source: str) -> None:
        """A file whose rows are held (its `files` row among them)."""
        self._files.add((file_id, run_id))
        self._sources.add(source)

    def holds_file(self, file_id: str, run_id: str | None, source: str) -> bool:
        return (file_id, run_id) in self._files or source in self._sources

    def holds_run(self, run_id: str) -> bool:
        return run_id in self._runs

    def flush(self) -> None:
        """Store what is held, in one transaction: one INSERT per table (in the order the rows came)."""
        if not self._held:
            return
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for table, pieces in self._pieces.items():
                self._store(table, pieces)
            con.execute("COMMIT")
        except BaseException:
            rollback(con)
            raise
        self._pieces.clear()
        self._held = 0
        self._files.clear()
        self._sources.clear()
        self._runs.clear()

    def _store(self, table: str, pieces: list[pl.DataFrame | list[dict[str, Any]]]) -> None:
        frames: list[pl.DataFrame] = []
        for piece in pieces:
            if isinstance(piece, pl.DataFrame):
                frames.append(piece)
                continue
            try:  # rows given as dicts (the per-file bookkeeping): one frame, when polars takes them as one
                frames.append(pl.DataFrame(piece, infer_schema_length=None))
            except (TypeError, ValueError, pl.exceptions.PolarsError):
                self._store_frames(table, frames)  # what came before, then these one by one
                frames = []
                for row in piece:
                    insert_row(self.con, table, row)
        self._store_frames(table, frames)

    def _store_frames(self, table: str, frames: list[pl.DataFrame]) -> None:
        if not frames:
            return
        try:
            # one table's frames come from one parser or schema: a diagonal concat only fills a column some
            # lack with nulls, and settles a column that is all-null in some
            whole = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
        except pl.exceptions.PolarsError:  # types that do not settle: one INSERT each, as they came
            for frame in frames:
                self._insert(self.con, table, frame)
            return
        self._insert(self.con, table, whole)
