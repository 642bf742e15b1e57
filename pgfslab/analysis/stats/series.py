"""Per-second time series of one run: honest confidence intervals, warm-up detection, checkpoints.

Per-second samples of a run are autocorrelated (a slow second is followed by slow seconds): an iid
interval (mean ± t s/sqrt(n)) is then far too narrow. `mean_ci_autocorr` corrects for it with an
effective sample size and a circular block bootstrap; `detect_steady_state` finds the end of the
warm-up (MSER-5); `checkpoint_attribution` says how much of the variation falls in checkpoints.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats as sps

# the server log line's grammar, defined once: the ingest reads the same lines into pg_checkpoints

CIMethod = Literal["block-bootstrap", "neff-ar1", "neff-acf", "iid"]


# ---------------------------------------------------------------------------- autocorrelation


def autocorrelation(x: np.ndarray | list[float], max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation rho_0..rho_max_lag (biased estimator, divisor n, as is standard: it
    keeps the sequence positive semi-definite). rho_0 = 1; NaN for a constant series."""
    a = np.asarray(x, float)
    n = len(a)
    max_lag = n - 1 if max_lag is None else min(max_lag, n - 1)
    d = a - a.mean()
    nfft = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(d, nfft)
    acov = np.fft.irfft(f * np.conj(f), nfft)[: max_lag + 1] / n
    if acov[0] <= 0:
        return np.full(max_lag + 1, math.nan)
    return acov / acov[0]


def effective_sample_size(x: np.ndarray | list[float], method: Literal["ar1", "acf"] = "ar1") -> float:
    """Number of independent samples carrying as much information about the mean as the series.

    * "ar1": n (1 - rho1) / (1 + rho1), exact for an AR(1) process (rho1 clipped to [0, 0.99]).
    * "acf": n / tau, tau = 1 + 2 sum_k rho_k summed by Geyer's initial positive sequence (pairs
      rho_2m + rho_2m+1 while positive), for any stationary process.
    Never more than n, never less than 1.
    """
    a = np.asarray(x, float)
    n = len(a)
    if n < 3:
        return float(n)
    if method == "ar1":
        r1 = float(np.clip(autocorrelation(a, 1)[1], 0.0, 0.99)) if np.var(a) > 0 else 0.0
        return float(max(1.0, n * (1 - r1) / (1 + r1)))
    rho = autocorrelation(a, n - 1)
    if np.isnan(rho[0]):
        return float(n)
    # Geyer's initial positive sequence: tau = -1 + 2 sum_m (rho_2m + rho_2m+1) while the pairs are > 0
    k = (n - 1) // 2
    pairs = rho[0 : 2 * k : 2] + rho[1 : 2 * k : 2]
    stop = int(np.argmax(pairs <= 0)) if (pairs <= 0).any() else k
    tau = -1.0 + 2.0 * float(pairs[:stop].sum())
    return float(np.clip(n / max(tau, 1e-12), 1.0, n))


def politis_white_block_length(x: np.ndarray | list[float]) -> float:
    """Data-driven block length for the circular block bootstrap of the mean (Politis & White 2004,
    with the correction of Patton, Politis & White 2009).

    The autocorrelations are cut where they become insignificant (m = first lag followed by
    K_n = max(5, sqrt(log10 n)) lags all within 2 sqrt(log10 n / n)), M = 2m, and a flat-top lag
    window gives G = sum lambda(k/M) |k| R(k) and g = sum lambda(k/M) R(k); then
    b = (2 G^2 / D)^(1/3) n^(1/3) with D = (4/3) g^2 for the circular bootstrap, capped at
    min(3 sqrt(n), n / 3) and at least 1.
    """
    a = np.asarray(x, float)
    n = len(a)
    if n < 4 or np.var(a) == 0:
        return 1.0
    b_max = math.ceil(min(3 * math.sqrt(n), n / 3))
    kn = max(5, int(math.ceil(math.sqrt(math.log10(n)))))
    m_max = math.ceil(math.sqrt(n)) + kn
    rho = autocorrelation(a, min(n - 1, m_max + kn))
    crit = 2 * math.sqrt(math.log10(n) / n)
    insignificant = np.abs(rho[1:]) < crit  # index j -> lag j + 1
    m_hat = None
    for m in range(0, len(insignificant) - kn + 1):
        if insignificant[m : m + kn].all():
            m_hat = m
            break
    if m_hat is None:
        m_hat = m_max
    big_m = max(1, min(2 * m_hat, m_max, len(rho) - 1))  # never beyond the lags computed (short series)
    acov0 = float(np.var(a))
    lags = np.arange(-big_m, big_m + 1)
    t = np.abs(lags) / big_m
    lam = np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2 * (1 - t), 0.0))
    r = rho[np.abs(lags)] * acov0
    g_hat = float(np.sum(lam * np.abs(lags) * r))
    g0 = float(np.sum(lam * r))
    d_cb = 4 / 3 * g0**2
    if d_cb <= 0 or g_hat == 0:
        return 1.0
    b = (2 * g_hat**2 / d_cb) ** (1 / 3) * n ** (1 / 3)
    return float(min(max(b, 1.0), b_max))


def circular_block_bootstrap_means(
    x: np.ndarray | list[float], block: int, n_boot: int = 999, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Means of `n_boot` circular block bootstrap resamples (blocks of `block` consecutive samples,
    wrapping around the end, so every sample is equally likely; vectorized, no Python loop)."""
    a = np.asarray(x, float)
    n = len(a)
    rng = rng or np.random.default_rng(0)
    block = int(max(1, min(block, n)))
    k = math.ceil(n / block)
    starts = rng.integers(0, n, size=(n_boot, k))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]) % n
    idx = idx.reshape(n_boot, k * block)[:, :n]
    return a[idx].mean(axis=1)


@dataclass(frozen=True)
class MeanCI:
    """Mean of a series with its confidence interval and how it was obtained."""

    mean: float
    lo: float
    hi: float
    confidence: float
    method: str
    n: int
    n_eff: float
    rho1: float
    block_length: float | None


def mean_ci_autocorr(
    x: np.ndarray | list[float],
    confidence: float = 0.95,
    method: CIMethod = "neff-acf",
    n_boot: int = 999,
    seed: int = 0,
) -> MeanCI:
    """Confidence interval for the mean of an autocorrelated series (one run's per-second samples).

    * "neff-acf" (default): mean ± t_{n_eff-1} s / sqrt(n_eff), n_eff from the autocorrelation sum
      (`effective_sample_size(method="acf")`);
    * "neff-ar1": the same with n_eff = n (1 - rho1) / (1 + rho1);
    * "block-bootstrap": percentile interval of circular block bootstrap means, block length from
      `politis_white_block_length`;
    * "iid": the naive mean ± t_{n-1} s / sqrt(n), for comparison only: with per-second TPS it is
      typically several times too narrow (see tests: AR(1) with phi = 0.8 covers ~50 %).
    n_eff, rho1 and the block length are always reported. Short runs (n < 30) give wide intervals,
    and all methods undercover somewhat when n_eff is small: prefer comparing repeats.
    """
    a = np.asarray(x, float)
    a = a[~np.isnan(a)]
    n = len(a)
    if n < 2:
        m = float(a.mean()) if n else math.nan
        return MeanCI(m, math.nan, math.nan, confidence, method, n, float(n), math.nan, None)
    mean = float(a.mean())
    rho1 = float(autocorrelation(a, 1)[1]) if np.var(a) > 0 else 0.0
    block = politis_white_block_length(a)
    n_eff = effective_sample_size(a, "ar1" if method == "neff-ar1" else "acf")
    s = float(a.std(ddof=1))
    if method == "block-bootstrap":
        means = circular_block_bootstrap_means(a, round(block), n_boot, np.random.default_rng(seed))
        lo, hi = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
        return MeanCI(mean, float(lo), float(hi), confidence, method, n, n_eff, rho1, block)
    eff = float(n) if method == "iid" else n_eff
    half = float(sps.t.ppf((1 + confidence) / 2, max(eff - 1, 1.0))) * s / math.sqrt(eff)
    return MeanCI(mean, mean - half, mean + half, confidence, method, n, n_eff, rho1, block)


def run_mean_table(
    df: pl.DataFrame,
    value: str,
    by: list[str],
    time: str = "t_s",
    confidence: float = 0.95,
    method: CIMethod = "neff-acf",
) -> pl.DataFrame:
    """Per run (`by`), the mean of `value` over its samples (ordered by `time`) with the
    autocorrelation-aware CI of `mean_ci_autocorr`: the default for within-run statements."""
    rows = []
    for key, part in df.sort([*by, time]).group_by(by, maintain_order=True):  # one iteration per run
        ci = mean_ci_autocorr(part[value].drop_nulls().to_numpy(), confidence, method)
        rows.append({**dict(zip(by, key)), **asdict(ci)})
    return pl.DataFrame(rows)


# ---------------------------------------------------------------------------- warm-up


def mser_truncation(x: np.ndarray | list[float], batch: int = 5) -> tuple[int, bool]:
    """MSER-`batch` truncation point of one series (White 1997; MSER-5 with batch = 5).

    Batch means Z_1..Z_k of `batch` samples; for each d = 0..k/2, MSER(d) = sum_{i>d} (Z_i - mean)^2
    / (k - d)^2; the d minimizing it, times `batch`, is the number of samples to drop. Returns
    (samples to drop, steady) where steady is False when the minimum sits at the k/2 limit (the
    series may not have reached steady state: the run was too short)."""
    a = np.asarray(x, float)
    k = len(a) // batch
    if k < 2:
        return 0, False
    z = a[: k * batch].reshape(k, batch).mean(axis=1)
    s1 = np.cumsum(z[::-1])[::-1]
    s2 = np.cumsum((z**2)[::-1])[::-1]
    c = k - np.arange(k)
    mser = (s2 - s1**2 / c) / c**2
    d_max = k // 2
    d = int(np.argmin(mser[: d_max + 1]))
    return d * batch, d < d_max


def _mser_flags(x: np.ndarray, batch: int) -> np.ndarray:
    """`mser_truncation`'s "not steady" for every row of a matrix of series at once."""
    k = x.shape[1] // batch
    z = x[:, : k * batch].reshape(len(x), k, batch).mean(axis=2)
    s1 = np.cumsum(z[:, ::-1], axis=1)[:, ::-1]
    s2 = np.cumsum((z**2)[:, ::-1], axis=1)[:, ::-1]
    c = k - np.arange(k)
    mser = (s2 - s1**2 / c) / c**2
    d_max = k // 2
    return np.argmin(mser[:, : d_max + 1], axis=1) == d_max


PHI_STEP = 0.05  # the grid φ is rounded to: one simulation per (n, φ) pair a study meets, cached


@functools.cache
def mser_null_rate(n: int, phi: float = 0.0, batch: int = 5, sims: int = 20000) -> float:
    """The share of stationary series of `n` samples that `mser_truncation` calls not steady, for AR(1)
    noise with lag-1 coefficient `phi` (0: independent samples), each series started from the stationary
    distribution (no warm-up at all). MSER on few batches is a coin toss: about 45 % of 18-sample
    independent series, 15 % of 40, 1.5 % of 120, and more where per-second throughput is autocorrelated,
    as it is (a slow second is followed by slow seconds). So "not steady" says something about a cell only
    where more of its runs are flagged than this. Simulated with a fixed seed; 1.0 below two batches."""
    if n // batch < 2:
        return 1.0
    rng = np.random.default_rng(20261127)
    e = rng.standard_normal((sims, n))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / math.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return float(_mser_flags(x, batch).mean())


def ar1_phi(x: np.ndarray | list[float]) -> float | None:
    """The lag-1 coefficient of a series' AR(1) noise, estimated from its first differences: for AR(1),
    corr(dx_t, dx_t-1) = (phi - 1) / 2, so phi = 1 + 2 r. Differences remove a level shift or a slow
    warm-up (one large step, one outlying difference), which would inflate the plain lag-1
    autocorrelation: the non-stationarity under test must not raise its own null and hide. Clipped to
    [0, 0.95]; None for fewer than 8 samples. Biased low on short series (a conservative null)."""
    a = np.asarray(x, float)
    if len(a) < 8:
        return None
    d = np.diff(a)
    if np.std(d[1:]) == 0 or np.std(d[:-1]) == 0:
        return 0.0
    r = float(np.corrcoef(d[1:], d[:-1])[0, 1])
    return float(min(0.95, max(0.0, 1 + 2 * r)))


def poisson_binomial_sf(k: int, p: np.ndarray | list[float]) -> float:
    """P(X >= k) for X the number of successes of independent trials with probabilities `p` (exact, by
    the recursion over trials)."""
    dist = np.zeros(len(p) + 1)
    dist[0] = 1.0
    for q in np.asarray(p, float):
        dist[1:] = dist[1:] * (1 - q) + dist[:-1] * q
        dist[0] *= 1 - q
    return float(dist[k:].sum()) if k > 0 else 1.0


def detect_steady_state(
    df: pl.DataFrame, value: str = "tps", time: str = "t_s", by: list[str] | None = None, batch: int = 5
) -> pl.DataFrame:
    """Per run, where the warm-up ends, by MSER-5 (`mser_truncation`), computed in polars.

    Returns `by` + n, trim_n (samples dropped), trim_s (time of the last dropped sample, 0 when
    none: keep rows with time > trim_s, as `trim_warmup`), steady (False: the truncation hit its
    n/2 limit, the run may never have settled), trim_method ("MSER-5").
    """
    keys = by or ["_all"]
    data = df if by else df.with_columns(pl.lit(0).alias("_all"))
    data = (
        data.filter(pl.col(value).is_not_null())
        .sort([*keys, time])
        .with_columns(pl.int_range(pl.len()).over(keys).alias("_i"), pl.len().over(keys).alias("_n"))
    )
    k_expr = pl.col("_n") // batch
    batches = (
        data.filter(pl.col("_i") < k_expr * batch)
        .with_columns((pl.col("_i") // batch).alias("_b"))
        .group_by([*keys, "_b"])
        .agg(pl.col(value).mean().alias("_z"), pl.col("_n").first())
        .sort([*keys, "_b"], descending=[False] * len(keys) + [True])
        .with_columns(
            pl.col("_z").cum_sum().over(keys).alias("_s1"),
            (pl.col("_z") ** 2).cum_sum().over(keys).alias("_s2"),
            pl.int_range(1, pl.len() + 1).over(keys).alias("_c"),
            pl.len().over(keys).alias("_k"),
        )
    )
    batches = batches.with_columns(
        ((pl.col("_s2") - pl.col("_s1") ** 2 / pl.col("_c")) / pl.col("_c") ** 2).alias("_mser")
    )
    best = (
        batches.filter(pl.col("_b") <= pl.col("_k") // 2)
        .sort([*keys, "_mser", "_b"])
        .group_by(keys, maintain_order=True)
        .agg(pl.col("_b").first().alias("_d"), pl.col("_k").first(), pl.col("_n").first())
    )
    best = best.with_columns(
        (pl.col("_d") * batch).alias("trim_n"),
        ((pl.col("_d") < pl.col("_k") // 2) & (pl.col("_k") >= 2)).alias("steady"),
    )
    last_dropped = (
        data.join(best.select(*keys, "trim_n"), on=keys)
        .filter(pl.col("_i") == pl.col("trim_n") - 1)
        .select(*keys, pl.col(time).cast(pl.Float64).alias("trim_s"))
    )
    runs = data.group_by(keys, maintain_order=True).agg(pl.col("_n").first().alias("n"))
    out = (
        runs.join(best.select(*keys, "trim_n", "steady"), on=keys, how="left")
        .join(last_dropped, on=keys, how="left")
        .with_columns(
            pl.col("trim_n").fill_null(0),
            pl.col("steady").fill_null(False),
            pl.col("trim_s").fill_null(0.0),
            pl.lit(f"MSER-{batch}").alias("trim_method"),
        )
    )
    return out.drop("_all") if not by else out


def apply_steady_state(
    df: pl.DataFrame,
    value: str = "tps",
    time: str = "t_s",
    by: list[str] | None = None,
    method: Literal["mser5", "fixed"] = "mser5",
    trim_s: float | None = None,
) -> pl.DataFrame:
    """Drop each run's warm-up and record what was dropped in columns `trim_s` and `trim_method`
    (so figures and tables can say "first N s dropped (MSER-5)").

    method "mser5": per-run trim from `detect_steady_state` (plus its `steady` flag);
    method "fixed": the same `trim_s` for every run (as `trim_warmup`), method recorded as "fixed".
    Rows kept: time > trim_s.
    """
    if method == "fixed":
        if trim_s is None:
            raise ValueError("method='fixed' needs trim_s")
        return df.filter(pl.col(time) > trim_s).with_columns(
            pl.lit(float(trim_s)).alias("trim_s"), pl.lit("fixed").alias("trim_method")
        )
    if not by:
        trims = detect_steady_state(df, value, time, None)
        t = float(trims["trim_s"][0]) if trims.height else 0.0
        return df.filter(pl.col(time) > t).with_columns(
            pl.lit(t).alias("trim_s"),
            pl.lit(trims["trim_method"][0] if trims.height else "MSER-5").alias("trim_method"),
            pl.lit(bool(trims["steady"][0]) if trims.height else False).alias("steady"),
        )
    trims = detect_steady_state(df, value, time, by).select(*by, "trim_s", "trim_method", "steady")
    return df.join(trims, on=by, how="left", maintain_order="left").filter(pl.col(time) > pl.col("trim_s"))


# ---------------------------------------------------------------------------- checkpoints


def checkpoint_attribution(
    series: pl.DataFrame,
    windows: pl.DataFrame,
    value: str = "tps",
    time: str = "t_s",
    interval_s: float = 1.0,
    confidence: float = 0.95,
) -> dict[str, float | int]:
    """How much of a run's throughput variation falls in checkpoint windows.

    A sample at time t covers (t - interval_s, t]; it is "in" a checkpoint when that overlaps a
    window [start_s, end_s] (an open window runs to the end of the series). Reports n_in/n_out,
    time_share (fraction of samples in windows), mean_in/mean_out, delta_pct = 100 (mean_in /
    mean_out - 1) with an autocorrelation-aware CI (each side's standard error uses the run's n_eff
    ratio, `effective_sample_size`), and variance_share = sum over in-window samples of
    (x - overall mean)^2 / total sum of squares: compare it with time_share (variance_share >>
    time_share: checkpoints drive the variation).
    """
    s = (
        series.filter(pl.col(value).is_not_null())
        .sort(time)
        .select(pl.col(time).cast(pl.Float64).alias("t"), pl.col(value).cast(pl.Float64).alias("x"))
    )
    t_end = float(s.select(pl.col("t").max()).item()) if s.height else 0.0
    w = windows.select(
        pl.col("start_s").cast(pl.Float64), pl.col("end_s").cast(pl.Float64).fill_null(t_end + interval_s)
    )
    if w.height:
        hit = (
            s.with_row_index("_r")
            .join(w, how="cross")
            .filter((pl.col("t") - interval_s < pl.col("end_s")) & (pl.col("t") > pl.col("start_s")))
            .select("_r")
            .unique()
        )
        s = s.with_row_index("_r").with_columns(pl.col("_r").is_in(hit["_r"].implode()).alias("in_ckpt")).drop("_r")
    else:
        s = s.with_columns(pl.lit(False).alias("in_ckpt"))
    x = s["x"].to_numpy()
    inside = s["in_ckpt"].to_numpy()
    n, n_in = len(x), int(inside.sum())
    ss = float(((x - x.mean()) ** 2).sum()) if n else math.nan
    out: dict[str, float | int] = {
        "n": n,
        "n_in": n_in,
        "n_out": n - n_in,
        "time_share": n_in / n if n else math.nan,
        "mean_in": float(x[inside].mean()) if n_in else math.nan,
        "mean_out": float(x[~inside].mean()) if n - n_in else math.nan,
        "variance_share": float(((x[inside] - x.mean()) ** 2).sum()) / ss if n and ss > 0 else math.nan,
    }
    # relative to the throughput outside checkpoints: undefined when that is zero (a run stalled whenever
    # no checkpoint ran: seen on btrfs beyond the memory limit at 1 client)
    base_ok = bool(n - n_in) and out["mean_out"] != 0
    out["delta_pct"] = 100 * (out["mean_in"] / out["mean_out"] - 1) if n_in and base_ok else math.nan
    lo = hi = math.nan
    if n_in >= 2 and n - n_in >= 2 and base_ok:
        resid = np.where(inside, x - x[inside].mean(), x - x[~inside].mean())  # level shift removed
        ratio = effective_sample_size(resid, "acf") / n
        se = math.sqrt(
            x[inside].var(ddof=1) / max(n_in * ratio, 1) + x[~inside].var(ddof=1) / max((n - n_in) * ratio, 1)
        )
        z = float(sps.norm.ppf((1 + confidence) / 2))
        diff = out["mean_in"] - out["mean_out"]
        lo = 100 * (diff - z * se) / out["mean_out"]
        hi = 100 * (diff + z * se) / out["mean_out"]
    out["delta_pct_lo"], out["delta_pct_hi"] = lo, hi
    return out


def trim_warmup(df: pl.DataFrame, trim_s: float, time: str = "t_s") -> pl.DataFrame:
    """Drop the first `trim_s` seconds of every run (fixed trim; recorded by the caller, or use
    `apply_steady_state(method="fixed")`, which records `trim_s`/`trim_method` columns; MSER-5 per run
    with `apply_steady_state()`)."""
    return df.filter(pl.col(time) > trim_s)
