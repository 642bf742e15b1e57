"""Repeat until precise: whether an optional round of a cell runs (study key `precision`).

A cell's rounds 1..min_repeats always run. Before each later round the lab looks at the repeats so far,
per target of the cell: the distribution-free interval of the median over the runs' headline values
(pgbench tps, sysbench tps), its half-width relative to the median. The round runs while some target
is above the study's `half_width` and the time budget is not spent; otherwise all of the round's runs
are recorded as `skipped`, with the reason and the precision reached. The decision is taken once per
cell and round, before the round's first run, and written to data/raw/<study>/_precision/, so every
target of a round is measured or none is (the interleaving stays balanced) and the record says why.

Stopping depends on the width of intervals and on time only, never on a p-value: stopping when a
difference looks significant would bias every comparison the study then makes.

The run stage asks through the gate its command passes in (`gate`, given by pgfslab.cli.main to
pgfslab.run.execute.run_one): the decision reads the rounds so far with the ingest's parsers and this
stage's statistics, stages the run stage may not import.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.analysis.stats.cells import median_ci_ranks
from pgfslab.config.study import RunSpec, Study, run_id
from pgfslab.errors import LabError
from pgfslab.ingest.parsers import ParseError, pgbench_summary, sysbench
from pgfslab.records import run_record
from pgfslab.run.common import write_json


@dataclass(frozen=True)
class TargetPrecision:
    """The precision one target of a cell has reached after `n` runs."""

    n: int
    median: float | None
    lo: float | None
    hi: float | None
    coverage: float | None
    half_width: float | None  # relative to the median; None with fewer than 2 values

    def reached(self, goal: float) -> bool:
        return self.half_width is not None and self.half_width <= goal


@dataclass(frozen=True)
class Decision:
    cell: str
    round: int
    run: bool
    reason: str
    goal: float
    confidence: float
    elapsed_min: float
    budget_min: float | None
    targets: dict[str, TargetPrecision] = field(default_factory=dict)
    decided_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def precision_of(values: list[float], confidence: float) -> TargetPrecision:
    """Median of `values` with its distribution-free interval (order statistics, binomial coverage),
    and the interval's half-width relative to the median."""
    n = len(values)
    if n == 0:
        return TargetPrecision(0, None, None, None, None, None)
    xs = sorted(values)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    if n < 2:
        return TargetPrecision(n, med, None, None, None, None)
    lo_rank, hi_rank, coverage = median_ci_ranks(n, confidence)
    lo, hi = xs[lo_rank - 1], xs[hi_rank - 1]
    # an interval that falls short of the asked confidence (n too small) never counts as precise
    half = (hi - lo) / 2 / abs(med) if med and coverage >= confidence else None
    return TargetPrecision(n, med, lo, hi, coverage, half)


def headline(run_dir: Path, tool: str) -> float | None:
    """A finished run's headline value, read from its raw output with the ingest's own parsers: pgbench's
    tps (without connection time), sysbench's transactions per second. None when there is none."""
    with contextlib.suppress(OSError, ParseError, KeyError, IndexError):
        if tool == "pgbench":
            frame = pgbench_summary.parse(run_dir / "pgbench.stdout")["pgbench_summary"]
        elif tool == "sysbench":
            frame = sysbench.parse(run_dir / "sysbench.stdout")["sysbench_summary"]
        else:
            return None
        value = frame["tps"][0]
        return float(value) if value is not None else None
    return None


def _ok_values(study: Study, cell: tuple[str, int | None, int], target: str, before: int) -> list[float]:
    workload, rung, clients = cell
    tool = study.workloads[workload].tool
    values = []
    for rep in range(1, before):
        rdir = study.raw_dir / (run_id(target, workload, clients, rep, rung) + study.host_suffix)
        with contextlib.suppress(OSError, LabError):  # a round not run, or its record unreadable
            if run_record.read(rdir / "run.json")[0].status != "ok":
                continue
            value = headline(rdir, tool)
            if value is not None:
                values.append(value)
    return values


def study_started(raw: Path) -> dt.datetime | None:
    """When the study's first run started (from the run records in its raw folder)."""
    starts = []
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(LabError, ValueError):  # a record being written, or unreadable
            rec = run_record.read(rj)[0]
            if rec.status != "skipped" and rec.started_at:
                starts.append(dt.datetime.fromisoformat(rec.started_at))
    return min(starts) if starts else None


Cell = tuple[str, int | None, int]  # workload, ladder rung (None without a ladder), clients


def cell_of(spec: RunSpec) -> Cell:
    return (spec.workload, spec.rung, spec.clients)


def cell_name(cell: Cell) -> str:
    workload, rung, clients = cell
    return f"{workload}{'' if rung is None else f'/d{rung}'}/c={clients}"


def decision_path(raw: Path, cell: Cell, round_: int) -> Path:
    """data/raw/<study>/_precision/<workload>[.d<rung>].c<clients>.r<round>.json"""
    workload, rung, clients = cell
    return raw / "_precision" / f"{run_id('', workload, clients, round_, rung).lstrip('.')}.json"


def assess(study: Study, cell: Cell, round_: int) -> dict[str, TargetPrecision]:
    """Each target's precision in a cell from the rounds before `round_`."""
    if study.precision is None:
        raise ValueError(f"study {study.study} has no precision target")
    conf = float(study.precision.confidence)
    return {t: precision_of(_ok_values(study, cell, t, round_), conf) for t in study.targets}


def decide(study: Study, spec: RunSpec, now: dt.datetime | None = None) -> Decision:
    """Whether the optional round `spec.repeat` of the run's cell is measured. Taken once per cell and
    round (at the round's first run) and kept in data/raw/<study>/_precision/; later calls read it."""
    raw = study.raw_dir
    path = decision_path(raw, cell_of(spec), spec.repeat)
    if path.exists():
        rec = json.loads(path.read_text())
        rec["targets"] = {k: TargetPrecision(**v) for k, v in rec["targets"].items()}
        return Decision(**rec)
    prec = study.precision
    if prec is None:
        raise ValueError(f"study {study.study} has no precision target")
    goal, budget = float(prec.half_width), prec.budget_min
    now = now or dt.datetime.now(dt.UTC)
    started = study_started(raw)
    elapsed = (now - started).total_seconds() / 60 if started else 0.0
    per_target = assess(study, cell_of(spec), spec.repeat)
    short = sorted(t for t, p in per_target.items() if not p.reached(goal))
    if not short:
        run, reason = False, f"precision reached: every target within ±{100 * goal:g} %"
    elif budget is not None and elapsed >= float(budget):
        run, reason = (
            False,
            f"time budget spent ({elapsed:.1f} of {float(budget):g} min); not yet precise: {', '.join(short)}",
        )
    else:
        run, reason = True, f"not yet within ±{100 * goal:g} %: {', '.join(short)}"
    decision = Decision(
        cell_name(cell_of(spec)),
        spec.repeat,
        run,
        reason,
        goal,
        float(prec.confidence),
        round(elapsed, 2),
        float(budget) if budget is not None else None,
        per_target,
        now.isoformat(timespec="seconds"),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, decision.to_dict())
    return decision


def progress_line(study: Study, decision: Decision) -> str:
    """One line for the run's progress: this cell's precision per target, how many cells are precise,
    and the time left of the budget."""
    per = ", ".join(
        f"{t} ±{100 * p.half_width:.1f} % (n={p.n})" if p.half_width is not None else f"{t} n={p.n}"
        for t, p in decision.targets.items()
    )
    cells = [(w, rung, c) for w, c in sorted(study.precision_cells()) for rung in study.rungs_for(w)]
    top = int(study.precision.max_repeats if study.precision else 0) + 1
    done = sum(all(p.reached(decision.goal) for p in assess(study, cell, top).values()) for cell in cells)
    left = (
        f", {max(0.0, decision.budget_min - decision.elapsed_min):.1f} min of the {decision.budget_min:g} min budget left"
        if decision.budget_min is not None
        else ""
    )
    verdict = "measuring" if decision.run else "skipping"
    return (
        f"precision {decision.cell} round {decision.round}: {per}; {verdict} ({decision.reason}); "
        f"{done} of {len(cells)} cells precise{left}"
    )


def gate(study: Study, spec: RunSpec) -> tuple[Decision, str]:
    """The decision on an optional round and its progress line: what pgfslab.run.execute.run_one asks."""
    decision = decide(study, spec)
    return decision, progress_line(study, decision)
