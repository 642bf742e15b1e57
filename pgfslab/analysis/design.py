"""What a study's plan can decide, before anything runs: per workload cell, the runs each target gets and the
smallest ratio B/A the verdicts' interval resolves with 80 % power at the run-to-run noise of this host; per
claim of the study's seeds, its cells in the plan beside the seed's own size and what the runs cost.

The noise is the run-to-run standard deviation of log throughput, per cell: measured from the study's last
database where it has one (the median over targets), else `DEFAULT_SIGMA`, stated. The smallest resolvable
ratio is exp(shift × sigma), shift the standard deviations the exact two-sided rank test (the verdicts'
interval) finds with 80 % power at n_a + n_b runs (`stats.power.detectable_shift_sd`), at alpha split over
the claim's primary cells (Bonferroni, as the verdicts do). Where A has an A/A twin, B must clear A and the
twin, each at that level: about the same runs, so the same number, read twice. Which of a claim's cells are
its primary ones depends on what the runs measure (the memory regime, a precondition): the plan takes the
cells of its workload kind and clients, and says so. A cell the study marks as context (`workloads.<name>.context`)
is never a claim's primary cell, here as in the verdicts.

A study whose seeds' claims would rest on a primary cell that cannot give an interval at all (fewer runs per
target than the exact rank test needs at 95 %) is refused before anything runs (`refuse_undecidable`): such a
cell gets more runs, or is kept as context with the reason in the config.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pgfslab.analysis.stats.power import detectable_shift_sd
from pgfslab.analysis.verdicts.claims import Claim, for_seeds
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.workload_tools import TOOLS

# log-scale run-to-run SD of the headline cell on this 2-vCPU VM on a quiet day (docs/noise.md: CV 5-10 %)
DEFAULT_SIGMA = 0.10
RUN_OVERHEAD_S = 7.0  # a run's set-up and teardown around its measured window (docs/benchmarks.md)
POWER = 0.8


def _kind(study: Study, workload: str) -> str:
    wl = study.workloads[workload]
    return str(wl.builtin or wl.test or wl.op or workload)


def measured_sigma(db: str | Path, study: str) -> pl.DataFrame:
    """Per (workload, clients): the median over targets of the SD of log headline throughput (targets with
    at least three runs); empty without a database."""
    from pgfslab.analysis import queries

    if not Path(db).exists():
        return pl.DataFrame()
    try:
        runs = queries.headline(db, study)
    except queries.MissingData:
        return pl.DataFrame()
    return (
        runs.filter(pl.col("value") > 0)
        .group_by("workload", "clients", "target")
        .agg(pl.col("value").log().std().alias("sd"), pl.len().alias("n"))
        .filter(pl.col("n") >= 3)
        .group_by("workload", "clients")
        .agg(pl.col("sd").median().alias("sigma"))
    )


def smallest_ratio(n_a: int, n_b: int, sigma: float, alpha: float) -> float:
    """The smallest B/A above 1 the exact rank interval resolves with POWER (inf: no interval at all)."""
    shift = detectable_shift_sd(n_a, n_b, alpha, POWER)
    return math.exp(shift * sigma) if math.isfinite(shift) else math.inf


def cells(study: Study, sigma: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per workload cell (pgbench and sysbench, whose comparisons are ratios of runs): its kind, the runs per
    target (the plan's, optional precision rounds included), the noise used and where it came from, the
    smallest resolvable B/A at alpha 0.05, and the cell's cost in minutes."""
    known = {
        (r["workload"], r["clients"]): r["sigma"]
        for r in (sigma if sigma is not None else pl.DataFrame()).iter_rows(named=True)
    }
    rows: list[dict[str, Any]] = []
    for name, wl in study.workloads.items():
        if not TOOLS[wl.tool].compared_over_runs:
            continue
        duration = int(wl.duration_s or study.run.duration_s)
        for clients in wl.clients:
            n = study.repeats_for(name, clients) * len(study.rungs_for(name))
            s = known.get((name, clients))
            targets = study.targets_for(name)
            rows.append(
                {
                    "workload": name,
                    "kind": _kind(study, name),
                    "clients": clients,
                    "targets": len(targets),
                    "runs_per_target": n,
                    "duration_s": duration,
                    "sigma": float(s) if s is not None and np.isfinite(s) else DEFAULT_SIGMA,
                    "sigma_from": "the study's last runs" if s is not None and np.isfinite(s) else "default",
                    "minutes": n * len(targets) * (duration + RUN_OVERHEAD_S) / 60,
                    "context": wl.context_why(clients),
                }
            )
    out = pl.DataFrame(rows)
    if out.is_empty():
        return out
    return out.with_columns(
        pl.struct("runs_per_target", "sigma")
        .map_elements(
            lambda r: smallest_ratio(r["runs_per_target"], r["runs_per_target"], r["sigma"], 0.05),
            return_dtype=pl.Float64,
        )  # fmt: skip
        .alias("smallest_ratio")
    )


def _matches(claim: Claim, study: Study, workload: str, clients: int) -> bool:
    m, wl = claim.match, study.workloads[workload]
    if m.get("tool") and wl.tool != m["tool"]:
        return False
    if m.get("kinds") and _kind(study, workload) not in m["kinds"]:
        return False
    want = m.get("clients")
    if want == "max":
        same = [
            c for w, spec in study.workloads.items() if _kind(study, w) == _kind(study, workload) for c in spec.clients
        ]
        return clients == max(same)
    if want is not None:
        return clients == int(want)
    sides = {int(side["clients"]) for side in (claim.a, claim.b) if "clients" in side}
    return not sides or clients in sides  # a claim whose sides are client counts (1 against 64) uses only those


def _primary(claim: Claim, study: Study, workload: str, clients: int) -> bool:
    p = claim.primary
    if "kind" in p and _kind(study, workload) != p["kind"]:
        return False
    if "clients" in p and p["clients"] != "max" and clients != int(p["clients"]):
        return False
    return True


def claims(study: Study, cell_table: pl.DataFrame) -> pl.DataFrame:
    """Per reproducible claim of the study's seeds compared over runs: its primary cells in the plan, the
    smallest B/A they resolve at alpha split over them, and the seed's own size (B/A) beside it."""
    rows: list[dict[str, Any]] = []
    for c in for_seeds(list(study.seeds or [])):
        if not c.reproducible_here or not c.match or c.quantity in ("saving", "compression_ratio", "footprint"):
            continue
        mine = [
            r for r in cell_table.iter_rows(named=True)
            if _matches(c, study, r["workload"], r["clients"]) and _primary(c, study, r["workload"], r["clients"])
            and r["context"] is None
        ]  # fmt: skip
        if not mine:
            continue
        k = len(mine)
        smallest = max(smallest_ratio(r["runs_per_target"], r["runs_per_target"], r["sigma"], 0.05 / k) for r in mine)
        seed = c.seed_range
        effect = None if seed is None else max(abs(math.log(v)) for v in seed if v > 0 and math.isfinite(v))
        rows.append(
            {
                "claim": c.id,
                "cells": ", ".join(f"{r['workload']}/c={r['clients']}" for r in mine),
                "smallest_ratio": smallest,
                "seed_size": None if seed is None else (f"{seed[0]:.2f}" if seed[0] == seed[1] else f"{seed[0]:.2f}-{seed[1]:.2f}"),
                "resolves_seed": None if effect is None else bool(effect >= math.log(smallest)),
                # the primary cells whose runs give no interval even alone (at alpha 0.05)
                "no_interval": ", ".join(
                    f"{r['workload']}/c={r['clients']} ({r['runs_per_target']} runs per target)" for r in mine
                    if not math.isfinite(r["smallest_ratio"])
                ),
            }
        )  # fmt: skip
    return pl.DataFrame(rows)


def undecidable(study: Study) -> list[str]:
    """Each claim of the study's seeds that rests on a primary cell whose runs cannot give an interval, and how
    to fix it (more runs, or the cell kept as context with a reason)."""
    table = cells(study)
    if table.is_empty():
        return []
    per_claim = claims(study, table)
    if per_claim.is_empty():
        return []
    return [
        f"{r['claim']}: its primary cell {r['no_interval']} cannot give a 95 % interval (the exact rank test needs "
        "4 runs per side): give it more `repeats`, or keep it as context (`workloads.<name>.context: {why: ..., "
        "clients: [...]}`)"
        for r in per_claim.iter_rows(named=True)
        if r["no_interval"]
    ]


def refuse_undecidable(study: Study, source: str) -> None:
    """Refuse, before anything runs, a study whose seeds' claims would rest on cells that cannot decide."""
    bad = undecidable(study)
    if bad:
        raise LabError(f"{source}: the plan cannot decide what its seeds claim:\n  " + "\n  ".join(bad))


def report(study: Study, db: str | Path | None = None) -> str:
    """The plan's design in plain text: the cells table, then the claims table."""
    sigma = measured_sigma(db, study.study) if db is not None else None
    table = cells(study, sigma)
    if table.is_empty():
        return "# no pgbench or sysbench cells: nothing compared as a ratio of runs"
    lines = ["# what the plan can resolve (80 % power, exact rank interval; noise: SD of log throughput per run)"]
    for r in table.iter_rows(named=True):
        lines.append(
            f"#   {r['workload']}/c={r['clients']} ({r['kind']}): {r['runs_per_target']} runs x {r['targets']} "
            f"targets of {r['duration_s']} s, sigma {r['sigma']:.3f} ({r['sigma_from']}): smallest B/A "
            f"{r['smallest_ratio']:.3f} (or its inverse), {r['minutes']:.0f} min"
            + (f"; context, not a claim's primary cell: {r['context']}" if r["context"] else "")
        )
    per_claim = claims(study, table)
    if per_claim.height:
        lines.append("# per claim (its primary cells by workload kind and clients; alpha split over them):")
        for r in per_claim.iter_rows(named=True):
            seed = "no size from the seed" if r["seed_size"] is None else f"seed's size {r['seed_size']}"
            verdict = (
                ""
                if r["resolves_seed"] is None
                else (" - resolves it" if r["resolves_seed"] else " - CANNOT resolve it")
            )
            lines.append(f"#   {r['claim']}: {r['cells']}: smallest B/A {r['smallest_ratio']:.3f}; {seed}{verdict}")  # fmt: skip
    return "\n".join(lines)
