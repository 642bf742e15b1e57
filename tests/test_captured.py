"""The ingest on real captures from the world (tests/data/captured/, origins in ORIGINS.md).

Two kinds of test. The walk over every captured file: no line is lost without being counted
(parsed + noise + not understood = the file's lines, counted here from its bytes) and every line
not understood is stored and shown with its number and its real text. And per format, values
checked against what the file itself says (read here with plain string operations, or counted by
hand and written down), never against what the parser produced.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import labdb
import pytest

from pgfslab.cli import main as cli
from pgfslab.errors import LabError
from pgfslab.ingest import load as ingest
from pgfslab.ingest import parsers

CAPTURED = Path(__file__).parent / "data" / "captured"
FILES = sorted(p for p in CAPTURED.rglob("*") if p.is_file() and p.name != "ORIGINS.md")
# captures the ingest must refuse, with an error naming the file and the line (never take them
# silently): reports cut off where their GitHub issue's excerpt ends. A parser that reads one of them
# removes it from this list.
_SB = "sysbench/real/"
UNSUPPORTED = {
    _SB + "sb1.0pre_issue_sysbench_72_fileio_old_response_time_block.txt": "report cut after 'Threads fairness:'",
    _SB
    + "sb1.1.0-faaff4f_issue_sysbench_311_oltp_ro_interval_sqlstats_truncated.txt": "report cut after 'ignored errors'",
}
# captures the ingest reads only with what the user knows and the file does not say: `vmstat -t` under an
# ambiguous zone name (CST) is refused without --tz (tests/test_captured_units.py); a Chinese blog's CST is
# China Standard Time
OPTIONS: dict[str, dict[str, str]] = {
    "vmstat/real/vmstat-procps3_unknownrepo_idx25098427389_t_CST.txt": {"tz": "Asia/Shanghai"},
}


def lines_of(path: Path) -> list[str]:
    """The file's lines as `wc -l` sees them (plus a last line without a newline), CR stripped."""
    data = path.read_bytes().decode("utf-8")
    parts = data.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p.removesuffix("\r") for p in parts]


def new_db() -> duckdb.DuckDBPyConnection:
    return labdb.new_db()


def ingest_one(path: Path, **kw: object) -> tuple[duckdb.DuckDBPyConnection, ingest.FileResult]:
    con = new_db()
    res = ingest.ingest_file(con, path, run_id="r", **kw)  # type: ignore[arg-type]
    return con, res


def test_every_captured_file_is_listed_in_origins() -> None:
    origins = (CAPTURED / "ORIGINS.md").read_text()
    assert len(FILES) == 121
    assert set(UNSUPPORTED) <= {str(p.relative_to(CAPTURED)) for p in FILES}
    missing = [str(p.relative_to(CAPTURED)) for p in FILES if str(p.relative_to(CAPTURED)) not in origins]
    assert missing == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CAPTURED)))
def test_no_line_is_lost_unseen(path: Path) -> None:
    if str(path.relative_to(CAPTURED)) in UNSUPPORTED:
        with pytest.raises((LabError, parsers.ParseError)) as exc:
            ingest_one(path)
        assert str(exc.value).startswith(f"{path}:")  # the file named (and the line, when there is one)
        return
    con, res = ingest_one(path, **OPTIONS.get(str(path.relative_to(CAPTURED)), {}))
    real = lines_of(path)
    lc = res.lines
    assert lc is not None
    assert lc.total == len(real)
    assert lc.parsed + lc.noise + lc.not_understood == len(real)
    assert lc.parsed + lc.noise > 0
    stored = con.execute("SELECT line, text FROM unparsed_lines ORDER BY line").fetchall()
    assert len(stored) == lc.not_understood
    assert all(text == real[line - 1] for line, text in stored)  # the real line, at its real number
    files = con.execute("SELECT lines, lines_parsed, lines_noise, lines_not_understood FROM files").fetchall()
    assert files == [(lc.total, lc.parsed, lc.noise, lc.not_understood)]
    # a line a parser set aside as unrecognised is counted as not understood, never as parsed
    unrecognised = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%_unrecognised'"
        ).fetchall()
    ]
    stored_lines = {line for line, _ in stored}
    for table in unrecognised:
        set_aside = {line for (line,) in con.execute(f'SELECT line FROM "{table}"').fetchall()}
        assert set_aside <= stored_lines, table
    shown = "\n".join(res.summary())
    for line, text in stored[:5]:
        assert f"{path}:{line}: {text[:120]!r}" in shown
    if lc.not_understood > 5:
        assert f"and {lc.not_understood - 5} more" in shown


def test_strict_refuses_lines_not_understood_and_leaves_the_database(tmp_path: Path) -> None:
    log = CAPTURED / "pgbench/local/pg15_loop_appended.log"
    db = tmp_path / "s.duckdb"
    assert cli.main(["ingest", "--db", str(db), str(CAPTURED / "pgbench/local/pg15_tee.log")]) == 0
    con = duckdb.connect(str(db))
    before = con.execute("SELECT file_id, rows FROM files").fetchall()
    con.close()
    assert cli.main(["ingest", "--db", str(db), "--strict", str(log)]) != 0
    con = duckdb.connect(str(db))
    assert con.execute("SELECT file_id, rows FROM files").fetchall() == before
    assert con.execute("SELECT count(*) FROM unparsed_lines").fetchall() == [(0,)]
    con.close()
    with pytest.raises(LabError, match=rf"{log}: 6 of 60 lines not understood .*{log}:1: '=== run clients=1"):
        ingest_one(log, strict=True)


def test_cli_summary_shows_lines_not_understood(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = CAPTURED / "pgbench/local/pg15_loop_appended.log"
    assert cli.main(["ingest", "--db", str(tmp_path / "c.duckdb"), str(log)]) == 0
    out = capsys.readouterr()
    # 60 lines: 6 wrapper lines (=== ... ===), 3 `starting vacuum...end.`, the rest pgbench's
    assert "60 lines: 51 parsed, 3 noise, 6 not understood" in out.out
    assert f"{log}:1: '=== run clients=1 2026-11-23T23:53:32+00:00 ==='" in out.out
    assert "6 lines not understood" in out.err


# ----------------------------------------------------------------------------- pgbench


def values_after(path: Path, prefix: str) -> list[str]:
    return [ln[len(prefix) :].split()[0] for ln in lines_of(path) if ln.startswith(prefix)]


def test_combined_capture_gives_summary_progress_and_statements() -> None:
    path = CAPTURED / "pgbench/local/pg15_run_P1_r.log"  # pgbench -P 1 -T 5 -c 2 -r > run.log 2>&1
    con, res = ingest_one(path)
    assert res.format == "pgbench-summary"
    summary = con.execute("SELECT run_index, tps, latency_avg_ms, clients FROM pgbench_summary").fetchall()
    assert summary == [(1, 1823.788275, 1.095, 2)]
    progress = con.execute("SELECT t_s, tps, failed FROM pgbench_progress ORDER BY t_s").fetchall()
    assert progress == [
        (1.0, 2152.0, 0),
        (2.0, 2229.9, 0),
        (3.0, 2456.0, 0),
        (4.0, 1659.0, 0),
        (5.0, 626.0, 0),
    ]
    stmts = con.execute("SELECT statement_no, latency_ms, failures, statement FROM pgbench_statement").fetchall()
    assert len(stmts) == 11
    assert stmts[-1] == (10, 0.328, 0, "END;")
    assert res.lines is not None and (res.lines.noise, res.lines.not_understood) == (1, 0)  # starting vacuum


def test_appended_runs_stay_apart() -> None:
    path = CAPTURED / "pgbench/local/pg15_loop_appended.log"
    con, _ = ingest_one(path)
    tps = [float(v) for v in values_after(path, "tps = ")]
    clients = [int(v) for v in values_after(path, "number of clients: ")]
    assert con.execute("SELECT run_index, clients, tps FROM pgbench_summary ORDER BY run_index").fetchall() == [
        (i + 1, c, t) for i, (c, t) in enumerate(zip(clients, tps, strict=True))
    ]
    per_run = con.execute("SELECT run_index, count(*), max(t_s) FROM pgbench_progress GROUP BY 1 ORDER BY 1")
    assert per_run.fetchall() == [(1, 3, 3.0), (2, 3, 3.0), (3, 3, 3.0)]


def test_wrapper_appended_summaries() -> None:
    path = CAPTURED / "pgbench/real/pg10-13_supabase_RESULTS_TPCB_LIKE.txt"
    con, res = ingest_one(path)
    tps = [float(v) for v in values_after(path, "tps = ")[1::2]]  # the (excluding ...) line of each run
    rows = con.execute("SELECT tps FROM pgbench_summary ORDER BY run_index").fetchall()
    assert [r[0] for r in rows] == tps and len(tps) == 45
    wrapper = [ln for ln in lines_of(path) if ln.startswith(("Instance:", "Run:", "#"))]
    assert con.execute("SELECT text FROM unparsed_lines ORDER BY line").fetchall() == [(w,) for w in wrapper]


@pytest.mark.parametrize(
    "name,expected",
    [
        # numbers as printed in each file (by hand)
        (
            "pg9.2_unknownrepo_idx25146958741_r_statement_latencies.txt",
            {"tps": 266.567761, "tps_including_connections": 266.363001, "latency_avg_ms": None, "clients": 100},
        ),
        (
            "pg9.4_issue_node-postgres_861_select_only_latency_colon.txt",
            {"tps": 42233.261058, "transactions_processed": 50000, "latency_avg_ms": 0.0, "transactions_target": 10000},
        ),
        ("pg9.5_issue_cockroach_4091_latency_colon.txt", {"latency_avg_ms": 9.188}),
        ("pg10-13_secretless_README_218c27e_latency_average_equals.txt", {"latency_avg_ms": 44.167}),
    ],
)
def test_old_pgbench_reports(name: str, expected: dict[str, object]) -> None:
    con, _ = ingest_one(CAPTURED / "pgbench/real" / name)
    cols = ", ".join(expected)
    assert con.execute(f"SELECT {cols} FROM pgbench_summary").fetchall() == [tuple(expected.values())]


def test_pg93_terminal_paste_of_five_runs() -> None:
    """pgbench 9.3 (April 2014): five runs pasted with their prompts, each with `Scale option ignored`,
    the 9.x report (no latency line) and its -r table."""
    path = CAPTURED / "pgbench/real/pg9.3_koding_benchmark_5runs_prompt_r.txt"
    con, res = ingest_one(path)
    text = lines_of(path)
    runs = list(
        zip(
            [int(v) for v in values_after(path, "number of clients: ")],
            [ln.split(": ", 1)[1] for ln in text if ln.startswith("transaction type: ")],
            [int(v) for v in values_after(path, "number of transactions actually processed: ")],
            [float(ln.split()[2]) for ln in text if ln.endswith("(including connections establishing)")],
            [float(ln.split()[2]) for ln in text if ln.endswith("(excluding connections establishing)")],
            strict=True,
        )
    )
    got = con.execute(
        "SELECT clients, transaction_type, transactions_processed, tps_including_connections, tps, latency_avg_ms "
        "FROM pgbench_summary ORDER BY run_index"
    ).fetchall()
    assert got == [(*r, None) for r in runs] and len(got) == 5
    # the -r tables: the indented lines after each header, up to the first line that is not one
    tables: list[list[tuple[float, str]]] = []
    in_table = False
    for ln in text:
        if ln == "statement latencies in milliseconds:":
            tables.append([])
            in_table = True
        elif in_table and ln.startswith("    "):
            value, stmt = ln.split(None, 1)
            tables[-1].append((float(value), stmt))
        else:
            in_table = False
    stmts = con.execute(
        "SELECT run_index, latency_ms, statement FROM pgbench_statement ORDER BY run_index, statement_no"
    ).fetchall()
    assert [(lat, st) for _, lat, st in stmts] == [row for t in tables for row in t]
    assert [len(t) for t in tables] == [14, 14, 14, 3, 3]
    assert [r for r, _, _ in stmts] == [i + 1 for i, t in enumerate(tables) for _ in t]
    assert res.lines is not None and res.lines.not_understood == 0  # prompts and `Scale option ignored`: noise
    assert res.lines.noise == sum(
        1 for ln in text if "$ pgbench" in ln or ln.startswith(("Scale option", "starting vac")) or not ln
    )


def test_pg92_statement_table() -> None:
    path = CAPTURED / "pgbench/real/pg9.2_unknownrepo_idx25146958741_r_statement_latencies.txt"
    con, _ = ingest_one(path)
    rows = con.execute("SELECT latency_ms, statement FROM pgbench_statement ORDER BY statement_no").fetchall()
    assert len(rows) == 14
    assert rows[3] == (0.001071, "\\setrandom aid 1 :naccounts")
    assert rows[10] == (337.067165, "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;")


def test_progress_without_report_pg14() -> None:
    path = CAPTURED / "pgbench/real/pg14client_server15_issue_neon-website_904_progress_zero_tps.txt"
    con, _ = ingest_one(path)
    assert con.execute("SELECT count(*) FROM pgbench_summary").fetchall() == [(0,)]
    got = con.execute("SELECT t_s, tps, latency_avg_ms, failed FROM pgbench_progress ORDER BY t_s").fetchall()
    assert len(got) == 9 and got[0] == (2.7, 0.0, 0.0, None) and got[-1] == (10.0, 8.0, 7055.317, None)


def test_progress_stddev_nan_of_pgbench_18_is_null_not_dropped() -> None:
    path = CAPTURED / "pgbench/local/pg18_progress_stddev_nan.log"
    con, res = ingest_one(path)
    progress = [ln for ln in lines_of(path) if ln.startswith("progress:")]
    got = con.execute("SELECT t_s, latency_stddev_ms FROM pgbench_progress ORDER BY t_s").fetchall()
    assert len(got) == len(progress) == 8 and res.lines is not None and res.lines.not_understood == 0
    nan_at = [float(ln.split()[1]) for ln in progress if "stddev NaN" in ln]
    assert nan_at == [5.0, 8.0] and [t for t, sd in got if sd is None] == nan_at


def test_progress_lag_and_timestamp() -> None:
    con, _ = ingest_one(CAPTURED / "pgbench/local/pg15_rate_lag.log")
    lags = con.execute("SELECT lag_ms FROM pgbench_progress ORDER BY t_s").fetchall()
    assert [r[0] for r in lags] == [
        float(ln.split("lag ")[1].split()[0])
        for ln in lines_of(CAPTURED / "pgbench/local/pg15_rate_lag.log")
        if ln.startswith("progress:")
    ]
    con, _ = ingest_one(CAPTURED / "pgbench/local/pg15_progress_timestamp.log")
    assert con.execute("SELECT min(t_s) FROM pgbench_progress").fetchall() == [(1795478432.785,)]


# ----------------------------------------------------------------------------- sysbench

SB = CAPTURED / "sysbench"


def after(line: str, label: str) -> str:
    """The first token after `label` in `line` (units stuck to it, like `3.94ms`, kept)."""
    return line.split(label, 1)[1].split()[0]


def report(path: Path, label: str) -> list[str]:
    """The first token after `label` on every line whose stripped text starts with it."""
    return [after(ln, label) for ln in lines_of(path) if ln.strip().startswith(label)]


def summary_rows(con: duckdb.DuckDBPyConnection, cols: str) -> list[tuple[object, ...]]:
    return con.execute(f"SELECT {cols} FROM sysbench_summary ORDER BY run_index").fetchall()


def test_sysbench_04_oltp_report() -> None:
    path = SB / "real/sb0.4.12_hgxl64_oltp_ro_64thr.res"
    con, res = ingest_one(path)
    assert res.format == "sysbench"
    got = summary_rows(
        con,
        "sysbench_version, test, threads, transactions, tps, deadlocks, rw_requests, rw_requests_per_s, "
        "other_operations, total_time_s, latency_min_ms, latency_avg_ms, latency_max_ms, latency_pct, "
        "latency_pct_ms, latency_sum_ms, events_per_thread_avg",
    )
    tx = report(path, "transactions:")[0]
    rw = [ln.split()[2:4] for ln in lines_of(path) if "read/write requests:" in ln][0]
    ms = [float(report(path, k)[0].removesuffix("ms")) for k in ("min:", "avg:", "max:")]
    pct = [ln for ln in lines_of(path) if "percentile:" in ln][0].split()  # approx.  95 percentile: 3.94ms
    assert got == [
        (
            lines_of(path)[0].split()[1].rstrip(":"),  # sysbench 0.4.12:  multi-threaded ...
            "oltp",
            int(report(path, "Number of threads:")[0]),
            int(tx),
            float(after(lines_of(path)[23], "(")),
            int(report(path, "deadlocks:")[0]),
            int(rw[0]),
            float(rw[1].lstrip("(")),
            int(report(path, "other operations:")[0]),
            float(report(path, "total time:")[0].rstrip("s")),
            *ms,
            int(pct[1]),
            float(pct[3].removesuffix("ms")),
            pytest.approx(float(report(path, "total time taken by event execution:")[0]) * 1000),
            float(report(path, "events (avg/stddev):")[0].split("/")[0]),
        )
    ]
    assert lines_of(path)[23].strip().startswith("transactions:")
    opts = [r[0] for r in con.execute("SELECT text FROM sysbench_options ORDER BY line").fetchall()]
    assert "Doing read-only test" in opts and "Using Uniform distribution" in opts


@pytest.mark.parametrize(
    "name",
    [
        "sb0.5early_hgxl64_oltp_ro_reads_per_s_nocomma.res",  # reads/s: ..., writes/s: X response time
        "sb0.5mid_hgxl64_oltp_rw_16thr_reads_per_s_99pct_deadlocks.res",  # reads/s, 99%
        "sb0.5_hgxl64_oltp_rw_interval2s.res",  # reads: ..., errors: ..., reconnects:
        "sb0.5_hgxl64_oltp_ro_256thr_interval.res",
        "sb0.5_issue_sysbench_14_interval_lines_overflow_bug.txt",  # a garbage tps as printed
    ],
)
def test_sysbench_05_interval_lines(name: str) -> None:
    path = SB / "real" / name
    con, res = ingest_one(path)
    expected = []
    for ln in lines_of(path):
        if not ln.startswith("["):
            continue
        t, rest = ln[1:].split("s]", 1)
        fields = dict(
            kv.split(": ", 1)
            for kv in rest.replace(", response", " response").replace(" response", ", response").split(", ")
        )
        reads = fields.get("reads", fields.get("reads/s"))
        writes = fields.get("writes", fields.get("writes/s"))
        lat, pct = fields["response time"].split("ms (")
        errors = fields.get("errors")
        expected.append(
            (
                float(t),
                int(fields[" threads"]),
                float(fields["tps"]),
                float(reads),
                float(writes),
                float(lat),
                int(pct.rstrip("%)")),
                None if errors is None else float(errors),
            )
        )
    got = con.execute(
        "SELECT t_s, threads, tps, qps_read, qps_write, latency_ms, latency_pct, errors_per_s "
        "FROM sysbench_interval ORDER BY t_s"
    ).fetchall()
    assert got == expected and len(got) >= 2
    assert res.lines is not None and res.lines.not_understood == 0
    reports = [ln for ln in lines_of(path) if ln == "OLTP test statistics:"]
    assert con.execute("SELECT count(*) FROM sysbench_summary").fetchall() == [(len(reports),)]
    if reports:
        assert summary_rows(con, "transactions, total_events") == [
            (int(report(path, "transactions:")[0]), int(report(path, "total number of events:")[0]))
        ]


def test_sysbench_04_fileio_totals_in_mib() -> None:
    path = SB / "real/sb0.4.12_inkrement_fileio_prepare_run_with_prompt.txt"
    con, res = ingest_one(path)
    ops = next(ln for ln in lines_of(path) if ln.startswith("Operations performed:")).split()
    moved = next(ln for ln in lines_of(path) if ln.startswith("Read ")).split()  # Read 179.06Mb  Written ...
    assert ops[3:8:2] + ops[10:] == ["Read,", "Write,", "Other", "Total"] and moved[0] == "Read"
    got = summary_rows(
        con,
        "test, file_reads, file_writes, file_other_ops, file_total_ops, file_read_mib, file_written_mib, "
        "file_transferred_mib, file_transferred_mib_per_s, events_per_s, total_events",
    )
    assert got == [
        (
            "fileio",
            int(ops[2]),
            int(ops[4]),
            int(ops[6]),
            int(ops[9]),
            float(moved[1].removesuffix("Mb")),
            float(moved[3].removesuffix("Mb")),
            float(moved[6].removesuffix("Mb")),
            float(moved[7].strip("()").removesuffix("Kb/sec")) / 1024,  # Kb: KiB
            float(next(ln for ln in lines_of(path) if "Requests/sec executed" in ln).split()[0]),
            int(report(path, "total number of events:")[0]),
        )
    ]
    opts = [r[0] for r in con.execute("SELECT text FROM sysbench_options ORDER BY line").fetchall()]
    assert {"Block size 16Kb", "Doing random r/w test", "128 files, 204800Kb each, 25600Mb total"} <= set(opts)
    assert res.lines is not None and res.lines.not_understood == 0  # the prompt lines are noise


@pytest.mark.parametrize(
    "rel,test",
    [
        ("local/sb10_cpu_time3.log", "cpu"),
        ("local/sb10_cpu_threads2_interval.log", "cpu"),
        ("real/sb0.4.12_inkrement_cpu_prime20000_with_prompt.txt", "cpu"),
        ("real/sb1.1.0-4e0e44c_caprice-j_cpu_no_cpu_speed_section.txt", "cpu"),
        ("local/sb10_fileio_rndrw_time3.log", "fileio"),
        ("local/sb10_fileio_seqwr_interval.log", "fileio"),
        ("real/sb1.1.0-4e0e44c_caprice-j_fileio_rndrw_with_cmdline.txt", "fileio"),
        ("local/sb10_memory_time2.log", "memory"),
    ],
)
def test_sysbench_non_oltp_reports(rel: str, test: str) -> None:
    path = SB / rel
    con, res = ingest_one(path)
    got = summary_rows(con, "test, total_time_s, total_events, latency_max_ms, latency_pct_ms, events_per_thread_avg")
    pct = [ln for ln in lines_of(path) if "percentile:" in ln][0].split()[-1].removesuffix("ms")
    assert got == [
        (
            test,
            float(report(path, "total time:")[0].rstrip("s")),
            int(report(path, "total number of events:")[0]),
            float(report(path, "max:")[0].removesuffix("ms")),
            float(pct),
            float(report(path, "events (avg/stddev):")[0].split("/")[0]),
        )
    ]
    eps = report(path, "events per second:")
    assert summary_rows(con, "events_per_s") == [(float(eps[0]) if eps else None,)]
    if test == "fileio":
        labels = ("reads/s:", "writes/s:", "fsyncs/s:", "read, MiB/s:", "written, MiB/s:")
        cols = "file_reads_per_s, file_writes_per_s, file_fsyncs_per_s, file_read_mib_per_s, file_written_mib_per_s"
        assert summary_rows(con, cols) == [tuple(float(report(path, k)[0]) for k in labels)]
    # interval lines: `[ 1s ] thds: 2 eps: 1664.48 lat (ms,95%): 4.57` / `[ 1s ] reads: 0.00 MiB/s writes: ...`
    iv = [ln.split() for ln in lines_of(path) if ln.startswith("[ ")]
    cols = "events_per_s, read_mib_per_s, written_mib_per_s, fsyncs_per_s, latency_ms"
    want = [
        (float(t[6]), None, None, None, float(t[-1]))
        if "eps:" in t
        else (None, float(t[4]), float(t[7]), float(t[10].removesuffix("/s")), float(t[-1]))
        for t in iv
    ]
    assert con.execute(f"SELECT {cols} FROM sysbench_interval ORDER BY t_s").fetchall() == want
    assert res.lines is not None and res.lines.not_understood == 0


def test_sysbench_memory_runs_appended() -> None:
    path = SB / "real/sb1.1.0-4e0e44c_caprice-j_memory_3runs_appended.txt"
    con, res = ingest_one(path)
    totals = [ln.split() for ln in lines_of(path) if ln.startswith("Total operations:")]
    moved = [ln.split() for ln in lines_of(path) if "MiB transferred" in ln]
    got = summary_rows(con, "run_index, test, memory_ops, memory_ops_per_s, memory_mib, memory_mib_per_s, total_time_s")
    assert got == [
        (i + 1, "memory", int(t[2]), float(t[-3]), float(m[0]), float(m[3].lstrip("(")), float(tt.rstrip("s")))
        for i, (t, m, tt) in enumerate(zip(totals, moved, report(path, "total time:"), strict=True))
    ]
    assert len(got) == 3
    # the command line pasted without a prompt is the one line not understood
    assert con.execute("SELECT line, text FROM unparsed_lines").fetchall() == [(1, lines_of(path)[0])]


def test_sysbench_wrapper_runs_and_banners() -> None:
    path = SB / "real/sb1.0.20_00sapo_wrapper_echo_headers_fileio_prepare_run.txt"
    con, res = ingest_one(path)
    reads = [float(v) for v in report(path, "reads/s:")]
    assert summary_rows(con, "test, file_reads_per_s") == [("fileio", r) for r in reads] and len(reads) == 2
    runs = [r[0] for r in summary_rows(con, "run_index")]
    assert runs[0] < runs[1]
    banners = [(i + 1, ln) for i, ln in enumerate(lines_of(path)) if ln.isupper() or set(ln) == {"-"}]
    assert con.execute("SELECT line, text FROM unparsed_lines ORDER BY line").fetchall() == banners


def test_sysbench_cut_reports_are_refused_at_their_end() -> None:
    for rel in (k for k in UNSUPPORTED if k.startswith("sysbench/")):
        path = CAPTURED / rel
        with pytest.raises(parsers.ParseError, match="truncated sysbench report") as exc:
            ingest_one(path)
        assert exc.value.line == len(lines_of(path))


# ----------------------------------------------------------------------------- OS statistics


def test_meminfo_single_cat() -> None:
    con, res = ingest_one(CAPTURED / "meminfo/local/meminfo_single.txt")
    assert res.format == "meminfo-capture"
    rows = con.execute("SELECT key, kb, unit, sample, ts FROM meminfo ORDER BY key").fetchall()
    assert len(rows) == 54
    by_key = {r[0]: r for r in rows}
    first = lines_of(CAPTURED / "meminfo/local/meminfo_single.txt")[0].split()
    assert by_key["MemTotal"][1:] == (int(first[1]), "kB", 1, None)
    assert by_key["HugePages_Total"][2] is None


@pytest.mark.parametrize(
    "name,first_ts",
    [
        ("meminfo_loop_date.log", "2026-11-23 23:53:56+00"),  # `Mon Nov 23 23:53:56 UTC 2026`
        ("meminfo_loop_epoch.log", "2026-11-23 23:53:59+00"),  # 1795478039
        ("meminfo_loop_iso_prefix.log", "2026-11-23 23:54:02+00"),
    ],
)
def test_meminfo_loops(name: str, first_ts: str) -> None:
    con, res = ingest_one(CAPTURED / "meminfo/local" / name)
    per_sample = con.execute(
        "SELECT sample, count(*), min(ts)::VARCHAR, count(DISTINCT ts) FROM meminfo GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert [(s, n, d) for s, n, _, d in per_sample] == [(1, 54, 1), (2, 54, 1), (3, 54, 1)]
    assert per_sample[0][2] == first_ts
    assert res.lines is not None and res.lines.not_understood == 0


def test_pgbench_tools_meminfo() -> None:
    path = CAPTURED / "pgbench-tools/real/regress_meminfo_first20s.log"  # 20 snapshots x 48 keys
    con, res = ingest_one(path)
    assert con.execute("SELECT count(DISTINCT sample), count(*) FROM meminfo").fetchall() == [(20, 960)]
    first = lines_of(path)[0].split("\t")  # 2020-08-26 01:52:05.256123 MemTotal 65945364
    assert con.execute(
        "SELECT ts::VARCHAR, kb, unit FROM meminfo WHERE sample = 1 AND key = 'MemTotal'"
    ).fetchall() == [(first[0] + "+00", int(first[2]), "kB")]
    assert any("without a time zone" in w for w in res.warnings)


def test_vmstat_text() -> None:
    path = CAPTURED / "vmstat/local/vmstat_t_1_5.log"
    con, res = ingest_one(path)
    assert res.format == "vmstat-text"
    rows = con.execute('SELECT sample, ts::VARCHAR, since_boot, r, free, bo, "in", cs, st FROM vmstat_text ORDER BY 1')
    got = rows.fetchall()
    data = [ln.split() for ln in lines_of(path)[2:]]
    assert len(got) == len(data) == 5
    for row, tok in zip(got, data, strict=True):
        assert row[1] == f"{tok[17]} {tok[18]}+00"
        assert row[3:] == (int(tok[0]), int(tok[3]), int(tok[9]), int(tok[10]), int(tok[11]), int(tok[16]))
    assert [r[2] for r in got] == [True, False, False, False, False]


def test_pgbench_tools_vmstat_with_overflowing_columns() -> None:
    path = CAPTURED / "pgbench-tools/real/regress_480_vmstat_first120.log"
    con, _ = ingest_one(path)
    data = [ln.split("\t", 1)[1].split() for ln in lines_of(path)]
    data = [t for t in data if t and t[0].isdigit()]
    got = con.execute("SELECT r, b, bi, bo, cs, id FROM vmstat_text ORDER BY sample").fetchall()
    assert got == [tuple(int(t[i]) for i in (0, 1, 8, 9, 11, 14)) for t in data]


@pytest.mark.parametrize(
    "rel,samples,devices",
    [
        ("iostat/local/iostat_x_1_3.log", 3, ["loop0", "vda"]),
        ("iostat/real/sysstat-old_unknownrepo_idx1486180180_rsec_comma_decimals.txt", 3, ["sda"]),  # grep -c avg-cpu
        ("pgbench-tools/real/regress_iostat_el6.log", 13, None),  # grep -c avg-cpu
    ],
)
def test_iostat_util_per_device(rel: str, samples: int, devices: list[str] | None) -> None:
    path = CAPTURED / rel
    con, res = ingest_one(path)
    assert res.format == "iostat"
    assert con.execute("SELECT max(sample) FROM iostat").fetchall() == [(samples,)]
    # %util is the last column of every device row: read it from the file
    body = [ln.split("\t", 1)[1] if "\t" in ln and ln[:4].isdigit() else ln for ln in lines_of(path)]
    util, in_devices = [], False
    for ln in body:
        tok = ln.split()
        if tok and tok[0].startswith("Device"):
            in_devices = True
        elif not tok or tok[0].startswith("avg-cpu"):
            in_devices = False
        elif in_devices:
            util.append((tok[0], float(tok[-1].replace(",", "."))))
    got = con.execute("SELECT device, value FROM iostat WHERE metric = '%util' ORDER BY sample, rowid").fetchall()
    assert got == util
    if devices is not None:
        assert sorted({d for d, _ in got}) == devices
    cpu = con.execute("SELECT count(*) FROM iostat WHERE device IS NULL AND metric = '%idle'").fetchall()
    assert cpu == [(samples,)]


def test_iostat_times() -> None:
    con, _ = ingest_one(CAPTURED / "iostat/local/iostat_x_t_S_TIME_FORMAT_ISO_1_2.log")
    got = con.execute("SELECT DISTINCT sample, ts::VARCHAR FROM iostat ORDER BY 1").fetchall()
    assert got[0] == (1, "2026-11-23 23:54:09+00")  # `2026-11-23T23:54:09+0000`
    con, _ = ingest_one(CAPTURED / "iostat/local/iostat_x_t_k_1_3.log")
    got = con.execute("SELECT DISTINCT sample, ts::VARCHAR FROM iostat ORDER BY 1").fetchall()
    assert got == [(1, "2026-11-23 23:53:56+00"), (2, "2026-11-23 23:53:57+00"), (3, "2026-11-23 23:53:58+00")]


@pytest.mark.parametrize(
    "rel",
    [
        "iostat/local/iostat_x_o_JSON_1_2.json",
        "iostat/local/iostat_x_t_m_o_JSON_1_2.json",
        "iostat/local/iostat_d_t_ISO_o_JSON_1_2.json",
        "iostat/real/sysstat12_balabanovds_iostat_o_JSON_nonextended_gotest.json",
    ],
)
def test_iostat_json_gives_the_text_forms_rows(rel: str) -> None:
    path = CAPTURED / rel
    con, res = ingest_one(path)
    assert res.format == "iostat-json"
    doc = json.loads(path.read_text())
    expected = []
    for i, stat in enumerate(doc["sysstat"]["hosts"][0]["statistics"], 1):
        expected += [(i, None, "%" + k, float(v)) for k, v in (stat.get("avg-cpu") or {}).items()]
        for d in stat["disk"]:
            dev = d.pop("disk_device")
            expected += [
                (i, dev, "%" + k if k in ("util", "rrqm", "wrqm", "drqm") else k, float(v)) for k, v in d.items()
            ]
    got = con.execute("SELECT sample, device, metric, value FROM iostat ORDER BY rowid").fetchall()
    assert got == expected
    # the metrics are named as the text form's header names them (sysstat 12.6.1, recorded here)
    text = lines_of(CAPTURED / "iostat/local/iostat_x_1_3.log")
    header = set(text[2].split()[1:]) | set(text[5].split()[1:])  # avg-cpu:, Device
    if "x_o_JSON" in rel:
        assert {m for _, _, m, _ in got} == header
    stamps = [s.get("timestamp") for s in doc["sysstat"]["hosts"][0]["statistics"]]
    ts = con.execute("SELECT DISTINCT sample, ts::VARCHAR FROM iostat ORDER BY 1").fetchall()
    if stamps[0] is None:
        assert all(t is None for _, t in ts)
    else:  # `11/24/26 04:39:02` (local, no zone) or `2026-11-24T04:39:03+0000`
        assert [t[:19] for _, t in ts] == [
            s.replace("T", " ")[:19] if s[:4].isdigit() else f"20{s[6:8]}-{s[0:2]}-{s[3:5]} {s[9:]}" for s in stamps
        ]
    assert res.lines is not None and res.lines.not_understood == 0


def test_formats_table_in_docs_lists_every_format() -> None:
    page = (Path(__file__).parent.parent / "docs" / "formats.md").read_text()
    for name in parsers.FORMATS:
        assert f"| `{name}` |" in page, name


def test_detection_error_is_clear(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\nworld\n")
    with pytest.raises(LabError, match=rf"^{p}: unknown format .*--format"):
        ingest_one(p)


BUILT = CAPTURED / "pgbench/built"  # pgbench 8.2, 8.4, 9.1 and 9.4 built from their sources and run here


def report_of(path: Path) -> list[tuple[object, ...]]:
    """Each run's (clients, transaction type, processed, tps including, tps excluding), as the file prints them."""
    text = lines_of(path)
    return list(
        zip(
            [int(v) for v in values_after(path, "number of clients: ")],
            [ln.split(": ", 1)[1] for ln in text if ln.startswith("transaction type: ")],
            [int(v.split("/")[0]) for v in values_after(path, "number of transactions actually processed: ")],
            [float(ln.split()[2]) for ln in text if ln.endswith("(including connections establishing)")],
            [float(ln.split()[2]) for ln in text if ln.endswith("(excluding connections establishing)")],
            strict=True,
        )
    )


@pytest.mark.parametrize(
    "name,runs",
    [
        ("pg8.2_run_c2_t1000.log", 1),
        ("pg8.2_loop_c1_c2.log", 2),
        ("pg8.4_T5_prepared_tee.log", 1),
        ("pg8.4_select_t2000_l.log", 1),
        ("pg9.1_r_j2_T5.log", 1),
        ("pg9.1_j2_T3_l.log", 1),
        ("pg9.4_P1_r_j2_T5.log", 1),
        ("pg9.4_P1_rate300_lag.log", 1),
        ("pg9.4_agg1_rate300.log", 1),
        ("pg9.4_T2_l.log", 1),
    ],
)
def test_reports_of_old_pgbench_releases(name: str, runs: int) -> None:
    path = BUILT / name
    con, res = ingest_one(path)
    got = con.execute(
        "SELECT clients, transaction_type, transactions_processed, tps_including_connections, tps "
        "FROM pgbench_summary ORDER BY run_index"
    ).fetchall()
    assert got == report_of(path) and len(got) == runs
    # every line but `starting vacuum...end.` is a line of the report
    assert res.lines is not None and res.lines.not_understood == 0
    assert res.lines.noise == sum(1 for ln in lines_of(path) if ln == "starting vacuum...end.")
    threads = values_after(path, "number of threads: ")  # 9.0+; none before
    latency = values_after(path, "latency average: ")  # 9.4's form, with a colon; none before
    want = list(
        zip(
            [int(t) for t in threads] if threads else [None] * runs,
            [float(v) for v in latency] if latency else [None] * runs,
            strict=True,
        )
    )
    assert con.execute("SELECT threads, latency_avg_ms FROM pgbench_summary ORDER BY run_index").fetchall() == want


@pytest.mark.parametrize("name", ["pg9.4_P1_r_j2_T5.log", "pg9.4_P1_rate300_lag.log"])
def test_progress_lines_of_pgbench_94(name: str) -> None:
    path = BUILT / name
    con, _ = ingest_one(path)
    lines = [ln for ln in lines_of(path) if ln.startswith("progress: ")]
    expected = []
    for ln in lines:  # `progress: 1.0 s, 297.0 tps, lat 0.518 ms stddev 0.167[, lag 0.072 ms]`
        f = ln.replace(",", "").split()
        lag = float(f[f.index("lag") + 1]) if "lag" in f else None
        expected.append((float(f[1]), float(f[3]), float(f[6]), float(f[9]), lag, None, None))
    got = con.execute(
        "SELECT t_s, tps, latency_avg_ms, latency_stddev_ms, lag_ms, skipped, failed FROM pgbench_progress ORDER BY t_s"
    ).fetchall()
    assert got == expected and len(got) == 5
    assert ("lag" in lines[0]) == (name == "pg9.4_P1_rate300_lag.log")


def test_statement_table_of_pgbench_91() -> None:
    path = BUILT / "pg9.1_r_j2_T5.log"
    con, _ = ingest_one(path)
    text = lines_of(path)
    table = [ln.split("\t")[1:] for ln in text[text.index("statement latencies in milliseconds:") + 1 :]]
    rows = con.execute("SELECT latency_ms, statement FROM pgbench_statement ORDER BY statement_no").fetchall()
    assert rows == [(float(v), st) for v, st in table] and len(rows) == 14


@pytest.mark.parametrize("name", ["pg8.2_init.log", "pg8.4_init.log", "pg9.1_init.log", "pg9.4_init.log"])
def test_init_output_of_old_releases_is_known_noise(name: str) -> None:
    _, res = ingest_one(BUILT / name)
    assert res.lines is not None
    assert (res.lines.parsed, res.lines.noise, res.lines.not_understood) == (0, len(lines_of(BUILT / name)), 0)


@pytest.mark.parametrize(
    "name", ["pg8.4_txlog/pgbench_log.24464", "pg9.1_txlog/pgbench_log.24482.1", "pg9.4_txlog/pgbench_log.24514"]
)
def test_per_transaction_logs_of_old_releases(name: str) -> None:
    path = BUILT / name
    con, res = ingest_one(path)
    assert res.format == "pgbench-txlog"
    fields = [ln.split() for ln in lines_of(path)]  # client_id transaction_no time file_no time_epoch time_us
    got = con.execute(
        "SELECT client_id, tx_no, latency_us, epoch_us FROM pgbench_txlog ORDER BY epoch_us, client_id"
    ).fetchall()
    want = sorted(
        ((int(c), int(n), float(t), int(e) * 1_000_000 + int(us)) for c, n, t, _, e, us in fields),
        key=lambda r: (r[3], r[0]),
    )
    assert got == want and len(got) == 100


def test_aggregate_log_of_pgbench_94_with_rate() -> None:
    path = BUILT / "pg9.4_agg/pgbench_log.24506"
    con, _ = ingest_one(path)
    fields = [[int(v) for v in ln.split()] for ln in lines_of(path)]
    assert {len(f) for f in fields} == {10}
    got = con.execute(
        "SELECT interval_start_s, n_tx, latency_sum_us, lag_sum_us, lag_max_us, skipped FROM pgbench_aggregate "
        "ORDER BY interval_start_s"
    ).fetchall()
    assert got == [(f[0], f[1], float(f[2]), float(f[6]), float(f[9]), None) for f in fields]


def test_debug_output_of_pgbench_82() -> None:
    """`pgbench -d` (8.3 and older): every client's commands on stderr, then the connection banner and the
    report on stdout; the banner and the debug lines are pgbench's own noise, the report one run."""
    path = BUILT / "pg8.2_debug_c1_t2.log"
    con, res = ingest_one(path)
    assert con.execute(
        "SELECT clients, transaction_type, transactions_processed, tps_including_connections, tps FROM pgbench_summary"
    ).fetchall() == report_of(path)
    text = lines_of(path)
    banner = [ln for ln in text if ln.startswith("pghost: ")]
    assert len(banner) == 1 and "nclients: 1 nxacts: 2" in banner[0]
    assert res.lines is not None and res.lines.not_understood == 0
    noise = sum(1 for ln in text if ln.startswith(("client 0 ", "pghost: ", "starting vacuum")))
    assert res.lines.noise == noise
