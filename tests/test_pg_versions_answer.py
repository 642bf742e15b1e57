"""The pg_versions answer (a file-system choice across PostgreSQL majors): each major against the oldest on one
file system, each file system against the first on one major and how that ratio changed between majors,
checked by hand on small frames; and when the registry schedules the notebook."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pgfslab.analysis import registry
from pgfslab.analysis.answers import pg_versions as pv
from pgfslab.config.study import Study, load

REPO = Path(__file__).resolve().parent.parent


def runs(rows: list[tuple[str, int, float]], workload: str = "ro") -> pl.DataFrame:
    """`runs_by_major`'s frame: (file system, major, tps) per run, one cell."""
    return pl.DataFrame(
        {
            "workload": [workload] * len(rows),
            "rung": [1] * len(rows),
            "clients": [4] * len(rows),
            "fs_target": [r[0] for r in rows],
            "pg_major": [r[1] for r in rows],
            "value": [r[2] for r in rows],
            **{m: [None] * len(rows) for m in pv.MEASURES},
        },
        schema_overrides={m: pl.Float64 for m in pv.MEASURES},
    )


BASE = [100.0, 110.0, 120.0]
DOUBLE = [200.0, 220.0, 240.0]


def row(comp: pl.DataFrame, reading: str, fs: str, major: int) -> dict:
    part = comp.filter((pl.col("reading") == reading) & (pl.col("fs_target") == fs) & (pl.col("pg_major") == major))
    assert part.height == 1
    return part.row(0, named=True)


def test_fs_of_strips_only_the_suffix_of_the_targets_own_major() -> None:
    assert pv.fs_of("ext4-pg18", 18) == "ext4"
    assert pv.fs_of("ext4-pg15", 18) == "ext4-pg15"  # a name that only looks crossed
    assert pv.fs_of("mine", 18) == "mine"
    assert pv.fs_of("ext4", None) == "ext4"


def test_a_newer_major_twice_as_fast_on_one_fs_and_unchanged_on_the_other() -> None:
    rows = [("ext4", 18, v) for v in DOUBLE] + [("ext4", 15, v) for v in BASE]  # the oldest need not come first
    rows += [("xfs", 15, v) for v in BASE] + [("xfs", 18, v) for v in BASE]
    comp = pv.compare(runs(rows), ["ext4", "xfs"])
    # ext4 18 over 15: the nine pairwise ratios 200/120 ... 240/100, median 2.0; 3 against 3 allow no 95 %
    # interval, the widest there is runs from the smallest (200/120) to the largest (240/100), 90 % coverage
    r = row(comp, "major", "ext4", 18)
    assert r["reference"] == "15"
    assert r["ratio"] == pytest.approx(2.0)
    assert (r["lo"], r["hi"]) == pytest.approx((200 / 120, 240 / 100))
    assert r["coverage"] == pytest.approx(0.9)
    assert r["finding"] == "faster (90 % interval)"
    assert row(comp, "major", "ext4", 15)["finding"] == "the reference major"
    # xfs unchanged: 1.0 [100/120, 120/100], half-width (1.2 - 0.8333) / 2 = 18 %
    assert row(comp, "major", "xfs", 18)["finding"] == "no difference resolved at ±18 % (90 % interval)"
    # xfs against ext4: the same on 15, half as fast on 18, so its ratio halved between the majors
    assert row(comp, "fs", "xfs", 15)["ratio"] == pytest.approx(1.0)
    on18 = row(comp, "fs", "xfs", 18)
    assert on18["reference"] == "ext4"
    assert on18["ratio"] == pytest.approx(0.5)
    assert on18["finding"] == "slower (90 % interval)"
    assert on18["change"] == pytest.approx(0.5)
    # every resampled ratio on 18 lies in [100/240, 120/200] and on 15 in [100/120, 120/100]: the change's
    # interval cannot reach past 0.6 / 0.8333 = 0.72
    assert on18["change_hi"] <= 0.6 / (100 / 120) + 1e-9
    assert on18["change_finding"].startswith("changed: smaller")
    assert row(comp, "fs", "ext4", 18)["finding"] == "the reference file system"
    assert row(comp, "fs", "xfs", 15)["change"] is None  # the oldest major is where the change is measured from


def test_too_few_runs_are_said_not_hidden() -> None:
    rows = [("ext4", 15, v) for v in BASE] + [("ext4", 17, 150.0)]
    comp = pv.compare(runs(rows), ["ext4"])
    assert row(comp, "major", "ext4", 17)["finding"] == "not compared: 1 run(s) against 3 on 15"
    assert row(comp, "major", "ext4", 17)["ratio"] is None


def test_the_summary_names_each_fs_with_its_interval() -> None:
    rows = [("ext4", 15, v) for v in BASE] + [("ext4", 18, v) for v in DOUBLE]
    rows += [("xfs", 15, v) for v in BASE] + [("xfs", 18, v) for v in BASE]
    st = Study.from_dict(load(REPO / "config" / "pg-versions.yaml"))
    text = pv.summary(pv.compare(runs(rows), ["ext4", "xfs"]), st)
    assert (
        "PostgreSQL 18 over 15: faster on ext4 2.00 [1.67, 2.40]; no difference resolved on xfs 1.00 [0.83, 1.20]."
        in text
    )
    assert "Against ext4, the standing changed for xfs on 18 (0.50 [" in text
    assert "90 % coverage" in text


def test_the_tables_carry_both_readings_per_row() -> None:
    rows = [("ext4", 15, v) for v in BASE] + [("ext4", 18, v) for v in DOUBLE]
    rows += [("xfs", 15, v) for v in BASE] + [("xfs", 18, v) for v in BASE]
    st = Study.from_dict(load(REPO / "config" / "pg-versions.yaml"))
    [(cell, table)] = pv.tables(pv.compare(runs(rows), ["ext4", "xfs"]), st)
    assert cell.startswith("ro (select-only), 4 clients, scale 10")
    xfs18 = table.filter((pl.col("file system") == "xfs") & (pl.col("major") == 18)).row(0, named=True)
    assert xfs18["over the oldest major"] == "1.00 [0.83, 1.20]"
    assert xfs18["over the first fs"] == "0.50 [0.42, 0.60]"
    assert xfs18["change of that ratio"].startswith("0.50 [")


def test_the_registry_schedules_the_notebook_only_across_majors() -> None:
    crossed = Study.from_dict(load(REPO / "config" / "pg-versions.yaml"))
    assert "pg_versions" in [j.name for j in registry.jobs(crossed)]
    for one_major in ("default.yaml", "aio.yaml"):
        st = Study.from_dict(load(REPO / "config" / one_major))
        assert "pg_versions" not in [j.name for j in registry.jobs(st)]
