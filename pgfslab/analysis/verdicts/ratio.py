"""The ratio of two sides' typical values with a distribution-free interval, the ratio of two such ratios
(an interaction), and what an interval says of a seed's claim.

The ratio is B/A of the runs' values (e.g. btrfs's tps over ext4's in one cell). Its point estimate is
the Hodges-Lehmann shift of the logarithms (the median of all pairwise log-ratios, exponentiated); its
interval inverts the exact Mann-Whitney test that the significance tables use (order statistics of the
pairwise log-ratios at the test's critical value), so the interval excludes 1 exactly when the rank test
is significant at the same level. Few runs (3 against 3) cannot give a 95 % interval: the widest one there
is, from the smallest to the largest pairwise ratio, is reported with its exact coverage (90 % for 3
against 3) and no verdict is drawn from it.

A study whose config states `analysis.primary: rounds` compares the runs paired by round instead
(`paired_ratio_ci`): the per-round log-ratios B/A, their Hodges-Lehmann shift and the exact Wilcoxon
signed-rank interval. Its interval exists from 6 rounds at 95 % (the rank-sum one from 4 against 4), and it is
narrower where the rounds share their drift; the verdicts print the plain comparison beside it. `analysis.primary:
rounds-t` pairs the same way and reads Student's t interval of the per-round log-ratios (`stats.paired_t`), which
a handful of rounds does not make as coarse as a rank test's.

An interaction (`interaction_ci`) is (B/A at one level of a setting) / (B/A at another), e.g. btrfs/ext4
with fsync off against fsync on: the point is the difference of the four groups' mean log values, the interval
Welch's t interval of it (a percentile bootstrap over a few runs a group undercovered); a study paired by round
reads each round's own change instead (`paired_interaction_ci`).

`judge` says two things apart: the direction (agrees / opposite / unresolved: the interval lies on the
claimed side of 1, on the other, or covers 1) and, where the seed gave a size (`Claim.seed_range`: a number, a
range, or its words of size by the lab's one rule), the magnitude (the interval overlapping the seed's
range: holds; the whole interval nearer 1 than the range: same direction, smaller effect; farther: larger
effect). An interval that covers 1 leaves the direction unresolved; where it also lies wholly nearer 1 than the
seed's range (or beyond 1 the other way), the seed's effect is ruled out all the same: "smaller effect, direction
not resolved", the magnitude said apart from the direction. A claim with no size gets the direction only; a claim that two sides are "the same" is an
equivalence test against `Claim.band_range`. No edge is ever placed at or next to the seed's own estimate.

Where A has an A/A twin (a target with A's exact spec), the twin is used once, as a second reference:
`both_references` joins B/A and B/twin into one interval that spans both (an intersection-union test: a
direction needs B to differ from A and from its twin, each at the interval's level, so the joined interval
keeps that level without a correction, and the twin's own difference from A widens it only as far as it
really goes). An interval that still covers 1 is not resolved, never "no finding".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from pgfslab.analysis.stats import paired_t
from pgfslab.analysis.stats.power import critical_u, u_null_cdf
from pgfslab.analysis.stats.signed_rank import shift_interval

Expect = Literal["greater", "less", "same"]
# a paired primary comparison (`analysis.primary`) and how it reads the per-round log-ratios
PAIRING = {"rounds": "signed-rank", "rounds-t": "t"}
# each pairing's words in a row's test column
PAIRED_TEST = {
    "signed-rank": "paired by round, exact signed-rank interval",
    "t": "paired by round, mean log-ratio with Student's t interval",
}
# each primary comparison in words, for captions and the benchmarks page
METHOD_WORDS = {
    "runs": "the runs unpaired, the Hodges-Lehmann ratio with the exact Mann-Whitney interval",
    "rounds": "the runs paired by round, the exact signed-rank interval",
    "rounds-t": "the runs paired by round, the mean log-ratio with Student's t interval",
}
# the verdict's category (one word or phrase a reader cannot misread; the sentence says the numbers)
HOLDS = "holds"
SMALLER = "same direction, smaller effect"
# the interval covers 1 and lies wholly nearer 1 than the seed's size (or the other way): the direction is not
# resolved, the seed's effect is ruled out; decisive about the claim as the seed made it, with its size
SMALLER_ANY = "smaller effect, direction not resolved"
LARGER = "same direction, larger effect"
DIRECTION_ONLY = "holds (direction)"
OPPOSITE = "opposite direction"
DIFFERS = "not the same"
UNRESOLVED = "not resolved"
NOT_IN_REGIME = "not tested in the seed's regime"
ONCE = "measured once"
VIOLATED = "violated"
CATEGORIES = (
    HOLDS,
    SMALLER,
    SMALLER_ANY,
    LARGER,
    DIRECTION_ONLY,
    OPPOSITE,
    DIFFERS,
    VIOLATED,
    UNRESOLVED,
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


def paired_ratio_ci(
    a: np.ndarray | list[float], b: np.ndarray | list[float], alpha: float = 0.05, method: str = "signed-rank"
) -> RatioCI:
    """B/A paired by round (`a[i]` and `b[i]` ran in the same round of the plan): the Hodges-Lehmann shift of the
    per-round log-ratios with its exact Wilcoxon signed-rank interval (`stats.signed_rank.shift_interval`),
    exponentiated. What the rounds share (the host's speed that hour, the drift of data sets that grow the same
    way on every target) cancels in each round's ratio. Too few rounds for an interval at 1 - alpha (fewer than
    6 at 0.05): the widest there is, with its lower coverage, as `ratio_ci`. n_a = n_b = the rounds. `method` "t":
    the mean per-round log-ratio with Student's t interval instead (`stats.paired_t`; from 3 rounds)."""
    xa, xb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if len(xa) != len(xb):
        raise ValueError(f"paired by round: {len(xa)} runs of A against {len(xb)} of B")
    n = len(xa)
    if n == 0:
        return RatioCI(math.nan, 0.0, math.inf, 0, 0, math.nan)
    interval = paired_t.shift_interval if method == "t" else shift_interval
    point, lo, hi, coverage = interval(xb - xa, alpha)
    return RatioCI(math.exp(point), math.exp(lo), math.exp(hi), n, n, coverage)


def interaction_ci(
    a0: list[float] | np.ndarray,
    b0: list[float] | np.ndarray,
    a1: list[float] | np.ndarray,
    b1: list[float] | np.ndarray,
    alpha: float = 0.05,
) -> RatioCI:
    """(B1/A1) / (B0/A0): how much B/A changes from level 0 to level 1 of a setting, from the four groups' mean log
    values, with the 1 - alpha Welch t interval of that difference of means (each group's own variance, the
    degrees of freedom by Welch-Satterthwaite). The percentile bootstrap of the groups' Hodges-Lehmann shifts it
    replaces covered less than it said (simulated log-normal runs, SD 0.1: 93.5 % of its 95 % intervals and 95.6 %
    of its 97.5 % ones at 5 runs a group, 89.5 % of its 95 % ones at 3; this interval 95.2 %, 97.3 % and 97 %).
    Fewer than 3 runs in any group: the point alone (no interval, nan coverage). n_a / n_b count the runs at
    level 0 / level 1."""
    groups = [np.asarray(x, float) for x in (a0, b0, a1, b1)]
    n0, n1 = len(groups[0]) + len(groups[1]), len(groups[2]) + len(groups[3])
    if any(len(g) == 0 for g in groups):
        return RatioCI(math.nan, 0.0, math.inf, n0, n1, math.nan)
    logs = [np.log(g) for g in groups]
    means = [float(x.mean()) for x in logs]
    est = (means[3] - means[2]) - (means[1] - means[0])
    if any(len(g) < 3 for g in groups):
        return RatioCI(math.exp(est), 0.0, math.inf, n0, n1, math.nan)
    v = [float(x.var(ddof=1)) / len(x) for x in logs]
    se = math.sqrt(sum(v))
    if se == 0:
        return RatioCI(math.exp(est), math.exp(est), math.exp(est), n0, n1, 1 - alpha)
    df = se**4 / sum(vi**2 / (len(x) - 1) for vi, x in zip(v, logs))
    half = float(sps.t.ppf(1 - alpha / 2, df)) * se
    return RatioCI(math.exp(est), math.exp(est - half), math.exp(est + half), n0, n1, 1 - alpha)


def paired_interaction_ci(
    a0: np.ndarray | list[float],
    b0: np.ndarray | list[float],
    a1: np.ndarray | list[float],
    b1: np.ndarray | list[float],
    alpha: float = 0.05,
    method: str = "t",
) -> RatioCI:
    """(B1/A1) / (B0/A0) paired by round: the four runs of round i are `a0[i]`, `b0[i]`, `a1[i]`, `b1[i]`, and the
    round's own change log(B1/A1) - log(B0/A0) is read as `paired_ratio_ci` reads a round's log-ratio (whatever the
    round shares cancels in it). n_a = n_b = the rounds."""
    r0 = np.asarray(b0, float) / np.asarray(a0, float)
    r1 = np.asarray(b1, float) / np.asarray(a1, float)
    return paired_ratio_ci(r0, r1, alpha, method)


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


def both_references(to_a: RatioCI, to_twin: RatioCI) -> RatioCI:
    """B against A and against A's A/A twin as one interval: from the lower of the two lower ends to the higher
    of the upper ends, the point their geometric mean, the coverage the lower of the two (module docstring:
    an intersection-union test). n_a counts A's and the twin's runs."""
    point = math.exp((math.log(to_a.ratio) + math.log(to_twin.ratio)) / 2)
    return RatioCI(
        point,
        min(to_a.lo, to_twin.lo),
        max(to_a.hi, to_twin.hi),
        to_a.n_a + to_twin.n_a,
        to_a.n_b,
        min(to_a.confidence, to_twin.confidence),
    )


def range_text(r: tuple[float, float]) -> str:
    """A seed's size or a band as text: one number, or lo–hi (an open end as ∞)."""
    return _num(r[0]) if r[0] == r[1] else f"{_num(r[0])}–{_num(r[1])}"


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


def _size(lo: float, hi: float, expect: str, seed: tuple[float, float]) -> str:
    """Where an interval on the claimed side of 1 lies against the seed's range: inside (they overlap),
    smaller (the whole interval nearer 1) or larger (farther from 1)."""
    s_lo, s_hi = seed
    if lo <= s_hi and s_lo <= hi:
        return "inside"
    nearer = hi < s_lo if expect == "greater" else lo > s_hi
    return "smaller" if nearer else "larger"


def judge(
    ci: RatioCI,
    expect: Expect,
    seed_range: tuple[float, float] | None = None,
    band_range: tuple[float, float] | None = None,
    level: float = 0.95,
) -> Verdict:
    """What the interval says of a claim that B/A is greater than 1, less than 1, or the same (within
    `band_range`). See the module's docstring."""
    if math.isnan(ci.ratio):
        return Verdict(UNRESOLVED, None, None, "no runs on one side")
    if not ci.confidence >= level - 1e-9:
        why = (
            f"{ci.n_a}+{ci.n_b} runs give no {100 * level:.3g} % interval (the widest there is: {interval_text(ci)})"
            if math.isfinite(ci.hi) and math.isfinite(ci.confidence)
            else f"{ci.n_a}+{ci.n_b} runs: too few for an interval ({_num(ci.ratio)})"
        )
        return Verdict(UNRESOLVED, "unresolved", None, f"not resolved: {why}")
    lo, hi, shown = ci.lo, ci.hi, interval_text(ci)
    at = f"±{ci.half_width_pct:.0f} %"
    if expect == "same":
        if band_range is None:
            raise ValueError("an equivalence claim needs its band")
        b_lo, b_hi = band_range
        edge = f"[{_num(b_lo)}, {_num(b_hi)}] (the band from the seed's words)"
        if b_lo <= lo and hi <= b_hi:
            return Verdict(HOLDS, None, None, f"holds: {shown} lies within {edge}")
        if hi < b_lo or lo > b_hi:
            return Verdict(DIFFERS, None, None, f"not the same: {shown} lies outside {edge}")
        return Verdict(UNRESOLVED, None, None, f"not resolved at {at}: {shown} straddles an edge of {edge}")
    direction = _side(lo, hi, expect)
    seed = f" against the seed's {range_text(seed_range)}" if seed_range is not None else ""
    if direction == "unresolved":
        if seed_range is not None and _size(lo, hi, expect, seed_range) == "smaller":
            return Verdict(SMALLER_ANY, direction, "smaller", f"smaller effect, direction not resolved: {shown} "
                           f"covers 1 and rules out the seed's {range_text(seed_range)}")  # fmt: skip
        return Verdict(UNRESOLVED, direction, None, f"not resolved at {at}: {shown} covers 1")
    if direction == "opposite":
        return Verdict(OPPOSITE, direction, None, f"opposite direction: {shown}{seed}")
    if seed_range is None:
        side = "above" if expect == "greater" else "below"
        return Verdict(DIRECTION_ONLY, direction, None, f"holds (direction only; the seed gave no size): "
                       f"{shown} lies {side} 1")  # fmt: skip
    size = _size(lo, hi, expect, seed_range)
    if size == "inside":
        said = (
            f"the seed's {_num(seed_range[0])} is inside [{_num(lo)}, {_num(hi)}]"
            if seed_range[0] == seed_range[1]
            else f"{shown} overlaps the seed's {range_text(seed_range)}"
        )
        return Verdict(HOLDS, direction, "inside", f"holds: {said}")
    category = SMALLER if size == "smaller" else LARGER
    return Verdict(category, direction, size, f"same direction, {size} effect: {shown}{seed}")


def judge_once(
    value: float, expect: Expect, seed_range: tuple[float, float] | None, band_range: tuple[float, float] | None
) -> Verdict:
    """One measurement per side (a footprint or compression ratio of one load each): the point compared
    with 1 and the seed's size, said as one measurement, with no interval over repeats of one load."""
    shown = f"{_num(value)} (one measurement per load, no interval)"
    if expect == "same":
        if band_range is None:
            raise ValueError("an equivalence claim needs its band")
        inside = band_range[0] <= value <= band_range[1]
        where = "within" if inside else "outside"
        return Verdict(
            ONCE, None, None, f"measured once: {shown} {where} [{_num(band_range[0])}, {_num(band_range[1])}]"
        )
    agrees = value > 1 if expect == "greater" else value < 1
    if not agrees:
        return Verdict(ONCE, "opposite", None, f"measured once, opposite direction: {shown}")
    if seed_range is None:
        return Verdict(ONCE, "agrees", None, f"measured once, same direction: {shown}")
    size = _size(value, value, expect, seed_range)
    words = "the seed's size" if size == "inside" else f"{size} effect"
    return Verdict(ONCE, "agrees", size, f"measured once, same direction, {words}: {shown} against the "
                   f"seed's {range_text(seed_range)}")  # fmt: skip
