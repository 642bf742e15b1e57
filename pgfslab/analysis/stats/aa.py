"""The noise floor: an A/A control, its band, and whether an effect lies inside it.

A study may carry a target that is the exact twin of its baseline (the same spec, interleaved like the
others; the twin's target spec says `aa_twin_of: <baseline>`, checked by pgfslab.config.checks). Whatever separates the twin from its
baseline is the instrument's own noise on this machine: run order, the image file's place on the host's
disk, the state the host was in. `aa_ratios` computes twin/baseline per cell with exactly the interval the
lab uses for target comparisons (`verdicts.ratio.ratio_ci`: the Hodges-Lehmann ratio with the exact
Mann-Whitney interval), so an A/A interval and a comparison's interval mean the same thing.

The band (`aa_band`, `against_noise`) describes the noise in the exchangeability section; the verdicts do
not read comparisons against it (that would count A's noise twice: they use the twin once, as a second
reference, verdicts.ratio.both_references). Which of two identical targets is called the twin is arbitrary, so the noise band is symmetric on
the log scale: h = max(hi, 1/lo) of the A/A interval, band [1/h, h]. An A/A interval of [0.97, 1.02] gives
the band [0.971, 1.031]: the two identical targets could come out 3 % apart either way.

`against_noise` says where a comparison's ratio B/A with its interval [lo, hi] lies:

* "outside the A/A band": the whole interval clears the band (lo > h or hi < 1/h): a finding;
* "inside the A/A band": the ratio itself lies within the band: the instrument alone moves two identical
  targets that far, so this is not a finding;
* "overlaps the A/A band": the ratio lies outside the band but its interval reaches into it: not
  separated from the instrument's noise at these run counts.

`pseudo_aa` checks the other way round, on real runs, that the comparison does not find effects where
there are none: it splits each target's runs of a cell into two pseudo-targets (alternating rounds, and
many random balanced splits) and counts how often the comparison rejects; for a valid comparison that is
at most alpha (tests/test_exchangeability.py, on the recorded studies).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from pgfslab.analysis.verdicts.ratio import PAIRING, RatioCI, paired_ratio_ci, ratio_ci

CELL = ("workload", "clients")
CONFIG_KEY = "aa_twin_of"  # targets.<twin>.aa_twin_of = <baseline> (the verdicts read the same key)
T = TypeVar("T")
Noise = Literal["outside the A/A band", "inside the A/A band", "overlaps the A/A band"]


def aa_band(lo: float, hi: float) -> tuple[float, float]:
    """The symmetric band [1/h, h], h = max(hi, 1/lo), of an A/A interval [lo, hi] (which of two identical
    targets is called the twin is arbitrary); (0, inf) for none."""
    if not (lo > 0 and math.isfinite(hi)):
        return 0.0, math.inf
    h = max(hi, 1 / lo)
    return 1 / h, h


def against_noise(ratio: float, lo: float, hi: float, band_lo: float, band_hi: float) -> Noise | None:
    """Where a comparison's ratio and interval lie against an A/A band: outside (the whole interval clears
    it), inside (the ratio lies within it) or overlapping (the ratio outside, the interval reaching in); None
    when either is unknown."""
    if any(v is None or math.isnan(v) for v in (ratio, lo, hi, band_lo, band_hi)):
        return None
    if lo > band_hi or hi < band_lo:
        return "outside the A/A band"
    if band_lo <= ratio <= band_hi:
        return "inside the A/A band"
    return "overlaps the A/A band"


def twins_from_config(cfg: Mapping[str, Any]) -> dict[str, str]:
    """twin -> baseline for every target whose spec names its baseline under `aa_twin_of`."""
    return {
        name: str(spec[CONFIG_KEY])
        for name, spec in (cfg.get("targets") or {}).items()
        if isinstance(spec, Mapping) and spec.get(CONFIG_KEY)
    }


def aa_ratios(
    frame: pl.DataFrame,
    twins: Mapping[str, str],
    *,
    value: str = "value",
    cell: Sequence[str] = CELL,
    alpha: float = 0.05,
    primary: str = "runs",
) -> pl.DataFrame:
    """Per cell and twin: twin/baseline (`ratio_ci`) with its interval and exact coverage, the interval's
    half-width in %, and the symmetric A/A band. `frame` has one row per run: target, the cell's columns,
    `value` (and `repeat`, the round, for a paired `primary`). `primary`: the study's comparison
    (`analysis.primary`); paired by round ("rounds", "rounds-t") over the rounds where both ran, as the verdicts
    pair it, and unpaired where a round holds two runs of one of them."""
    rows = []
    data = frame.filter(pl.col(value).is_not_null() & (pl.col(value) > 0))
    for key, part in data.group_by(list(cell), maintain_order=True):
        for twin, baseline in twins.items():
            pa, pb = part.filter(pl.col("target") == baseline), part.filter(pl.col("target") == twin)
            if pa.is_empty() or pb.is_empty():
                continue
            ci = primary_ratio(pa, pb, value, alpha, primary)
            band_lo, band_hi = aa_band(ci.lo, ci.hi)
            rows.append(
                {
                    **dict(zip(cell, key)),
                    "baseline": baseline,
                    "twin": twin,
                    "n_baseline": ci.n_a,
                    "n_twin": ci.n_b,
                    "aa_ratio": ci.ratio,
                    "aa_lo": ci.lo,
                    "aa_hi": ci.hi,
                    "aa_coverage": ci.confidence,
                    "aa_half_width_pct": ci.half_width_pct,
                    "band_lo": band_lo,
                    "band_hi": band_hi,
                }
            )
    return pl.DataFrame(rows)


def primary_ratio(pa: pl.DataFrame, pb: pl.DataFrame, value: str, alpha: float, primary: str = "runs") -> RatioCI:
    """B/A of two targets' runs (`pa`, `pb`: rows with `value`, and `repeat` for a paired `primary`) as the study's
    verdicts compare them: paired by round where `primary` pairs and every round holds one run of each, else
    unpaired (`ratio_ci`)."""
    return _paired(pa, pb, value, alpha, primary) or ratio_ci(pa[value].to_numpy(), pb[value].to_numpy(), alpha)


def _paired(pa: pl.DataFrame, pb: pl.DataFrame, value: str, alpha: float, primary: str) -> RatioCI | None:
    """B/A paired by round as `primary` says, None where it is not paired or cannot be."""
    method = PAIRING.get(primary)
    if method is None or "repeat" not in pa.columns:
        return None
    if pa["repeat"].n_unique() < pa.height or pb["repeat"].n_unique() < pb.height:
        return None
    both = pa.select("repeat", pl.col(value).alias("a")).join(
        pb.select("repeat", pl.col(value).alias("b")), on="repeat"
    )
    return paired_ratio_ci(both["a"].to_numpy(), both["b"].to_numpy(), alpha, method)


def with_noise(
    comparisons: pl.DataFrame,
    aa: pl.DataFrame,
    *,
    cell: Sequence[str] = CELL,
    ratio: str = "ratio",
    lo: str = "lo",
    hi: str = "hi",
) -> pl.DataFrame:
    """`comparisons` (one row per cell and compared target, with columns `ratio`, `lo`, `hi`) with the
    cell's A/A band (the widest, if the study has several twins) and `noise` (`against_noise`)."""
    band = aa.group_by(list(cell)).agg(pl.col("band_lo").min(), pl.col("band_hi").max())
    out = comparisons.join(band, on=list(cell), how="left")
    return out.with_columns(
        pl.Series(
            "noise",
            [
                against_noise(*(math.nan if v is None else float(v) for v in r))
                for r in out.select(ratio, lo, hi, "band_lo", "band_hi").iter_rows()
            ],
            dtype=pl.Utf8,
        )
    )


# ---------------------------------------------------------------------------- pseudo A/A on real runs


def lab_rejects(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> bool:
    """The lab's comparison of two targets' runs: does the `ratio_ci` interval at 1 - alpha exclude 1
    (only an interval that reaches that coverage counts)?"""
    ci: RatioCI = ratio_ci(np.asarray(a, float), np.asarray(b, float), alpha)
    return bool(ci.confidence >= 1 - alpha - 1e-9 and (ci.lo > 1 or ci.hi < 1))


def centered_logs(values: ArrayLike) -> NDArray[np.float64]:
    """log(values) - their mean: a unit's runs on a common scale, so that units can be pooled."""
    x = np.log(np.asarray(values, float))
    return x - x.mean()


def alternate(items: Sequence[T]) -> tuple[list[T], list[T]]:
    """Rounds 1, 3, 5, ... and 2, 4, ... (items in round order)."""
    return list(items[0::2]), list(items[1::2])


@dataclass(frozen=True)
class PseudoAA:
    alternating_rejected: bool  # the comparison rejected at the alternating-rounds split
    rejections: int  # over the random splits
    splits: int
    n_a: int  # runs (or items) on each side of a split
    n_b: int

    @property
    def rate(self) -> float:
        return self.rejections / self.splits if self.splits else math.nan


def pseudo_aa(
    units: Sequence[Sequence[T]],
    compare: Callable[[list[T], list[T]], bool],
    *,
    splits: int = 2000,
    seed: int = 20261127,
) -> PseudoAA:
    """A true A/A from real runs. Each unit is one target's runs of one cell in round order; every split
    divides each unit into two pseudo-targets (first the alternating rounds, then `splits` random
    balanced ones: the unit's runs shuffled, then alternated) and pools the units' sides; `compare(a, b)`
    says whether the comparison rejects. Pooling across units needs values on a common scale
    (`centered_logs`, done by the caller)."""
    rng = np.random.default_rng(seed)

    def split(order: list[list[int]]) -> tuple[list[T], list[T]]:
        a: list[T] = []
        b: list[T] = []
        for unit, idx in zip(units, order):
            ia, ib = alternate(idx)
            a += [unit[i] for i in ia]
            b += [unit[i] for i in ib]
        return a, b

    a0, b0 = split([list(range(len(u))) for u in units])
    hits = sum(compare(*split([list(rng.permutation(len(u))) for u in units])) for _ in range(splits))
    return PseudoAA(bool(compare(a0, b0)), int(hits), splits, len(a0), len(b0))
