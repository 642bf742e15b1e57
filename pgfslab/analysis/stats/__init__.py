"""The lab's statistics (tested against scipy, hand-worked cases and published outputs).

Cells are all repeats of one configuration (target x workload x clients). Repeats are the unit
of comparison: per-second samples within a run are autocorrelated and are not independent.

`from pgfslab.analysis import stats` gives the whole API; the code lives in small modules:

* `baseline`: each group against a baseline per cell (medians, U test p);
* `cells`: cell summaries; `median_ci`: the median's order-statistic interval (benchstat's);
* `utest`: the Mann-Whitney U test and its exact null distribution; `adjust`: p-value adjustment;
* `summary`, `compare`: benchstat-style comparison (centers, U test, geomean); `benchstat_text`: its text;
* `power`: the shift a U test could detect; `signed_rank`: the paired (by round) test, its interval and power;
* `blocked`: tests stratified by block;
* `latency`: latency percentiles, exact or bounded (pgbench aggregates, sysbench histograms);
* `series`: autocorrelation-aware CIs, warm-up trim and MSER-5 detection, checkpoint attribution;
* `runs`: throughput stability (variance tables and tests), goodput;
* `storage`: compression ratios and page-level estimates, throughput-vs-size scaling.
"""

from __future__ import annotations

from pgfslab.analysis.stats.adjust import adjust_pvalues
from pgfslab.analysis.stats.baseline import compare_to_baseline
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
    ar1_phi,
    autocorrelation,
    checkpoint_attribution,
    circular_block_bootstrap_means,
    detect_steady_state,
    effective_sample_size,
    mean_ci_autocorr,
    mser_null_rate,
    mser_truncation,
    poisson_binomial_sf,
    politis_white_block_length,
    run_mean_table,
    trim_warmup,
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
from pgfslab.analysis.stats.utest import UTestResult, mann_whitney_p, min_possible_p, utest, utest_min_p

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
    "ar1_phi",
    "mser_null_rate",
    "poisson_binomial_sf",
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
