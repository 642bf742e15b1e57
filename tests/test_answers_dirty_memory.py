"""pgfslab.analysis.answers.dirty_memory on hand-made samples and a hand-written server log."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import dirty_memory

T0 = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC: both runs' samplers start here


def logged() -> pl.DataFrame:
    """r1's server log, as `queries.checkpoint_log` gives it: a timed checkpoint 2 s .. 3 s, the shutdown one at
    3.5 s, and a timed one at 10 s that the log ended in; r2 kept no log."""
    return pl.DataFrame(
        {
            "run_id": ["r1"] * 3,
            "start_epoch": [T0 + 2, T0 + 3.5, T0 + 10],
            "end_epoch": [T0 + 3, None, None],
            "reason": ["time", "shutdown immediate", "time"],
        }
    )


def meminfo() -> pl.DataFrame:
    rows = []
    for run_id, repeat, dirty, wb in (("r1", 2, [1024, 3072], [0, 2048]), ("r2", 1, [512, 512, 2048], [0, 0, 1024])):
        for t, (d, w) in enumerate(zip(dirty, wb), start=1):
            for key, kb in (("Dirty", d), ("Writeback", w)):
                rows.append(
                    {
                        "run_id": run_id,
                        "target": "ext4" if run_id == "r1" else "xfs",
                        "target_label": "ext4" if run_id == "r1" else "xfs",
                        "workload": "tpcb",
                        "clients": 4,
                        "repeat": repeat,
                        "t_s": float(t),
                        "key": key,
                        "kb": kb,
                    }
                )
    return pl.DataFrame(rows)


def throughput() -> pl.DataFrame:  # only r1 has throughput on the samplers' clock
    return pl.DataFrame(
        {"run_id": ["r1"] * 4, "t_s": [1.0, 2.0, 3.0, 4.0], "tps": [100.0, 100.0, 40.0, 100.0], "source": ["agg"] * 4}
    )


def pgstat() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": ["r1", "r1", "r2", "r2", "r2"],
            "epoch_s": [T0 + 1, T0 + 2, T0 + 4, T0 + 5, T0 + 6],
            "checkpoints": [None, 2, None, 1, 0],
        }
    )


def windows() -> pl.DataFrame:
    return dirty_memory.checkpoint_windows(meminfo(), throughput(), logged(), {"r1": T0, "r2": T0}, pgstat())


def test_benchmark_ends() -> None:
    ends = dict(dirty_memory.benchmark_ends(meminfo(), throughput()).iter_rows())
    assert ends == {"r1": 4.0, "r2": 3.0}  # r1: its last tps sample; r2 has none: its last meminfo sample


def test_checkpoint_windows_from_log_and_pgstat() -> None:
    w = windows()
    # r1: the 2 s .. 3 s checkpoint; the shutdown one and the one at 10 s (after the benchmark's end at 4 s) dropped;
    # r2 has no log: the pg_stat sample at 5 s after which the counters grew
    assert w.select("run_id", "start_s", "end_s", "from").rows() == [
        ("r1", 2.0, 3.0, "server log"),
        ("r2", 5.0, 5.0, "pg_stat counters"),
    ]


def test_checkpoint_windows_without_any_source() -> None:
    w = dirty_memory.checkpoint_windows(meminfo(), throughput(), logged().clear(), {}, pl.DataFrame())
    assert w.height == 0 and w.schema == pl.Schema(dirty_memory.WINDOW_SCHEMA)


def test_representative_runs_take_the_median_repeat() -> None:
    heads = pl.DataFrame(
        {
            "run_id": ["a", "b", "c", "d", "e", "x"],
            "target": ["ext4", "ext4", "ext4", "xfs", "xfs", "xfs"],
            "target_label": ["ext4", "ext4", "ext4", "xfs", "xfs", "xfs"],
            "workload": ["tpcb"] * 6,
            "clients": [4] * 6,
            "value": [10.0, 30.0, 20.0, 10.0, 30.0, 99.0],
        }
    )
    rep = dirty_memory.representative_runs(heads, pl.Series(["a", "b", "c", "d", "e"]))  # x not a meminfo run
    assert dict(rep.select("target", "run_id").iter_rows()) == {"ext4": "c", "xfs": "e"}


def test_figure_data_labels_panels_and_closes_windows() -> None:
    open_window = pl.DataFrame(
        {"run_id": ["r1", "r2"], "start_s": [1.0, 2.0], "end_s": [None, 3.0], "from": ["x", "y"]}
    )
    shown, wins = dirty_memory.figure_data(meminfo(), pl.Series(["r1"]), open_window)
    assert set(shown["run_id"]) == {"r1"} and shown["MiB"].to_list() == [1.0, 0.0, 3.0, 2.0]
    assert shown["panel"].unique().to_list() == ["ext4"]
    assert wins.select("run_id", "start_s", "end_s", "panel").rows() == [("r1", 1.0, 1.0, "ext4")]


def test_per_run_by_hand() -> None:
    runs = dirty_memory.per_run(meminfo(), throughput(), windows(), pgstat())
    assert runs["run_id"].to_list() == ["r2", "r1"]  # by repeat
    r2, r1 = runs.row(0, named=True), runs.row(1, named=True)
    assert (r1["dirty_mean_mib"], r1["dirty_max_mib"], r1["writeback_max_mib"], r1["samples"]) == (2.0, 3.0, 2.0, 2)
    assert (r2["dirty_mean_mib"], r2["dirty_max_mib"], r2["writeback_max_mib"], r2["samples"]) == (1.0, 2.0, 1.0, 3)
    assert (r1["checkpoints_log"], r1["checkpoints_pgstat"], r1["tps_source"]) == (1, 2, "agg")
    assert (r2["checkpoints_log"], r2["checkpoints_pgstat"], r2["tps_source"]) == (0, 1, None)
    # r1's samples cover (0,1], (1,2], (2,3], (3,4]: only the third overlaps the 2..3 s window
    assert (r1["n"], r1["n_in"], r1["time_share"]) == (4, 1, 0.25)
    # mean 85: squares 225, 225, 2025, 225; the window holds 2025 of 2700
    assert r1["variance_share"] == pytest.approx(0.75)
    assert (r1["mean_in"], r1["mean_out"]) == (40.0, 100.0) and r1["delta_pct"] == pytest.approx(-60.0)
    assert r2["n"] is None and r2["variance_share"] is None


def test_per_run_without_pgstat_or_throughput() -> None:
    runs = dirty_memory.per_run(meminfo(), pl.DataFrame(), windows(), pl.DataFrame())
    assert runs["checkpoints_pgstat"].to_list() == [None, None]
    assert runs["tps_source"].to_list() == [None, None] and runs["n"].to_list() == [None, None]


def test_per_cell_and_table() -> None:
    runs = pl.DataFrame(
        {
            "target_label": ["ext4", "ext4", "ext4"],
            "workload": ["tpcb"] * 3,
            "clients": [4] * 3,
            "dirty_mean_mib": [1.0, 2.0, 6.0],
            "dirty_max_mib": [5.0, 9.0, 7.0],
            "writeback_max_mib": [1.0, 1.0, 4.0],
            "checkpoints_log": [1, 0, 2],
            "checkpoints_pgstat": [2, 1, 2],
            "time_share": [0.1, 0.2, None],
            "variance_share": [0.5, 0.3, None],
            "delta_pct": [-10.0, -30.0, None],
        }
    )
    cell = dirty_memory.per_cell(runs).row(0, named=True)
    assert cell["runs"] == 3 and cell["dirty_mean_mib"] == 2.0 and cell["dirty_max_mib"] == 7.0
    assert (cell["checkpoints_log"], cell["checkpoints_pgstat"]) == (3, 5)
    assert cell["time_share"] == pytest.approx(0.15) and cell["delta_pct"] == -20.0
    table = dirty_memory.cell_table(dirty_memory.per_cell(runs))
    assert table["time in ckpt %"][0] == pytest.approx(15.0) and table["tps var in ckpt %"][0] == pytest.approx(40.0)


def test_throughput_figure_data_puts_cells_side_by_side_with_snapshot_marks() -> None:
    """Two cells (seed 000's dirty_background_bytes settings) become two panels; only the shown runs'
    snapshot creations are marks, at their epoch minus the run's clock origin (deletions are not)."""
    tps = pl.DataFrame(
        {
            "run_id": ["a", "a", "b", "b", "c"],
            "target_label": ["ext4"] * 5,
            "workload": ["dirty-1gb", "dirty-1gb", "dirty-32mb", "dirty-32mb", "dirty-32mb"],
            "clients": [4] * 5,
            "t_s": [1.0, 2.0, 1.0, 2.0, 1.0],
            "tps": [10.0, 12.0, 11.0, 11.0, 9.0],
        }
    )
    windows = pl.DataFrame(
        {"run_id": ["b", "c"], "start_s": [1.5, 0.5], "end_s": [None, 0.9], "from": ["server log"] * 2},
        schema=dirty_memory.WINDOW_SCHEMA,
    )
    snaps = pl.DataFrame(
        {
            "run_id": ["a", "a", "b", "c"],
            "epoch_s": [1000.5, 1001.0, 2003.25, 3000.0],
            "action": ["create", "delete", "create", "create"],
            "duration_ms": [40.0, 5.0, 41.0, 39.0],
        }
    )
    shown, wins, marks = dirty_memory.throughput_figure_data(
        tps, pl.Series(["a", "b"]), windows, snaps, {"a": 1000.0, "b": 2000.0, "c": 3000.0}
    )
    assert sorted(set(shown["panel"].to_list())) == ["ext4 · dirty-1gb", "ext4 · dirty-32mb"]
    assert shown.height == 4
    assert wins.select("run_id", "start_s", "end_s", "panel").rows() == [("b", 1.5, 1.5, "ext4 · dirty-32mb")]
    assert sorted(marks.select("run_id", "at_s", "panel").rows()) == [
        ("a", 0.5, "ext4 · dirty-1gb"),
        ("b", 3.25, "ext4 · dirty-32mb"),
    ]


def test_throughput_sums_the_threads_aggregate_logs(tmp_path) -> None:
    """pgbench -j 2 writes an aggregate log per thread (`pgbench_log.<pid>` and `.<pid>.1`): a second's
    throughput is the sum of both files' transactions in it (each alone is about half). Expected values are
    read here from the recorded files with plain string operations."""
    from pathlib import Path

    from recorded import ingest

    from pgfslab.analysis import queries

    raw = Path(__file__).parent / "data" / "studies" / "two-hosts"
    run = raw / "h2" / "ext4.tpcb.c2.r2@h2"
    db = tmp_path / "t.duckdb"
    ingest(raw, db)
    files = sorted(run.glob("pgbench_log.*"))
    assert len(files) == 2
    want: dict[float, int] = {}
    for f in files:
        for line in f.read_text().splitlines():
            start, n = line.split()[:2]
            want[float(start)] = want.get(float(start), 0) + int(n)
    got = queries.throughput_on_sampler_clock(db, "two-hosts").filter(pl.col("run_id") == run.name)
    assert got["source"].unique().to_list() == ["pgbench aggregate log"]
    assert dict(zip(got["epoch_s"].to_list(), got["tps"].to_list(), strict=True)) == want  # 1-s intervals
