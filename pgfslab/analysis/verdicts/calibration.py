"""Does the verdicts' interval cover a known ratio on the lab's own recorded runs?

A study that carries an A/A twin gives pairs of targets whose true ratio is 1 (the same spec, interleaved), run
by run on the host as it really was: its drift, its scattered slow runs, whatever the twin's image placement does.
From those runs this module makes many pseudo-studies of a chosen number of rounds and asks how often each of the
lab's comparisons covers the truth:

* a pseudo-study draws `rounds` of the cell's rounds at random (without replacement), and within each drawn round
  swaps the baseline's and the twin's labels with probability 1/2 (they are the same spec: either labelling is
  what the study could have recorded), then multiplies the side called B by the injected ratio `inject`;
* each comparison (`METHODS`: the runs unpaired, paired by round with the signed-rank interval, paired with the t
  interval) gives its interval at `alpha`, and the share of pseudo-studies whose interval covers `inject` is its
  coverage, with its median half-width.

Coverage near 1 - alpha says the interval's stated level holds for this host's noise; well below it, that the
interval is too narrow for it. The swap makes the twin's own bias, if it has one, part of the noise: with
`swap=False` the labels stay as recorded, and a twin that differs from its baseline (its image placed elsewhere, a
carry-over that only it gets) shows as coverage of 1 falling short. The pseudo-studies share their runs, so the
shares are estimates of the coverage of a study of that many rounds drawn from this one, not independent trials;
`draws` sets their resolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from pgfslab.analysis.verdicts import ratio as R

METHODS = ("runs", "rounds", "rounds-t")


@dataclass(frozen=True)
class Coverage:
    method: str
    rounds: int
    inject: float
    studies: int  # pseudo-studies with an interval at the level asked
    covered: float  # share of them whose interval covers `inject`
    half_width_pct: float  # median half-width, in % of the ratio


def _interval(method: str, a: np.ndarray, b: np.ndarray, alpha: float) -> R.RatioCI:
    if method not in R.PAIRING:
        return R.ratio_ci(a, b, alpha)
    return R.paired_ratio_ci(a, b, alpha, R.PAIRING[method])


def twin_coverage(
    pairs: pl.DataFrame,
    rounds: int,
    inject: float = 1.0,
    alpha: float = 0.05,
    draws: int = 2000,
    seed: int = 20261201,
    swap: bool = True,
) -> list[Coverage]:
    """Coverage of each comparison in `METHODS` over `draws` pseudo-studies of `rounds` rounds (module docstring).
    `pairs`: one row per cell and round where the baseline and its twin both ran, columns `cell`, `a` and `b` (the
    two targets' values, positive). Cells with fewer than `rounds` rounds are not drawn from. `swap` False keeps
    the labels as recorded: the share covering then also falls with any bias of the twin's own."""
    cells = [
        (g["a"].to_numpy(), g["b"].to_numpy())
        for _, g in pairs.group_by("cell", maintain_order=True)
        if g.height >= rounds
    ]
    if not cells:
        return [Coverage(m, rounds, inject, 0, math.nan, math.nan) for m in METHODS]
    rng = np.random.default_rng(seed)
    hits = {m: [] for m in METHODS}  # type: dict[str, list[tuple[bool, float]]]
    for i in range(draws):
        cell_a, cell_b = cells[i % len(cells)]
        pick = rng.choice(len(cell_a), size=rounds, replace=False)
        a, b = cell_a[pick], cell_b[pick]
        swapped = rng.random(rounds) < 0.5 if swap else np.zeros(rounds, dtype=bool)
        a, b = np.where(swapped, b, a), np.where(swapped, a, b) * inject
        for m in METHODS:
            ci = _interval(m, a, b, alpha)
            if math.isfinite(ci.confidence) and ci.confidence >= 1 - alpha - 1e-9:
                hits[m].append((ci.lo <= inject <= ci.hi, ci.half_width_pct))
    out = []
    for m in METHODS:
        got = hits[m]
        out.append(
            Coverage(
                m,
                rounds,
                inject,
                len(got),
                float(np.mean([h for h, _ in got])) if got else math.nan,
                float(np.median([w for _, w in got])) if got else math.nan,
            )
        )
    return out
