"""benchstat-style comparison of two configurations over repeats, and multiple-comparison adjustment.

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
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Literal

import numpy as np
import polars as pl

from pgfslab.analysis.stats import _scipy as sps  # scipy.stats, imported on first use

AdjustMethod = Literal["holm", "bh", "none"]

# go-moremath: exact U distribution up to these sample sizes (per side)
UTEST_EXACT_LIMIT = 50
UTEST_TIES_EXACT_LIMIT = 25
# go-moremath QuantileCI: exact binomial up to this n, normal approximation above
QUANTILE_CI_EXACT_LIMIT = 30


# ---------------------------------------------------------------------------- median CI (benchstat)


def _binom_pmf(n: int, q: float) -> list[float]:
    if q == 0.5:  # exact, so that symmetric probabilities compare equal
        return [float(Fraction(math.comb(n, k), 2**n)) for k in range(n + 1)]
    return [math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(n + 1)]


@cache
def quantile_ci_orders(n: int, q: float = 0.5, confidence: float = 0.95) -> tuple[int, int, float]:
    """1-based order statistics (lo, hi) bounding the confidence interval of the q-quantile, and the
    interval's actual coverage, as go-moremath's `QuantileCI` (which benchstat uses) computes them.

    Unlike `stats.median_ci_ranks` (the narrowest symmetric interval, or (1, n) with its shortfall),
    this may return lo = 0 or hi = n + 1, meaning an unbounded side: benchstat then prints `± ∞`.
    For n <= 30 it accumulates binomial(n, q) probabilities outwards from the mode (left-biased on
    ties) until the coverage reaches `confidence`; above, the normal approximation with continuity
    correction. Example: n = 6 at 95 % gives (1, 6) with coverage 1 - 2/64; n = 5 gives (0, 5).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    if confidence >= 1:
        return 0, n + 1, 1.0
    if n <= QUANTILE_CI_EXACT_LIMIT:
        pmf = _binom_pmf(n, q)

        def p(k: int) -> float:
            return pmf[k] if 0 <= k <= n else 0.0

        x = 0 if q == 0 else math.ceil((n + 1) * q) - 1
        accum = p(x)
        lo, hi = x, x + 1
        lp, rp = p(lo - 1), p(hi)
        while accum < confidence and (lp > 0 or rp > 0):
            if lp >= rp:  # left bias
                accum += lp
                lo -= 1
                lp = p(lo - 1)
            else:
                accum += rp
                hi += 1
                rp = p(hi)
        coverage = accum
    else:
        mu, sigma = n * q, math.sqrt(n * q * (1 - q))
        norm = sps.norm(mu, sigma)
        l1 = float(norm.ppf((1 - confidence) / 2))
        r1 = 2 * mu - l1
        lo = math.floor(l1 - 0.5) + 1
        hi = math.ceil(r1 - 0.5) + 1

        def cdf(a: int, b: int) -> float:
            return float(norm.cdf(b - 0.5) - norm.cdf(a - 0.5))

        coverage = cdf(lo, hi)
        biased = cdf(lo, hi - 1)
        if confidence <= biased < coverage:
            coverage, hi = biased, hi - 1
        if lo <= 0 and hi >= n + 1:
            coverage = 1.0
    return max(lo, 0), min(hi, n + 1), coverage


def median_ci_samples_needed(confidence: float = 0.95, limit: int = 50) -> int | None:
    """Smallest n whose median CI at `confidence` is finite on both sides (benchstat's "need >= N
    samples for confidence interval"); None when more than `limit` would be needed."""
    for n in range(2, limit + 1):
        lo, hi, _ = quantile_ci_orders(n, 0.5, confidence)
        if lo > 0 and hi <= n:
            return n
    return None


@dataclass(frozen=True)
class Summary:
    """Center of a sample and its confidence interval (lo/hi may be infinite)."""

    n: int
    center: float
    lo: float
    hi: float
    confidence: float
    note: str | None = None


def median_summary(values: np.ndarray | list[float], confidence: float = 0.95) -> Summary:
    """Median with benchstat's distribution-free CI (order statistics, see `quantile_ci_orders`)."""
    xs = np.sort(np.asarray(values, float))
    n = len(xs)
    if n == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, "no samples")
    lo_o, hi_o, cov = quantile_ci_orders(n, 0.5, confidence)
    lo = float(xs[lo_o - 1]) if lo_o >= 1 else -math.inf
    hi = float(xs[hi_o - 1]) if hi_o <= n else math.inf
    note = None
    if math.isinf(lo) or math.isinf(hi):
        need = median_ci_samples_needed(confidence)
        note = (
            f"need >= {need} samples for confidence interval at level {confidence:g}"
            if need
            else f"need > 50 samples for confidence interval at level {confidence:g}"
        )
    return Summary(n, float(np.median(xs)), lo, hi, cov, note)


def _percentile_r8(xs: np.ndarray, p: float) -> float:
    """Hyndman-Fan type 8 quantile of sorted xs (go-moremath Sample.Percentile, old benchstat)."""
    n = len(xs)
    if n == 0:
        return math.nan
    if p <= 0:
        return float(xs[0])
    if p >= 1:
        return float(xs[-1])
    h = (n + 1 / 3) * p + 1 / 3
    if h <= 1:
        return float(xs[0])
    if h >= n:
        return float(xs[-1])
    k = math.floor(h)
    return float(xs[k - 1] + (h - k) * (xs[k] - xs[k - 1]))


def v1_kept_values(values: np.ndarray | list[float]) -> np.ndarray:
    """The values old benchstat kept: those inside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (R8 quartiles)."""
    xs = np.sort(np.asarray(values, float))
    if len(xs) == 0:
        return xs
    q1, q3 = _percentile_r8(xs, 0.25), _percentile_r8(xs, 0.75)
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return xs[(xs >= lo) & (xs <= hi)]


def v1_summary(values: np.ndarray | list[float]) -> Summary:
    """Old benchstat's (pre-2023, seed 003's) summary: mean of the non-outliers, with lo/hi their
    min/max; its `± x%` is max(1 - min/mean, max/mean - 1). Not a confidence interval."""
    kept = v1_kept_values(values)
    if len(kept) == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, "no samples")
    return Summary(len(kept), float(kept.mean()), float(kept.min()), float(kept.max()), math.nan)


def pct_range(center: float, lo: float, hi: float) -> float:
    """benchstat's `± x%` of a summary as a fraction: max(hi/center - 1, 1 - lo/center); inf when a
    bound is infinite, NaN ("?") when the bounds' signs differ from the center's, 0 when all are 0."""
    if math.isnan(center) or math.isnan(lo) or math.isnan(hi):
        return math.nan
    if math.isinf(lo) or math.isinf(hi):
        return math.inf
    s = np.sign(center)
    if s != np.sign(lo) or s != np.sign(hi):
        return math.nan
    if center == 0:
        return 0.0
    return max(hi / center - 1, 1 - lo / center)


# ---------------------------------------------------------------------------- Mann-Whitney U (benchstat)


@dataclass(frozen=True)
class UTestResult:
    """Mann-Whitney U test: U of the first sample (pairs x1 > x2, ties 0.5), two-sided p, method."""

    n1: int
    n2: int
    u: float
    p: float
    method: Literal["exact", "exact-ties", "normal", "none"]
    note: str | None = None


def _u_null_dist(n1: int, tie_sizes: list[int]) -> np.ndarray:
    """Null distribution of 2 U1 (index = 2 U1), conditional on the tie pattern: exact, by dynamic
    programming over the doubled mid-rank sum of a random n1-subset of the pooled sample."""
    n = sum(tie_sizes)
    total2 = n * (n + 1)  # doubled sum of all ranks
    dp = np.zeros((n1 + 1, total2 + 1))
    dp[0, 0] = 1.0
    start = 1
    for t in tie_sizes:
        r2 = 2 * start + t - 1  # doubled mid-rank of this tie group
        new = dp.copy()
        for c in range(1, min(t, n1) + 1):
            new[c:, c * r2 :] += math.comb(t, c) * dp[: n1 + 1 - c, : total2 + 1 - c * r2]
        dp = new
        start += t
    dist = dp[n1] / dp[n1].sum()
    offset = n1 * (n1 + 1)  # 2 U1 = 2 R1 - n1 (n1 + 1)
    return dist[offset:]


def utest(x1: np.ndarray | list[float], x2: np.ndarray | list[float]) -> UTestResult:
    """Two-sided Mann-Whitney U test as benchstat computes it (go-moremath `MannWhitneyUTest`).

    Exact null distribution when n1, n2 <= 50 without ties or <= 25 with ties (then conditional on
    the ties, as Klotz 1966), p = 2 min(P(U1 <= u1), P(U1 >= u1)) (1 when U1 = U2); otherwise the normal
    approximation with tie and continuity corrections. scipy's `mannwhitneyu(method="exact")` ignores
    ties, and its "auto" switches to the normal approximation at n >= 8: for tied or mid-sized
    samples the two differ, which is why this exists. All values equal: p = 1 with a note.

    One deliberate difference from go-moremath: it doubles the lower tail at min(U1, U2) of U1's
    distribution, which with ties is not symmetric, so an asymmetric tie pattern can give p = 0
    (its own test: {1,2,3,5} vs {1,1,1,1,1} -> 0). Here both tails of U1 are used (0.095 there);
    without ties, or with a symmetric tie pattern, the two agree.
    """
    a, b = np.asarray(x1, float), np.asarray(x2, float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return UTestResult(n1, n2, math.nan, math.nan, "none", "too few samples")
    pooled = np.concatenate([a, b])
    ranks = sps.rankdata(pooled)  # mid-ranks
    r1 = float(ranks[:n1].sum())
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    _, tie_sizes_arr = np.unique(pooled, return_counts=True)
    tie_sizes = tie_sizes_arr.tolist()
    has_ties = len(tie_sizes) < n1 + n2
    if len(tie_sizes) == 1:
        return UTestResult(n1, n2, u1, 1.0, "none", "all samples are equal")
    exact = (not has_ties and n1 <= UTEST_EXACT_LIMIT and n2 <= UTEST_EXACT_LIMIT) or (
        has_ties and n1 <= UTEST_TIES_EXACT_LIMIT and n2 <= UTEST_TIES_EXACT_LIMIT
    )
    if exact:
        if u1 == u2:
            p = 1.0
        else:
            dist = _u_null_dist(n1, tie_sizes)
            k = round(2 * u1)
            p = min(1.0, 2 * min(float(dist[: k + 1].sum()), float(dist[k:].sum())))
        return UTestResult(n1, n2, u1, p, "exact-ties" if has_ties else "exact")
    n = n1 + n2
    t = float(np.sum(tie_sizes_arr.astype(float) ** 3 - tie_sizes_arr))
    sigma = math.sqrt(n1 * n2 * ((n + 1) - t / (n * (n - 1))) / 12)
    numer = u1 - n1 * n2 / 2
    numer -= math.copysign(0.5, numer) if numer != 0 else 0.0
    z = numer / sigma
    p = 2 * min(float(sps.norm.cdf(z)), float(sps.norm.sf(z)))
    return UTestResult(n1, n2, u1, p, "normal")


@cache
def utest_min_p(n1: int, n2: int) -> float:
    """Smallest two-sided p the U test can give for these sizes (complete separation, no ties)."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def utest_samples_needed(alpha: float = 0.05, limit: int = 10) -> int | None:
    """Smallest n per side for which n vs n can reach p <= alpha (benchstat's "need >= N samples to
    detect a difference"): 4 at alpha 0.05, 5 at 0.01. None beyond `limit`."""
    for n in range(1, limit + 1):
        if utest_min_p(n, n) <= alpha:
            return n
    return None


# ---------------------------------------------------------------------------- multiple comparisons


def adjust_pvalues(p: np.ndarray | list[float] | pl.Series, method: AdjustMethod = "holm") -> np.ndarray:
    """Adjusted p-values for m simultaneous tests (NaN entries are kept and not counted in m).

    * "holm" (default): Holm-Bonferroni step-down, controls the family-wise error rate under any
      dependence: sorted ascending, p_adj(i) = max_{j<=i} min(1, (m - j + 1) p(j)).
    * "bh": Benjamini-Hochberg step-up, controls the false discovery rate (independent or positively
      dependent tests): p_adj(i) = min_{j>=i} min(1, m p(j) / j); scipy's false_discovery_control.
    * "none": p unchanged.
    Both adjustments are monotone in every raw p, which `benchstat` uses to tell whether a cell can
    reach significance at all after adjustment.
    """
    arr = np.asarray(p.to_numpy() if isinstance(p, pl.Series) else p, dtype=float).copy()
    if method == "none":
        return arr
    if method not in ("holm", "bh"):
        raise ValueError(f"unknown adjustment {method!r} (holm, bh or none)")
    ok = ~np.isnan(arr)
    vals = arr[ok]
    m = len(vals)
    if m == 0:
        return arr
    order = np.argsort(vals, kind="stable")
    sorted_p = vals[order]
    ranks = np.arange(1, m + 1)
    if method == "holm":
        adj_sorted = np.maximum.accumulate(np.minimum(1.0, (m - ranks + 1) * sorted_p))
    else:
        adj_sorted = np.minimum.accumulate((m * sorted_p / ranks)[::-1])[::-1]
        adj_sorted = np.minimum(1.0, adj_sorted)
    adj = np.empty(m)
    adj[order] = adj_sorted
    arr[ok] = adj
    return arr


# ---------------------------------------------------------------------------- the table


def _fmt_delta(significant: bool, old: float, new: float) -> str:
    if not significant:
        return "~"
    if old == new:
        return "0.00%"
    if old == 0 or math.isnan(old) or math.isnan(new):
        return "?"
    return f"{(new / old - 1) * 100:+.2f}%"


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
                _fmt_delta(bool(sig), a.center, b.center) if ok else ""
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
        out += [rows, geo.select(rows.columns).cast(rows.schema)]  # type: ignore[arg-type]
    return pl.concat(out, how="vertical_relaxed") if out else grid


BENCHSTAT_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
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


def _geomean_row(rows: pl.DataFrame, baseline: str, candidate: str, adjust: str, alpha: float) -> pl.DataFrame:
    """benchstat's last row: geometric means of the centers over benchmarks present on both sides
    with positive centers, and their ratio (no test)."""
    pos = rows.filter(pl.col("p").is_not_nan() & (pl.col("center_baseline") > 0) & (pl.col("center_candidate") > 0))
    gb = float(np.exp(np.log(pos["center_baseline"].to_numpy()).mean())) if pos.height else math.nan
    gc = float(np.exp(np.log(pos["center_candidate"].to_numpy()).mean())) if pos.height else math.nan
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
                "delta": [f"{(gc / gb - 1) * 100:+.2f}%" if pos.height else ""],
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
    )  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- text output


def si_scaler(val: float) -> tuple[str, float, str]:
    """benchstat's number format for a row (old `NewScaler`, unitless): 3 significant digits with a
    k/M/G/T suffix, chosen from the row's baseline value. Returns (format, scale, suffix)."""
    x = abs(val) if not math.isnan(val) else 0.0
    steps = [
        (99.5e12, "%.0f", 1e12, "T"),
        (9.95e12, "%.1f", 1e12, "T"),
        (995e9, "%.2f", 1e12, "T"),
        (99.5e9, "%.0f", 1e9, "G"),
        (9.95e9, "%.1f", 1e9, "G"),
        (995e6, "%.2f", 1e9, "G"),
        (99.5e6, "%.0f", 1e6, "M"),
        (9.95e6, "%.1f", 1e6, "M"),
        (995e3, "%.2f", 1e6, "M"),
        (99.5e3, "%.0f", 1e3, "k"),
        (9.95e3, "%.1f", 1e3, "k"),
        (995, "%.2f", 1e3, "k"),
        (99.5, "%.0f", 1, ""),
        (9.95, "%.1f", 1, ""),
    ]
    for threshold, fmt, scale, suffix in steps:
        if x >= threshold:
            return fmt, scale, suffix
    return "%.2f", 1, ""


def _fmt_num(v: float, scaler: tuple[str, float, str]) -> str:
    fmt, scale, suffix = scaler
    if v is None or math.isnan(v):
        return "-"
    return (fmt % (v / scale)) + suffix


def _fmt_pm(pm: float | None) -> str:
    if pm is None or (isinstance(pm, float) and math.isnan(pm)):
        return "± ?"
    if math.isinf(pm):
        return "± ∞"
    return f"±{f'{pm * 100:.0f}%':>3}"


def format_benchstat(df: pl.DataFrame, metric: str | None = None) -> str:
    """benchstat-style aligned text of a `benchstat()` frame, in the layout of seed 003:

        name          ext4 tps     xfs tps      delta
        tpcb/c=1       100 ± 2%      80 ± 3%    -19.95%  (p=0.002 n=6+6)
        select/c=4    5.31k ± ∞ ¹  5.42k ± ∞ ¹  ~        (p=0.100 n=3+3) ²
        geomean            729          658     -9.64%
        ¹ need >= 6 samples for confidence interval at level 0.95
        ² need >= 4 samples to detect a difference at alpha level 0.05 (...)

    Each row's numbers use the scale chosen from its baseline center (as benchstat). Notes become
    numbered footnotes; the p shown is the one that decided significance (adjusted if adjusting).
    """
    if df.height == 0:
        return "(no benchmarks)\n"
    base, cand = df["baseline"][0], df["candidate"][0]
    unit = f" {metric}" if metric else ""
    adjust = df["adjust"][0] if "adjust" in df.columns else "none"
    footnotes: list[str] = []

    def mark(note: str | None) -> str:
        if not note:
            return ""
        marks = []
        for part in note.split("; "):
            if part not in footnotes:
                footnotes.append(part)
            marks.append(_superscript(footnotes.index(part) + 1))
        return " " + ",".join(marks)

    table: list[list[str]] = [["name", f"{base}{unit}", f"{cand}{unit}", "delta", ""]]
    for r in df.iter_rows(named=True):  # one line per benchmark: small
        sc = si_scaler(r["center_baseline"] if r["center_baseline"] is not None else math.nan)
        if r["benchmark"] == "geomean":
            cells = [_fmt_num(r["center_baseline"], sc), _fmt_num(r["center_candidate"], sc)]
            table.append([r["benchmark"], *cells, r["delta"] or "", mark(r["note"]).strip()])
            continue
        ci_notes = [n for n in (r["note"] or "").split("; ") if n.startswith("need >=") and "confidence" in n]
        other_notes = [n for n in (r["note"] or "").split("; ") if n and n not in ci_notes]
        a = f"{_fmt_num(r['center_baseline'], sc)} {_fmt_pm(r['pm_baseline'])}" if r["n_baseline"] else "-"
        b = f"{_fmt_num(r['center_candidate'], sc)} {_fmt_pm(r['pm_candidate'])}" if r["n_candidate"] else "-"
        if ci_notes:
            m = mark("; ".join(ci_notes))
            a += m if r["pm_baseline"] is not None and math.isinf(r["pm_baseline"]) else ""
            b += m if r["pm_candidate"] is not None and math.isinf(r["pm_candidate"]) else ""
        p_used = r["p_adjusted"] if adjust != "none" else r["p"]
        test = ""
        if r["p"] is not None and not math.isnan(r["p"]):
            test = f"(p={p_used:.3f} n={r['n_baseline']}+{r['n_candidate']})"
        table.append([r["benchmark"], a, b, r["delta"] or "", (test + mark("; ".join(other_notes))).strip()])

    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = []
    for row in table:
        line = f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]:<{widths[3]}}  {row[4]}"
        lines.append(line.rstrip())
    for i, note in enumerate(footnotes, 1):
        lines.append(f"{_superscript(i)} {note}")
    if adjust != "none":
        m = int(df.filter(pl.col("p").is_not_null() & pl.col("p").is_not_nan()).height)
        lines.append(
            f"p-values {'Holm-Bonferroni' if adjust == 'holm' else 'Benjamini-Hochberg'}-adjusted over {m} comparisons"
        )
    return "\n".join(lines) + "\n"


def _superscript(i: int) -> str:
    digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
    return "".join(digits[int(c)] for c in str(i))
