"""Log parsers on logs recorded from real pgbench 15 runs and on older formats from pgbench's docs
(tests/data/README.md says where each file comes from). Expected values come from the commands
that produced the files, from the raw text read with plain string operations here, or from other
files of the same run; never from the parsers' own output."""

from __future__ import annotations

import math
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import (
    ParseError,
    diskstats,
    fs_ops,
    meminfo,
    pgbench_aggregate,
    pgbench_progress,
    pgbench_summary,
    pgbench_txlog,
    procstat,
    published_table,
    sysbench,
    vmstat,
)

DATA = Path(__file__).resolve().parent / "data"
PG15 = DATA / "pg15"
DOCS = DATA / "docs"
SYSBENCH = DATA / "sysbench"
PROC = DATA / "proc"
EXTERNAL = Path(__file__).resolve().parent.parent / "data" / "external"
ALL_FILES = sorted(p for d in (PG15, DOCS, SYSBENCH, PROC) for p in d.iterdir() if p.is_file())
MODULES = [
    pgbench_summary,
    pgbench_progress,
    pgbench_aggregate,
    pgbench_txlog,
    meminfo,
    diskstats,
    vmstat,
    procstat,
    sysbench,
    fs_ops,
    published_table,
]


# ----------------------------------------------------------------------------- helpers (independent of the parsers)


def raw_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def newline_count(path: Path) -> int:
    """What `wc -l` says."""
    return path.read_bytes().count(b"\n")


def line_total(path: Path) -> int:
    """Lines of a file: what `wc -l` says, plus a last line without a newline."""
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def value_after(path: Path, prefix: str) -> str:
    """The text after `prefix` on the first line that starts with it."""
    for line in raw_lines(path):
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    raise AssertionError(f"{path.name}: no line starting with {prefix!r}")


def summary_tps(path: Path) -> float:
    return float(value_after(path, "tps = ").split()[0])


def processed(path: Path) -> int:
    return int(value_after(path, "number of transactions actually processed:").split("/")[0])


def fields(path: Path) -> list[list[str]]:
    return [line.split(" ") for line in raw_lines(path)]


def one(path: Path, table: str, **options: object) -> pl.DataFrame:
    out = parsers.parse(path, **options)  # type: ignore[arg-type]
    return out[table]


def write(tmp: Path, name: str, data: bytes | str) -> Path:
    p = tmp / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def expected_format(path: Path) -> str | None:
    name = path.name
    if path.parent.name == "sysbench" or name.startswith("sysbench"):
        return "sysbench"
    if name in ("meminfo.log", "diskstats.log", "vmstat.log"):
        return name.split(".")[0]
    if name == "meminfo.log":
        return "meminfo"
    if name.endswith(".stdout"):
        return "pgbench-summary"
    if name.endswith(".stderr"):
        return "pgbench-progress"
    if "_agg." in name or "aggregate" in name:
        return "pgbench-aggregate"
    if name.split(".")[0].endswith("_tx") or name.startswith("tx_") or "txlog" in name:
        return "pgbench-txlog"
    raise AssertionError(f"test data file without an expected format: {name}")


# ----------------------------------------------------------------------------- interface and schemas


def test_formats_registry() -> None:
    # (the lab's own CSV logs, registered after these, are tested with their runners)
    assert list(parsers.FORMATS)[:15] == [
        "meminfo",
        "pgbench-summary",
        "pgbench-progress",
        "pgbench-aggregate",
        "pgbench-txlog",
        "diskstats",
        "vmstat",
        "proc-stat",
        "sysbench",
        "meminfo-capture",
        "vmstat-text",
        "iostat",
        "iostat-json",
        "fs-ops",
        "published-table",
    ]
    schemas: dict[str, dict[str, object]] = {}
    for name, mod in parsers.FORMATS.items():
        assert mod.NAME == name
        assert mod.DESCRIPTION and "\n" not in mod.DESCRIPTION
        for table, schema in mod.TABLES.items():
            assert not {"source_file", "run_id", "file_id"} & set(schema), "the ingest adds those"
            # a table is shared only by formats read by the same parser (pgbench-summary/-progress)
            assert schemas.setdefault(table, schema) == schema, f"{table}: two formats, two schemas"


def test_parse_error_text_and_pickle() -> None:
    e = ParseError(Path("/x/y.log"), 7, "expected a number")
    assert str(e) == "/x/y.log:7: expected a number"
    assert (e.path, e.line, e.message) == ("/x/y.log", 7, "expected a number")
    assert str(ParseError("f", None, "empty")) == "f: empty"
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == str(e)


@pytest.mark.parametrize("path", [p for p in ALL_FILES if expected_format(p)], ids=lambda p: p.name)
def test_every_data_file_parses_to_its_exact_schema(path: Path) -> None:
    fmt = expected_format(path)
    assert fmt is not None
    try:
        out = parsers.parse(path)
    except ParseError as exc:
        # the killed run's stdout holds only the version line; `sysbench prepare` is no run
        assert path.name in ("killed.stdout", "prepare.stdout"), exc
        return
    mod = parsers.FORMATS[fmt]
    warnings = out.pop("_warnings", None)
    lines = out.pop("_lines", None)
    if lines is not None:  # every line of the file, once, in order
        assert lines.schema == pl.Schema(parsers.LINES_SCHEMA)
        assert lines["line"].to_list() == list(range(1, line_total(path) + 1))
    assert set(out) == set(mod.TABLES)
    for table, frame in out.items():
        assert frame.schema == pl.Schema(mod.TABLES[table]), table
    if warnings is not None:
        assert warnings.schema == pl.Schema({"line": pl.Int64, "message": pl.String})
        assert warnings.height > 0


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_detection(path: Path) -> None:
    assert parsers.detect_format(path) == expected_format(path)


def test_detection_by_content_not_name(tmp_path: Path) -> None:
    for src, fmt in [
        (PG15 / "tpcb_agg.25515", "pgbench-aggregate"),
        (PG15 / "tx_sampled.25763", "pgbench-txlog"),
        (PG15 / "tpcb.stdout", "pgbench-summary"),
        (PG15 / "meminfo.log", "meminfo"),
        (DOCS / "pre15_txlog.log", "pgbench-txlog"),
        (DOCS / "pre15_aggregate.log", "pgbench-aggregate"),
    ]:
        dst = tmp_path / "renamed"
        shutil.copyfile(src, dst)
        assert parsers.detect_format(dst) == fmt, src.name
    # stdout and stderr of a run in one file read as the report
    both = write(tmp_path, "both.log", (PG15 / "tpcb.stderr").read_text() + (PG15 / "tpcb.stdout").read_text())
    assert parsers.detect_format(both) == "pgbench-summary"
    assert parsers.parse(both)["pgbench_summary"]["tps"][0] == summary_tps(PG15 / "tpcb.stdout")
    # an empty stderr file is known by its name only; other empty files are nobody's
    assert parsers.detect_format(write(tmp_path, "pgbench.stderr", "")) == "pgbench-progress"
    assert parsers.detect_format(write(tmp_path, "pgbench_log.123", "")) is None
    with pytest.raises(ParseError, match="unknown format"):
        parsers.parse(write(tmp_path, "x.txt", "hello\n"))
    with pytest.raises(ParseError, match="unknown format 'nope'"):
        parsers.parse(PG15 / "tpcb.stdout", "nope")
    with pytest.raises(ParseError, match="cannot read"):
        parsers.detect_format(tmp_path / "missing")


def test_tables_load_into_duckdb() -> None:
    """Every dtype in TABLES maps onto a DuckDB column and real frames insert by name."""
    duck = {
        pl.String: "VARCHAR",
        pl.Int64: "BIGINT",
        pl.Float64: "DOUBLE",
        pl.Boolean: "BOOLEAN",
        pl.Datetime("us", "UTC"): "TIMESTAMPTZ",
    }
    con = duckdb.connect()
    for mod in parsers.FORMATS.values():
        for table, schema in mod.TABLES.items():
            cols = ", ".join(f'"{c}" {duck[t]}' for c, t in schema.items())
            con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({cols})')
    for path in [
        PG15 / "rr.stdout",
        PG15 / "rragg.stderr",
        PG15 / "rr_agg.25563",
        PG15 / "skip_tx.25812",
        PG15 / "meminfo.log",
    ]:
        out = parsers.parse(path)
        out.pop("_warnings", None)
        out.pop("_lines", None)
        for table, frame in out.items():
            con.register("f", frame)
            con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM f')
            con.unregister("f")
            assert con.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (frame.height,)
            con.execute(f'DELETE FROM "{table}"')


# ----------------------------------------------------------------------------- pgbench-summary


def test_summary_pg15_duration_run() -> None:
    path = PG15 / "tpcb.stdout"  # -T 5 -P 1 -c 2 -j 2, scale 1
    s = one(path, "pgbench_summary").row(0, named=True)
    assert s["pgbench_version"] == raw_lines(path)[0].split()[1].lstrip("(")
    assert s["transaction_type"] == "<builtin: TPC-B (sort of)>"
    assert (s["scaling_factor"], s["clients"], s["threads"], s["duration_s"]) == (1, 2, 2, 5.0)
    assert s["query_mode"] == "simple" and s["max_tries"] == 1
    assert s["transactions_target"] is None
    assert s["transactions_processed"] == processed(path)
    assert s["failed_transactions"] == 0
    assert s["tps"] == summary_tps(path)
    assert s["tps_including_connections"] is None
    assert s["latency_avg_ms"] == float(value_after(path, "latency average =").split()[0])
    assert s["latency_stddev_ms"] is not None and s["initial_connection_time_ms"] is not None
    # tps and mean latency of a closed loop: clients / latency ~ tps
    assert s["clients"] / (s["latency_avg_ms"] / 1000) == pytest.approx(s["tps"], rel=0.25)
    assert one(path, "pgbench_statement").height == 0


def test_summary_transaction_count_and_statements() -> None:
    path = PG15 / "stmt.stdout"  # -r -t 200 -c 2 -j 1
    out = parsers.parse(path)
    s = out["pgbench_summary"].row(0, named=True)
    assert s["transactions_target"] == 200 and s["transactions_processed"] == 400 and s["duration_s"] is None
    assert s["latency_stddev_ms"] is None  # neither -P nor --rate nor -L: pgbench prints no stddev
    st_ = out["pgbench_statement"]
    lines = raw_lines(path)
    body = lines[lines.index("statement latencies in milliseconds and failures:") + 1 :]
    assert st_.height == len(body) == 11  # the TPC-B-like script's 11 commands
    assert st_["statement"].to_list() == [ln.split(None, 2)[2] for ln in body]
    assert st_["statement_no"].to_list() == list(range(11))
    assert set(st_["script_no"]) == {0} and st_["retries"].is_null().all()
    assert st_["failures"].sum() == 0
    # the statements' latencies add up to about the transaction latency
    assert st_["latency_ms"].sum() == pytest.approx(s["latency_avg_ms"], rel=0.3)


def test_summary_failures_retries_statements() -> None:
    path = PG15 / "rr.stdout"  # repeatable read, --max-tries=3 --failures-detailed -r
    out = parsers.parse(path)
    s = out["pgbench_summary"].row(0, named=True)
    assert s["max_tries"] == 3
    failed = int(value_after(path, "number of failed transactions:").split()[0])
    assert s["failed_transactions"] == failed > 0
    assert s["serialization_failures"] + s["deadlock_failures"] == failed
    assert s["retried_transactions"] == int(value_after(path, "number of transactions retried:").split()[0])
    assert s["total_retries"] >= s["retried_transactions"]
    st_ = out["pgbench_statement"]
    assert st_.height == 11
    # each failure and each retry is charged to one statement
    assert st_["failures"].sum() == failed
    # the retries too, except that pgbench 15 counted one more per-statement retry than in its total
    # here: a transaction cut by the end of -T in the middle of a retry (at most one per client)
    assert 0 <= st_["retries"].sum() - s["total_retries"] <= s["clients"]


def test_summary_multiple_scripts() -> None:
    path = PG15 / "multi.stdout"  # -b tpcb-like@3 -b select-only@1 -r
    out = parsers.parse(path)
    assert out["pgbench_summary"]["transaction_type"][0] == "multiple scripts"
    st_ = out["pgbench_statement"]
    assert st_.group_by("script_no").len().sort("script_no").rows() == [(0, 11), (1, 2)]
    assert st_.filter(pl.col("script_no") == 1)["statement"].to_list()[-1].startswith("SELECT abalance")
    # the per-script ' - latency average' lines must not replace the run's
    assert out["pgbench_summary"]["latency_avg_ms"][0] == float(value_after(path, "latency average =").split()[0])
    assert "_warnings" not in out


def test_summary_rate_limit_connect_partitions() -> None:
    rate = one(PG15 / "rate.stdout", "pgbench_summary").row(0, named=True)  # --rate 200 --latency-limit=5
    assert rate["latency_limit_ms"] == 5.0 and rate["skipped_transactions"] == 0 and rate["late_transactions"] == 0
    assert 0 < rate["lag_avg_ms"] <= rate["lag_max_ms"]
    assert rate["tps"] == pytest.approx(200, rel=0.1)
    skip = one(PG15 / "skip.stdout", "pgbench_summary").row(0, named=True)
    assert (
        skip["skipped_transactions"]
        == int(value_after(PG15 / "skip.stdout", "number of transactions skipped:").split()[0])
        > 0
    )
    assert skip["late_transactions"] <= skip["transactions_processed"]
    conn = one(PG15 / "connect.stdout", "pgbench_summary").row(0, named=True)  # -C
    assert conn["average_connection_time_ms"] > 0 and conn["initial_connection_time_ms"] is None
    assert conn["tps"] == summary_tps(PG15 / "connect.stdout")
    part = one(PG15 / "part.stdout", "pgbench_summary").row(0, named=True)  # -i --partitions=2
    assert (part["partition_method"], part["partitions"]) == ("range", 2)


def test_summary_older_versions_from_docs() -> None:
    s95 = one(DOCS / "pg95_rate_latency_limit.stdout", "pgbench_summary").row(0, named=True)
    assert s95["transaction_type"] == "TPC-B (sort of)" and s95["pgbench_version"] is None
    assert (s95["latency_avg_ms"], s95["latency_stddev_ms"]) == (5.518, 1.834)
    assert (s95["tps"], s95["tps_including_connections"]) == (1.600319, 1.599917)
    assert (s95["late_transactions"], s95["latency_limit_ms"], s95["skipped_transactions"]) == (16, 1.0, 0)
    assert (s95["lag_avg_ms"], s95["lag_max_ms"]) == (0.694, 1.823)
    assert s95["max_tries"] is None and s95["failed_transactions"] is None

    out = parsers.parse(DOCS / "pg96_13_report_latencies.stdout")
    s96 = out["pgbench_summary"].row(0, named=True)
    assert (s96["tps"], s96["tps_including_connections"]) == (622.977698, 618.764555)
    assert s96["initial_connection_time_ms"] is None
    st_ = out["pgbench_statement"]
    assert st_.height == 11 and st_["failures"].is_null().all()
    assert st_["latency_ms"].sum() == pytest.approx(15.844, rel=0.05)  # the doc's numbers add up too

    s10 = one(DOCS / "pg10_typical.stdout", "pgbench_summary").row(0, named=True)
    assert s10["latency_avg_ms"] is None and s10["transactions_target"] == 1000 and s10["tps"] == 85.296346

    s14 = one(DOCS / "pg14_typical.stdout", "pgbench_summary").row(0, named=True)
    assert (s14["initial_connection_time_ms"], s14["tps"], s14["tps_including_connections"]) == (
        45.758,
        896.967014,
        None,
    )
    assert s14["max_tries"] is None

    out17 = parsers.parse(DOCS / "pg17_report_latencies.stdout")
    s17 = out17["pgbench_summary"].row(0, named=True)
    assert (s17["late_transactions"], s17["latency_limit_ms"], s17["max_tries"]) == (1311, 50.0, 1)
    assert out17["pgbench_statement"]["failures"].to_list() == [0] * 8


def test_summary_not_a_report_or_truncated(tmp_path: Path) -> None:
    out = parsers.parse(PG15 / "killed.stdout", "pgbench-summary")  # a killed run: only the version line
    assert out["pgbench_summary"].height == 0
    assert "did not finish" in out["_warnings"]["message"][0]
    lines = (PG15 / "tpcb.stdout").read_text().splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if ln.startswith("number of threads"))
    with pytest.raises(ParseError, match=r"truncated.*number of transactions actually processed") as exc:
        pgbench_summary.parse(write(tmp_path, "a.stdout", "".join(lines[: cut + 1])))
    assert exc.value.line == cut + 1
    # cut inside the last line: the torn line is dropped, and then the report lacks its tps
    text = (PG15 / "tpcb.stdout").read_text()
    with pytest.raises(ParseError, match="no 'tps = ...' line"):
        pgbench_summary.parse(write(tmp_path, "b.stdout", text[: text.index("tps = ") + 8]))
    # two reports appended: two runs, told apart by run_index
    two = pgbench_summary.parse(write(tmp_path, "c.stdout", text + text))["pgbench_summary"]
    assert two["run_index"].to_list() == [1, 2]
    assert two["tps"].to_list() == [summary_tps(PG15 / "tpcb.stdout")] * 2


def test_summary_unknown_and_aborted_lines_warn(tmp_path: Path) -> None:
    text = (PG15 / "tpcb.stdout").read_text()
    extra = text.replace("latency average", "some future line: 7\nlatency average", 1)
    extra += "pgbench: error: Run was aborted; the above results are incomplete.\n"
    out = pgbench_summary.parse(write(tmp_path, "w.stdout", extra))
    msgs = out["_warnings"]["message"].to_list()
    unknown = out["_lines"].filter(pl.col("kind") == "not_understood")
    where = extra.splitlines().index("some future line: 7") + 1
    assert unknown.rows() == [(where, "not_understood", "some future line: 7")]
    assert any("incomplete" in m for m in msgs)
    assert out["pgbench_summary"]["tps"][0] == summary_tps(PG15 / "tpcb.stdout")


# ----------------------------------------------------------------------------- pgbench-progress


def test_progress_pg15() -> None:
    p = one(PG15 / "tpcb.stderr", "pgbench_progress")  # -T 5 -P 1
    progress_lines = [ln for ln in raw_lines(PG15 / "tpcb.stderr") if ln.startswith("progress: ")]
    assert p.height == len(progress_lines) == 5
    assert p["t_s"].to_list() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert p["tps"].mean() == pytest.approx(summary_tps(PG15 / "tpcb.stdout"), rel=0.05)
    assert p["failed"].to_list() == [0] * 5
    assert p["lag_ms"].is_null().all() and p["retried"].is_null().all()
    rate = one(PG15 / "rate.stderr", "pgbench_progress")  # --rate 200 --latency-limit=5
    assert rate["lag_ms"].is_not_null().all() and rate["skipped"].is_not_null().all()
    assert rate["tps"].mean() == pytest.approx(200, rel=0.15)
    rr = one(PG15 / "rr.stderr", "pgbench_progress")  # --max-tries=3
    assert (rr["failed"] > 0).all() and (rr["retries"] >= rr["retried"]).all()
    both = one(PG15 / "rragg.stderr", "pgbench_progress")  # every optional field at once
    assert both.null_count().row(0) == (0,) * len(both.columns)


def test_progress_timestamps_and_no_progress_lines() -> None:
    ts = one(PG15 / "ts.stderr", "pgbench_progress")  # --progress-timestamp: Unix epochs
    epoch_of_another_run = int(fields(PG15 / "tx_sampled.25763")[0][4])  # recorded a minute before
    assert all(abs(t - epoch_of_another_run) < 3600 for t in ts["t_s"])
    assert ts["t_s"].diff().drop_nulls().to_list() == pytest.approx([1.0], abs=0.01)
    for name in ["connect.stderr", "init.stderr", "stmt.stderr"]:
        out = parsers.parse(PG15 / name)
        assert out["pgbench_progress"].height == 0 and "_warnings" not in out, name


def test_progress_older_versions() -> None:
    p = one(DOCS / "pre15_progress.stderr", "pgbench_progress")
    assert p.height == 4 and p["failed"].is_null().all()
    # the -nan of an interval without transactions is no number
    assert p.row(2, named=True)["tps"] == 0.0
    assert p.row(2, named=True)["latency_avg_ms"] is None and p.row(2, named=True)["latency_stddev_ms"] is None
    r = one(DOCS / "pre15_progress_rate.stderr", "pgbench_progress")
    assert r["skipped"].to_list() == [0, 3, 0] and r["lag_ms"].to_list() == [0.123, 5.617, 0.131]


def test_progress_empty_torn_interleaved_and_foreign(tmp_path: Path) -> None:
    out = pgbench_progress.parse(write(tmp_path, "e.stderr", ""))
    assert out["pgbench_progress"].height == 0
    text = (PG15 / "tpcb.stderr").read_text()
    out = pgbench_progress.parse(write(tmp_path, "t.stderr", text[:-12]))  # killed while printing the last line
    assert out["pgbench_progress"].height == 4
    assert out["_warnings"]["line"].to_list() == [text.count("\n")]
    garbled = text.replace(", 0 failed\nprogress: 3.0", "pgbench: error: client 1 aborted\n, 0 failed\nprogress: 3.0")
    out = pgbench_progress.parse(write(tmp_path, "g.stderr", garbled))
    # the message glued onto the second progress line and the stray fragment: both not understood
    # (counted, shown), the progress line with a warning
    assert out["pgbench_progress"].height == 4
    fragment = garbled.splitlines().index(", 0 failed") + 1
    assert out["_lines"].filter(pl.col("kind") == "not_understood")["line"].to_list() == [fragment - 1, fragment]
    assert out["_warnings"]["line"].to_list() == [fragment - 1]
    with pytest.raises(ParseError, match="not pgbench's output") as exc:
        pgbench_progress.parse(PG15 / "sysbench_oltp_rw.stdout")
    assert exc.value.line == 1
    future = "\n".join(f"progress: {i}.0 s, 10.0 tps, p99 3 ms" for i in range(1, 5)) + "\n"
    with pytest.raises(ParseError, match="unrecognised progress line"):
        pgbench_progress.parse(write(tmp_path, "f.stderr", future))


# ----------------------------------------------------------------------------- pgbench-aggregate


def agg_frames(prefix: str) -> pl.DataFrame:
    return pl.concat([one(p, "pgbench_aggregate") for p in sorted(PG15.glob(prefix + ".*"))])


@pytest.mark.parametrize("run,prefix", [("tpcb", "tpcb_agg"), ("select", "select_agg"), ("rate", "rate_agg")])
def test_aggregate_against_summary(run: str, prefix: str) -> None:
    agg = agg_frames(prefix)
    files = sorted(PG15.glob(prefix + ".*"))
    assert len(files) == 2  # -j 2: one file per thread
    assert agg.height == sum(newline_count(f) for f in files) == 10  # 5 one-second intervals per thread
    # interval starts: whole epoch seconds, consecutive, the same in both threads' files
    starts = sorted(set(agg["interval_start_s"]))
    assert len(starts) == 5 and starts == list(range(starts[0], starts[0] + 5))
    assert starts[0] == int(fields(files[0])[0][0])
    summary = PG15 / f"{run}.stdout"
    total, tps = processed(summary), summary_tps(summary)
    # pgbench does not write the run's last, partial interval: at most one interval's worth missing
    assert total - 1.1 * tps <= agg["n_tx"].sum() <= total
    # the mean latency over the intervals is the run's
    mean_ms = agg["latency_sum_us"].sum() / agg["n_tx"].sum() / 1000
    assert mean_ms == pytest.approx(float(value_after(summary, "latency average =").split()[0]), rel=0.1)
    busy = agg.filter(pl.col("n_tx") > 0)
    mean_us = busy["latency_sum_us"] / busy["n_tx"]
    assert ((busy["latency_min_us"] <= mean_us) & (mean_us <= busy["latency_max_us"])).all()
    assert (busy["latency_sum2_us2"] >= busy["latency_sum_us"] ** 2 / busy["n_tx"] * (1 - 1e-9)).all()
    assert agg["failures"].is_null().all() and agg["other_sql_failures"].is_null().all()


def test_aggregate_lag_and_failure_columns() -> None:
    plain = agg_frames("tpcb_agg")
    # PG 15 writes every column; without --rate the lag columns are 0, not missing
    assert plain.select(pl.col("^lag_.*$").sum()).row(0) == (0.0, 0.0, 0.0, 0.0)
    rate = agg_frames("rate_agg")
    assert (rate["lag_sum_us"] > 0).all()
    assert (rate["lag_min_us"] <= rate["lag_max_us"]).all()
    rr = agg_frames("rr_agg")  # --max-tries=2 --failures-detailed under repeatable read
    s = one(PG15 / "rragg.stdout", "pgbench_summary").row(0, named=True)
    assert 0 < rr["retried"].sum() <= s["retried_transactions"]
    assert rr["serialization_failures"].sum() <= s["serialization_failures"]
    assert (rr["retries"] >= rr["retried"]).all()


def test_aggregate_idle_interval_has_no_latency(tmp_path: Path) -> None:
    """pgbench writes 0 for min and max of an interval without transactions (seen here in real runs when
    a checkpoint stalls the client): no latency, not a latency of 0 µs."""
    lines = (PG15 / "tpcb_agg.25515").read_text().splitlines(keepends=True)
    start = int(lines[-1].split()[0]) + 1
    idle = f"{start} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    out = pgbench_aggregate.parse(write(tmp_path, "idle", "".join(lines) + idle))["pgbench_aggregate"]
    last = out.row(-1, named=True)
    assert last["n_tx"] == 0 and last["latency_sum_us"] == 0
    assert last["latency_min_us"] is None and last["latency_max_us"] is None and last["lag_min_us"] is None
    assert out.head(len(lines))["latency_min_us"].null_count() == 0
    assert out["latency_min_us"].min() > 0


def test_aggregate_older_layouts() -> None:
    six = one(DOCS / "pre15_aggregate.log", "pgbench_aggregate")
    rows = fields(DOCS / "pre15_aggregate.log")
    assert six["n_tx"].to_list() == [int(r[1]) for r in rows]
    assert six["latency_max_us"].to_list() == [float(r[5]) for r in rows]
    assert (
        six.select(pl.col("^lag_.*$"), "skipped", "retried", "retries").null_count().sum_horizontal()[0]
        == 7 * six.height
    )
    eleven = one(DOCS / "pre15_aggregate_rate.log", "pgbench_aggregate")
    assert eleven["skipped"].to_list() == [int(r[10]) for r in fields(DOCS / "pre15_aggregate_rate.log")]
    assert eleven["lag_max_us"].is_not_null().all() and eleven["retried"].is_null().all()


def test_aggregate_torn_and_bad_lines(tmp_path: Path) -> None:
    src = (PG15 / "tpcb_agg.25515").read_text()
    lines = src.splitlines(keepends=True)
    # killed mid-write: the last line has no newline (and may even look complete)
    for cut in (5, 40):
        out = pgbench_aggregate.parse(write(tmp_path, "torn", "".join(lines[:-1]) + lines[-1][:cut]))
        assert out["pgbench_aggregate"].height == len(lines) - 1
        assert out["_warnings"]["line"].to_list() == [len(lines)]
    # the last line with missing fields, newline or not
    out = pgbench_aggregate.parse(write(tmp_path, "short", "".join(lines[:-1]) + "1795371069 4863 999458\n"))
    assert out["pgbench_aggregate"].height == len(lines) - 1 and "_warnings" in out
    # a short line in the middle is damage, not a torn end
    bad = lines[:2] + ["1795371067 4668 999561\n"] + lines[3:]
    with pytest.raises(ParseError, match=r"expected 15 space-separated fields .* found 3") as exc:
        pgbench_aggregate.parse(write(tmp_path, "mid", "".join(bad)))
    assert exc.value.line == 3 and str(exc.value).startswith(str(tmp_path / "mid") + ":3: ")
    blank = lines[:3] + ["\n"] + lines[3:]
    with pytest.raises(ParseError, match="empty line") as exc:
        pgbench_aggregate.parse(write(tmp_path, "blank", "".join(blank)))
    assert exc.value.line == 4
    longer = lines[:4] + [lines[4].rstrip("\n") + " 7\n"]
    with pytest.raises(ParseError, match="found 16") as exc:
        pgbench_aggregate.parse(write(tmp_path, "long", "".join(longer)))
    assert exc.value.line == 5
    with pytest.raises(ParseError, match="found 7 fields") as exc:
        pgbench_aggregate.parse(write(tmp_path, "seven", "1795371065 1 2 3 4 5 6\n"))
    assert exc.value.line == 1


# ----------------------------------------------------------------------------- pgbench-txlog


def test_txlog_rows_statuses_and_times() -> None:
    path = PG15 / "tx_sampled.25763"  # --sampling-rate=0.01, 6 columns
    t = one(path, "pgbench_txlog")
    rows = fields(path)
    assert t.height == newline_count(path) == len(rows)
    assert t["epoch_us"][0] == int(rows[0][4]) * 1_000_000 + int(rows[0][5])
    assert t["client_id"].to_list() == [int(r[0]) for r in rows]
    assert set(t["status"]) == {"ok"} and t["lag_us"].is_null().all() and t["retries"].is_null().all()
    # about 1% of the run's transactions were sampled (binomial: +-5 standard deviations)
    n = processed(PG15 / "tx.stdout")
    assert abs(t.height - 0.01 * n) <= 5 * math.sqrt(n * 0.01 * 0.99)
    # sampled latencies agree with the run's average
    assert t["latency_us"].mean() / 1000 == pytest.approx(
        float(value_after(PG15 / "tx.stdout", "latency average =").split()[0]), rel=0.3
    )
    assert (t["epoch_us"].diff().drop_nulls() >= 0).all()  # one thread writes in completion order


def test_txlog_rate_skipped_failed_retries() -> None:
    path = PG15 / "skip_tx.25812"  # --rate --latency-limit --max-tries=2: 8 columns
    t = one(path, "pgbench_txlog")
    rows = fields(path)
    assert t.height == newline_count(path)
    words = [r[2] if not r[2].isdigit() else "ok" for r in rows]
    assert t["status"].to_list() == words and {"skipped", "failed", "ok"} <= set(words)
    assert t.filter(pl.col("status") != "ok")["latency_us"].is_null().all()
    assert t["lag_us"].to_list() == [float(r[6]) for r in rows]
    assert t["retries"].to_list() == [int(r[7]) for r in rows]
    assert (t["retries"] <= 1).all()  # --max-tries=2


def test_txlog_seventh_column() -> None:
    rr = parsers.parse(PG15 / "rr_tx.25806")  # --max-tries=3, no --rate: 7th column is retries
    t = rr["pgbench_txlog"]
    assert "_warnings" not in rr  # failed rows with retries > 0 settle it
    assert t["lag_us"].is_null().all() and t["retries"].max() <= 2  # --max-tries=3
    assert "serialization" in set(t["status"])  # --failures-detailed
    rate = parsers.parse(PG15 / "rrfail_tx.25570")  # --rate, max-tries 1: 7th column is schedule_lag
    assert rate["pgbench_txlog"]["retries"].is_null().all()
    assert rate["pgbench_txlog"]["lag_us"].to_list() == [float(r[6]) for r in fields(PG15 / "rrfail_tx.25570")]
    assert "guess" not in rate["_warnings"]["message"][0] and "read as lag" in rate["_warnings"]["message"][0]
    told = parsers.parse(PG15 / "rrfail_tx.25570", "pgbench-txlog", seventh_column="lag")
    assert "_warnings" not in told and told["pgbench_txlog"].equals(rate["pgbench_txlog"])
    forced = pgbench_txlog.parse(PG15 / "rrfail_tx.25570", seventh_column="retries")
    assert forced["pgbench_txlog"]["retries"].to_list() == [int(r[6]) for r in fields(PG15 / "rrfail_tx.25570")]
    # the docs' examples: --rate with skipped rows (before 15), --failures-detailed with retries (15+)
    old = one(DOCS / "pre15_txlog_rate.log", "pgbench_txlog")
    assert old["lag_us"].to_list()[:3] == [3005.0, 4304.0, 5217.0] and old["status"].to_list().count("skipped") == 2
    new = one(DOCS / "pg15_txlog_failures_detailed.log", "pgbench_txlog")
    assert new.filter(pl.col("status") == "serialization")["retries"].to_list() == [9, 9]
    plain = one(DOCS / "pre15_txlog.log", "pgbench_txlog")
    assert plain["epoch_us"].to_list()[2] == 1175850569 * 1_000_000 + 608


def test_txlog_killed_run_tail() -> None:
    path = PG15 / "killed_tx.26535.tail"  # the real end of a log cut by SIGKILL
    out = parsers.parse(path)
    assert out["pgbench_txlog"].height == newline_count(path)
    assert out["_warnings"]["line"].to_list() == [newline_count(path) + 1]
    assert "incomplete last line" in out["_warnings"]["message"][0]


def test_txlog_bad_lines(tmp_path: Path) -> None:
    lines = (PG15 / "tx_sampled.25763").read_text().splitlines(keepends=True)
    bad = lines[:9] + [lines[9].replace(" 0 ", " 0 x ", 1)] + lines[10:]
    with pytest.raises(ParseError, match="expected 6 space-separated fields") as exc:
        pgbench_txlog.parse(write(tmp_path, "a", "".join(bad)))
    assert exc.value.line == 10
    word = lines[:4] + ["0 5 exploded 0 1795371086 279608\n"] + lines[5:]
    with pytest.raises(ParseError, match="time is neither a latency in µs nor one of skipped, failed") as exc:
        pgbench_txlog.parse(write(tmp_path, "b", "".join(word)))
    assert exc.value.line == 5
    us = lines[:2] + ["0 5 100 0 1795371086 1000000\n"] + lines[3:]
    with pytest.raises(ParseError, match="time_us is not below 1000000") as exc:
        pgbench_txlog.parse(write(tmp_path, "c", "".join(us)))
    assert exc.value.line == 3
    latin1 = b"".join(ln.encode() for ln in lines[:6]) + b"0 5 \xe9chec 0 1795371086 279608\n"
    with pytest.raises(ParseError, match="not UTF-8") as exc:
        pgbench_txlog.parse(write(tmp_path, "d", latin1))
    assert exc.value.line == 7
    # pgbench's client ids and script numbers are C ints (the lab stores them as 32-bit integers)
    big = lines[:3] + [f"{2**31} 5 100 0 1795371086 279608\n"] + lines[4:]
    with pytest.raises(ParseError, match="beyond a 32-bit int") as exc:
        pgbench_txlog.parse(write(tmp_path, "e", "".join(big)))
    assert exc.value.line == 4
    assert (
        pgbench_txlog.parse(
            write(tmp_path, "f", "".join(lines[:3] + [f"{2**31 - 1} 5 100 0 1795371086 279608\n"] + lines[4:]))
        )["pgbench_txlog"]["client_id"].max()
        == 2**31 - 1
    )


def test_txlog_large_file_is_vectorized(tmp_path: Path) -> None:
    n = 200_000
    frame = pl.DataFrame(
        {
            "c": pl.int_range(0, n, eager=True) % 8,
            "t": pl.int_range(0, n, eager=True) // 8,
            "l": (pl.int_range(0, n, eager=True) % 5000 + 100).cast(pl.String),
            "s": pl.repeat(0, n, eager=True),
            "e": 1795371000 + pl.int_range(0, n, eager=True) // 10000,
            "u": pl.int_range(0, n, eager=True) * 37 % 999999,
        }
    ).with_columns(pl.when(pl.col("t") % 97 == 0).then(pl.lit("failed")).otherwise(pl.col("l")).alias("l"))
    path = tmp_path / "big.log"
    frame.write_csv(path, separator=" ", include_header=False, quote_style="never")
    t = one(path, "pgbench_txlog")
    assert t.height == n
    assert t.filter(pl.col("status") == "failed").height == frame.filter(pl.col("l") == "failed").height


# ----------------------------------------------------------------------------- meminfo


def test_meminfo_real_sampler_output() -> None:
    path = PG15 / "meminfo.log"
    m = one(path, "meminfo")
    lines = raw_lines(path)
    markers = [ln for ln in lines if ln.startswith("@ ")]
    entries = [ln for ln in lines if not ln.startswith("@ ")]
    assert len(markers) == 3 and m.height == len(entries)
    ts = sorted(set(m["ts"].to_list()))
    assert [t.timestamp() for t in ts] == pytest.approx([float(x[2:]) for x in markers], abs=1e-6)
    assert str(m.schema["ts"]) == "Datetime(time_unit='us', time_zone='UTC')"
    first = dict(ln.split(":", 1) for ln in entries[: len(entries) // 3])
    total = m.filter(pl.col("key") == "MemTotal").row(0, named=True)
    assert total["kb"] == int(first["MemTotal"].split()[0]) and total["unit"] == "kB"
    huge = m.filter(pl.col("key") == "HugePages_Total")
    assert huge["unit"].is_null().all() and huge["kb"].to_list() == [int(first["HugePages_Total"])] * 3
    assert m.filter(pl.col("key") == "Active(anon)").height == 3


def test_meminfo_cut_off_and_bad(tmp_path: Path) -> None:
    text = (PG15 / "meminfo.log").read_text()
    cut = text[: text.rindex("@ ") + 200]  # the last sample stops mid-line
    out = meminfo.parse(write(tmp_path, "cut.log", cut))
    complete = cut.count("\n") - 3  # complete lines minus the 3 markers
    assert out["meminfo"].height == complete
    msgs = out["_warnings"]["message"].to_list()
    assert any("incomplete last line" in m for m in msgs) and any("last sample cut off" in m for m in msgs)
    with pytest.raises(ParseError, match="expected '@ <epoch seconds>' before") as exc:
        meminfo.parse(write(tmp_path, "nomarker.log", "MemTotal: 1 kB\n"))
    assert exc.value.line == 1
    lines = text.splitlines(keepends=True)
    second = [i for i, ln in enumerate(lines) if ln.startswith("@ ")][1]
    merged = "".join(lines[:second] + lines[second + 1 :])  # a marker lost: two samples run together
    with pytest.raises(ParseError, match="'MemTotal' repeated within one sample") as exc:
        meminfo.parse(write(tmp_path, "dup.log", merged))
    assert exc.value.line == second + 1
    with pytest.raises(ParseError, match="no meminfo lines") as exc:
        meminfo.parse(write(tmp_path, "emptymid.log", "@ 1.5\n@ 2.5\nMemFree: 1 kB\n"))
    assert exc.value.line == 1
    with pytest.raises(ParseError, match="Key:") as exc:
        meminfo.parse(write(tmp_path, "junk.log", "@ 1.5\nMemFree: 1 kB\nthis is not meminfo\n"))
    assert exc.value.line == 3


# ----------------------------------------------------------------------------- sysbench


def sysbench_intervals(path: Path) -> list[list[str]]:
    """The tokens of the '[ Ns ] thds: ...' lines, read with str.split."""
    return [ln.split() for ln in raw_lines(path) if ln.startswith("[ ") and " thds: " in ln]


def report_value(path: Path, label: str) -> list[str]:
    """The tokens after `label` on the one line whose stripped text starts with it."""
    hits = [ln.strip()[len(label) :].split() for ln in raw_lines(path) if ln.strip().startswith(label)]
    assert len(hits) == 1, (path.name, label, hits)
    return hits[0]


SYSBENCH_RUNS = sorted(p for p in SYSBENCH.glob("oltp_*.stdout") if "killed" not in p.name) + [
    PG15 / "sysbench_oltp_rw.stdout",
    SYSBENCH / "v11_oltp_read_write.stdout",
]


@pytest.mark.parametrize("path", SYSBENCH_RUNS, ids=lambda p: p.name)
def test_sysbench_intervals_and_report_match_the_text(path: Path) -> None:
    out = parsers.parse(path)
    assert "_warnings" not in out, out.get("_warnings")
    iv = out["sysbench_interval"]
    toks = sysbench_intervals(path)
    assert iv.height == len(toks)
    assert iv["t_s"].to_list() == [float(t[1].rstrip("s")) for t in toks]
    assert iv["threads"].to_list() == [int(t[4]) for t in toks]
    assert iv["tps"].to_list() == [float(t[6]) for t in toks]
    assert iv["qps"].to_list() == [float(t[8]) for t in toks]
    assert iv["qps_read"].to_list() == [float(t[10].split("/")[0]) for t in toks]
    assert iv["qps_other"].to_list() == [float(t[10].rstrip(")").split("/")[2]) for t in toks]
    assert iv["errors_per_s"].to_list() == [float(t[15]) for t in toks]
    s = out["sysbench_summary"].row(0, named=True)
    assert s["sysbench_version"] == raw_lines(path)[0].split()[1]
    assert s["threads"] == int(value_after(path, "Number of threads:"))
    assert (s["queries_read"], s["queries_write"], s["queries_other"], s["queries_total"]) == tuple(
        int(report_value(path, k + ":")[0]) for k in ("read", "write", "other", "total")
    )
    assert s["queries_total"] == s["queries_read"] + s["queries_write"] + s["queries_other"]
    tx = report_value(path, "transactions:")
    assert (s["transactions"], s["tps"]) == (int(tx[0]), float(tx[1].lstrip("(")))
    assert s["ignored_errors"] == int(report_value(path, "ignored errors:")[0])
    assert s["transactions"] == s["total_events"] == int(report_value(path, "total number of events:")[0])
    assert s["latency_max_ms"] == float(report_value(path, "max:")[0])
    assert s["latency_min_ms"] <= s["latency_avg_ms"] <= s["latency_max_ms"]
    # the latency sum is the events times their mean (printed to 0.01 ms), and the threads' execution
    # time adds up to it
    assert abs(s["latency_sum_ms"] - s["latency_avg_ms"] * s["total_events"]) <= 0.005 * s["total_events"] + 0.01
    assert s["execution_time_per_thread_avg_s"] * s["threads"] * 1000 == pytest.approx(s["latency_sum_ms"], rel=0.01)
    assert s["events_per_thread_avg"] * s["threads"] == pytest.approx(s["total_events"])
    assert s["tps"] == pytest.approx(s["transactions"] / s["total_time_s"], rel=0.01)
    # the interval lines add up to the run (the last, partial interval may be missing)
    assert sum(iv["tps"]) <= s["transactions"] * 1.1


def test_sysbench_scripts_and_options() -> None:
    """What the commands in tests/data/README.md imply, checked on the parsed values."""

    def summary(name: str) -> dict[str, object]:
        return one(SYSBENCH / name, "sysbench_summary").row(0, named=True)

    ro, wo, ps = (
        summary("oltp_read_only.stdout"),
        summary("oltp_write_only.stdout"),
        summary("oltp_point_select.stdout"),
    )
    assert ro["queries_write"] == 0 and ro["queries_read"] > 0
    assert wo["queries_read"] == 0 and wo["queries_write"] > 0
    assert ps["queries_read"] == ps["transactions"] and ps["qps"] == ps["tps"]  # one SELECT per event
    for name in ("oltp_read_only.stdout", "oltp_read_write.stdout", "oltp_write_only.stdout"):
        s = summary(name)
        assert (s["threads"], s["latency_pct"]) == (2, 95)  # --threads=2, default --percentile
        assert 3.0 <= s["total_time_s"] < 5  # --time=3, plus the events in flight then
        assert one(SYSBENCH / name, "sysbench_interval")["latency_pct"].to_list() == [95] * 3
    p99 = one(SYSBENCH / "oltp_read_only_p99.stdout", "sysbench_interval")
    assert p99["latency_pct"].to_list() == [99] * p99.height  # --percentile=99
    assert summary("oltp_read_only_p99.stdout")["latency_pct"] == 99
    p0 = parsers.parse(SYSBENCH / "oltp_point_select_p0.stdout")  # --percentile=0: disabled
    assert (
        p0["sysbench_interval"]["latency_ms"].is_null().all() and p0["sysbench_interval"]["latency_pct"].is_null().all()
    )
    assert p0["sysbench_summary"]["latency_pct_ms"].is_null().all()
    rate = parsers.parse(SYSBENCH / "oltp_point_select_rate.stdout")  # --rate=200
    assert rate["sysbench_summary"]["target_tps"][0] == 200.0
    queue = [ln for ln in raw_lines(SYSBENCH / "oltp_point_select_rate.stdout") if "queue length" in ln]
    assert rate["sysbench_interval"]["queue_length"].to_list() == [int(q.split()[5].rstrip(",")) for q in queue]
    assert rate["sysbench_interval"]["tps"].mean() == pytest.approx(200, rel=0.15)
    assert one(SYSBENCH / "oltp_read_only.stdout", "sysbench_interval")["queue_length"].is_null().all()
    nointerval = parsers.parse(SYSBENCH / "oltp_read_only_summary.stdout")  # no --report-interval
    assert nointerval["sysbench_interval"].height == 0 and nointerval["sysbench_summary"].height == 1
    assert one(SYSBENCH / "oltp_read_only.stdout", "sysbench_histogram").height == 0


@pytest.mark.parametrize("name", ["oltp_read_write_hist_p99.stdout", "oltp_point_select_hist.stdout"])
def test_sysbench_histogram(name: str) -> None:
    path = SYSBENCH / name
    out = parsers.parse(path)
    h = out["sysbench_histogram"]
    rows = [ln for ln in raw_lines(path) if "|" in ln and ln.strip()[:1].isdigit()]
    assert h.height == len(rows)
    assert h["value_ms"].to_list() == [float(r.split("|")[0]) for r in rows]
    assert h["count"].to_list() == [int(r.split()[-1]) for r in rows]
    s = out["sysbench_summary"].row(0, named=True)
    assert h["count"].sum() == s["total_events"]  # every event is in one bucket
    assert (h["value_ms"].diff().drop_nulls() >= 0).all()  # ascending; printed to 0.001 ms, so ties happen
    # the reported percentile is one of the buckets' values
    assert any(abs(v - s["latency_pct_ms"]) <= 0.0051 for v in h["value_ms"])  # printed to 0.01 ms
    # min/max are printed to 0.01 ms; a bucket's value is within a few % of the latencies in it
    assert abs(h["value_ms"].min() - s["latency_min_ms"]) <= 0.005 + 0.05 * s["latency_min_ms"]
    assert abs(h["value_ms"].max() - s["latency_max_ms"]) <= 0.005 + 0.05 * s["latency_max_ms"]


def test_sysbench_killed_hook_and_v11() -> None:
    killed = parsers.parse(SYSBENCH / "oltp_read_write_killed.stdout")  # SIGKILL after 2.5 s of --time=10
    assert killed["sysbench_interval"].height == len(sysbench_intervals(SYSBENCH / "oltp_read_write_killed.stdout"))
    assert killed["sysbench_summary"].height == 0
    assert "no end-of-run report" in killed["_warnings"]["message"][0]
    hook = parsers.parse(SYSBENCH / "v11_report_default_hook.stdout")  # `err/s 0.00`, no colon
    assert hook["sysbench_interval"]["errors_per_s"].to_list() == [0.0, 0.0]
    assert hook["sysbench_interval"]["threads"].to_list() == [1, 0]
    v11 = one(SYSBENCH / "v11_oltp_read_write.stdout", "sysbench_summary").row(0, named=True)
    assert v11["sysbench_version"] == "1.1.0-df89d34"
    assert v11["events_per_s"] == float(report_value(SYSBENCH / "v11_oltp_read_write.stdout", "events/s (eps):")[0])
    assert v11["total_time_s"] == 3.0067
    assert one(SYSBENCH / "oltp_read_write.stdout", "sysbench_summary")["events_per_s"].is_null().all()  # 1.0


def test_sysbench_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="not sysbench's output of `run`") as exc:
        parsers.parse(SYSBENCH / "prepare.stdout")
    assert exc.value.line == 1
    text = (SYSBENCH / "oltp_read_write.stdout").read_text()
    cut = text[: text.index("Latency (ms):")]
    with pytest.raises(ParseError, match="truncated sysbench report") as exc:
        sysbench.parse(write(tmp_path, "cut.stdout", cut))
    assert exc.value.line == cut.count("\n")
    with pytest.raises(ParseError, match="a second 'SQL statistics:' report"):
        sysbench.parse(write(tmp_path, "two.stdout", text + text[text.index("SQL statistics:") :]))
    big = text.replace("transactions:                        ", "transactions:                        9" + "9" * 25, 1)
    with pytest.raises(ParseError, match="out of range|too large"):
        sysbench.parse(write(tmp_path, "big.stdout", big))
    lines = text.splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if ln.startswith("[ "))
    junk = lines[:first] + [ln.replace("tps:", "tx:") for ln in lines[first : first + 3]] + lines[first + 3 :]
    with pytest.raises(ParseError, match="unrecognised interval line") as exc:
        sysbench.parse(write(tmp_path, "junk.stdout", "".join(junk)))
    assert exc.value.line == first + 1
    torn = sysbench.parse(write(tmp_path, "torn.stdout", "".join(lines[: first + 2]) + lines[first + 2][:30]))
    assert torn["sysbench_interval"].height == 2
    assert any("incomplete last line" in m for m in torn["_warnings"]["message"])


# ----------------------------------------------------------------------------- diskstats, vmstat


def sampler_blocks(path: Path) -> list[tuple[float, list[str]]]:
    blocks: list[tuple[float, list[str]]] = []
    for ln in raw_lines(path):
        if ln.startswith("@ "):
            blocks.append((float(ln[2:]), []))
        else:
            blocks[-1][1].append(ln)
    return blocks


def test_diskstats_real_sampler_output() -> None:
    path = PROC / "diskstats.log"  # ProcSampler('/proc/diskstats', ..., 4) during a sysbench write run
    d = one(path, "diskstats")
    blocks = sampler_blocks(path)
    assert d.height == sum(len(b) for _, b in blocks)
    assert sorted({t.timestamp() for t in d["ts"]}) == pytest.approx([t for t, _ in blocks], abs=1e-6)
    first = {ln.split()[2]: ln.split() for ln in blocks[0][1]}
    for dev, tok in first.items():
        row = d.filter((pl.col("device") == dev) & (pl.col("ts") == d["ts"].min())).row(0, named=True)
        assert (row["major"], row["minor"]) == (int(tok[0]), int(tok[1]))
        assert [row[c] for c in diskstats.COUNTERS[: len(tok) - 3]] == [int(x) for x in tok[3:]]
    assert len(next(iter(first.values()))) == 20  # this kernel (6.x) writes 17 counters: flushes too
    # cumulative counters never go down; the sampled write run wrote something to the root disk
    mono = (
        d.sort("ts")
        .group_by("device")
        .agg(
            (pl.col("sectors_written").diff().drop_nulls() >= 0).all().alias("m"),
            (pl.col("sectors_written").max() - pl.col("sectors_written").min()).alias("written"),
        )
    )
    assert mono["m"].all() and mono["written"].max() > 0


def test_diskstats_older_layouts_and_bad_lines(tmp_path: Path) -> None:
    eleven = "@ 1.5\n   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"
    row = one(write(tmp_path, "k4.log", eleven), "diskstats").row(0, named=True)
    assert (row["reads_completed"], row["weighted_io_ms"], row["discards_completed"], row["flush_ms"]) == (
        1,
        11,
        None,
        None,
    )
    fifteen = "@ 1.5\n 259 0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"
    row = one(write(tmp_path, "k418.log", fifteen), "diskstats").row(0, named=True)
    assert (row["discard_ms"], row["flushes_completed"]) == (15, None)
    with pytest.raises(ParseError, match="12 counters") as exc:
        diskstats.parse(write(tmp_path, "k12.log", "@ 1.5\n 8 0 sda " + " ".join(map(str, range(12))) + "\n"))
    assert exc.value.line == 2
    future = diskstats.parse(write(tmp_path, "k99.log", "@ 1.5\n 8 0 sda " + " ".join(map(str, range(19))) + "\n"))
    assert future["diskstats"]["flush_ms"][0] == 16 and "first 17 kept" in future["_warnings"]["message"][0]
    text = (PROC / "diskstats.log").read_text()
    lines = text.splitlines(keepends=True)
    second = [i for i, ln in enumerate(lines) if ln.startswith("@ ")][1]
    with pytest.raises(ParseError, match="repeated within one sample") as exc:
        diskstats.parse(write(tmp_path, "dup.log", "".join(lines[:second] + lines[second + 1 :])))
    assert exc.value.line == second + 1
    last = [i for i, ln in enumerate(lines) if ln.startswith("@ ")][-1]
    cut = diskstats.parse(write(tmp_path, "cut.log", "".join(lines[: last + 3])))
    assert "last sample cut off?" in cut["_warnings"]["message"][0]
    assert cut["diskstats"].height == last - (len([ln for ln in lines[:last] if ln.startswith("@")])) + 2
    with pytest.raises(ParseError, match="too large for a 64-bit integer") as exc:
        diskstats.parse(write(tmp_path, "big.log", "@ 1.5\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 " + "9" * 25 + "\n"))
    assert exc.value.line == 2


def test_vmstat_real_sampler_output(tmp_path: Path) -> None:
    path = PROC / "vmstat.log"
    v = one(path, "vmstat")
    blocks = sampler_blocks(path)
    assert v.height == sum(len(b) for _, b in blocks) and len(blocks) >= 3
    first = dict(ln.split() for ln in blocks[0][1])
    t0 = v["ts"].min()
    got = dict(v.filter(pl.col("ts") == t0).select("key", "value").iter_rows())
    assert got == {k: int(x) for k, x in first.items()}
    assert v.filter(pl.col("key") == "pgpgout")["value"].diff().drop_nulls().min() >= 0  # a counter
    text = path.read_text()
    cut = vmstat.parse(write(tmp_path, "cut.log", text[: text.rindex("@ ") + 300]))
    assert any("last sample cut off" in m for m in cut["_warnings"]["message"])
    with pytest.raises(ParseError, match="'key value'") as exc:
        vmstat.parse(write(tmp_path, "bad.log", "@ 1.5\nnr_free_pages 12\nMemFree: 1 kB\n"))
    assert exc.value.line == 3
    with pytest.raises(ParseError, match="too large for a 64-bit integer") as exc:
        vmstat.parse(write(tmp_path, "big.log", "@ 1.5\nnr_free_pages 12\npgpgin " + "9" * 25 + "\n"))
    assert exc.value.line == 3
    # a meminfo log is not a vmstat log and the other way round
    with pytest.raises(ParseError):
        vmstat.parse(PG15 / "meminfo.log")
    with pytest.raises(ParseError):
        meminfo.parse(path)


# ----------------------------------------------------------------------------- fs-ops


def fs_rows(path: Path) -> list[list[str]]:
    """Rows under a '____optype__elapsed_____ops(total)...' header, read with str.split."""
    out, on = [], False
    for ln in raw_lines(path):
        if ln.startswith("____optype"):
            on = "ops(total)" in ln
        elif not ln.strip():
            on = False
        elif on:
            out.append(ln.split())
    return out


FS_FILES = sorted((EXTERNAL / "seed003_fsbench").glob("*.txt"))


@pytest.mark.parametrize("path", FS_FILES, ids=lambda p: p.name)
def test_fs_ops_published_tables(path: Path) -> None:
    out = parsers.parse(path)
    assert "_warnings" not in out
    f = out["fs_ops"]
    rows = fs_rows(path)
    assert f.height == len(rows) > 0
    assert f["optype"].to_list() == [r[0] for r in rows]
    assert f["elapsed_s"].to_list() == [float(r[1].rstrip("s")) for r in rows]
    assert f["ops"].to_list() == [int(r[2]) for r in rows]
    assert f["ops_per_s"].to_list() == [float(r[3]) for r in rows]
    assert f["max_ms"].to_list() == [float(r[8]) for r in rows]
    assert (
        (f["p50_ms"] <= f["p95_ms"]).all() and (f["p95_ms"] <= f["p99_ms"]).all() and (f["p99_ms"] <= f["max_ms"]).all()
    )
    assert f["table_no"].to_list() == list(range(1, f.height + 1))  # one table per run
    # ops/s(cum) is ops over elapsed, both printed to 0.1
    for r in f.iter_rows(named=True):
        assert r["ops"] / (r["elapsed_s"] + 0.05) - 0.05 <= r["ops_per_s"] * 1.001
        assert r["ops"] / (r["elapsed_s"] - 0.05) + 0.05 >= r["ops_per_s"] * 0.999


def test_fs_ops_progress_tables_and_runner_layout(tmp_path: Path) -> None:
    path = EXTERNAL / "seed003_fsbench" / "zfs_delete_100k_2MB.txt"
    out = parsers.parse(path)
    iv = out["fs_ops_interval"]
    progress = [
        ln.split()
        for ln in raw_lines(path)
        if ln.startswith("delete_100 ") and ln.split()[1].endswith("s") and "." not in ln.split()[1]
    ]
    assert iv.height == len(progress) == 55
    assert iv["elapsed_s"].to_list() == [float(p[1][:-1]) for p in progress]
    assert iv["ops_per_s"].to_list() == [float(p[2]) for p in progress]
    assert iv["ops_per_s_cum"].to_list() == [float(p[3]) for p in progress]
    assert iv["table_no"].unique().sort().to_list() == [1, 2, 3]  # the header is repeated every 20 seconds
    assert out["fs_ops"]["ops"].to_list() == [100000]
    # several operation types per table, several tables, and cockroach's `errors` column
    text = (
        "____optype__elapsed__errors_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)\n"
        "create       10.0s      0           1000          100.0      1.0      0.9      2.0      3.0      9.0\n"
        "fsync        10.0s      2            500           50.0      4.0      3.9      8.0      9.0     20.0\n"
        "\nsome note from the runner\n"
        "____optype__elapsed__errors_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)\n"
        "create       20.0s      0           2100          105.0      1.0      0.9      2.0      3.0      9.0\n"
    )
    out = fs_ops.parse(write(tmp_path, "runner.txt", text))
    f = out["fs_ops"]
    assert f.select("table_no", "optype", "errors", "ops").rows() == [
        (1, "create", 0, 1000),
        (1, "fsync", 2, 500),
        (2, "create", 0, 2100),
    ]
    assert out["_warnings"]["line"].to_list() == [5]  # the note is not understood, and says so


def test_fs_ops_bad_files(tmp_path: Path) -> None:
    header = "____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)\n"
    row = "create_emp   600.0s         386438          644.1      1.6      1.6      2.0      2.5     67.1\n"
    with pytest.raises(ParseError, match="expected a result row of 9 columns") as exc:
        fs_ops.parse(write(tmp_path, "short.txt", header + row + "create_emp 600.0s 12\n"))
    assert exc.value.line == 3
    with pytest.raises(ParseError, match="unknown column 'p42\\(ms\\)'") as exc:
        fs_ops.parse(write(tmp_path, "col.txt", header.replace("p99(ms)", "p42(ms)") + row))
    assert exc.value.line == 1
    with pytest.raises(ParseError, match="without the column\\(s\\) avg\\(ms\\)"):
        fs_ops.parse(write(tmp_path, "noavg.txt", header.replace("__avg(ms)", "") + row))
    with pytest.raises(ParseError, match="not a result table") as exc:
        fs_ops.parse(write(tmp_path, "none.txt", "hello\n" + row))
    assert exc.value.line == 1
    with pytest.raises(ParseError, match="too large for a 64-bit integer"):
        fs_ops.parse(write(tmp_path, "big.txt", header + row.replace("386438", "9" * 25)))
    torn = fs_ops.parse(write(tmp_path, "torn.txt", header + row + row[:30]))
    assert torn["fs_ops"].height == 1 and "incomplete last line" in torn["_warnings"]["message"][0]
    with pytest.raises(ParseError, match="without any result row"):
        fs_ops.parse(write(tmp_path, "bare.txt", header))


# ----------------------------------------------------------------------------- published tables (CSV)


@pytest.mark.parametrize("path", sorted(EXTERNAL.rglob("*.csv")), ids=lambda p: p.name)
def test_published_csv_files(path: Path) -> None:
    import csv

    with open(path, newline="") as fh:
        records = list(csv.DictReader(fh))
    out = parsers.parse(path)
    (table,) = [t for t, f in out.items() if f.height]
    frame = out[table]
    assert frame.height == len(records) > 0
    assert frame.columns == list(records[0])
    for col in frame.columns:
        want = [r[col] or None for r in records]
        got = frame[col].to_list()
        if frame.schema[col] == pl.String:
            assert got == want, col
        else:
            assert got == [None if w is None else float(w) for w in want], col
    assert set(frame["seed"]) <= {p.name for p in Path("/work/shared/seeds").glob("*.txt")} | {
        "001_991770516dee3948.txt",
        "002_2314b2293f8bc725.txt",
        "003_afbf3310ae0d6dec.txt",
        "004_bec6c26a7765718f.txt",
    }


def test_published_csv_bad_files(tmp_path: Path) -> None:
    header = (
        "seed,device,fillfactor,rows_per_table,tables,avg_table_size_mb,database_size_gb,partition_used_tb,"
        "device_physical_used_gb,compression_ratio\n"
    )
    ok = "x.txt,Intel,100,1500000,540,2175,1377,2.1,,\n"
    assert published_table.parse(write(tmp_path, "ok.csv", header + ok))["published_space"].height == 1
    with pytest.raises(ParseError, match="column fillfactor: '1.5' is not an integer") as exc:
        published_table.parse(write(tmp_path, "f.csv", header + ok + ok.replace(",100,", ",1.5,")))
    assert exc.value.line == 3
    with pytest.raises(ParseError, match="expected 10 comma-separated fields") as exc:
        published_table.parse(write(tmp_path, "n.csv", header + "x.txt,Intel\n"))
    assert exc.value.line == 2
    with pytest.raises(ParseError, match="unknown CSV header") as exc:
        published_table.parse(write(tmp_path, "h.csv", "a,b\n1,2\n"))
    assert exc.value.line == 1
    with pytest.raises(ParseError, match="no rows"):
        published_table.parse(write(tmp_path, "e.csv", header))
    with pytest.raises(ParseError, match="not a finite number"):
        published_table.parse(write(tmp_path, "inf.csv", header + ok.replace("2175", "inf")))
    quoted = published_table.parse(write(tmp_path, "q.csv", header + ok.replace("Intel", '"Intel, ""P4610"""')))
    assert quoted["published_space"]["device"][0] == 'Intel, "P4610"'


# ----------------------------------------------------------------------------- errors common to every format

GARBAGE = bytes(range(256)) * 4 + b"\n\xff\xfe\x00garbage\n"


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.NAME)
def test_garbage_bytes(mod: object, tmp_path: Path) -> None:
    path = write(tmp_path, "garbage", GARBAGE)
    with pytest.raises(ParseError) as exc:
        mod.parse(path)  # type: ignore[attr-defined]
    assert str(exc.value).startswith(f"{path}:")


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.NAME)
def test_empty_file(mod: object, tmp_path: Path) -> None:
    path = write(tmp_path, "empty", b"")
    if mod is pgbench_progress:  # an empty stderr is a run that printed nothing there
        assert pgbench_progress.parse(path)["pgbench_progress"].height == 0
        return
    with pytest.raises(ParseError, match="empty") as exc:
        mod.parse(path)  # type: ignore[attr-defined]
    assert exc.value.line == 1


@pytest.mark.parametrize("mod", [m for m in MODULES if m is not sysbench], ids=lambda m: m.NAME)
def test_sysbench_log_is_not_ours(mod: object) -> None:
    with pytest.raises(ParseError) as exc:
        mod.parse(PG15 / "sysbench_oltp_rw.stdout")  # type: ignore[attr-defined]
    assert exc.value.line == 1, str(exc.value)
    assert "sysbench" in str(exc.value) or "expected" in str(exc.value)


@pytest.mark.parametrize("mod", [m for m in MODULES if m is not pgbench_summary], ids=lambda m: m.NAME)
def test_pgbench_report_is_not_ours(mod: object) -> None:
    if mod is pgbench_progress:  # pgbench's stdout looks like its stderr: no progress lines in it, no data
        assert pgbench_progress.parse(PG15 / "tpcb.stdout")["pgbench_progress"].height == 0
        return
    with pytest.raises(ParseError) as exc:
        mod.parse(PG15 / "tpcb.stdout")  # type: ignore[attr-defined]
    assert exc.value.line == 1, str(exc.value)


def test_huge_numbers(tmp_path: Path) -> None:
    big = "9" * 25
    agg = (PG15 / "tpcb_agg.25515").read_text().splitlines(keepends=True)
    cases: list[tuple[object, str, int]] = [
        (pgbench_aggregate, "".join(agg[:2] + [agg[2].replace(" 4668 ", f" {big} ", 1)] + agg[3:]), 3),
        (pgbench_aggregate, "".join(agg[:1] + [agg[1].replace(" 999396 ", " " + "9" * 400 + " ", 1)] + agg[2:]), 2),
        (pgbench_txlog, f"0 1 {'9' * 400} 0 1795371086 279608\n", 1),
        (pgbench_txlog, f"0 {big} 100 0 1795371086 279608\n", 1),
        (
            pgbench_summary,
            (PG15 / "tpcb.stdout").read_text().replace("number of clients: 2", f"number of clients: {big}"),
            5,
        ),
        (pgbench_summary, (PG15 / "tpcb.stdout").read_text().replace("tps = ", "tps = 1" + "0" * 400, 1), 14),
        (pgbench_progress, f"progress: 1.0 s, 10.0 tps, lat 1.000 ms stddev 0.100, {big} failed\n", 1),
        (meminfo, f"@ 1.5\nMemFree: {big} kB\n", 2),
    ]
    for mod, text, line in cases:
        with pytest.raises(ParseError, match="too large|out of range") as exc:
            mod.parse(write(tmp_path, "huge", text))  # type: ignore[attr-defined]
        assert exc.value.line == line, (mod, str(exc.value))


def test_negative_values(tmp_path: Path) -> None:
    agg = (PG15 / "tpcb_agg.25515").read_text().splitlines(keepends=True)
    with pytest.raises(ParseError) as exc:
        pgbench_aggregate.parse(write(tmp_path, "neg", "".join(agg[:3] + [agg[3].replace(" ", " -", 1)] + agg[4:])))
    assert exc.value.line == 4


# ----------------------------------------------------------------------------- property: never another exception

_TOKENS = [
    "0",
    "1",
    "42",
    "1795371065",
    "279608",
    "999999",
    "-1",
    "1.5",
    "nan",
    "-nan",
    "inf",
    "9" * 25,
    "failed",
    "skipped",
    "serialization",
    "@",
    "@ 1.5",
    "kB",
    "progress:",
    "s,",
    "tps,",
    "lat",
    "ms",
    "stddev",
    "MemFree:",
    "transaction type:",
    "tps =",
    "\x00",
    "é",
    "\t",
    "",
]
_line = st.lists(st.sampled_from(_TOKENS), min_size=0, max_size=17).map(" ".join)
_structured = st.lists(_line, min_size=0, max_size=12).map(lambda ls: "\n".join(ls)) | st.builds(
    lambda ls, end: "\n".join(ls) + end, st.lists(_line, max_size=12), st.sampled_from(["", "\n", "\r\n"])
)
_SEEDS = [(PG15 / n).read_text() for n in ("tpcb.stdout", "rr.stderr", "rate_agg.25525", "skip_tx.25812")]
_mutated = st.builds(
    lambda s, i, junk: s[:i] + junk + s[i:], st.sampled_from(_SEEDS), st.integers(0, 2000), st.text(max_size=8)
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _frames_or_parse_error(mod: object, path: Path) -> None:
    try:
        out = mod.parse(path)  # type: ignore[attr-defined]
    except ParseError as exc:
        assert str(exc).startswith(str(path))
        return
    warnings = out.pop("_warnings", None)
    lines = out.pop("_lines", None)
    if lines is not None:  # every line accounted for, once
        assert lines["line"].to_list() == list(range(1, line_total(path) + 1))
        assert set(lines["kind"]) <= {"parsed", "noise", "not_understood"}
    assert set(out) == set(mod.TABLES)  # type: ignore[attr-defined]
    for table, frame in out.items():
        assert frame.schema == pl.Schema(mod.TABLES[table])  # type: ignore[attr-defined]
    if warnings is not None:
        assert warnings.height > 0


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.NAME)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | _structured | _mutated)
def test_random_text_gives_frames_or_parse_error(mod: object, scratch: Path, text: str) -> None:
    path = scratch / f"random_{mod.NAME}"  # type: ignore[attr-defined]
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _frames_or_parse_error(mod, path)
    assert parsers.detect_format(path) in (*parsers.FORMATS, None)


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.NAME)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_random_bytes_give_frames_or_parse_error(mod: object, scratch: Path, data: bytes) -> None:
    path = scratch / f"bytes_{mod.NAME}"  # type: ignore[attr-defined]
    path.write_bytes(data)
    _frames_or_parse_error(mod, path)
