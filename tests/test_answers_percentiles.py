"""pgfslab.analysis.answers.percentiles on hand-made latencies; expected values worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis.answers import percentiles

CELL = ["target", "target_label", "clients"]


def frame(**cols: list) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    return pl.DataFrame({"target": ["ext4"] * n, "target_label": ["ext4"] * n, "clients": [4] * n, **cols})


def test_exact_bands_are_percentiles_of_the_second() -> None:
    lat = frame(t_s=[1.0] * 4, latency_us=[4000.0, 1000.0, 3000.0, 2000.0])
    bands = percentiles.per_second_bands(lat, "exact", CELL)
    assert (bands.columns, bands.median) == (["p25", "p50", "p75", "p95", "p99"], "p50")
    # nearest rank of 1 2 3 4 ms: p25 1st, p50 2nd, p75 3rd, p95 and p99 4th
    assert bands.frame.select(bands.columns).row(0) == (1.0, 2.0, 3.0, 4.0, 4.0)


def test_aggregate_bands_pool_the_repeats_and_skip_empty_seconds() -> None:
    lat = frame(
        t_s=[1.0, 1.0, 2.0],
        n_tx=[2, 3, 0],
        latency_min_us=[1000.0, 500.0, 0.0],
        latency_sum_us=[3000.0, 9000.0, 0.0],
        latency_max_us=[2000.0, 5000.0, 0.0],
    )
    bands = percentiles.per_second_bands(lat, "aggregate", CELL)
    assert bands.frame["t_s"].to_list() == [1.0]
    # min 0.5 ms, mean 12000 us / 5 transactions = 2.4 ms, max 5 ms
    assert bands.frame.select("min", "mean", "max").row(0) == pytest.approx((0.5, 2.4, 5.0))
    assert bands.median == "mean"


def test_sysbench_bands_and_percentile() -> None:
    lat = frame(t_s=[1.0, 1.0, 1.0], latency_ms=[10.0, 30.0, 20.0], latency_pct=[95, 95, None])
    bands = percentiles.per_second_bands(lat, "sysbench", CELL)
    assert bands.frame.select("lowest", "median", "highest").row(0) == (10.0, 20.0, 30.0)
    assert percentiles.sysbench_percentile(frame(latency_pct=[95, 99, 95, None])) == 95


def test_run_summary_from_interval_percentiles() -> None:
    steady = pl.DataFrame(
        {"target_label": ["ext4"] * 4, "clients": [4] * 4, "latency_ms": [1.0, 3.0, 2.0, 10.0], "latency_pct": [95] * 4}
    )
    out = percentiles.run_summary(steady, "sysbench", ["target_label", "clients"], pl.DataFrame())
    assert out.select("stat", "percentile", "value", "lo", "hi", "n").row(0) == ("p95", 95.0, 2.5, 2.5, 2.5, 4)
    assert percentiles.run_summary(steady, "sysbench", ["target_label", "clients"], None, 99)["stat"][0] == "p99"


def test_summary_table_writes_bounds_as_ranges() -> None:
    summary = pl.DataFrame(
        {
            "target_label": ["ext4"] * 3,
            "clients": [4] * 3,
            "n": [100] * 3,
            "stat": ["mean", "p50", "p99"],
            "percentile": [None, 50.0, 99.0],
            "value": [1.777, 1.8, 9.0],
            "lo": [1.777, 1.5, 9.0],
            "hi": [1.777, 2.25, 9.0],
            "error_bound": [0.0, 0.4, 0.0],
            "method": ["aggregate-bounds"] * 3,
        }
    )
    table = percentiles.summary_table(summary, ["target_label", "clients"])
    assert table.columns == ["target", "clients", "transactions", "method", "mean", "p50", "p99"]
    assert table.row(0) == ("ext4", 4, 100, "aggregate-bounds", "1.78", "1.5–2.25", "9.0")
