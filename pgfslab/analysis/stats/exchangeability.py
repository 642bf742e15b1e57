"""Are a cell's runs exchangeable? Per target and cell, over its repeats (rounds), four checks.

A comparison of two targets treats each target's runs in a cell as draws from one distribution: which
round a run had, what ran before it, must not matter. Four ways that fails, each checked on the runs'
headline values (pgbench/sysbench tps) on the log scale (throughput is a rate: a run twice as fast and
one half as fast are the same distance from the median):

* **trend over rounds** (`trend`): Kendall's tau between the round number and the value (scipy's
  `kendalltau`, exact p for small n without ties), with the Theil-Sen slope (`theilslopes`) of the log
  value per round, as % per round. Flagged when p < alpha. Kendall's tau is rank-based, so one wild run
  cannot make a trend, and for n = 5 it can still reach p = 0.017 (n = 4: 0.083, never below 0.05).
* **the first round against the rest** (`first_round`): the first round's value (lowest round; plan
  order within it) as a ratio to the median of the other rounds, and its distance from that median in
  scaled MADs of the others' logs (1.4826 MAD estimates a normal standard deviation). Flagged when the
  distance exceeds what one run from the same log-normal distribution as the rest would reach with
  probability alpha (`first_critical`, simulated: about 7 at n = 5, 4 at n = 8). Simpler rules flag far
  too often at these n: under exchangeability the first of n runs lies outside the others' range with
  probability 2/n (40 % at n = 5), and the textbook 3 MADs, estimated from four runs, is crossed by a
  quarter of perfectly ordinary runs.
* **bimodality** (`gap_ratio`): the gap ratio. Sort the logs; for every split leaving at least two
  runs on each side, the gap between the two sides divided by the wider side's own range; the largest
  over the splits. Two modes are two groups farther apart than either is wide. Moment-based measures
  (the bimodality coefficient from skewness and kurtosis) are dominated by one value at n = 5-10, and a
  dip test needs tens of values; the gap ratio needs only four (2 + 2), and requiring two runs per side
  leaves a single stray run to the outlier rule. Its null distribution depends strongly on n, so the
  critical value is the 1 - alpha quantile of the gap ratio among n normal values (one log-normal mode),
  simulated with a fixed seed (`gap_critical`; about 3.5 at n = 4, 2.5 at n = 5, 1.25 at n = 8).
* **run-level outliers** (`outlier_mask`): runs whose log value lies outside median +- k x 1.4826 x MAD of
  their cell. k depends on n (`outlier_critical`): the 1 - alpha quantile of the largest scaled distance
  among n normal values, so a cell of one log-normal mode shows an outlier with probability alpha (k is
  about 7 at n = 4, 8 at n = 5 and 5 at n = 8; the usual k = 3 would flag a run in about one cell of
  five runs in four, with nothing wrong). Each flagged run comes with its sampler evidence where recorded (requested and timed
  checkpoints during the run, autovacuum activity, device reads per second), beside the median of the
  cell's other runs, so a reader sees whether the odd run also had odd surroundings, and with how the
  cell's other targets did in the same round (their runs of that round over their own medians): when
  they were as far off, the round was, not the target.

Every check needs at least 4 runs (n = 3 is reported, not judged). The checks are screening, per cell,
without adjustment for the number of cells: with alpha = 0.05 about one cell in twenty of a perfectly
exchangeable study shows a flag of each kind.

`exchangeability` gives one row per target and cell with the flags and a one-line reason in plain words;
`outlier_runs` one row per flagged run. Input: one row per run with columns `target`, the cell's columns
(default workload, clients), `repeat` (the round), `plan_index` (the order the runs ran in), `run_id`
and the value (`queries.headline` gives all of them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

CELL = ("workload", "clients")
MAD_SCALE = 1.4826  # MAD of a normal sample x this estimates its standard deviation
SIMULATIONS = 100_000  # per critical value: its Monte Carlo error is about 1 % of it
SEED = 20261127
MIN_RUNS = 4  # the fewest runs any of the checks judges
# what the evidence columns are called in plain words, and their unit
# column: (words, unit, scale); a count has no unit and is said as "3 requested checkpoints"
EVIDENCE = {
    "checkpoints_req": ("requested checkpoints", "", 1),
    "checkpoints_timed": ("timed checkpoints", "", 1),
    "autovacuum": ("autovacuum/autoanalyze runs", "", 1),
    "reads_per_s": ("device reads", "/s", 1),
    "cpu_steal": ("CPU steal", " %", 100),  # the hypervisor's share of CPU time (/proc/stat): a neighbour's load
}


# ---------------------------------------------------------------------------- the four checks


@dataclass(frozen=True)
class Trend:
    tau: float
    p: float
    slope_pct: float  # Theil-Sen slope of the log value, as % change per round


def trend(rounds: ArrayLike, values: ArrayLike) -> Trend:
    """Kendall's tau of value against round with its two-sided p, and the Theil-Sen slope in % per round."""
    r, x = np.asarray(rounds, float), np.asarray(values, float)
    if len(x) < 3 or np.ptp(r) == 0:
        return Trend(math.nan, math.nan, math.nan)
    res = sps.kendalltau(r, x)
    slope = float(sps.theilslopes(np.log(x), r).slope)
    return Trend(float(res.statistic), float(res.pvalue), 100 * math.expm1(slope))


def _scaled_distance(x: NDArray[np.float64], ref: NDArray[np.float64]) -> NDArray[np.float64]:
    """|x - median(ref)| / (1.4826 MAD(ref)) along the last axis (inf where the MAD is 0 and x is off it)."""
    med = np.median(ref, axis=-1, keepdims=True)
    mad = MAD_SCALE * np.median(np.abs(ref - med), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mad > 0, np.abs(x - med) / mad, np.where(x == med, 0.0, np.inf))


@cache
def outlier_critical(n: int, alpha: float = 0.05) -> float:
    """k for `outlier_mask`: the 1 - alpha quantile of the largest scaled distance from the median among
    n normal values (simulated, fixed seed), so a cell of n runs from one log-normal distribution shows an
    outlier with probability alpha. NaN for n < 4 (no rule for three runs)."""
    if n < MIN_RUNS:
        return math.nan
    x = np.random.default_rng(SEED + 100 + n).standard_normal((SIMULATIONS, n))
    return float(np.quantile(_scaled_distance(x, x).max(axis=1), 1 - alpha))


@cache
def first_critical(n: int, alpha: float = 0.05) -> float:
    """k for `first_round`: the 1 - alpha quantile of the scaled distance of one new normal value from the
    median of n - 1 others (simulated, fixed seed). NaN for n < 4."""
    if n < MIN_RUNS:
        return math.nan
    x = np.random.default_rng(SEED + 200 + n).standard_normal((SIMULATIONS, n))
    return float(np.quantile(_scaled_distance(x[:, :1], x[:, 1:])[:, 0], 1 - alpha))


@dataclass(frozen=True)
class FirstRound:
    ratio: float  # first / median of the rest
    distance: float  # |log first - median(log rest)| / (1.4826 MAD(log rest))
    critical: float
    outside_range: bool

    @property
    def flagged(self) -> bool:
        return bool(self.distance > self.critical)


def first_round(values_in_order: ArrayLike, alpha: float = 0.05) -> FirstRound:
    """The first value against the rest (module docstring); not judged with fewer than 4 values."""
    x = np.asarray(values_in_order, float)
    if len(x) < 2:
        return FirstRound(math.nan, math.nan, math.nan, False)
    logs = np.log(x)
    first, rest = x[0], x[1:]
    return FirstRound(
        float(first / np.median(rest)),
        float(_scaled_distance(logs[:1], logs[1:])[0]),
        first_critical(len(x), alpha),
        bool(first < rest.min() or first > rest.max()),
    )


def gap_ratio(values: ArrayLike) -> float:
    """The largest gap between two groups of >= 2 sorted log values over the wider group's range (NaN for
    fewer than 4 values; inf when both groups are single values repeated)."""
    x = np.log(np.asarray(values, float))
    if len(x) < MIN_RUNS:
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(_gap_ratios(x[None, :])[0])


def _gap_ratios(logs: NDArray[np.float64]) -> NDArray[np.float64]:
    """`gap_ratio` of each row of log values (vectorized over rows)."""
    x = np.sort(logs, axis=1)
    n = x.shape[1]
    i = np.arange(2, n - 1)  # left group x[:i], right group x[i:]
    gap = x[:, i] - x[:, i - 1]
    spread = np.maximum(x[:, i - 1] - x[:, :1], x[:, -1:] - x[:, i])
    return np.where(spread > 0, gap / spread, np.where(gap > 0, np.inf, 0.0)).max(axis=1)


@cache
def gap_critical(n: int, alpha: float = 0.05) -> float:
    """The 1 - alpha quantile of the gap ratio among n values from one normal distribution on the log
    scale (simulated, fixed seed): above it, n runs look like two groups. NaN for n < 4."""
    if n < MIN_RUNS:
        return math.nan
    x = np.random.default_rng(SEED + n).standard_normal((SIMULATIONS, n))
    return float(np.quantile(_gap_ratios(x), 1 - alpha))


def outlier_mask(values: ArrayLike, alpha: float = 0.05, k: float | None = None) -> NDArray[np.bool_]:
    """Runs whose log lies outside median -+ k x 1.4826 MAD of their cell's logs; k = `outlier_critical`
    unless given. None flagged with fewer than 4 runs."""
    logs = np.log(np.asarray(values, float))
    if len(logs) < MIN_RUNS:
        return np.zeros(len(logs), bool)
    return _scaled_distance(logs, logs) > (k if k is not None else outlier_critical(len(logs), alpha))


# ---------------------------------------------------------------------------- per cell


def _ordered(frame: pl.DataFrame, value: str) -> pl.DataFrame:
    return frame.filter(pl.col(value).is_not_null() & (pl.col(value) > 0)).sort("repeat", "plan_index")


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _evidence_words(run: dict[str, object], others: pl.DataFrame) -> str:
    """'3 requested checkpoints (others' median 15); device reads 120/s (others' median 8.5/s)': what was
    recorded of the run, beside the median of the cell's other runs; counts that are 0 for the run and
    the others alike are summed up as 'no ...'."""
    parts, none = [], []
    for col, (words, unit, scale) in EVIDENCE.items():
        v = run.get(col)
        if not isinstance(v, int | float) or math.isnan(v):
            continue
        v = float(v) * scale
        typical = others[col].cast(pl.Float64).fill_nan(None).drop_nulls() * scale
        med = float(typical.median()) if typical.len() else None  # type: ignore[arg-type]
        if not unit and float(v) == 0 and not med:
            none.append(words)
            continue
        text = f"{words} {_num(float(v))}{unit}" if unit else f"{float(v):g} {words}"
        if med is not None:
            text += f" (others' median {_num(med)}{unit})"
        parts.append(text)
    parts += [f"no {' or '.join(none)}"] if none else []
    return "; ".join(parts) if parts else "no sampler evidence recorded"


def _same_round(relative: pl.DataFrame, run: dict[str, Any], cell: Sequence[str]) -> float | None:
    """The median, over the cell's other targets, of their run of the same round over their own median:
    near the outlier's own ratio, the whole round was off (the machine, not the target); near 1, only it."""
    same = relative.filter(
        pl.all_horizontal(pl.col(c) == run[c] for c in cell),
        pl.col("repeat") == run["repeat"],
        pl.col("target") != run["target"],
    )["_rel"]
    return float(same.median()) if same.len() else None  # type: ignore[arg-type]


def outlier_runs(
    frame: pl.DataFrame,
    evidence: pl.DataFrame | None = None,
    *,
    value: str = "value",
    cell: Sequence[str] = CELL,
    alpha: float = 0.05,
    k: float | None = None,
) -> pl.DataFrame:
    """One row per run outside its target-cell's robust band: its cell, run_id, round, value, ratio to
    the median of the cell's runs, the evidence columns found in `evidence` (joined on run_id: any of
    checkpoints_req, checkpoints_timed, autovacuum, reads_per_s) and `reason` in words."""
    by = ["target", *cell]
    runs = frame if evidence is None else frame.join(evidence, on="run_id", how="left")
    # each run against its own target-cell's median: how the cell's other targets did in the same round
    relative = _ordered(frame, value).with_columns((pl.col(value) / pl.col(value).median().over(by)).alias("_rel"))
    rows = []
    for _, part in _ordered(runs, value).group_by(by, maintain_order=True):
        mask = outlier_mask(part[value].to_numpy(), alpha, k)
        if not mask.any():
            continue
        med = float(part[value].median())  # type: ignore[arg-type]
        flagged = part.filter(pl.Series(mask))
        others = part.filter(pl.Series(~mask))
        for run in flagged.iter_rows(named=True):
            ratio = run[value] / med
            rows.append(
                {
                    **{c: run[c] for c in by},
                    "run_id": run["run_id"],
                    "repeat": run["repeat"],
                    "value": run[value],
                    "ratio_to_median": ratio,
                    **{c: run.get(c) for c in EVIDENCE if c in runs.columns},
                    "same_round_others": (same := _same_round(relative, run, cell)),
                    "reason": f"{run['run_id']} ran at {run[value]:,.0f}, {ratio:.2f}x its cell's median "
                    f"{med:,.0f} (round {run['repeat']}): {_evidence_words(run, others)}"
                    + (
                        ""
                        if same is None
                        else f"; the other targets' runs of round {run['repeat']}: {same:.2f}x their medians"
                    ),
                }
            )
    schema = {c: frame.schema[c] for c in by} | {
        "run_id": pl.Utf8,
        "repeat": pl.Int64,
        "value": pl.Float64,
        "ratio_to_median": pl.Float64,
        "same_round_others": pl.Float64,
    }
    schema |= {c: runs.schema[c] for c in EVIDENCE if c in runs.columns} | {"reason": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def exchangeability(
    frame: pl.DataFrame,
    evidence: pl.DataFrame | None = None,
    *,
    value: str = "value",
    cell: Sequence[str] = CELL,
    alpha: float = 0.05,
    k: float | None = None,
) -> pl.DataFrame:
    """Per target and cell: runs, rounds, run-to-run CV, the four checks (module docstring) and
    `flagged`/`reason`: 'exchangeable' or what failed, in one line."""
    by = ["target", *cell]
    outliers = outlier_runs(frame, evidence, value=value, cell=cell, alpha=alpha, k=k)
    rows = []
    for key, part in _ordered(frame, value).group_by(by, maintain_order=True):
        x = part[value].to_numpy()
        n = len(x)
        rounds = part["repeat"].to_numpy()
        tr = trend(rounds, x) if n >= MIN_RUNS else Trend(math.nan, math.nan, math.nan)
        fr = first_round(x, alpha)
        gap, crit = gap_ratio(x), gap_critical(n, alpha)
        mine = outliers.filter(pl.all_horizontal(pl.col(c) == v for c, v in zip(by, key)))
        flags = {
            "trend": bool(tr.p < alpha),
            "first_round_off": fr.flagged,
            "bimodal": bool(gap > crit),
            "outliers": mine.height,
        }
        why = []
        if flags["trend"]:
            why.append(f"trend over rounds {tr.slope_pct:+.1f} % per round (Kendall tau {tr.tau:+.2f}, p {tr.p:.3f})")
        if flags["first_round_off"]:
            why.append(
                f"first round {fr.ratio:.2f}x the median of the rest ({fr.distance:.1f} MADs off; above {fr.critical:.1f})"
            )
        if flags["bimodal"]:
            why.append(f"two groups of runs (gap {gap:.1f}x the wider group's spread; above {crit:.1f})")
        if mine.height:
            why.append("outlier " + ", ".join(mine["run_id"].to_list()))
        rows.append(
            {
                **dict(zip(by, key)),
                "n": n,
                "rounds": f"{int(rounds.min())}-{int(rounds.max())}",
                "cv": float(np.std(x, ddof=1) / np.mean(x)) if n > 1 else math.nan,
                "tau": tr.tau,
                "trend_p": tr.p,
                "slope_pct_per_round": tr.slope_pct,
                "first_ratio": fr.ratio,
                "first_distance": fr.distance,
                "gap_ratio": gap,
                "gap_critical": crit,
                **flags,
                "outlier_runs": ", ".join(mine["run_id"].to_list()),
                "judged": n >= MIN_RUNS,
                "flagged": bool(why),
                "reason": "; ".join(why)
                if why
                else "exchangeable: no trend, first round, two groups or outlier"
                if n >= MIN_RUNS
                else f"not judged: {n} runs (the checks need {MIN_RUNS})",
            }
        )
    return pl.DataFrame(rows)
