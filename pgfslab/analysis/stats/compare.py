"""benchstat-style comparison of two configurations over repeats: the statistics of its table (the
text is `benchstat_text.format_benchstat`).

The algorithm follows golang.org/x/perf's benchstat (package benchmath, "AssumeNothing") and the
go-moremath routines it calls, re-implemented here (no Go code copied):

* the center of a sample is its median, with a distribution-free confidence interval from order
  statistics (`quantile_ci_orders`, go-moremath `QuantileCI`: exact binomial for n <= 30, normal
  approximation with continuity correction above; an interval that would need more samples than
  there are is (-inf, +inf) and benchstat prints "± ∞");
* two samples are compared with the Mann-Whitney U test (`utest`, go-moremath `MannWhitneyUTest`):
  the exact null distribution for n <= 50 per side without ties and n <= 25 with ties (exact
  conditional on the tie pattern), else the normal approximation with tie and continuity corrections;
* a delta is shown only when significant, otherwise `~`; the table ends with the geometric mean
  of the per-benchmark centers.

The repeats are the unit: each value is one run's summary (e.g. its tps), never a per-second sample.
The older benchstat (before 2023, the format of seed 003) used the mean after removing IQR outliers
and printed `± max deviation %`; `center="v1"` reproduces that summary.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats as sps

from pgfslab.analysis.stats.adjust import AdjustMethod, adjust_pvalues
from pgfslab.analysis.stats.benchstat_text import format_delta, format_ratio
from pgfslab.analysis.stats.summary import Summary, median_summary, pct_range, v1_kept_values, v1_summary
from pgfslab.analysis.stats.utest import UTestResult, utest, utest_min_p, utest_samples_needed


def benchstat(
    df: pl.DataFrame,
    value: str,
    benchmark_col: str,
    config_col: str,
    baseline: str,
    candidate: str,
    alpha: float = 0.05,
    confidence: float = 0.95,
    *,
    adjust: AdjustMethod = "none",
    higher_is_better: bool | None = None,
    center: Literal["median", "v1"] = "median",
) -> pl.DataFrame:
    """benchstat's two-configuration table: one row per benchmark plus a `geomean` row.

    Per benchmark (rows of `df` whose `config_col` is `baseline` or `candidate`; one row per repeat):
    n, center and CI of each side (`center="median"`: median with the order-statistic CI, as
    benchstat; `"v1"`: old benchstat's outlier-trimmed mean with min/max), `pm_*` the `± x%` as a
    fraction, `delta_pct` = 100 (candidate / baseline - 1) of the centers, the two-sided Mann-Whitney
    p (`utest`), `p_adjusted` over the benchmarks (`adjust`: holm, bh or none; the adjusted p decides
    significance), `significant`, `delta` (benchstat's text: `~` when not significant, else
    `+x.xx%`), `reachable` (False when these sample sizes, after adjustment, could not reach p < alpha
    even with complete separation: then `~` always, and `note` says so), `note` (reasons joined by
    "; "), and with `higher_is_better` given, `change` (+1 better, -1 worse, 0 not significant) and
    `regression`. The geomean row holds the geometric means of the centers over benchmarks present on
    both sides with positive centers, and their ratio as `delta_pct` (no test, as benchstat).
    Column `baseline`/`candidate` carry the two names for `format_benchstat`.
    """
    data = df.filter(
        pl.col(config_col).is_in([baseline, candidate]) & pl.col(value).is_not_null() & pl.col(value).is_finite()
    )
    samples = data.group_by(benchmark_col, config_col, maintain_order=True).agg(
        pl.col(value).cast(pl.Float64).alias("_v")
    )
    bench_order = [str(b) for b in samples[benchmark_col].unique(maintain_order=True).to_list()]
    by_key = {
        (str(r[benchmark_col]), r[config_col]): np.asarray(r["_v"], float) for r in samples.iter_rows(named=True)
    }  # one row per benchmark x config: small
    empty = np.array([])

    def summarize(v: np.ndarray) -> Summary:
        return median_summary(v, confidence) if center == "median" else v1_summary(v)

    sums: list[tuple[Summary, Summary]] = []
    tests: list[UTestResult] = []
    notes: list[list[str]] = []
    for bench in bench_order:  # one iteration per benchmark: small
        va, vb = by_key.get((bench, baseline)), by_key.get((bench, candidate))
        sa, sb = summarize(empty if va is None else va), summarize(empty if vb is None else vb)
        row_notes = list(dict.fromkeys(s.note for s in (sa, sb) if s.note and s.n > 0))
        if va is None or vb is None:
            row_notes.append(f"missing in {baseline if va is None else candidate}")
            test = UTestResult(sa.n, sb.n, math.nan, math.nan, "none")
        else:  # old benchstat tested the values left after dropping outliers
            test = utest(v1_kept_values(va), v1_kept_values(vb)) if center == "v1" else utest(va, vb)
            row_notes += [test.note] if test.note else []
        sums.append((sa, sb))
        tests.append(test)
        notes.append(row_notes)

    p_raw = np.array([t.p for t in tests], dtype=float)
    tested = ~np.isnan(p_raw)
    p_adj = adjust_pvalues(p_raw, adjust)
    # adjusted p-values are monotone in every raw p: the smallest adjusted p a cell can ever reach is
    # its entry when every cell has its smallest possible raw p
    min_p = np.where(tested, [utest_min_p(t.n1, t.n2) for t in tests], np.nan)
    min_p_adj = adjust_pvalues(min_p, adjust)
    reachable = tested & (np.nan_to_num(min_p_adj, nan=1.0) < alpha)
    significant = reachable & (np.nan_to_num(p_adj, nan=1.0) < alpha)
    need = utest_samples_needed(alpha)
    for i, t in enumerate(tests):
        if tested[i] and not reachable[i]:
            if min_p[i] >= alpha:
                notes[i].append(
                    f"need >= {need} samples to detect a difference at alpha level {alpha:g}"
                    f" (n={t.n1}+{t.n2}: smallest possible p={min_p[i]:.3f})"
                )
            else:
                notes[i].append(
                    f"n={t.n1}+{t.n2} cannot reach alpha {alpha:g} after {adjust} adjustment over "
                    f"{int(tested.sum())} tests (smallest possible adjusted p={min_p_adj[i]:.3f})"
                )

    def ratio_pct(a: float, b: float) -> float:
        return 100 * (b / a - 1) if a != 0 and not math.isnan(a) else math.nan

    out = pl.DataFrame(
        {
            "benchmark": bench_order,
            "baseline": [baseline] * len(tests),
            "candidate": [candidate] * len(tests),
            "n_baseline": [a.n for a, _ in sums],
            "center_baseline": [a.center for a, _ in sums],
            "lo_baseline": [a.lo for a, _ in sums],
            "hi_baseline": [a.hi for a, _ in sums],
            "ci_coverage_baseline": [a.confidence for a, _ in sums],
            "pm_baseline": [pct_range(a.center, a.lo, a.hi) for a, _ in sums],
            "n_candidate": [b.n for _, b in sums],
            "center_candidate": [b.center for _, b in sums],
            "lo_candidate": [b.lo for _, b in sums],
            "hi_candidate": [b.hi for _, b in sums],
            "ci_coverage_candidate": [b.confidence for _, b in sums],
            "pm_candidate": [pct_range(b.center, b.lo, b.hi) for _, b in sums],
            "delta_pct": [ratio_pct(a.center, b.center) for a, b in sums],
            "p": p_raw,
            "p_method": [t.method for t in tests],
            "p_adjusted": p_adj,
            "adjust": [adjust] * len(tests),
            "alpha": [alpha] * len(tests),
            "reachable": reachable,
            "significant": significant,
            "delta": [
                format_delta(bool(sig), a.center, b.center) if ok else ""
                for sig, ok, (a, b) in zip(significant, tested, sums)
            ],
            "note": ["; ".join(n) if n else None for n in notes],
        },
        schema=BENCHSTAT_SCHEMA,
    )
    if out.height:
        out = pl.concat([out, _geomean_row(out, baseline, candidate, adjust, alpha)], how="vertical_relaxed")
    if higher_is_better is not None:
        sign = 1 if higher_is_better else -1
        out = out.with_columns(
            pl.when(pl.col("significant") & (pl.col("benchmark") != "geomean"))
            .then((pl.col("delta_pct").sign() * sign).cast(pl.Int64))
            .otherwise(0)
            .alias("change")
        )
        out = out.with_columns((pl.col("change") < 0).alias("regression"))
    return out


def benchstat_grid(
    df: pl.DataFrame,
    value: str,
    benchmark_col: str,
    config_col: str,
    baseline: str,
    candidates: list[str] | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    *,
    adjust: AdjustMethod = "holm",
    higher_is_better: bool | None = None,
) -> pl.DataFrame:
    """`benchstat` of every candidate configuration against one baseline, with the p-values
    adjusted over the whole grid (every benchmark x candidate: the family a reader scans), not per
    candidate. Rows: per candidate its benchmarks, then its `geomean` row (no test, as benchstat);
    `reachable` and the notes account for the grid-wide adjustment. Candidates default to every
    other value of `config_col` in order of appearance."""
    names = [str(c) for c in df[config_col].unique(maintain_order=True).to_list()]
    cands = [c for c in (candidates or names) if c != baseline]
    if not cands:
        return pl.DataFrame(schema=BENCHSTAT_SCHEMA)
    sep = "\x1f"
    parts = []
    for c in cands:  # one copy of the baseline's rows per candidate: benchmark "name<sep>candidate"
        sub = df.filter(pl.col(config_col).cast(pl.Utf8).is_in([baseline, c]))
        parts.append(
            sub.with_columns(
                (pl.col(benchmark_col).cast(pl.Utf8) + sep + pl.lit(c)).alias("_bench"),
                pl.when(pl.col(config_col).cast(pl.Utf8) == baseline)
                .then(pl.lit("base"))
                .otherwise(pl.lit("cand"))
                .alias("_cfg"),
            )
        )
    stacked = pl.concat(parts, how="vertical_relaxed")
    grid = benchstat(
        stacked,
        value,
        "_bench",
        "_cfg",
        "base",
        "cand",
        alpha,
        confidence,
        adjust=adjust,
        higher_is_better=higher_is_better,
    )
    grid = grid.filter(pl.col("benchmark") != "geomean")
    split = grid["benchmark"].str.split(sep)
    grid = grid.with_columns(
        split.list.get(0).alias("benchmark"), split.list.get(1).alias("candidate"), pl.lit(baseline).alias("baseline")
    )
    out = []
    for c in cands:
        rows = grid.filter(pl.col("candidate") == c)
        if rows.height == 0:
            continue
        geo = benchstat(
            df, value, benchmark_col, config_col, baseline, c, alpha, confidence, higher_is_better=higher_is_better
        ).filter(pl.col("benchmark") == "geomean")
        out += [rows, geo.select(rows.columns).cast(rows.schema)]
    return pl.concat(out, how="vertical_relaxed") if out else grid


BENCHSTAT_SCHEMA = pl.Schema(
    {
        "benchmark": pl.Utf8,
        "baseline": pl.Utf8,
        "candidate": pl.Utf8,
        "n_baseline": pl.Int64,
        "center_baseline": pl.Float64,
        "lo_baseline": pl.Float64,
        "hi_baseline": pl.Float64,
        "ci_coverage_baseline": pl.Float64,
        "pm_baseline": pl.Float64,
        "n_candidate": pl.Int64,
        "center_candidate": pl.Float64,
        "lo_candidate": pl.Float64,
        "hi_candidate": pl.Float64,
        "ci_coverage_candidate": pl.Float64,
        "pm_candidate": pl.Float64,
        "delta_pct": pl.Float64,
        "p": pl.Float64,
        "p_method": pl.Utf8,
        "p_adjusted": pl.Float64,
        "adjust": pl.Utf8,
        "alpha": pl.Float64,
        "reachable": pl.Boolean,
        "significant": pl.Boolean,
        "delta": pl.Utf8,
        "note": pl.Utf8,
    }
)


def _geomean_row(rows: pl.DataFrame, baseline: str, candidate: str, adjust: str, alpha: float) -> pl.DataFrame:
    """benchstat's last row: geometric means of the centers over benchmarks present on both sides
    with positive centers, and their ratio (no test)."""
    pos = rows.filter(pl.col("p").is_not_nan() & (pl.col("center_baseline") > 0) & (pl.col("center_candidate") > 0))
    gb = float(sps.gmean(pos["center_baseline"].to_numpy())) if pos.height else math.nan
    gc = float(sps.gmean(pos["center_candidate"].to_numpy())) if pos.height else math.nan
    note = (
        f"geomean over {pos.height} of {rows.height} benchmarks (present on both sides, positive centers)"
        if pos.height < rows.height
        else None
    )
    return (
        pl.DataFrame(
            {
                "benchmark": ["geomean"],
                "baseline": [baseline],
                "candidate": [candidate],
                "center_baseline": [gb],
                "center_candidate": [gc],
                "delta_pct": [100 * (gc / gb - 1) if pos.height else math.nan],
                "adjust": [adjust],
                "alpha": [alpha],
                "reachable": [False],
                "significant": [False],
                "delta": [format_ratio(gb, gc) if pos.height else ""],
                "note": [note],
            }
        )
        .with_columns(
            [
                pl.lit(None, dtype=t).alias(c)
                for c, t in BENCHSTAT_SCHEMA.items()
                if c
                not in (
                    "benchmark",
                    "baseline",
                    "candidate",
                    "center_baseline",
                    "center_candidate",
                    "delta_pct",
                    "adjust",
                    "alpha",
                    "reachable",
                    "significant",
                    "delta",
                    "note",
                )
            ]
        )
        .select(list(BENCHSTAT_SCHEMA))
        .cast(BENCHSTAT_SCHEMA)
    )
