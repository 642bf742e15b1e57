"""The server log's checkpoints (pgfslab.ingest.parsers.pg_log) and the `checkpoints` precondition that reads
them: a checkpoint on a slow disk can write through a whole run and complete after it, which pg_stat_bgwriter
(PostgreSQL 15 counts a checkpoint once it completes) cannot see."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl

from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import pg_log
from pgfslab.ingest.schema import create_schema

# a real run's log on the emulated disk (btrfs-hdd, ext4, 8 clients), the DETAIL line made up
LOG = """\
2026-11-28 23:04:24.402 UTC [19265] LOG:  database system is ready to accept connections
2026-11-28 23:04:24.610 UTC [19265] LOG:  checkpoint starting: immediate force wait
2026-11-28 23:04:24.748 UTC [19265] LOG:  checkpoint complete: wrote 3 buffers (0.1%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.043 s, sync=0.014 s, total=0.139 s; sync files=2, longest=0.010 s, average=0.007 s; distance=0 kB, estimate=0 kB
2026-11-28 23:04:32.397 UTC [19265] LOG:  checkpoints are occurring too frequently (8 seconds apart)
2026-11-28 23:04:32.397 UTC [19265] HINT:  Consider increasing the configuration parameter "max_wal_size".
2026-11-28 23:04:32.397 UTC [19265] LOG:  checkpoint starting: wal
2026-11-28 23:05:37.241 UTC [19265] LOG:  checkpoint complete: wrote 1184 buffers (28.9%); 0 WAL file(s) added, 1 removed, 0 recycled; write=45.480 s, sync=18.502 s, total=64.844 s; sync files=28, longest=11.240 s, average=0.661 s; distance=8138 kB, estimate=8138 kB
2026-11-28 23:05:37.264 CET [19265] LOG:  checkpoint starting: shutdown immediate
2026-11-28 23:05:40.000 +01:00 [19265] LOG:  checkpoint starting: time
"""


def test_each_checkpoint_with_its_start_end_and_phases(tmp_path: Path) -> None:
    p = tmp_path / "postgresql.log"
    p.write_text(LOG)
    assert parsers.detect_format(p) == "pg-log"
    out = pg_log.parse(p)
    ck = out["pg_checkpoints"]
    assert ck["reason"].to_list() == ["immediate force wait", "wal", "time"]
    wal = ck.row(1, named=True)
    assert wal["start_ts"] == dt.datetime(2026, 11, 28, 23, 4, 32, 397000, tzinfo=dt.UTC)
    assert wal["end_ts"] == dt.datetime(2026, 11, 28, 23, 5, 37, 241000, tzinfo=dt.UTC)
    assert (wal["buffers"], wal["write_s"], wal["sync_s"], wal["total_s"], wal["complete"]) == (
        1184,
        45.48,
        18.502,
        64.844,
        True,
    )
    # the log ended while the timed one ran (its +01:00 offset read as such): no end, not complete
    last = ck.row(2, named=True)
    assert last["start_ts"] == dt.datetime(2026, 11, 28, 22, 5, 40, tzinfo=dt.UTC) and last["complete"] is False
    assert last["end_ts"] is None
    # a zone name other than UTC is ambiguous: that line is dropped, and said
    assert out["_warnings"]["line"].to_list() == [8]
    assert "ambiguous" in out["_warnings"]["message"][0]


def test_a_complete_line_whose_start_is_before_the_log_started_total_seconds_earlier(tmp_path: Path) -> None:
    p = tmp_path / "postgresql.log"
    p.write_text(LOG.splitlines(keepends=True)[6])
    row = pg_log.parse(p)["pg_checkpoints"].row(0, named=True)
    assert row["end_ts"] - row["start_ts"] == dt.timedelta(seconds=64.844)


def test_a_run_spans_the_checkpoints_that_started_in_it_completed_or_not(tmp_path: Path) -> None:
    from pgfslab.analysis.verdicts import regime

    db = tmp_path / "s.duckdb"
    con = duckdb.connect(str(db))
    create_schema(con)
    con.execute("INSERT INTO runs (run_id, study, status) VALUES ('a', 's', 'ok'), ('b', 's', 'ok'), ('c', 't', 'ok')")
    t = dt.datetime(2026, 11, 28, 23, 4, tzinfo=dt.UTC)
    rows = [("a", "immediate force wait", True), ("a", "wal", False), ("a", "shutdown immediate", True),
            ("b", "immediate force wait", True), ("b", "time", True), ("b", "wal", True), ("c", "time", True)]  # fmt: skip
    frame = pl.DataFrame(
        {
            "run_id": [r for r, _, _ in rows],
            "start_ts": [t] * len(rows),
            "reason": [w for _, w, _ in rows],
            "complete": [c for _, _, c in rows],
        }  # fmt: skip
    )
    con.register("logged", frame)
    con.execute("INSERT INTO pg_checkpoints BY NAME SELECT * FROM logged")
    con.close()
    got = dict(regime.checkpoints_started(str(db), "s").iter_rows())
    assert got == {"a": 1, "b": 2}  # the lab's own forced checkpoint and the shutdown are not the workload's
