"""pgfslab.analysis.answers.micro on hand-made micro-benchmark repeats; expected values worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import micro


def ops() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "benchmark": ["create"] * 6,
            "target": ["ext4"] * 3 + ["xfs"] * 3,
            "target_label": ["ext4"] * 3 + ["xfs (label)"] * 3,
            "run_id": ["e1", "e2", "e3", "x1", "x2", "x3"],
            "ops_per_s": [100.0, 120.0, 110.0, 200.0, 190.0, 210.0],
            "avg_ms": [1.0, 2.0, 3.0, 0.5, 0.4, 0.6],
            "p50_ms": [0.9, 1.9, 2.9, 0.4, 0.3, 0.5],
            "p95_ms": [2.0, 3.0, 4.0, 1.0, 0.9, 1.1],
            "p99_ms": [3.0, 4.0, 5.0, 1.5, 1.4, 1.6],
            "max_ms": [9.0, 7.0, 8.0, 2.0, 3.0, 4.0],
            "errors": [0, 1, 2, 0, 0, 0],
        }
    )


def test_baseline_label() -> None:
    assert micro.baseline_label(ops(), "xfs") == "xfs (label)"
    assert micro.baseline_label(ops(), "btrfs") == "ext4"  # did not run: the first target's


def test_per_operation() -> None:
    per = micro.per_operation(ops())
    ext4 = per.row(0, named=True)
    assert (ext4["n"], ext4["ops_med"], ext4["ops_min"], ext4["ops_max"]) == (3, 110.0, 100.0, 120.0)
    assert (ext4["avg_ms"], ext4["max_ms"], ext4["errors"]) == (2.0, 8.0, 3)
    assert per["ops_med"].to_list() == [110.0, 200.0]


def test_latencies_from_the_printed_summary() -> None:
    lat = micro.latencies(micro.per_operation(ops()), pl.DataFrame())
    assert lat["stat"].to_list() == ["mean", "mean", "p50", "p50", "p95", "p95", "p99", "p99", "max", "max"]
    ext4 = dict(lat.filter(pl.col("target_label") == "ext4").select("stat", "ms").iter_rows())
    assert ext4 == {"mean": 2.0, "p50": 1.9, "p95": 3.0, "p99": 4.0, "max": 8.0}


def test_latencies_exact_from_every_operation() -> None:
    op_lat = pl.DataFrame(
        {
            "benchmark": ["create"] * 8,
            "target_label": ["ext4"] * 8,
            "run_id": ["e1"] * 4 + ["e2"] * 4,
            "latency_ms": [4.0, 1.0, 3.0, 2.0, 2.0, 4.0, 6.0, 8.0],
        }
    )
    lat = micro.latencies(micro.per_operation(ops()), op_lat)
    got = dict(lat.select("stat", "ms").iter_rows())
    # e1 sorted 1 2 3 4: mean 2.5, nearest-rank p50 = 2nd = 2, p95 = p99 = 4th = 4, max 4
    # e2 sorted 2 4 6 8: mean 5, p50 4, p95 = p99 = 8, max 8; medians over the two repeats:
    assert got == {"mean": 3.75, "p50": 3.0, "p95": 6.0, "p99": 6.0, "max": 6.0}


def test_tables_and_summary() -> None:
    per = micro.per_operation(ops())
    lat = micro.latencies(per, pl.DataFrame())
    wide = micro.with_latencies(per, lat)
    assert "avg_ms" not in wide.columns and wide["mean_ms"].to_list() == [2.0, 0.5]
    table = micro.operation_table(wide)
    assert table.columns == [
        "benchmark",
        "target",
        "n",
        "ops/s",
        "timed ops/s",
        "mean ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "errors",
    ]
    grid = pl.DataFrame(
        {
            "benchmark": ["create", "geomean"],
            "candidate": ["xfs (label)", "xfs (label)"],
            "center_baseline": [110.0, 110.0],
            "pm_baseline": [0.09, None],
            "center_candidate": [200.0, 200.0],
            "pm_candidate": [0.05, None],
            "delta": ["+81.82%", "+81.82%"],
            "delta_pct": [81.8, 81.8],
            "p": [0.1, None],
            "p_adjusted": [0.1, None],
            "n_baseline": [3, None],
            "n_candidate": [3, None],
            "significant": [False, None],
        }
    )
    bs = micro.benchstat_table(grid, "ext4")
    assert bs.columns == ["name", "target", "ext4 ops/s", "ops/s", "delta", "test"]
    assert bs["ext4 ops/s"].to_list() == ["110.0 ± 9%", "110.0"]
    assert bs["test"].to_list() == ["p=0.100 n=3+3", ""]
    out = micro.summary(wide, grid)
    assert out.height == 2  # the geomean row is not a benchmark
    assert out.filter(pl.col("target_label") == "xfs (label)")["delta_pct"].to_list() == [81.8]
    assert out.filter(pl.col("target_label") == "ext4")["p"].to_list() == [None]


# Seed 003's per-run tables (ops/sec(cum) and avg(ms) of each of its three runs per file system), and the
# rows of its benchstat table those runs gave, copied from the seed (../shared/seeds/003_afbf3310ae0d6dec.txt).
SEED3_RUNS = {
    "create_empty": (([644.1, 666.9, 704.6], [1.6, 1.5, 1.4]), ([1044.0, 1108.1, 1198.1], [1.0, 0.9, 0.8])),
    "delete_10k_2MB": (([5657.3, 4988.0, 5275.4], [0.2, 0.2, 0.2]), ([2770.2, 1989.1, 2507.4], [0.4, 0.5, 0.4])),
    "delete_small_dir_2MB": (
        ([66.7, 58.1, 55.8], [0.05900, 0.07445, 0.06068]),
        ([97.9, 80.3, 76.0], [0.17491, 0.13797, 0.13496]),
    ),
    "delete_large_dir_2MB": (
        ([122.9, 100.5, 97.6], [0.02843, 0.03307, 0.03700]),
        ([117.7, 117.6, 117.0], [0.09066, 0.12892, 0.14590]),
    ),
}
SEED3_ROWS = {
    "fsbench/create_empty": "672 ± 5% 1117 ± 7% ~ (p=0.100 n=3+3)",
    "fsbench/delete_10k_2MB": "5.31k ± 7% 2.42k ±18% ~ (p=0.100 n=3+3)",
    "fsbench/delete_small_dir_2MB": "15.6k ±14% 6.8k ±16% ~ (p=0.100 n=3+3)",
    "fsbench/delete_large_dir_2MB": "30.8k ±14% 8.5k ±29% ~ (p=0.100 n=3+3)",
}


def seed3_ops() -> pl.DataFrame:
    rows = [
        {
            "benchmark": bench,
            "target": fs,
            "target_label": fs,
            "run_id": f"{bench}.{fs}.{i}",
            "ops_per_s": rate,
            "avg_ms": avg,
        }
        for bench, sides in SEED3_RUNS.items()
        for fs, (rates, avgs) in zip(("ext4", "zfs"), sides)
        for i, (rate, avg) in enumerate(zip(rates, avgs))
    ]
    return pl.DataFrame(rows)


def test_timed_rates_are_the_loop_rate_or_one_over_the_mean_latency() -> None:
    got = micro.timed_rates(seed3_ops(), pl.DataFrame())
    rate = dict(zip(got["run_id"], got["timed_ops_per_s"]))
    assert rate["create_empty.ext4.0"] == 644.1  # the whole loop is timed: the printed ops/s
    assert rate["delete_10k_2MB.zfs.1"] == 1989.1
    assert rate["delete_small_dir_2MB.ext4.0"] == pytest.approx(1000 / 0.05900)  # 16,949 deletes/s, not 66.7
    # exact from every timed operation when logged: 3 ops of 0.5, 1.0 and 1.5 ms = 3 / 3 ms = 1000/s
    op_lat = pl.DataFrame({"run_id": ["delete_large_dir_2MB.zfs.2"] * 3, "latency_ms": [0.5, 1.0, 1.5]})
    exact = micro.timed_rates(seed3_ops(), op_lat).filter(pl.col("run_id") == "delete_large_dir_2MB.zfs.2")
    assert exact["timed_ops_per_s"].to_list() == [pytest.approx(1000.0)]
    zero = seed3_ops().with_columns(pl.lit(0.0).alias("avg_ms"))  # printed 0.0: below resolution, unknown
    assert (
        micro.timed_rates(zero, pl.DataFrame())
        .filter(pl.col("benchmark") == "delete_small_dir_2MB")["timed_ops_per_s"]
        .null_count()
        == 6
    )


def test_seed_benchstat_reproduces_seed_003s_table() -> None:
    text = micro.seed_benchstat(micro.timed_rates(seed3_ops(), pl.DataFrame()), "ext4")
    assert list(text) == ["zfs"]
    lines = text["zfs"].splitlines()
    assert lines[0].split() == ["name", "ext4", "ops/sec", "zfs", "ops/sec", "delta"]
    rows = {ln.split()[0]: " ".join(ln.split()[1:]) for ln in lines[1:] if ln.startswith("fsbench/")}
    assert {k: v.removesuffix(" ¹") for k, v in rows.items()} == SEED3_ROWS
    # ours adds benchstat's footnote on why 3+3 can never be significant
    assert lines[-1].startswith("¹ need >= 4 samples to detect a difference at alpha level 0.05")
    assert not any(ln.startswith("geomean") for ln in lines)  # the seed's table has no geomean row
