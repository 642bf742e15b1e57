"""The lab's statistics (tested against scipy, hand-worked cases and published outputs).

Cells are all repeats of one configuration (target x workload x clients). Repeats are the unit
of comparison: per-second samples within a run are autocorrelated and are not independent.

`from pgfslab.analysis import stats` gives the whole API; the code lives in small modules:

* here: Mann-Whitney p, compare_to_baseline, fixed warm-up trim;
* `cells`: cell summaries; `median_ci`: the median's order-statistic interval (benchstat's);
* `utest`: the Mann-Whitney U test and its exact null distribution; `adjust`: p-value adjustment;
* `summary`, `compare`: benchstat-style comparison (centers, U test, geomean); `benchstat_text`: its text;
* `power`: the shift a U test could detect; `blocked`: tests stratified by block;
* `latency`: latency percentiles, exact or bounded (pgbench aggregates, sysbench histograms);
* `series`: autocorrelation-aware CIs, MSER-5 warm-up detection, checkpoint attribution;
* `runs`: throughput stability (variance tables and tests), goodput;
* `storage`: compression ratios and page-level estimates, throughput-vs-size scaling.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from pgfslab.analysis.stats.adjust import adjust_pvalues
from pgfslab.analysis.stats.benchstat_text import format_benchstat
from pgfslab.analysis.stats.cells import cell_summary
from pgfslab.analysis.stats.compare import benchstat, benchstat_grid
from pgfslab.analysis.stats.latency import (
    PERCENTILES,
    aggregate_latency_summary,
    histogram_percentiles,
    latency_percentiles,
    sysbench_bucket_bounds,
)
from pgfslab.analysis.stats.median_ci import median_ci_ranks, quantile_ci_orders
from pgfslab.analysis.stats.runs import goodput, stability_table, variance_comparison, variance_ratio, variance_test
from pgfslab.analysis.stats.series import (
    MeanCI,
    apply_steady_state,
    autocorrelation,
    checkpoint_attribution,
    checkpoint_windows_from_log,
    circular_block_bootstrap_means,
    detect_steady_state,
    effective_sample_size,
    mean_ci_autocorr,
    mser_truncation,
    politis_white_block_length,
    run_mean_table,
)
from pgfslab.analysis.stats.storage import (
    Scaling,
    bytes_per_size_unit_from,
    compression_exprs,
    compression_ratio,
    memory_thresholds,
    page_compression_estimate,
    scaling_table,
)
from pgfslab.analysis.stats.summary import Summary, median_summary, pct_range, v1_summary
from pgfslab.analysis.stats.utest import UTestResult, utest, utest_min_p


def mann_whitney_p(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> float:
    """Two-sided Mann-Whitney U p-value as benchstat computes it (`utest.utest`): exact up to
    50 per side without ties and 25 with ties (conditional on the ties), else the normal
    approximation with tie and continuity corrections. Without ties and for n < 8 this equals
    scipy's default; scipy would switch to the normal approximation from n = 8 and ignore ties in
    its exact method. NaN for an empty sample; 1 when all values are equal."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    return float(utest(a, b).p)


# the smallest two-sided p a rank test can give for these sample sizes (2 / C(n_a + n_b, n_a))
min_possible_p = utest_min_p


def compare_to_baseline(
    df: pl.DataFrame, value: str, cell: list[str], group: str, baseline: str, alpha: float = 0.05
) -> pl.DataFrame:
    """For each cell, each `group` level vs `baseline`: medians, delta %, Mann-Whitney p, verdict.

    `significant` is False (shown as `~`) where p >= alpha or where the sample sizes cannot reach
    alpha at all (`reachable` False) — the benchstat convention, with the reason kept.
    """
    rows = []
    for key, part in df.filter(pl.col(value).is_not_null()).group_by(cell, maintain_order=True):
        base = part.filter(pl.col(group) == baseline)[value].to_numpy()
        for other in part[group].unique(maintain_order=True).to_list():
            if other == baseline:
                continue
            cand = part.filter(pl.col(group) == other)[value].to_numpy()
            if len(base) == 0 or len(cand) == 0:
                continue
            p = mann_whitney_p(base, cand)
            reachable = min_possible_p(len(base), len(cand)) < alpha
            mb, mc = float(np.median(base)), float(np.median(cand))
            rows.append(
                {
                    **dict(zip(cell, key)),
                    "baseline": baseline,
                    group: other,
                    "n_baseline": len(base),
                    "n": len(cand),
                    "median_baseline": mb,
                    "median": mc,
                    "delta_pct": 100.0 * (mc - mb) / mb if mb else math.nan,
                    "p": p,
                    "reachable": reachable,
                    "significant": bool(reachable and p < alpha),
                }
            )
    return pl.DataFrame(rows)


def trim_warmup(df: pl.DataFrame, trim_s: float, time: str = "t_s") -> pl.DataFrame:
    """Drop the first `trim_s` seconds of every run (fixed trim; recorded by the caller, or use
    `apply_steady_state(method="fixed")`, which records `trim_s`/`trim_method` columns; MSER-5 per run
    with `apply_steady_state()`)."""
    return df.filter(pl.col(time) > trim_s)


__all__ = [
    "PERCENTILES",
    "MeanCI",
    "Scaling",
    "Summary",
    "UTestResult",
    "adjust_pvalues",
    "aggregate_latency_summary",
    "apply_steady_state",
    "autocorrelation",
    "benchstat",
    "benchstat_grid",
    "bytes_per_size_unit_from",
    "cell_summary",
    "checkpoint_attribution",
    "checkpoint_windows_from_log",
    "circular_block_bootstrap_means",
    "compare_to_baseline",
    "compression_exprs",
    "compression_ratio",
    "detect_steady_state",
    "effective_sample_size",
    "format_benchstat",
    "goodput",
    "histogram_percentiles",
    "latency_percentiles",
    "mann_whitney_p",
    "mean_ci_autocorr",
    "median_ci_ranks",
    "median_summary",
    "memory_thresholds",
    "min_possible_p",
    "mser_truncation",
    "page_compression_estimate",
    "pct_range",
    "politis_white_block_length",
    "quantile_ci_orders",
    "run_mean_table",
    "scaling_table",
    "stability_table",
    "sysbench_bucket_bounds",
    "trim_warmup",
    "utest",
    "utest_min_p",
    "v1_summary",
    "variance_comparison",
    "variance_ratio",
    "variance_test",
]
