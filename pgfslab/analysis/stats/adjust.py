"""p-values adjusted for multiple comparisons (Holm-Bonferroni, Benjamini-Hochberg)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl
from scipy import stats as sps

AdjustMethod = Literal["holm", "bh", "none"]


def adjust_pvalues(p: np.ndarray | list[float] | pl.Series, method: AdjustMethod = "holm") -> np.ndarray:
    """Adjusted p-values for m simultaneous tests (NaN entries are kept and not counted in m).

    * "holm" (default): Holm-Bonferroni step-down, controls the family-wise error rate under any
      dependence: sorted ascending, p_adj(i) = max_{j<=i} min(1, (m - j + 1) p(j)) (scipy has no Holm).
    * "bh": Benjamini-Hochberg step-up, controls the false discovery rate (independent or positively
      dependent tests): scipy's `false_discovery_control`.
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
    if method == "bh":
        arr[ok] = sps.false_discovery_control(vals, method="bh")
        return arr
    order = np.argsort(vals, kind="stable")
    ranks = np.arange(1, m + 1)
    adj = np.empty(m)
    adj[order] = np.maximum.accumulate(np.minimum(1.0, (m - ranks + 1) * vals[order]))
    arr[ok] = adj
    return arr
