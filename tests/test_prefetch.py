"""The ingest's parse-ahead thread (pgfslab.ingest.prefetch) hands over what the parser gives, in order, and
leaves every error to the ingest's own thread."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

from pgfslab.ingest import parsers
from pgfslab.ingest.prefetch import Prefetch

DATA = Path(__file__).resolve().parent / "data"
RUN = DATA / "studies" / "dirty-bytes" / "ext4.dirty-1gb.c4.r1"


def test_a_file_comes_back_as_the_parser_gives_it() -> None:
    files = [RUN / "pgbench.stdout", RUN / "meminfo.log", RUN / "pgbench.stderr"]
    with Prefetch(files, ahead=2) as ahead:
        for f in files:
            got = ahead.take(f)
            assert got is not None, f
            fmt, tables = got
            assert fmt == parsers.detect_format(f)
            want = parsers.parse(f, fmt)
            assert sorted(tables) == sorted(want)
            for name, frame in want.items():
                assert tables[name].equals(frame), (f, name)


def test_what_the_direct_loaders_read_and_what_fails_are_left_to_the_caller(tmp_path: Path) -> None:
    txlog = DATA / "captured" / "pgbench" / "built" / "pg8.4_txlog" / "pgbench_log.24464"  # read by DuckDB itself
    assert parsers.detect_format(txlog) == "pgbench-txlog"
    broken = tmp_path / "pgbench.stdout"
    broken.write_text((RUN / "pgbench.stdout").read_text().replace("tps = ", "tps = x", 1))
    unreadable = tmp_path / "gone.log"  # listed, then removed before the worker reads it
    files = [txlog, broken, unreadable]
    with Prefetch(files) as ahead:
        for f in files:
            got = ahead.take(f)
            if f is broken:  # parsed again by the caller, where its ParseError is raised as before
                try:
                    parsers.parse(f)
                except parsers.ParseError:
                    assert got is None
                else:
                    assert got is not None
            else:
                assert got is None, f


def test_files_passed_over_are_let_go_and_the_rest_still_read_ahead(tmp_path: Path) -> None:
    files = []
    for i in range(6):
        p = tmp_path / f"r{i}" / "meminfo.log"
        p.parent.mkdir()
        shutil.copy(RUN / "meminfo.log", p)
        files.append(p)
    with Prefetch(files, ahead=2) as ahead:
        ahead.take(files[3])  # 0-2 never taken (a left-out run's files); 3 itself may not be parsed yet
        for f in files[4:]:  # read ahead again from there
            got = ahead.take(f)
            assert got is not None and isinstance(got[1]["meminfo"], pl.DataFrame), f
