"""The ingest's safety: one transaction per file (a file failing mid-way leaves the database exactly
as it was, compared table by table), re-ingest replaces rows, bad files (truncated, garbage, empty,
another tool's, huge numbers) fail with `path:line: message`, `--keep-going`, the DuckDB fast path
for pgbench per-transaction logs giving the same rows and errors as the exact parser, the published
reference results, the Parquet export, the documented schema, and a bounded fuzz of all of it.
Expected values come from the files' text (plain string operations) or from the parsers' contract,
never from the code under test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import labdb
import polars as pl
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgfslab.analysis import queries
from pgfslab.cli.main import main
from pgfslab.errors import LabError
from pgfslab.ingest import export, parsers
from pgfslab.ingest import load as ingest
from pgfslab.ingest.parsers import ParseError, pgbench_txlog
from pgfslab.ingest.published import external_manifest, ingest_external
from pgfslab.ingest.schema import LAB_TABLES, all_tables, create_schema, duck_type
from pgfslab.ingest.study import ingest_study

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
PG15 = DATA / "pg15"
SYSBENCH = DATA / "sysbench"
EXTERNAL = TESTS.parent / "data" / "external"


# ----------------------------------------------------------------------------- helpers


def new_db(path: Path | None = None) -> duckdb.DuckDBPyConnection:
    return labdb.new_db(path)


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table and view (sorted), the sequence excluded: the whole database state."""
    return {
        n: sorted(con.execute(f'SELECT COLUMNS(*)::VARCHAR FROM "{n}"').fetchall(), key=repr)
        for n in snapshot_names(con)
    }


def snapshot_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table and view of the database, sorted."""
    return sorted(
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
    )


def fingerprint(
    con: duckdb.DuckDBPyConnection, names: list[str] | None = None, besides_run: tuple[str, set[str]] | None = None
) -> dict[str, tuple[int, int]]:
    """Each table's and view's row count and order-independent hash of its rows, in one statement (`snapshot`
    takes one per table; the fuzz below compares a database thousands of times). `besides_run=(run, tables)`
    leaves the rows of that run out of those tables."""
    if names is None:
        names = list(snapshot_names(con))
    run, filtered = besides_run or ("", set())
    parts = [
        f"SELECT '{n}', count(*), coalesce(sum(hash(r)::HUGEINT), 0) FROM \"{n}\" r"
        + (f" WHERE run_id IS DISTINCT FROM '{run}'" if n in filtered else "")
        for n in names
    ]
    return {n: (c, h) for n, c, h in con.execute(" UNION ALL ".join(parts)).fetchall()}


def rows_of(
    con: duckdb.DuckDBPyConnection, table: str, exclude: tuple[str, ...] = ("file_id",)
) -> list[tuple[Any, ...]]:
    cols = ", ".join(f'"{c}"' for c in all_tables()[table] if c not in exclude)
    return con.execute(f'SELECT {cols} FROM "{table}"').fetchall()


def write(tmp: Path, name: str, content: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    return p


def _load_a_few(con: duckdb.DuckDBPyConnection) -> None:
    for f in (
        PG15 / "tpcb.stdout",
        PG15 / "tpcb.stderr",
        PG15 / "tx_sampled.25763",
        PG15 / "meminfo.log",
        SYSBENCH / "oltp_read_write_hist_p99.stdout",
        DATA / "proc" / "diskstats.log",
    ):
        ingest.ingest_file(con, f, run_id="run-1", study="s")


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A database holding a few real files of several formats (the txlog one by the fast path): a copy of one
    made once."""
    con = labdb.new_db(tmp_path / "db.duckdb", like=labdb.template("loaded", _load_a_few))
    yield con
    con.close()


BAD_INPUTS: dict[str, tuple[str | None, bytes]] = {
    "truncated pgbench report": ("pgbench-summary", (PG15 / "tpcb.stdout").read_bytes()[:300]),
    "truncated sysbench report": ("sysbench", (SYSBENCH / "oltp_read_write.stdout").read_bytes()[:1100]),
    "garbage bytes": (None, bytes(range(256)) * 3),
    "empty": ("pgbench-summary", b""),
    "wrong tool (sysbench as pgbench)": ("pgbench-summary", (PG15 / "sysbench_oltp_rw.stdout").read_bytes()),
    "wrong tool (pgbench as sysbench)": ("sysbench", (PG15 / "tpcb.stdout").read_bytes()),
    "client id beyond a C int in a txlog": (
        "pgbench-txlog",
        b"0 1 100 0 1795371086 279608\n2147483648 1 100 0 1795371086 1\n",
    ),
    "huge count in a txlog": (
        "pgbench-txlog",
        b"0 1 100 0 1795371086 279608\n0 " + b"9" * 25 + b" 100 0 1795371086 1\n",
    ),
    "huge count in diskstats": ("diskstats", b"@ 1.5\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 " + b"9" * 25 + b"\n"),
    "huge number in fs-ops": (
        "fs-ops",
        b"____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)"
        b"__p99(ms)_pMax(ms)\ncreate 1.0s " + b"9" * 25 + b" 1.0 1.0 1.0 1.0 1.0 1.0\n",
    ),
    "huge number in a published table": (
        "published-table",
        b"seed,fs,mount_options,workload,scale,logical_gb,"
        b"physical_gb,space_savings_min_pct,space_savings_max_pct,note\n"
        b"x,btrfs,,w," + b"9" * 25 + b",1,1,,,\n",
    ),
}


# ----------------------------------------------------------------------------- one transaction per file


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=lambda c: c.replace(" ", "_"))
def test_bad_file_fails_cleanly_and_changes_nothing(
    case: str, loaded: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    fmt, content = BAD_INPUTS[case]
    path = write(tmp_path, "bad.log", content)
    before = snapshot(loaded)
    with pytest.raises((ParseError, LabError)) as exc:
        ingest.ingest_file(loaded, path, fmt=fmt, run_id="run-2")
    assert str(exc.value).startswith(f"{path}")
    if isinstance(exc.value, ParseError):
        assert exc.value.line is None or str(exc.value).startswith(f"{path}:{exc.value.line}: ")
    assert snapshot(loaded) == before


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_failure_midway_through_a_file_rolls_back(
    loaded: duckdb.DuckDBPyConnection, fail_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rr.stdout fills two tables and `files`: the insert fails after 0, 1 or 2 of them went in."""
    assert ingest.ingest_file(new_db(), PG15 / "rr.stdout").rows == 1 + 11  # the summary and its 11 statements
    before = snapshot(loaded)
    calls = {"n": 0}

    def flaky(real: Any) -> Any:
        def insert(con: duckdb.DuckDBPyConnection, table: str, data: pl.DataFrame | dict[str, Any]) -> None:
            calls["n"] += 1
            if calls["n"] == fail_at:
                raise OSError("disk full (simulated)")
            real(con, table, data)

        return insert

    monkeypatch.setattr(ingest, "insert", flaky(ingest.insert))  # the tables' rows
    monkeypatch.setattr(ingest, "_insert_row", flaky(ingest._insert_row))  # the files row
    with pytest.raises(OSError, match="simulated"):
        ingest.ingest_file(loaded, PG15 / "rr.stdout", run_id="run-2")
    assert snapshot(loaded) == before


def test_failure_midway_through_the_fast_path_rolls_back(
    loaded: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The big-log fast path inserts its rows, then the files row fails: nothing stays, and an
    interrupt (^C) is not swallowed by the fallback to the exact parser."""
    src = write(tmp_path, "tx.log", (PG15 / "rr_tx.25806").read_bytes())
    before = snapshot(loaded)
    real = ingest._file_row

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(ingest, "_file_row", broken)
    with pytest.raises(OSError, match="simulated"):  # fast path fails, the exact parser's insert fails too
        ingest.ingest_file(loaded, src)
    assert snapshot(loaded) == before
    monkeypatch.setattr(ingest, "_file_row", real)
    real_load = pgbench_txlog.load_direct

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        real_load(*args, **kwargs)  # the rows are in ...
        raise KeyboardInterrupt  # ... and then ^C

    monkeypatch.setattr(pgbench_txlog, "load_direct", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ingest.ingest_file(loaded, src)
    assert snapshot(loaded) == before


def test_failed_reingest_of_a_changed_file_keeps_the_old_rows(
    loaded: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    path = write(tmp_path, "run.stdout", (PG15 / "select.stdout").read_bytes())
    ingest.ingest_file(loaded, path, run_id="run-3")
    before = snapshot(loaded)
    path.write_bytes((PG15 / "select.stdout").read_bytes()[:200])  # the file got truncated since
    with pytest.raises(ParseError):
        ingest.ingest_file(loaded, path, run_id="run-3")
    assert snapshot(loaded) == before


# ----------------------------------------------------------------------------- re-ingest replaces


def test_reingest_replaces_rows(loaded: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    before = snapshot(loaded)
    tx = PG15 / "tx_sampled.25763"
    n_lines = tx.read_bytes().count(b"\n")
    ingest.ingest_file(loaded, tx, run_id="run-1", study="s")  # the same file again: nothing changes...
    after = snapshot(loaded)
    same = set(after) - {"files", "pgbench_txlog_rows"}  # but its ingested_at, and its file_no
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    assert len(after["files"]) == len(before["files"])
    # the same content of the same run under another name: one copy, under the new name
    copy = write(tmp_path, "copy.25763", tx.read_bytes())
    ingest.ingest_file(loaded, copy, run_id="run-1")
    got = loaded.execute("SELECT count(*), min(source_file), min(run_id) FROM pgbench_txlog").fetchall()[0]
    assert got == (n_lines, str(copy), "run-1")
    # the same content from another run is another file (two crashed runs can print identical logs)
    twin = write(tmp_path, "twin.25763", tx.read_bytes())
    ingest.ingest_file(loaded, twin, run_id="run-9")
    got = loaded.execute("SELECT run_id, count(*) FROM pgbench_txlog GROUP BY ALL ORDER BY 1").fetchall()
    assert got == [("run-1", n_lines), ("run-9", n_lines)]
    # a changed file under the same name: the old rows go, the new ones come
    lines = tx.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:10]))
    ingest.ingest_file(loaded, copy, run_id="run-1")
    got = loaded.execute("SELECT run_id, count(*) FROM pgbench_txlog GROUP BY ALL ORDER BY 1").fetchall()
    assert got == [("run-1", 10), ("run-9", n_lines)]
    assert loaded.execute("SELECT count(*) FROM files WHERE format = 'pgbench-txlog'").fetchall()[0][0] == 2
    # and the same for a format stored plainly
    s1 = write(tmp_path, "s.stdout", (PG15 / "rr.stdout").read_bytes())
    ingest.ingest_file(loaded, s1)
    ingest.ingest_file(loaded, s1)
    # -r on the TPC-B-like script: its 11 statements, once
    assert (
        loaded.execute("SELECT count(*) FROM pgbench_statement WHERE source_file = ?", [str(s1)]).fetchall()[0][0] == 11
    )


def test_files_table_records_each_file(loaded: duckdb.DuckDBPyConnection) -> None:
    files = loaded.execute(
        "SELECT source_file, format, origin, rows, bytes, file_no FROM files ORDER BY file_no"
    ).fetchall()
    assert [Path(f[0]).name for f in files] == [
        "tpcb.stdout",
        "tpcb.stderr",
        "tx_sampled.25763",
        "meminfo.log",
        "oltp_read_write_hist_p99.stdout",
        "diskstats.log",
    ]
    assert {f[2] for f in files} == {"local"}
    for src, _, _, _n, size, _ in files:
        assert size == Path(src).stat().st_size
    tx = next(f for f in files if f[1] == "pgbench-txlog")
    assert tx[3] == (PG15 / "tx_sampled.25763").read_bytes().count(b"\n")
    assert len({f[5] for f in files}) == len(files)


# ----------------------------------------------------------------------------- the command line


def test_keep_going_lists_failures_and_exits_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = [PG15 / "tpcb.stdout", SYSBENCH / "oltp_read_only.stdout", PG15 / "skip_tx.25812"]
    bad = [
        write(tmp_path, "empty.stdout", b""),
        write(tmp_path, "garbage.bin", bytes(range(256))),
        write(tmp_path, "cut.stdout", (SYSBENCH / "oltp_write_only.stdout").read_bytes()[:1200]),
    ]
    db = tmp_path / "k.duckdb"
    assert main(["ingest", "--db", str(db), "--keep-going", *map(str, good[:2]), *map(str, bad), str(good[2])]) == 1
    err = capsys.readouterr().err
    assert "3 of 6 files failed" in err
    for b in bad:
        assert f"  {b}" in err
    assert f"  {bad[2]}:" in err and "truncated sysbench report" in err
    with duckdb.connect(str(db), read_only=True) as con:
        assert sorted(Path(r[0]).name for r in con.execute("SELECT source_file FROM files").fetchall()) == sorted(
            p.name for p in good
        )
    # without --keep-going the first failure stops the command (exit 2), the files before it stay
    db2 = tmp_path / "k2.duckdb"
    assert main(["ingest", "--db", str(db2), str(good[0]), str(bad[0]), str(good[1])]) == 2
    assert f"error: {bad[0]}" in capsys.readouterr().err
    with duckdb.connect(str(db2), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM files").fetchall()[0][0] == 1


def test_schema_command_shows_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    text = capsys.readouterr().out
    assert main(["schema", "--markdown"]) == 0
    md = capsys.readouterr().out
    tables = all_tables()
    for t in (
        "sysbench_interval",
        "sysbench_summary",
        "sysbench_histogram",
        "diskstats",
        "vmstat",
        "fs_ops",
        "fs_ops_interval",
        "published_sysbench_variance",
        "published_space",
        "published_compression",
        "published_benchstat",
        "runs",
        "files",
    ):
        assert t in tables
    for t, cols in tables.items():
        assert f"\n{t}\n" in "\n" + text
        assert f"### `{t}`" in md
        for c in cols:
            assert f"  {c} " in text
    assert "| `origin` | VARCHAR |" in md and "pgbench_txlog_rows" in md


# ----------------------------------------------------------------------------- the fast path = the exact parser


def both_paths(
    path: Path, cons: tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection] | None = None, **kw: Any
) -> tuple[Any, Any]:
    """(rows and warnings, or the error text) of the fast path and of the exact parser. Databases
    may be reused: ingesting the same source name again replaces its rows."""
    out = []
    for i, direct in enumerate((True, False)):
        con = cons[i] if cons else new_db()
        try:
            res = ingest.ingest_file(con, path, fmt="pgbench-txlog", direct=direct, **kw)
            mine = [r for r in rows_of(con, "pgbench_txlog") if r[0] == str(path)]
            out.append((sorted(mine, key=repr), res.warnings, res.rows))
        except (ParseError, LabError) as exc:
            out.append(("error", str(exc)))
        finally:
            if not cons:
                con.close()
    return out[0], out[1]


TXLOGS = [
    p
    for p in sorted(PG15.iterdir()) + sorted((DATA / "docs").iterdir())
    if p.is_file() and parsers.detect_format(p) == "pgbench-txlog"
]


@pytest.mark.parametrize("path", TXLOGS, ids=lambda p: p.name)
def test_fast_path_gives_the_exact_parsers_rows(path: Path) -> None:
    fast, exact = both_paths(path)
    assert fast == exact
    con = new_db()
    res = ingest.ingest_file(con, path)
    # the real logs go the fast way, but the torn one (its last line has no newline)
    assert res.direct == (not path.name.endswith(".tail"))
    lines = [ln.split(" ") for ln in path.read_text().split("\n")[:-1]]
    got = con.execute("SELECT client_id, tx_no, epoch_us FROM pgbench_txlog").fetchall()
    assert sorted(got) == sorted((int(f[0]), int(f[1]), int(f[4]) * 1_000_000 + int(f[5])) for f in lines)


# lines in the shape of a per-transaction log with the spellings DuckDB reads more laxly than pgbench
# writes: decimals and exponents in integer columns, signs, blank lines, CR, stray spaces
_TOK = st.sampled_from(
    [
        "0",
        "1",
        "7",
        "42",
        "1795371086",
        "279608",
        "999999",
        "1000000",
        "1.5",
        "1e3",
        "+5",
        "-1",
        "007",
        "failed",
        "skipped",
        "serialization",
        "ok",
        "inf",
        "nan",
        "9" * 20,
        "",
    ]
)
_TX_LINE = st.one_of(
    st.tuples(
        st.integers(0, 9),
        st.integers(0, 99),
        st.sampled_from(["1500", "23", "failed", "skipped"]),
        st.integers(0, 1),
        st.integers(1795371000, 1795371999),
        st.integers(0, 999999),
    ).map(lambda t: " ".join(map(str, t))),
    st.lists(_TOK, min_size=5, max_size=9).map(" ".join),
)
_TX_FILE = st.builds(
    lambda ls, end: "\n".join(ls) + end,
    st.lists(_TX_LINE, min_size=1, max_size=6),
    st.sampled_from(["\n", "\n", "", "\r\n", "\n\n"]),
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def two_dbs() -> Iterator[tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]]:
    cons = (new_db(), new_db())
    yield cons
    for c in cons:
        c.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TX_FILE, seventh=st.sampled_from([None, None, "lag", "retries"]))
def test_fuzz_fast_path_agrees_with_the_exact_parser(
    scratch: Path, two_dbs: Any, text: str, seventh: str | None
) -> None:
    path = scratch / "fuzz_tx.log"
    path.write_text(text)
    opts = {} if seventh is None else {"seventh_column": seventh}
    try:
        exact: Any = parsers.parse(path, "pgbench-txlog", **opts)
    except ParseError as exc:
        exact = ("error", str(exc))
    if seventh is not None:  # the CLI's ingest has no option for it: compare the loader itself
        if isinstance(exact, tuple):
            return
        con = two_dbs[0]
        con.execute("BEGIN")
        scan = ingest.scan_file(path, pgbench_txlog.DIRECT_ALPHABET, pgbench_txlog.DIRECT_COUNT)
        try:
            got = pgbench_txlog.load_direct(
                con, path, scan, {"file_no": -1}, "pgbench_txlog_rows", seventh_column=seventh
            )  # type: ignore[arg-type]
        except Exception:
            got = None
        try:
            if got is not None:
                cols = list(pgbench_txlog.SCHEMA)
                shown = ", ".join("coalesce(status, 'ok')" if c == "status" else c for c in cols)  # as the view
                stored = con.execute(f"SELECT {shown} FROM pgbench_txlog_rows WHERE file_no = -1").fetchall()
                assert sorted(stored, key=repr) == sorted(exact["pgbench_txlog"].select(cols).rows(), key=repr)
        finally:
            ingest.rollback(con)
        return
    fast, slow = both_paths(path, two_dbs)
    assert fast == slow
    if isinstance(exact, tuple):
        assert fast == exact


# ----------------------------------------------------------------------------- fuzz: rows or ParseError, never partial

_WORDS = [
    "@ 1.5",
    "[ 1s ] thds: 2 tps: 1.00 qps: 2.00 (r/w/o: 1.00/0.50/0.50) lat (ms,95%): 1.00 err/s: 0.00 reconn/s: 0.00",
    "SQL statistics:",
    "    read:   5",
    "nr_dirty 12",
    " 8 0 sda 1 2 3 4 5 6 7 8 9 10 11",
    "____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)",
    "create 1.0s 10 10.0 1.0 1.0 1.0 1.0 1.0",
    "transaction type: x",
    "progress: 1.0 s, 1.0 tps, lat 1.0 ms stddev 0.1",
    "0 1 100 0 1795371086 279608",
    "MemFree: 12 kB",
    "9" * 25,
    "\x00",
    "é",
    "",
]
_LINES = st.lists(st.sampled_from(_WORDS) | st.text(max_size=20), max_size=10).map("\n".join)


@pytest.fixture(scope="module")
def base_db() -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, tuple[int, int]]]]:
    """A database holding one file (something that must stay as it is), and its fingerprint; every example of
    the fuzz leaves it as it was (checked at each example's end)."""
    con = new_db()
    ingest.ingest_file(con, PG15 / "tpcb.stdout", run_id="base")
    yield con, fingerprint(con)
    con.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=_LINES | st.text(max_size=200), fmt=st.sampled_from([None, *parsers.FORMATS]), end=st.sampled_from(["", "\n"])
)
def test_fuzz_ingest_is_all_or_nothing(
    scratch: Path,
    base_db: tuple[duckdb.DuckDBPyConnection, dict[str, tuple[int, int]]],
    text: str,
    fmt: str | None,
    end: str,
) -> None:
    path = scratch / "fuzz.log"
    path.write_text(text + end, encoding="utf-8", errors="surrogatepass")
    con, before = base_db
    try:
        res = ingest.ingest_file(con, path, fmt=fmt, run_id="fuzz")
    except (ParseError, LabError) as exc:
        assert str(exc).startswith(str(path))
        assert fingerprint(con) == before
        return
    try:
        # success: exactly the parser's rows were added, and nothing else changed
        expected = parsers.parse(path, res.format)
        expected.pop("_warnings", None)
        lines = expected.pop("_lines", None)
        assert res.rows == sum(f.height for f in expected.values())
        assert res.lines is not None
        assert res.lines.total == res.lines.parsed + res.lines.noise + res.lines.not_understood
        if lines is not None:
            assert res.lines.total == lines.height
            unparsed = lines.filter(pl.col("kind") == "not_understood").select("line", "text").rows()
            stored = con.execute("SELECT line, text FROM unparsed_lines WHERE run_id = 'fuzz' ORDER BY line").fetchall()
            assert stored == unparsed
        for table, frame in expected.items():
            n = con.execute(f'SELECT count(*) FROM "{table}" WHERE run_id = ?', ["fuzz"]).fetchall()[0][0]
            assert n == frame.height, table
        # the tables the file wrote to hold what they held besides its rows; every other table is as it was
        written = {*expected, "files", "unparsed_lines"}
        tables = list(all_tables())
        assert fingerprint(con, tables, ("fuzz", written)) == {t: before[t] for t in tables}
    finally:  # back to the base for the next example
        con.execute("BEGIN")
        ingest._forget(con, ingest.sha256(path), str(path), str(res.format))
        con.execute("COMMIT")
    assert fingerprint(con) == before


# ----------------------------------------------------------------------------- published results


def test_external_manifest_matches_the_folder_and_readme() -> None:
    entries = external_manifest(EXTERNAL)
    readme = (EXTERNAL / "README.md").read_text()
    listed = {e["path"] for e in entries}
    on_disk = {str(p.relative_to(EXTERNAL)) for p in EXTERNAL.rglob("*") if p.is_file()} - {
        "README.md",
        "manifest.yaml",
    }
    assert listed == on_disk
    seeds = {p.name for p in Path("/work/shared/seeds").glob("*.txt")} or {e["seed"] for e in entries}
    for e in entries:
        assert e["seed"] in seeds
        assert e["path"] in readme, f"{e['path']} is not described in data/external/README.md"
        assert e["seed"] in readme
    # the published pgbench reports are the seed's text, as printed
    seed001 = Path("/work/shared/seeds/001_991770516dee3948.txt")
    if seed001.exists():
        for e in entries:
            if e["format"] == "pgbench-summary":
                assert (EXTERNAL / e["path"]).read_text().rstrip("\n") in seed001.read_text(), e["path"]


def test_external_files_are_committed(repo: Path) -> None:
    import subprocess

    out = subprocess.run(
        ["git", "check-ignore", "-v", *map(str, sorted(EXTERNAL.rglob("*")))],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1 and out.stdout == "", out.stdout  # 1: none of them is ignored


def test_ingest_external_and_study(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "mini"
    run = raw / "mini-ext4-tpcb-c2-r0"
    run.mkdir(parents=True)
    cfg = {
        "study": "mini",
        "title": "Mini",
        "authors": ["x"],
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like"}},
    }
    (raw / "study.yaml").write_text(yaml.safe_dump(cfg))
    (run / "run.json").write_text(
        json.dumps(
            {
                "run_id": "mini-ext4-tpcb-c2-r0",
                "study": "mini",
                "status": "ok",
                "target": "ext4",
                "fs": "ext4",
                "workload": "tpcb",
                "clients": 2,
                "repeat": 0,
                "plan_index": 0,
            }
        )
    )
    shutil.copy(PG15 / "tpcb.stdout", run / "pgbench.stdout")
    shutil.copy(PG15 / "tpcb.stderr", run / "pgbench.stderr")
    db = tmp_path / "mini.duckdb"
    s = ingest_study(raw, db, progress=False)
    entries = external_manifest(EXTERNAL)
    assert (s.runs, s.files, s.published_files) == (1, 2, len(entries))
    with duckdb.connect(str(db), read_only=True) as con:
        by_origin = dict(con.execute("SELECT origin, count(*) FROM files GROUP BY origin").fetchall())
        assert by_origin == {"local": 2, "published": len(entries)}
        runs = con.execute("SELECT origin, study, count(*) FROM runs GROUP BY ALL ORDER BY ALL").fetchall()
        assert runs == [("local", "mini", 1), ("published", None, sum(1 for e in entries if e.get("run")))]
        # the CSV tables are there, with their published values
        assert con.execute(
            "SELECT tps_variance FROM published_sysbench_variance WHERE device = 'Intel' AND "
            "workload = 'oltp_write_only' AND threads = 64"
        ).fetchall() == [(2753378.0,)]
        assert con.execute("SELECT count(*) FROM published_benchstat").fetchall()[0][0] == 9
        # a published pgbench report joins its run like a local one
        pub = con.execute(
            "SELECT r.fs, r.clients, s.tps FROM pgbench_summary s JOIN runs r USING (run_id) "
            "WHERE r.origin = 'published' AND r.target = 'zerofs-zfs-nbd-l2arc' AND "
            "r.workload = 'tpcb'"
        ).fetchall()
        assert pub == [("zfs", 50, 53041.006947)]
        fs = con.execute("SELECT count(*) FROM fs_ops f JOIN runs r USING (run_id) WHERE r.fs = 'ext4'").fetchall()
        assert fs[0][0] > 0
    # the study's own questions do not see the published runs
    assert queries.runs(db, "mini")["run_id"].to_list() == ["mini-ext4-tpcb-c2-r0"]
    assert queries.summaries(db, "mini").height == 1
    # --no-published leaves them out
    ingest_study(raw, db, progress=False, external=None)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM files WHERE origin = 'published'").fetchall()[0][0] == 0
    # a second ingest_external replaces, it does not add
    con = new_db()
    a = ingest_external(con, EXTERNAL)
    one = snapshot(con)
    ingest_external(con, EXTERNAL)
    two = snapshot(con)
    assert a.files == len(entries)
    assert {k: v for k, v in one.items() if k not in ("files", "runs")} == {
        k: v for k, v in two.items() if k not in ("files", "runs")
    }
    assert len(one["files"]) == len(two["files"]) and len(one["runs"]) == len(two["runs"])


def test_external_manifest_errors(tmp_path: Path) -> None:
    ext = tmp_path / "external"
    shutil.copytree(EXTERNAL, ext)
    (ext / "stray.csv").write_text("a,b\n")
    with pytest.raises(LabError, match="files not listed.*stray.csv"):
        external_manifest(ext)
    (ext / "stray.csv").unlink()
    doc = yaml.safe_load((ext / "manifest.yaml").read_text())
    doc["files"][0]["format"] = "nope"
    (ext / "manifest.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(LabError, match="unknown format 'nope'"):
        external_manifest(ext)
    doc["files"][0]["format"] = "pgbench-summary"
    doc["files"][0]["run"]["colour"] = "red"
    (ext / "manifest.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(LabError, match="no column of runs: colour"):
        external_manifest(ext)


# ----------------------------------------------------------------------------- export and old databases


def test_export_writes_every_table_with_run_metadata(
    loaded: duckdb.DuckDBPyConnection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest_external(loaded, EXTERNAL)
    loaded.execute("CHECKPOINT")
    db = Path(
        loaded.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
    )
    expected = {t: loaded.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in all_tables()}
    txlog = sorted(loaded.execute("SELECT * FROM pgbench_txlog").fetchall(), key=repr)
    loaded.close()
    out = tmp_path / "pq"
    assert main(["export", "--db", str(db), "--parquet", str(out)]) == 0
    assert f"{len(expected)} tables" in capsys.readouterr().out
    index = json.loads((out / "_tables.json").read_text())
    assert set(index["tables"]) == set(expected)
    con = duckdb.connect()
    for table, n in expected.items():
        f = out / f"{table}.parquet"
        assert con.execute(f"SELECT count(*) FROM '{f}'").fetchall()[0][0] == n == index["tables"][table]["rows"]
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM '{f}'").fetchall()]
        assert cols == list(all_tables()[table])
        if table not in LAB_TABLES:
            assert "run_id" in cols
    assert sorted(con.execute(f"SELECT * FROM '{out / 'pgbench_txlog.parquet'}'").fetchall(), key=repr) == txlog
    # every row of a log table finds its run's metadata in runs.parquet, or is from a file without a run
    joined = con.execute(
        f"SELECT count(*) FROM '{out / 'sysbench_interval.parquet'}' i JOIN '{out / 'files.parquet'}' f USING (file_id)"
    ).fetchall()[0][0]
    assert joined == expected["sysbench_interval"]
    with pytest.raises(LabError, match="no such database"):
        export.export_parquet(tmp_path / "missing.duckdb", out)


def test_old_database_is_migrated(tmp_path: Path) -> None:
    """A database of the previous schema: files without origin/file_no, pgbench_txlog a plain table."""
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE files (file_id VARCHAR, source_file VARCHAR, format VARCHAR, run_id VARCHAR, "
        "study VARCHAR, bytes BIGINT, rows BIGINT, warnings BIGINT, ingested_at TIMESTAMPTZ)"
    )
    cols = ", ".join(f'"{c}" {duck_type(t)}' for c, t in pgbench_txlog.SCHEMA.items())
    con.execute(f"CREATE TABLE pgbench_txlog (file_id VARCHAR, source_file VARCHAR, run_id VARCHAR, {cols})")
    con.execute("INSERT INTO files VALUES ('abc', 'old/tx.log', 'pgbench-txlog', 'r0', 's', 10, 2, 0, now())")
    con.execute(
        "INSERT INTO pgbench_txlog VALUES ('abc', 'old/tx.log', 'r0', 0, 1, 100, 'ok', 0, 5, NULL, NULL), "
        "('abc', 'old/tx.log', 'r0', 1, 1, NULL, 'failed', 0, 6, NULL, NULL)"
    )
    create_schema(con)
    assert con.execute(
        "SELECT source_file, run_id, client_id, status FROM pgbench_txlog ORDER BY client_id"
    ).fetchall() == [("old/tx.log", "r0", 0, "ok"), ("old/tx.log", "r0", 1, "failed")]
    assert con.execute("SELECT origin, file_no IS NOT NULL FROM files").fetchall() == [(None, True)]
    ingest.ingest_file(con, PG15 / "tx_sampled.25763")  # and it keeps working
    assert con.execute("SELECT count(DISTINCT file_id) FROM pgbench_txlog").fetchall()[0][0] == 2
    con.close()
