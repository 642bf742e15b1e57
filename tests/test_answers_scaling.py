"""pgfslab.analysis.answers.scaling on hand-made runs and memory facts; expected values worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import scaling

MiB = 2**20


def runs_and_facts(applied: bool = False) -> pl.DataFrame:
    runs = pl.DataFrame(
        {
            "run_id": ["a1", "a2", "b1", "c1"],
            "target": ["ext4", "ext4", "ext4", "xfs"],
            "target_label": ["ext4", "ext4", "ext4", "xfs"],
            "fs": ["ext4", "ext4", "ext4", "xfs"],
            "workload": ["tpcb"] * 4,
            "clients": [4, 4, 4, None],
            "value": [100.0, 200.0, 50.0, 80.0],
        }
    )
    mem = pl.DataFrame(
        {
            "run_id": ["a1", "a2", "b1", "c1"],
            "dataset": ["s10", "s10", "s100", "s10"],
            "database_bytes": [10 * MiB, 12 * MiB, 1000 * MiB, 11 * MiB],
            "shared_buffers_bytes": [128 * MiB] * 4,
            "ram_bytes": [512 * MiB] * 4,
            "cgroup_limit_bytes": [256 * MiB] * 4,
            "cgroup_limit_requested_bytes": [256 * MiB] * 4,
            "cgroup_applied": [applied] * 4,
        }
    )
    return scaling.with_sizes(runs, mem)


def test_with_sizes_cells_and_ladder() -> None:
    runs = runs_and_facts()
    assert runs["cell"].to_list() == ["tpcb/c=4", "tpcb/c=4", "tpcb/c=4", "tpcb"]  # no client count: workload only
    assert runs["size_mib"].to_list() == [11.0, 11.0, 1000.0, 11.0]  # median of the target's data set
    assert scaling.is_ladder(runs)  # ext4 ran s10 and s100
    assert not scaling.is_ladder(runs.filter(pl.col("dataset") == "s10"))


def test_thresholds_and_regimes() -> None:
    runs = runs_and_facts()
    assert scaling.thresholds(runs)["cgroup_limit_bytes"] is None  # not applied
    assert scaling.thresholds(runs_and_facts(applied=True))["cgroup_limit_bytes"] == 256 * MiB
    table = scaling.scaling(runs).table.sort("target_label", "size_mib")
    assert table.select("target_label", "size_mib", "n", "median").rows() == [
        ("ext4", 11.0, 2, 150.0),
        ("ext4", 1000.0, 1, 50.0),
        ("xfs", 11.0, 1, 80.0),
    ]
    assert table["regime"].to_list() == ["fits shared_buffers", "exceeds RAM", "fits shared_buffers"]
    assert table["rel_to_smallest"].to_list() == pytest.approx([1.0, 1 / 3, 1.0])


def test_reader_tables() -> None:
    runs = runs_and_facts()
    th = scaling.threshold_table(runs)
    assert th["size"].to_list() == ["128.0 MiB", "256.0 MiB (not applied)", "512.0 MiB"]
    sets = scaling.data_sets(runs, scaling.scaling(runs).table.sort("target_label", "size_mib"))
    assert sets.select("target_label", "dataset", "size_mib", "runs", "regime").rows() == [
        ("ext4", "s10", 11.0, 2, "fits shared_buffers"),
        ("ext4", "s100", 1000.0, 1, "exceeds RAM"),  # 1000 MiB against 512 MiB of RAM (line 58)
        ("xfs", "s10", 11.0, 1, "fits shared_buffers"),
    ]  # each data set's own regime (a ladder climbs through them)
    assert scaling.data_set_table(sets).columns == ["target", "dataset", "database MiB", "runs", "regime"]
    cells = scaling.scaling(runs).table
    assert "vs smallest" in scaling.scaling_cells_table(cells, True).columns
    assert "vs smallest" not in scaling.scaling_cells_table(cells, False).columns
