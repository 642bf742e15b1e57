"""Issue 31: values that must not come out silently wrong, on real captures (tests/data/captured/,
origins in ORIGINS.md): units per tool version, time zones, complete last lines, line counts that match
what was stored, and the checks where a file states a quantity two ways. Expected values are what each
file prints, converted by hand and written here as literal numbers."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import labdb
import polars as pl
import pytest

from pgfslab.cli import main as cli
from pgfslab.ingest import load as ingest
from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import fio, iostat, pg_test_fsync, vmstat_text
from pgfslab.ingest.parsers._units import _numeric

CAPTURED = Path(__file__).parent / "data" / "captured"


def ingest_one(path: Path, **kw: object) -> tuple[duckdb.DuckDBPyConnection, ingest.FileResult]:
    con = labdb.new_db()
    res = ingest.ingest_file(con, path, run_id="r", **kw)  # type: ignore[arg-type]
    return con, res


# ----------------------------------------------------------------------------- fio: units by version


def test_fio_2_2_10_io_bytes_are_kib() -> None:
    """fio-2.2.10 prints `"io_bytes" : 7116` (KiB: io_bytes >> 10 before fio-2.21), `"bw" : 275` (KiB/s)."""
    con, res = ingest_one(CAPTURED / "fio/real/fio2.2.10_storperf_json_to_carbon_test_simple_fio_json.json")
    got = con.execute(
        "SELECT fio_version, direction, io_bytes, total_ios, bw_bytes_per_s, runtime_ms, iops, io_unit_read, "
        'bw_unit_read, lat_unit_read, "check" FROM fio_job'
    ).fetchall()
    # 7116 KiB = 7116 x 1024 = 7286784 bytes; 275 KiB/s = 281600 bytes/s
    assert got == [("fio-2.2.10", "read", 7286784, 1779, 281600, 25788, 68.99, "KiB", "KiB/s", "us", None)]
    assert not any("inconsistent" in w for w in res.warnings)


def test_fio_2_1_11_without_total_ios_gives_null() -> None:
    """fio-2.1.11 (before total_ios existed, fio-2.1.14): four jobs, io_bytes 44920/44992/45024/44820 KiB."""
    con, _ = ingest_one(CAPTURED / "fio/real/fio2.1.11_storperf_json_to_carbon_test_full_fio_no_total_ios.json")
    got = con.execute("SELECT io_bytes, total_ios, bw_bytes_per_s, clat_mean_us FROM fio_job ORDER BY job_line")
    assert got.fetchall() == [
        (45998080, None, 21504, 255.34),  # 44920 x 1024; 21 KiB/s x 1024
        (46071808, None, 21504, 254.65),  # 44992 x 1024
        (46104576, None, 21504, 254.25),  # 45024 x 1024
        (45895680, None, 21504, 255.2),  # 44820 x 1024 (printed `255.20`)
    ]


def test_fio_3_33_io_bytes_are_bytes() -> None:
    """fio-3.33 (recorded here): io_bytes 7196672 with io_kbytes 7028 (= 7196672 / 1024), bw_bytes,
    clat_ns mean 567516.417188 ns = 567.516417188 µs."""
    con, res = ingest_one(CAPTURED / "fio/local/fio3.33_randrw_fdatasync.json")
    got = con.execute(
        "SELECT direction, io_bytes, total_ios, bw_bytes_per_s, round(clat_mean_us, 6), io_unit_read, bw_unit_read, "
        'lat_unit_read, "check" FROM fio_job ORDER BY direction'
    ).fetchall()
    assert got == [
        ("read", 7196672, 1757, 3592946, 567.516417, "bytes", "bytes/s", "ns", None),
        ("write", 7503872, 1832, 3746316, 13.985699, "bytes", "bytes/s", "ns", None),
    ]
    assert res.warnings == []


def test_fio_unit_decided_by_io_kbytes_then_version_then_bandwidth() -> None:
    assert fio.io_unit({"io_kbytes": 1}, (2, 20)) == ("bytes", None)  # the field that came with bytes
    assert fio.io_unit({}, (2, 20)) == ("KiB", None)
    assert fio.io_unit({}, (2, 21)) == ("bytes", None)
    # no version: 7116 KiB at 275 KiB/s for 25.788 s (= 7092 KiB) agrees as KiB, not as bytes
    unit, why = fio.io_unit({"io_bytes": 7116, "bw": 275, "runtime": 25788}, None)
    assert unit == "KiB" and why is not None and "bw x runtime" in why
    unit, _ = fio.io_unit({"io_bytes": 7286784, "bw": 275, "runtime": 25788}, None)
    assert unit == "bytes"
    assert fio.version_tuple("fio-2.2.10") == (2, 2, 10) and fio.version_tuple("fio-3.33") == (3, 33)


def test_fio_inconsistent_report_is_stored_with_a_warning(tmp_path: Path) -> None:
    doc = json.loads((CAPTURED / "fio/local/fio3.33_randrw_fdatasync.json").read_text())
    doc["jobs"][0]["read"]["io_bytes"] = 2 * 7196672  # edited: twice what bw_bytes x runtime gives
    doc["jobs"][0]["write"]["total_ios"] = 3000  # edited: iops 914.628058 x 2.003 s is 1832
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc))
    con, res = ingest_one(p)
    got = con.execute('SELECT direction, io_bytes, total_ios, "check" FROM fio_job ORDER BY direction').fetchall()
    assert [g[:3] for g in got] == [("read", 14393344, 1757), ("write", 7503872, 3000)]  # stored as read
    assert got[0][3] == "bw x runtime = 7196671 bytes, io_bytes = 14393344"
    assert got[1][3] == "iops x runtime = 1832.0, total_ios = 3000"
    assert sum("inconsistent report" in w for w in res.warnings) == 2
    assert all(w.startswith(f"{p}:1: job 'randrw4k'") for w in res.warnings if "inconsistent" in w)  # one-line JSON


# ----------------------------------------------------------------------------- pg_test_fsync


PG91 = CAPTURED / "pg_test_fsync/real/pg9.1_unknownrepo_idx21656001965_ops_per_test_no_usecs.txt"
UNINDENTED = CAPTURED / "pg_test_fsync/real/pg9.3+_unknownrepo_idx25995922738_pasted_without_indentation.txt"


def test_pg_test_fsync_91_ops_per_sec_without_usecs() -> None:
    con, res = ingest_one(PG91)
    rows = con.execute(
        "SELECT line, section, method, ops_per_s, usecs_per_op, status, ops_per_test, secs_per_test FROM pg_test_fsync "
        "ORDER BY line"
    ).fetchall()
    assert len(rows) == 18 and {r[4] for r in rows} == {None}  # 9.1 prints no usecs/op
    assert {(r[6], r[7]) for r in rows} == {(2000, None)}  # `2000 operations per test`
    assert rows[0][:6] == (7, "Compare file sync methods using one 8kB write", "open_datasync", 2298.045, None, "ok")
    assert rows[3][2:6] == ("fsync_writethrough", None, None, "n/a")
    assert rows[10][2:4] == ("16kB open_sync write", 1992.955)
    # the last line: its own section, method `write`, not the whole line under the section before
    assert rows[-1][:6] == (39, "Non-Sync'ed 8kB writes", "write", 155183.116, None, "ok")
    assert con.execute("SELECT count(*) FROM pg_test_fsync_unrecognised").fetchall() == [(0,)]
    # 39 lines: 18 results, the 7 headers they carry (operations, platform, 5 sections), 14 blank/explanatory
    assert res.lines is not None
    assert (res.lines.total, res.lines.parsed, res.lines.noise, res.lines.not_understood) == (39, 25, 14, 0)


def test_pg_test_fsync_results_pasted_without_indentation() -> None:
    con, res = ingest_one(UNINDENTED)
    rows = con.execute(
        'SELECT method, ops_per_s, usecs_per_op, status, secs_per_test, "check" FROM pg_test_fsync ORDER BY line'
    )
    got = rows.fetchall()
    assert len(got) == 18
    assert got[1] == ("fdatasync", 359.587, 2781.0, "ok", 5, None)
    assert got[3] == ("fsync_writethrough", None, None, "n/a", 5, None)
    assert got[14] == ("16 *  1kB open_sync writes", 8.385, 119260.0, "ok", 5, None)
    assert got[-1] == ("write", 1358148.069, 1.0, "ok", 5, None)
    assert res.lines is not None and res.lines.not_understood == 0 and res.lines.parsed == 18 + 7


def test_pg_test_fsync_summary_does_not_call_set_aside_lines_parsed(tmp_path: Path) -> None:
    """A result line the parser cannot read is counted not understood (and stored), not parsed."""
    text = UNINDENTED.read_text().replace(
        "fdatasync                           359.587 ops/sec", "fdatasync  359,587 tps"
    )
    p = tmp_path / "garbled.txt"
    p.write_text(text)
    con, res = ingest_one(p)
    assert res.lines is not None and (res.lines.parsed, res.lines.not_understood) == (24, 1)
    assert con.execute("SELECT line FROM pg_test_fsync_unrecognised").fetchall() == [(7,)]
    assert con.execute("SELECT line FROM unparsed_lines").fetchall() == [(7,)]
    assert "36 lines: 24 parsed, 11 noise, 1 not understood" in res.summary()[0]


def test_pg_test_fsync_two_runs_in_one_file(tmp_path: Path) -> None:
    """Two captures appended (the second pasted without indentation): two runs, every result a row."""
    p = tmp_path / "two.txt"
    p.write_text((CAPTURED.parent / "device_baseline/ext4/pg_test_fsync.txt").read_text() + UNINDENTED.read_text())
    con, res = ingest_one(p)
    assert con.execute(
        "SELECT run, count(*), min(secs_per_test) FROM pg_test_fsync GROUP BY 1 ORDER BY 1"
    ).fetchall() == [
        (1, 18, 2),
        (2, 18, 5),
    ]
    assert res.lines is not None and res.lines.not_understood == 0


def test_pg_test_fsync_inconsistent_usecs_is_flagged(tmp_path: Path) -> None:
    text = UNINDENTED.read_text().replace("359.587 ops/sec    2781 usecs/op", "359.587 ops/sec    3781 usecs/op")
    p = tmp_path / "edited.txt"
    p.write_text(text)
    con, res = ingest_one(p)
    got = con.execute('SELECT usecs_per_op, "check" FROM pg_test_fsync WHERE line = 7').fetchall()
    # 1e6 / 359.587 = 2781.0 usecs/op, printed 3781
    assert got == [
        (3781.0, "ops/sec x usecs/op = 1.3596e+06, not 1e6 (1e6 / 359.587 ops/sec = 2781.0 usecs/op, printed 3781)")
    ]
    assert [w for w in res.warnings if "inconsistent" in w] == [f"{p}:7: inconsistent report: {got[0][1]}"]


@pytest.mark.parametrize(("ops", "us"), [(61.933, 16147.0), (8.385, 119260.0), (1358148.069, 1.0), (3247872.414, 0.0)])
def test_pg_test_fsync_printed_rounding_is_consistent(ops: float, us: float) -> None:
    assert pg_test_fsync.consistency(ops, us) is None  # pairs printed by pg_test_fsync (captures above)


# ----------------------------------------------------------------------------- iostat: the last line


NO_NL = CAPTURED / "iostat/local/iostat_d_k_1_2_cmdsubst_no_final_newline.log"


def test_iostat_complete_last_line_without_newline_is_data() -> None:
    assert not NO_NL.read_bytes().endswith(b"\n")
    con, res = ingest_one(NO_NL)
    got = con.execute("SELECT metric, value, unit FROM iostat WHERE sample = 2 ORDER BY rowid").fetchall()
    # `vda 15.00 48.00 28.00 36.00 48 28 36`, the file's last line
    assert got == [
        ("tps", 15.0, "1/s"),
        ("kB_read/s", 48.0, "kB/s"),
        ("kB_wrtn/s", 28.0, "kB/s"),
        ("kB_dscd/s", 36.0, "kB/s"),
        ("kB_read", 48.0, "kB"),
        ("kB_wrtn", 28.0, "kB"),
        ("kB_dscd", 36.0, "kB"),
    ]
    assert res.lines is not None and (res.lines.total, res.lines.not_understood) == (8, 0)
    assert not any("incomplete last line" in w for w in res.warnings)


@pytest.mark.parametrize(
    ("cut", "why"),
    [
        ("         48         28", "fewer fields than its header"),
        ("         48         28         36\n", None),  # the same, whole and with its newline
    ],
)
def test_iostat_torn_last_line(tmp_path: Path, cut: str, why: str | None) -> None:
    text = NO_NL.read_text()
    p = tmp_path / "t.log"
    p.write_text(text[: text.rindex("         48")] + cut)
    con, res = ingest_one(p)
    n = con.execute("SELECT count(*) FROM iostat WHERE sample = 2").fetchall()[0][0]
    torn = [w for w in res.warnings if "incomplete last line" in w]
    assert res.lines is not None
    if why is None:
        assert (n, torn, res.lines.not_understood) == (7, [], 0)
    else:
        assert (n, len(torn), res.lines.not_understood) == (0, 1, 1)


def test_iostat_cut_decimal_on_the_last_line_is_torn(tmp_path: Path) -> None:
    lines = (CAPTURED / "iostat/local/iostat_x_1_3.log").read_text().rstrip("\n").split("\n")
    last = lines[-1]  # a device row ending in `%util` with 2 decimals
    assert last.split()[-1].count(".") == 1 and len(last.split()[-1].split(".")[1]) == 2
    p = tmp_path / "cut.log"
    p.write_text("\n".join(lines[:-1] + [last[:-1]]))  # `1.52` -> `1.5`
    con, res = ingest_one(p)
    assert any("incomplete last line" in w for w in res.warnings)
    assert res.lines is not None and res.lines.not_understood == 1


def test_iostat_rate_and_total_disagree(tmp_path: Path) -> None:
    text = NO_NL.read_text()
    p = tmp_path / "edited.log"
    p.write_text(text[: text.rindex("         48")] + "        480         28         36\n")  # kB_read 48 -> 480
    con, res = ingest_one(p)
    got = con.execute('SELECT metric, "check" FROM iostat WHERE "check" IS NOT NULL').fetchall()
    # the report's other pairs agree on a 1 s interval (28/28, 36/36): 48.00 kB/s x 1 s is 48, not 480
    assert got == [("kB_read/s", "kB_read/s x 1.0 s = 48.0, kB_read = 480.0")]
    assert any(w.startswith(f"{p}:8: inconsistent report") for w in res.warnings)


# ----------------------------------------------------------------------------- vmstat -t: time zones


JST = CAPTURED / "vmstat/real/vmstat-procps3.3_unknownrepo_idx47665402457_t_JST.txt"
CST = CAPTURED / "vmstat/real/vmstat-procps3_unknownrepo_idx25098427389_t_CST.txt"


def test_vmstat_jst_is_nine_hours_ahead() -> None:
    con, res = ingest_one(JST)
    got = con.execute("SELECT sample, ts::VARCHAR, tz FROM vmstat_text ORDER BY sample").fetchall()
    # 2017-12-01 21:41:14 JST (+09:00) = 12:41:14 UTC
    assert got == [
        (1, "2017-12-01 12:41:14+00", "JST (+09:00)"),
        (2, "2017-12-01 12:41:16+00", "JST (+09:00)"),
        (3, "2017-12-01 12:41:18+00", "JST (+09:00)"),
    ]
    assert res.warnings == []


def test_vmstat_ambiguous_zone_is_refused_without_tz() -> None:
    with pytest.raises(parsers.ParseError, match=r"t_CST\.txt:3: time zone 'CST' is ambiguous .*--tz") as exc:
        ingest_one(CST)
    assert exc.value.line == 3
    con, _ = ingest_one(CST, tz="Asia/Shanghai")
    first = con.execute("SELECT ts::VARCHAR, tz FROM vmstat_text ORDER BY sample LIMIT 1").fetchall()
    # 2021-09-27 20:14:13 in China (+08:00) = 12:14:13 UTC
    assert first == [("2021-09-27 12:14:13+00", "Asia/Shanghai (--tz)")]
    con, _ = ingest_one(CST, tz="-06:00")  # the US Central reading, if that is what the user knows
    assert con.execute("SELECT min(ts)::VARCHAR FROM vmstat_text").fetchall() == [("2021-09-28 02:14:13+00",)]


def test_vmstat_tz_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "z.duckdb"
    assert cli.main(["ingest", "--db", str(db), str(CST)]) != 0
    assert "time zone 'CST' is ambiguous" in capsys.readouterr().err
    assert cli.main(["ingest", "--db", str(db), "--tz", "Asia/Shanghai", str(CST)]) == 0
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*), min(tz) FROM vmstat_text").fetchall() == [(3, "Asia/Shanghai (--tz)")]
    con.close()


def test_vmstat_header_zone_wins_over_tz() -> None:
    res = vmstat_text.parse(JST, tz="Asia/Shanghai")
    assert res["vmstat_text"]["tz"].unique().to_list() == ["JST (+09:00)"]
    assert "--tz Asia/Shanghai not used" in res["_warnings"]["message"][0]


def test_bad_tz_is_refused() -> None:
    with pytest.raises(parsers.ParseError, match="not an IANA time zone"):
        vmstat_text.parse(CST, tz="Mars/Olympus")


# ----------------------------------------------------------------------------- units in the schema


def test_every_numeric_column_has_a_unit() -> None:
    missing = [
        f"{t}.{c}"
        for mod in parsers.FORMATS.values()
        for t, cols in mod.TABLES.items()
        for c, dtype in cols.items()
        if _numeric(dtype) and parsers.units_of(t).get(c) is None
    ]
    assert missing == []


def test_schema_documents_units(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| column | type | unit |" in out
    assert "| `io_bytes` | BIGINT | bytes (converted from KiB before fio-2.21: see io_unit_read) |" in out
    assert "| `usecs_per_op` | DOUBLE | µs (as printed, whole µs; not printed before 9.3) |" in out
    assert "| `swpd` | BIGINT | KiB (vmstat's default unit, -S K) |" in out


def test_iostat_units_follow_the_metric_names() -> None:
    names = [
        "rkB/s",
        "rMB/s",
        "rsec/s",
        "avgrq-sz",
        "rareq-sz",
        "await",
        "%util",
        "aqu-sz",
        "tps",
        "kB_read",
        "MB_wrtn",
    ]
    got = pl.DataFrame({"m": names}).select(iostat.metric_unit(pl.col("m")).alias("u"))["u"].to_list()
    assert got == ["kB/s", "MB/s", "sectors/s", "sectors", "kB", "ms", "%", "requests", "1/s", "kB", "MB"]


@pytest.mark.parametrize(("cut", "rows", "torn"), [(0, 54, 0), (3, 53, 1)])
def test_meminfo_last_line_without_newline(tmp_path: Path, cut: int, rows: int, torn: int) -> None:
    """`cat /proc/meminfo` without its final newline: `DirectMap1G:    25165824 kB` is data; cut before
    its ` kB` it is torn."""
    text = (CAPTURED / "meminfo/local/meminfo_single.txt").read_text().rstrip("\n")
    p = tmp_path / "m.txt"
    p.write_text(text[: len(text) - cut])
    con, res = ingest_one(p)
    assert con.execute("SELECT count(*) FROM meminfo").fetchall() == [(rows,)]
    assert res.lines is not None and res.lines.not_understood == torn
    assert sum("incomplete last line" in w for w in res.warnings) == torn
    if not torn:
        assert con.execute("SELECT kb FROM meminfo WHERE key = 'DirectMap1G'").fetchall() == [(25165824,)]


# ----------------------------------------------------------------------------- pgbench: the last line


TEE = CAPTURED / "pgbench/local/pg15_tee.log"  # ends `tps = 1876.441597 (without initial connection time)`
NEON = CAPTURED / "pgbench/real/pg14client_server15_issue_neon-website_904_progress_zero_tps.txt"


def test_pgbench_report_last_line_without_newline(tmp_path: Path) -> None:
    text = TEE.read_text().rstrip("\n")
    p = tmp_path / "run.log"
    p.write_text(text)  # only the newline lost: the line is whole
    con, res = ingest_one(p, fmt="pgbench-summary")
    assert con.execute("SELECT tps FROM pgbench_summary").fetchall() == [(1876.441597,)]
    assert res.lines is not None and (res.lines.total, res.lines.not_understood) == (20, 0)
    assert not any("incomplete last line" in w for w in res.warnings)
    # `tps = 1876.441597` without its closing words is torn: the report then has no tps line, refused
    p.write_text(text[: -len(" (without initial connection time)")])
    with pytest.raises(parsers.ParseError, match=r"run\.log:19: truncated pgbench report"):
        ingest_one(p, fmt="pgbench-summary")


def test_pgbench_progress_last_line_without_newline(tmp_path: Path) -> None:
    """`progress: 10.0 s, 8.0 tps, lat 7055.317 ms stddev 9.528` (pgbench 14) is whole; cut to `stddev 9.5`
    (pgbench prints three decimals) it is torn."""
    text = NEON.read_text().rstrip("\n")
    p = tmp_path / "progress.log"
    last = "SELECT t_s, latency_stddev_ms FROM pgbench_progress ORDER BY t_s DESC LIMIT 1"
    p.write_text(text)
    con, res = ingest_one(p, fmt="pgbench-progress")
    assert con.execute(last).fetchall() == [(10.0, 9.528)]
    assert res.lines is not None and res.lines.not_understood == 0
    p.write_text(text[:-2])
    con, res = ingest_one(p, fmt="pgbench-progress")
    assert con.execute(last).fetchall()[0][0] < 10.0
    assert res.lines is not None and res.lines.not_understood == 1
    assert any("incomplete last line" in w for w in res.warnings)


def test_fio_inconsistent_job_line_is_still_parsed(tmp_path: Path) -> None:
    """A warning about a job names its line; the line stays parsed (its row is stored)."""
    doc = json.loads((CAPTURED / "fio/local/fio3.33_randrw_fdatasync.json").read_text())
    doc["jobs"][0]["read"]["io_bytes"] = 2 * 7196672
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc, indent=2) + "\n")
    _, res = ingest_one(p)
    assert any("inconsistent report" in w for w in res.warnings)
    assert res.lines is not None and res.lines.not_understood == 0 and res.lines.parsed == res.lines.total


def test_summary_flags_inconsistent_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = UNINDENTED.read_text().replace("359.587 ops/sec    2781 usecs/op", "359.587 ops/sec    3781 usecs/op")
    p = tmp_path / "edited.txt"
    p.write_text(text)
    assert cli.main(["ingest", "--db", str(tmp_path / "s.duckdb"), str(p)]) == 0
    out = capsys.readouterr().out
    assert "1 row(s) fail a consistency check (stored as read, column `check`):" in out
    assert f"inconsistent: {p}:7: inconsistent report: ops/sec x usecs/op = 1.3596e+06" in out


# ----------------------------------------------------------------------------- sysbench: the last line


SB_CPU = CAPTURED / "sysbench/local/sb10_cpu_time3.log"  # ends `    execution time (avg/stddev):   2.9990/0.00`


def test_sysbench_last_line_without_newline(tmp_path: Path) -> None:
    text = SB_CPU.read_text().rstrip("\n")
    p = tmp_path / "cpu.log"
    p.write_text(text)  # only the newline lost
    con, res = ingest_one(p)
    assert con.execute(
        "SELECT execution_time_per_thread_avg_s, execution_time_per_thread_stddev_s FROM sysbench_summary"
    ).fetchall() == [(2.999, 0.0)]
    assert res.lines is not None and res.lines.not_understood == 0
    assert not any("incomplete last line" in w for w in res.warnings)
    p.write_text(text[:-1])  # `2.9990/0.0`: cut inside its stddev (sysbench prints %.2f): torn, and the
    # report then lacks its last line, which the parser refuses at the line before
    with pytest.raises(parsers.ParseError, match=r"cpu\.log:29: truncated sysbench report"):
        ingest_one(p)
