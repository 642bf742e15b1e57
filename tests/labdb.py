"""New lab databases for the ingest tests, made quickly: the lab's schema is created by `create_schema` once
per process, in a file, and each test gets a copy of that file. Creating a DuckDB database and the schema's 40
statements cost about 0.1 s of CPU, a copy and its connection about 0.03 s: test_captured alone makes 160
databases. The copies live on /dev/shm (a commit's fsync costs nothing there) and are removed at exit."""

from __future__ import annotations

import atexit
import functools
import itertools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

from pgfslab.ingest.schema import create_schema

_SHM = Path("/dev/shm")
_numbers = itertools.count()


@functools.cache
def _scratch() -> Path:
    d = Path(tempfile.mkdtemp(prefix="pgfs-labdb-", dir=_SHM if _SHM.is_dir() else None))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def _new_path() -> Path:
    return _scratch() / f"db{next(_numbers)}.duckdb"


def template(name: str, fill: Callable[[duckdb.DuckDBPyConnection], None] | None = None) -> Path:
    """A database file holding the lab's schema and what `fill` stores in it, made once per process and `name`
    (the same `fill` for the same name)."""
    return _template(name, fill)


@functools.cache
def _template(name: str, fill: Callable[[duckdb.DuckDBPyConnection], None] | None) -> Path:
    path = _scratch() / f"template-{name}.duckdb"
    con = duckdb.connect(str(path))
    try:
        create_schema(con)
        if fill is not None:
            fill(con)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    assert not path.with_suffix(".duckdb.wal").exists(), "a template must be one file"
    return path


def new_db(path: Path | str | None = None, *, like: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to a new database at `path` (a scratch file when None): a copy of `like`, by default of
    the schema alone."""
    target = Path(path) if path is not None else _new_path()
    shutil.copyfile(like if like is not None else template("schema"), target)
    return duckdb.connect(str(target))
