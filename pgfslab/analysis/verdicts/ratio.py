"""The ratio of two sides' typical values with a distribution-free interval, the ratio of two such ratios
(an interaction), and what an interval says of a seed's claim.

The ratio is B/A of the runs' values (e.g. btrfs's tps over ext4's in one cell). Its point estimate is
the Hodges-Lehmann shift of the logarithms (the median of all pairwise log-ratios, exponentiated); its
interval inverts the exact Mann-Whitney test that the significance tables use (order statistics of the
pairwise log-ratios at the test's critical value), so the interval excludes 1 exactly when the rank test
is significant at the same level. Few runs (3 against 3) cannot give a 95 % interval: the widest one there
is, from the smallest to the largest pairwise ratio, is reported with its exact coverage (90 % for 3
against 3) and no verdict is drawn from it.

An interaction (`interaction_ci`) is (B/A at one level of a setting) / (B/A at another), e.g. btrfs/ext4
with fsync off against fsync on: the point is the ratio of the two Hodges-Lehmann ratios, the interval a
percentile bootstrap that resamples the runs within each of the four groups (they are independent runs).

`judge` says two things apart: the direction (agrees / opposite / unresolved: the interval lies on the
claimed side of 1, on the other, or covers 1) and, where the seed gave a number, the magnitude (the seed's
number inside the interval: holds; the whole interval nearer 1 than the seed's number: same direction,
smaller effect; farther: larger effect). A verbal claim gets the direction only; a claim that two sides
are "the same" is an equivalence test against a band the lab chose (and says why). No edge is ever placed
at or next to the seed's own estimate.

Where an A/A band exists (`aa_band`: the symmetric band [1/h, h] of the interval between a target and its
exact twin), a comparison is read against it first (`against_noise`): a ratio inside the band is no finding
beyond the instrument's noise; a ratio outside it whose interval still reaches into it is not separated
from the noise (not resolved); only an interval clear of the band gets a direction and a magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pgfslab.analysis.stats.power import critical_u, u_null_cdf

Expect = Literal["greater", "less", "same"]
Noise = Literal["outside the A/A band", "inside the A/A band", "overlaps the A/A band"]
# the verdict's category (one word or phrase a reader cannot misread; the sentence says the numbers)
HOLDS = "holds"
SMALLER = "same direction, smaller effect"
LARGER = "same direction, larger effect"
DIRECTION_ONLY = "holds (direction)"
OPPOSITE = "opposite direction"
DIFFERS = "not the same"
UNRESOLVED = "not resolved"
NOISE = "no finding beyond the instrument's noise"
NOT_IN_REGIME = "not tested in the seed's regime"
ONCE = "measured once"
VIOLATED = "violated"
CATEGORIES = (
    HOLDS,
    SMALLER,
    LARGER,
    DIRECTION_ONLY,
    OPPOSITE,
    DIFFERS,
    VIOLATED,
    UNRESOLVED,
    NOISE,
    NOT_IN_REGIME,
    ONCE,
)


@dataclass(frozen=True)
class RatioCI:
    ratio: float
    lo: float
    hi: float
    n_a: int
    n_b: int
    confidence: float  # exact coverage of the interval (>= the asked one), nan when none exists

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width in % of the ratio (its precision); infinite without an interval."""
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)) or not self.ratio > 0:
            return math.inf
        return 100 * (self.hi - self.lo) / 2 / self.ratio


def ratio_ci(a: np.ndarray | list[float], b: np.ndarray | list[float], alpha: float = 0.05) -> RatioCI:
    """B/A with its 1 - alpha (or more) distribution-free interval; when the run counts are too small for
    any interval at that level (n = 3 vs 3 at alpha 0.05), the widest there is (the smallest to the largest
    pairwise ratio) with its lower exact coverage."""
    xa, xb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    n_a, n_b = len(xa), len(xb)
    if n_a == 0 or n_b == 0:
        return RatioCI(math.nan, 0.0, math.inf, n_a, n_b, math.nan)
    d = np.sort((xb[None, :] - xa[:, None]).ravel())
    point = float(np.exp(np.median(d)))
    c = critical_u(n_a, n_b, alpha)
    if c is None:  # no interval reaches 1 - alpha: the widest one, with the coverage it has
        if len(d) < 2:
            return RatioCI(point, 0.0, math.inf, n_a, n_b, math.nan)
        c = 0
    coverage = 1 - 2 * float(u_null_cdf(n_a, n_b)[c])
    return RatioCI(point, float(np.exp(d[c])), float(np.exp(d[len(d) - 1 - c])), n_a, n_b, coverage)


def _hl(a: np.ndarray, b: np.ndarray) -> float:
    """Hodges-Lehmann log-ratio of B over A (the median pairwise difference of the logarithms)."""
    return float(np.median((np.log(b)[None, :] - np.log(a)[:, None]).ravel()))


def interaction_ci(
    a0: list[float] | np.ndarray,
    b0: list[float] | np.ndarray,
    a1: list[float] | np.ndarray,
    b1: list[float] | np.ndarray,
    alpha: float = 0.05,
    n_boot: int = 4000,
    seed: int = 29,
) -> RatioCI:
    """(B1/A1) / (B0/A0): how much B/A changes from level 0 to level 1 of a setting, with a 1 - alpha
    percentile-bootstrap interval (runs resampled within each group). Fewer than 3 runs in any group: the
    point alone (no interval, nan coverage). n_a / n_b count the runs at level 0 / level 1."""
    groups = [np.asarray(x, float) for x in (a0, b0, a1, b1)]
    n0, n1 = len(groups[0]) + len(groups[1]), len(groups[2]) + len(groups[3])
    if any(len(g) == 0 for g in groups):
        return RatioCI(math.nan, 0.0, math.inf, n0, n1, math.nan)
    point = math.exp(_hl(groups[2], groups[3]) - _hl(groups[0], groups[1]))
    if any(len(g) < 3 for g in groups):
        return RatioCI(point, 0.0, math.inf, n0, n1, math.nan)
    rng = np.random.default_rng(seed)
    logs = [np.log(g) for g in groups]

    def resampled_hl(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
        ia = rng.integers(0, len(la), (n_boot, len(la)))
        ib = rng.integers(0, len(lb), (n_boot, len(lb)))
        diffs = lb[ib][:, None, :] - la[ia][:, :, None]
        return np.median(diffs.reshape(n_boot, -1), axis=1)

    boot = resampled_hl(logs[2], logs[3]) - resampled_hl(logs[0], logs[1])
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return RatioCI(point, float(np.exp(lo)), float(np.exp(hi)), n0, n1, 1 - alpha)


@dataclass(frozen=True)
class Verdict:
    category: str  # one of CATEGORIES
    direction: str | None  # agrees / opposite / unresolved (None: an equivalence claim, or no interval)
    magnitude: str | None  # inside / smaller / larger (None: no seed number, or the direction does not agree)
    text: str  # the sentence a reader quotes, with the numbers


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "∞"
    return f"{x:.3g}" if abs(x) < 0.1 or abs(x) >= 100 else f"{x:.2f}"


def aa_band(lo: float, hi: float) -> tuple[float, float]:
    """The symmetric band [1/h, h], h = max(hi, 1/lo), of an A/A interval [lo, hi] (which of two identical
    targets is called the twin is arbitrary); (0, inf) for none."""
    if not (lo > 0 and math.isfinite(hi)):
        return 0.0, math.inf
    h = max(hi, 1 / lo)
    return 1 / h, h


def against_noise(ratio: float, lo: float, hi: float, band_lo: float, band_hi: float) -> Noise | None:
    """Where a comparison's ratio and interval lie against an A/A band: outside (the whole interval clears
    it: a finding), inside (the ratio lies within it: the instrument alone moves two identical targets that
    far), or overlapping (the ratio outside, the interval reaching in); None when either is unknown."""
    if any(v is None or math.isnan(v) for v in (ratio, lo, hi, band_lo, band_hi)):
        return None
    if lo > band_hi or hi < band_lo:
        return "outside the A/A band"
    if band_lo <= ratio <= band_hi:
        return "inside the A/A band"
    return "overlaps the A/A band"


def interval_text(ci: RatioCI) -> str:
    return f"{_num(ci.ratio)} [{_num(ci.lo)}, {_num(ci.hi)}]"


def direction_words(ci: RatioCI, alpha: float, up: str, down: str, none: str) -> str:
    """Where the interval lies against 1 in the caller's words (`up` above, `down` below), else `none` and the
    precision it had ("<none> resolved at ±X %"); with the interval's coverage when it is below 1 - alpha."""
    if ci.lo > 1:
        words = up
    elif ci.hi < 1:
        words = down
    else:
        words = f"{none} resolved at ±{ci.half_width_pct:.0f} %"
    if math.isfinite(ci.confidence) and ci.confidence < 1 - alpha - 1e-9:
        words += f" ({100 * ci.confidence:.0f} % interval)"
    return words


def _side(lo: float, hi: float, expect: str) -> str:
    """Where the interval lies against 1, for a claim that B/A is greater (or less) than 1."""
    above, below = lo > 1, hi < 1
    if not (above or below):
        return "unresolved"
    return "agrees" if (above if expect == "greater" else below) else "opposite"


def judge(
    ci: RatioCI,
    expect: Expect,
    seed_value: float | None = None,
    band: float | None = None,
    aa_band: tuple[float, float] | None = None,
    level: float = 0.95,
) -> Verdict:
    """What the interval says of a claim that B/A is greater than 1, less than 1, or the same (within
    1 ± band). See the module's docstring; `aa_band` (lo, hi) is the A/A control's interval of B/A."""
    if math.isnan(ci.ratio):
        return Verdict(UNRESOLVED, None, None, "no runs on one side")
    if not ci.confidence >= level - 1e-9:
        why = (
            f"{ci.n_a}+{ci.n_b} runs give no {100 * level:g} % interval (the widest there is: {interval_text(ci)})"
            if math.isfinite(ci.hi) and math.isfinite(ci.confidence)
            else f"{ci.n_a}+{ci.n_b} runs: too few for an interval ({_num(ci.ratio)})"
        )
        return Verdict(UNRESOLVED, "unresolved", None, f"not resolved: {why}")
    lo, hi, shown = ci.lo, ci.hi, interval_text(ci)
    at = f"±{ci.half_width_pct:.0f} %"
    if expect == "same":
        if band is None:
            raise ValueError("an equivalence claim needs its band")
        edge = f"1 ± {band:g} (the lab's band)"
        if 1 - band <= lo and hi <= 1 + band:
            return Verdict(HOLDS, None, None, f"holds: {shown} lies within {edge}")
        if hi < 1 - band or lo > 1 + band:
            return Verdict(DIFFERS, None, None, f"not the same: {shown} lies outside {edge}")
        return Verdict(UNRESOLVED, None, None, f"not resolved at {at}: {shown} straddles an edge of {edge}")
    where = against_noise(ci.ratio, lo, hi, *aa_band) if aa_band is not None else None
    if where is not None and where != "outside the A/A band":
        noise = f"[{_num(aa_band[0])}, {_num(aa_band[1])}]"  # type: ignore[index]
        if where == "inside the A/A band":
            return Verdict(NOISE, _side(lo, hi, expect), None, f"no finding beyond the instrument's noise: "
                           f"{shown}, the ratio inside the A/A band {noise}")  # fmt: skip
        return Verdict(UNRESOLVED, _side(lo, hi, expect), None, f"not separated from the instrument's noise: "
                       f"{shown} reaches into the A/A band {noise}")  # fmt: skip
    direction = _side(lo, hi, expect)
    if direction == "unresolved":
        return Verdict(UNRESOLVED, direction, None, f"not resolved at {at}: {shown} covers 1")
    if direction == "opposite":
        return Verdict(OPPOSITE, direction, None, f"opposite direction: {shown}" + (
            f" against the seed's {_num(seed_value)}" if seed_value is not None else ""))  # fmt: skip
    if seed_value is None:
        side = "above" if expect == "greater" else "below"
        return Verdict(DIRECTION_ONLY, direction, None, f"holds (direction only; the seed gave no number): "
                       f"{shown} lies {side} 1")  # fmt: skip
    if lo <= seed_value <= hi:
        return Verdict(
            HOLDS, direction, "inside", f"holds: the seed's {_num(seed_value)} is inside [{_num(lo)}, {_num(hi)}]"
        )
    # the effect's size is its distance from 1 on the log scale: the seed's number beyond the interval's far
    # end means the lab's effect is smaller; between 1 and the interval's near end, larger
    far = hi if expect == "greater" else lo
    smaller = seed_value > far if expect == "greater" else seed_value < far
    category, word = (SMALLER, "smaller") if smaller else (LARGER, "larger")
    return Verdict(category, direction, word, f"same direction, {word} effect: {shown} against the seed's "
                   f"{_num(seed_value)}")  # fmt: skip


def judge_once(value: float, expect: Expect, seed_value: float | None, band: float | None) -> Verdict:
    """One measurement per side (a footprint or compression ratio of one load each): the point compared
    with 1 and the seed's number, said as one measurement, with no interval over repeats of one load."""
    shown = f"{_num(value)} (one measurement per load, no interval)"
    if expect == "same":
        inside = band is not None and abs(value - 1) <= band
        return Verdict(ONCE, None, None, f"measured once: {shown} {'within' if inside else 'outside'} 1 ± {band:g}")
    agrees = value > 1 if expect == "greater" else value < 1
    if not agrees:
        return Verdict(ONCE, "opposite", None, f"measured once, opposite direction: {shown}")
    if seed_value is None:
        return Verdict(ONCE, "agrees", None, f"measured once, same direction: {shown}")
    smaller = abs(math.log(value)) < abs(math.log(seed_value))
    word = "smaller" if smaller else "larger"
    return Verdict(ONCE, "agrees", word, f"measured once, same direction, {word} effect: {shown} against the "
                   f"seed's {_num(seed_value)}")  # fmt: skip
