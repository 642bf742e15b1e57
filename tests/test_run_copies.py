"""A run's copies of its study's parts read back as the config's typed objects (pgfslab.config.run_copies), on
run.json files the lab wrote (tests/data), and what the analysis takes from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgfslab.analysis.verdicts import facts
from pgfslab.config import run_copies
from pgfslab.errors import LabError
from pgfslab.records import run_record
from pgfslab.records.run_record import RunRecord
from pgfslab.tools.pgbench import PgbenchOptions

STUDY = Path(__file__).resolve().parent / "data" / "studies" / "wal-zfs"


def _read(run: str) -> RunRecord:
    rec, _ = run_record.read(STUDY / run / "run.json")
    return rec


def test_a_zfs_runs_copies_read_back_typed() -> None:
    rec = _read("zfs-gzip.tpcb.c1.r4")
    spec, wl = run_copies.target_spec(rec), run_copies.workload(rec)
    assert (
        spec is not None
        and spec.fs == "zfs"
        and spec.zfs == {"atime": "off", "compression": "gzip", "recordsize": "8k"}
    )
    assert wl is not None and wl.clients == (1, 4) and wl.options_as(PgbenchOptions).builtin == "tpcb-like"
    assert run_copies.os_settings(rec).drop_caches is True and run_copies.resources(rec).memory_limit_mb is None
    assert (facts.compression(rec), facts.recordsize(rec), facts.ext4_data_mode(rec)) == ("gzip", "8k", None)


def test_a_btrfs_mount_option_is_its_compression() -> None:
    rec = _read("btrfs-zlib.tpcb.c4.r1")
    assert (facts.compression(rec), facts.recordsize(rec)) == ("zlib", None)


def test_a_record_without_copies_gives_none_and_a_copy_that_does_not_build_names_the_run() -> None:
    bare = RunRecord(run_id="x.tpcb.c1.r1")
    assert run_copies.target_spec(bare) is None and run_copies.workload(bare) is None
    assert facts.compression(bare) == "none" and run_copies.resources(bare).memory_limit_mb is None
    bad = RunRecord(run_id="x.tpcb.c1.r1", target_spec={"fs": "ext4", "colour": "red"})
    with pytest.raises(LabError, match=r"run x.tpcb.c1.r1: run.json's target_spec: unknown key\(s\) colour"):
        run_copies.target_spec(bad)


def test_an_fsmicro_copy_gives_its_op_and_what_it_worked_on() -> None:
    rec = RunRecord(
        run_id="ext4.delete-small-dir.c1.r1",
        workload_spec={"tool": "fsmicro", "op": "delete_small_dir", "bg_files": 1000, "log": "aggregate"},
    )
    got = facts.fsmicro_facts(run_copies.workload(rec))
    assert (got["op"], got["kind"], got["directory_files"]) == ("delete_small_dir", "delete_in_dir", 1000)
    assert facts.fsmicro_facts(run_copies.workload(_read("zfs-gzip.tpcb.c1.r4")))["op"] is None
