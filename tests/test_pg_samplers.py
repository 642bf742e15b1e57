"""The PostgreSQL samplers (pg_stat_io, pg_aios) on output recorded from real PostgreSQL 17 and 18 servers
(tests/data/captured/pgstat/, ORIGINS.md): pg_stat_io (16+), pg_aios (18) and pgstat.csv read from the views
17 and 18 moved its counters to; the queries each server version gets; the writer's lines read back."""

from __future__ import annotations

import os
import pwd
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from pgfslab.host import pg_install, pg_probe, pg_stats, postgres
from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import ParseError
from pgfslab.run import pgstat_format, sampler

CAPTURED = Path(__file__).resolve().parent / "data" / "captured" / "pgstat"
KEY = ["backend_type", "object", "context"]


def _io(major: int) -> pl.DataFrame:
    path = CAPTURED / f"pg{major}" / "pgstat_io.csv"
    assert parsers.detect_format(path) == "pgstat-io"
    out = parsers.parse(path)
    assert "_warnings" not in out
    return out["pgstat_io"]


@pytest.mark.parametrize("major", [17, 18])
def test_pg_stat_io_samples_are_whole_views_with_cumulative_counters(major):
    df = _io(major)
    per_sample = df.group_by("ts").agg(pl.len(), pl.struct(KEY).n_unique().alias("keys"))
    assert per_sample.height >= 5
    # every sample is the whole view: the same rows, one time stamp for all of them
    assert per_sample["len"].n_unique() == 1 and (per_sample["len"] == per_sample["keys"]).all()
    counters = [c for c in pgstat_format.IO_COUNTERS]
    grown = df.sort("ts").group_by(KEY).agg([(pl.col(c).diff().drop_nulls() >= 0).all().alias(c) for c in counters])
    assert all(grown[c].all() for c in counters), "a cumulative counter went down between samples"
    # the view's NULLs stay null (an operation this combination never does), not zero
    bulkread = df.filter((pl.col("backend_type") == "client backend") & (pl.col("context") == "bulkread"))
    assert bulkread["extends"].is_null().all() and bulkread["reads"].is_not_null().all()
    scans = df.filter((pl.col("backend_type") == "client backend") & (pl.col("object") == "relation"))
    assert scans["reads"].max() > 0 and scans["read_time"].max() > 0  # the scans read, timed (track_io_timing)


def test_bytes_are_blocks_before_18_and_may_combine_in_18():
    io17, io18 = _io(17), _io(18)
    rel17 = io17.filter(pl.col("reads") > 0)
    assert (rel17["read_bytes"] == rel17["reads"] * 8192).all()  # 17: reads x op_bytes
    assert "wal" not in io17["object"].unique().to_list()
    rel18 = io18.filter((pl.col("object") == "relation") & (pl.col("reads") > 0))
    assert (rel18["read_bytes"] >= rel18["reads"] * 8192).all() and (rel18["read_bytes"] % 8192 == 0).all()
    assert (rel18["read_bytes"] > rel18["reads"] * 8192).any()  # 18 combined reads (io_combine_limit)
    wal = io18.filter((pl.col("object") == "wal") & (pl.col("backend_type") == "walwriter"))
    assert wal.height > 0 and wal["writes"].max() > 0


def test_pg_aios_sums_the_handles_in_use():
    path = CAPTURED / "pg18" / "pg_aios.csv"
    assert parsers.detect_format(path) == "pg-aios"
    df = parsers.parse(path)["pg_aios"]
    states = [s.lower() for s in pg_stats.AIOS_STATES]
    assert (df.select(pl.sum_horizontal(states)).to_series() == df["handles"]).all()
    # a handle handed out has no operation yet (`invalid`): every other one reads or writes
    assert (df["readv"] + df["writev"] == df["handles"] - df["handed_out"]).all()
    assert (df["bytes"] % 8192 == 0).all() and df["handles"].max() > 0
    assert df["ts"].is_sorted() and str(df["ts"].dtype) == "Datetime(time_unit='us', time_zone='UTC')"


@pytest.mark.parametrize("major", [17, 18])
def test_pgstat_csv_from_the_views_17_and_18_moved_counters_to(major):
    df = parsers.parse(CAPTURED / f"pg{major}" / "pgstat.csv")["pgstat"]
    assert df.height >= 5
    for c in ("buffers_backend", "buffers_alloc", "blks_read", "wal_write", "wal_sync"):
        assert df[c].is_sorted(), c  # cumulative
    assert df["wal_write"].max() > 0 and df["buffers_alloc"].max() > 0
    if major == 18:  # from pg_stat_io's wal rows, timed (track_wal_io_timing on)
        assert df["wal_write_time"].max() > 0


def test_each_server_version_gets_its_query():
    columns = sampler.pgstat_columns(2)
    assert "pg_stat_checkpointer" not in sampler.pgstat_sql(columns, 160000)
    sql17 = sampler.pgstat_sql(columns, 170000)
    assert "k.num_timed" in sql17 and "w.wal_write" in sql17 and "object = 'wal'" not in sql17
    sql18 = sampler.pgstat_sql(columns, 180006)
    assert "object = 'wal'" in sql18 and "w.wal_write," not in sql18
    assert pg_stats.stat_io_sql(150000) is None and "op_bytes" in (pg_stats.stat_io_sql(170000) or "")
    assert "op_bytes" not in (pg_stats.stat_io_sql(180000) or "x op_bytes")
    assert pg_stats.aios_sql(170000) is None and "pg_aios" in (pg_stats.aios_sql(180000) or "")


def test_written_lines_read_back_with_nulls(tmp_path):
    row = (1795746523.3129, "client backend", "relation", "bulkread", 9728, 79691776, 0, 0, 0, None, None)
    row += (18, 0, 9696, None, 38.1289, 0.0, 0.0, None, None)
    p = tmp_path / "pgstat_io.csv"
    p.write_text(
        pgstat_format.IO_HEADER + "\n" + ",".join(pgstat_format.IO_COLUMNS) + "\n" + sampler.io_line(row) + "\n"
    )
    got = parsers.parse(p)["pgstat_io"].row(0, named=True)
    assert got["reads"] == 9728 and got["extends"] is None and got["read_time"] == pytest.approx(38.129)
    assert got["fsync_time"] is None and got["backend_type"] == "client backend"


def test_damage_is_refused_with_its_line(tmp_path):
    lines = (CAPTURED / "pg18" / "pgstat_io.csv").read_text().splitlines()
    bad = tmp_path / "pgstat_io.csv"
    bad.write_text("\n".join([*lines[:5], lines[5].replace(",0,", ",x,", 1), *lines[6:8]]) + "\n")
    with pytest.raises(ParseError, match=r"pgstat_io\.csv:6: field"):
        parsers.parse(bad)
    torn = tmp_path / "pg_aios.csv"
    text = (CAPTURED / "pg18" / "pg_aios.csv").read_text()
    torn.write_text(text[: len(text) - 8])  # cut inside the last line
    out = parsers.parse(torn)
    assert out["pg_aios"].height == len(text.splitlines()) - 3 and "_warnings" in out


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a throw-away cluster as the postgres user)")
@pytest.mark.parametrize("major", [15, 18])
def test_the_sampler_and_facts_on_a_real_server(major, tmp_path):
    """A throw-away cluster of the major's build (15: Debian's; 18: the pinned wheel): the facts before a run read
    the counters from where that major keeps them, and the sampler writes the files that major has."""
    pw = pwd.getpwnam("postgres")
    build = pg_install.build_for(major, None)
    args = postgres.checksums_args(major, False)
    with tempfile.TemporaryDirectory(prefix="pgfs-test-") as tmp:  # pytest's tmp_path is not the server's to reach
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        port = pg_probe.free_port()
        with postgres.running(Path(tmp) / "pgdata", port, build.bindir, "postgres", init=True, initdb_args=args) as cl:
            facts = cl.facts()
            with sampler.PgStatSampler(cl.conninfo, tmp_path, 4.0) as smp:
                cl.query("CREATE TABLE t AS SELECT generate_series(1, 20000) AS i")
                cl.query("CHECKPOINT")
                time.sleep(1.2)
    assert facts["server_version_num"] // 10000 == major and facts["data_checksums"] is False
    assert set(facts["bgwriter"]) == {
        "checkpoints_timed",
        "checkpoints_req",
        "buffers_checkpoint",
        "buffers_clean",
        "buffers_backend",
    }
    assert smp.error is None and smp.samples >= 3
    pgstat = parsers.parse(tmp_path / "pgstat.csv")["pgstat"]
    assert pgstat["checkpoints_req"].max() >= 1  # the CHECKPOINT, counted where that major counts it
    assert (tmp_path / "pgstat_io.csv").exists() == (major >= 16)
    assert (tmp_path / "pg_aios.csv").exists() == (major >= 18)
    if major >= 18:
        assert parsers.parse(tmp_path / "pgstat_io.csv")["pgstat_io"].height >= smp.io_samples * 30
