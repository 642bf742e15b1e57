"""pgfslab.analysis.answers.sysbench_qps on hand-made sysbench report lines; expected values by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import sysbench_qps as sq


def lines(run: str, target: str, clients: int, repeat: int, tps: list[float]) -> list[dict]:
    # every second reads 14x, writes 4x and other 2x the transactions (oltp_read_write's mix)
    return [
        {
            "run_id": run, "target": target, "target_label": target, "workload": "rw", "clients": clients,
            "repeat": repeat, "t_s": float(t), "tps": x, "qps": 20 * x, "qps_read": 14 * x, "qps_write": 4 * x,
            "qps_other": 2 * x,
        }
        for t, x in enumerate(tps, start=1)
    ]  # fmt: skip


def frame() -> pl.DataFrame:
    rows = (
        lines("a1", "ext4-ff100", 64, 1, [1.0, 100, 110, 90, 100])  # t=1 is dropped (trim 1 s)
        + lines("a2", "ext4-ff100", 64, 2, [5.0, 200, 220, 180, 200])
        + lines("a3", "ext4-ff100", 64, 3, [5.0, 300, 300, 300, 300])
        + lines("b1", "ext4-ff70", 64, 1, [5.0, 50, 70, 30, 50])
        + lines("c1", "ext4-ff100", 1, 1, [5.0, 10, 10, 12, 8])
    )
    return pl.DataFrame(rows)


def test_per_run_average_and_variance_after_the_trim() -> None:
    runs = sq.per_run(frame(), trim_s=1.0)
    a1 = runs.filter(pl.col("run_id") == "a1").row(0, named=True)
    # 100, 110, 90, 100: mean 100, squared deviations 0 + 100 + 100 + 0 = 200, / (4 - 1)
    assert (a1["n"], a1["tps_avg"], a1["tps_var"]) == (4, 100.0, pytest.approx(200 / 3))
    assert (a1["qps_avg"], a1["qps_read_avg"], a1["qps_write_avg"], a1["qps_other_avg"]) == (2000, 1400, 400, 200)
    assert runs.filter(pl.col("run_id") == "a3")["tps_var"].to_list() == [0.0]


def test_representative_run_is_the_cells_median() -> None:
    runs = sq.per_run(frame(), trim_s=1.0)
    shown = sq.representative_runs(runs)
    # ext4-ff100 at 64 threads: averages 100 (a1), 200 (a2), 300 (a3): the median is a2; single runs stand alone
    assert dict(zip(shown["run_id"], shown["clients"])) == {"c1": 1, "a2": 64, "b1": 64}
    two = runs.filter(pl.col("run_id") != "a3")  # 100 and 200: the lower middle one
    assert "a1" in sq.representative_runs(two)["run_id"].to_list()


def test_series_in_long_form() -> None:
    s = sq.series(frame(), pl.Series(["b1"]))
    assert s.height == 5 * 4 and set(s["series"]) == set(sq.SERIES.values())
    at2 = dict(s.filter(pl.col("t_s") == 2.0).select("series", "qps").iter_rows())
    assert at2 == {"QPS (total)": 1000.0, "qps: read": 700.0, "qps: write": 200.0, "qps: other": 100.0}


def test_whitepaper_table() -> None:
    runs = sq.per_run(frame(), trim_s=1.0)
    t = sq.whitepaper_table(runs, ["ext4-ff70", "ext4-ff100"])
    assert t.columns == ["target", "1 thr avg", "1 thr σ²", "64 thr avg", "64 thr σ²"]
    assert t["target"].to_list() == ["ext4-ff70", "ext4-ff100"]  # the config's order
    ff70, ff100 = t.row(0, named=True), t.row(1, named=True)
    # b1: 50, 70, 30, 50 -> mean 50, variance (0 + 400 + 400 + 0) / 3; no 1-thread run
    assert ff70["64 thr avg"] == 50.0 and ff70["64 thr σ²"] == pytest.approx(800 / 3) and ff70["1 thr avg"] is None
    # 64 threads: medians over a1, a2, a3 of averages (100, 200, 300) and variances (200/3, 800/3, 0)
    assert ff100["64 thr avg"] == 200.0 and ff100["64 thr σ²"] == pytest.approx(200 / 3)
    # 1 thread: 10, 10, 12, 8 -> mean 10, variance 8 / 3
    assert ff100["1 thr avg"] == 10.0 and ff100["1 thr σ²"] == pytest.approx(8 / 3)
    counts = sq.runs_per_cell(runs)
    assert counts.rows() == [(1, 1, 1), (64, 1, 3)]
