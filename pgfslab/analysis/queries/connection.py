"""The study database, read-only: one connection per question, or one shared by the questions asked
inside `sharing()` (the paper asks many), and how a question says that data is missing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import polars as pl


class MissingData(Exception):
    """The study database lacks what a notebook needs.

    In a notebook it prints as one line (IPython's `_render_traceback_` hook), not a traceback.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"STOP: {self}"]


def connect(db: str | Path) -> duckdb.DuckDBPyConnection:
    """A new read-only connection to the study database (the caller closes it)."""
    p = Path(db)
    if not p.exists():
        raise MissingData(f"{p}: no such database (run the study, or `make analyse STUDY=...` on its raw folder)")
    return duckdb.connect(str(p), read_only=True)


# Inside `sharing()` the questions share one read-only connection per database, closed when the scope ends,
# so no lock outlives it (`pgfslab ingest` writes into a database in place); a database replaced within the
# scope (a new ingest renames its file into place) is opened afresh. Outside, each question opens its own.
_shared: dict[str, tuple[tuple[int, int, int], duckdb.DuckDBPyConnection]] = {}
_depth = 0


def _identity(p: Path) -> tuple[int, int, int]:
    st = p.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """The questions asked inside share one read-only connection per database, closed at the end."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            while _shared:
                _, (_, con) = _shared.popitem()
                con.close()


@contextlib.contextmanager
def reading(db: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one question: the shared one inside `sharing()`, else its own."""
    if not _depth:
        with connect(db) as con:
            yield con
        return
    p = Path(db)
    if not p.exists():
        connect(p)  # raises MissingData
    key, ident = str(p.resolve()), _identity(p)
    held = _shared.get(key)
    if held is None or held[0] != ident:
        if held is not None:
            held[1].close()
        _shared[key] = held = (ident, connect(p))
    yield held[1]


def frame(db: str | Path, sql: str, params: list[object] | None = None) -> pl.DataFrame:
    """The result of one SQL question as a polars frame."""
    with reading(db) as con:
        return con.sql(sql, params=params or None).pl()


def require(df: pl.DataFrame, what: str) -> pl.DataFrame:
    """`df`, or MissingData naming `what` when it is empty."""
    if df.height == 0:
        raise MissingData(f"no {what} in this study database")
    return df


def has_table(db: str | Path, table: str) -> bool:
    """Whether the database has this table (tables of optional tools exist once ingested)."""
    with reading(db) as con:
        # fetchall: a shared connection must not be left with an unfinished result
        rows = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]).fetchall()
        return bool(rows[0][0])


def target_condition(targets: Sequence[str] | None, alias: str = "r") -> tuple[str, list[object]]:
    """SQL condition and parameter for the optional target filter."""
    if not targets:
        return "", []
    return f"AND list_contains(?, {alias}.target)", [list(targets)]


def workload_condition(workload: str | None, alias: str = "r") -> tuple[str, list[object]]:
    """SQL condition and parameter for the optional workload filter."""
    if not workload:
        return "", []
    return f"AND {alias}.workload = ?", [workload]


# a run that counts: not of a burn-in round (run.burn_in_rounds; null in databases from before the column)
NOT_BURN_IN = "NOT coalesce(r.burn_in, FALSE)"

RUN_COLS = (
    "r.run_id, r.target, r.target_label, r.fallback, r.fs, r.workload, r.base_workload, r.tool, r.clients, r.repeat, "
    "r.plan_index"
)


def of_ok_runs(
    db: str | Path,
    study: str,
    source: str,
    columns: str,
    order: str,
    *,
    workload: str | None = None,
    targets: Sequence[str] | None = None,
    join: str = "",
    where: str = "",
    params: Sequence[object] = (),
) -> pl.DataFrame:
    """`columns` of `source` (a table and its alias) for the study's successful runs (joined as `r`; burn-in
    rounds left out: never compared), of one workload and some targets when given, in `order`. `join` adds joins; `where` adds conditions whose
    `params` are bound after the study's."""
    wc, wp = workload_condition(workload)
    tc, tp = target_condition(targets)
    return frame(
        db,
        f"""
        SELECT {columns}
        FROM {source} JOIN runs r USING (run_id) {join}
        WHERE r.study = ? AND r.status = 'ok' AND {NOT_BURN_IN} {where} {wc} {tc}
        ORDER BY {order}""",
        [study, *params, *wp, *tp],
    )
