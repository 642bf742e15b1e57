"""Precision per machine-minute (issue 30): the lab's own figure for its instrument, from a raw folder.

For the study's headline cell (the first of `precision.cells`, else the first pgbench cell): each target's
median with its distribution-free interval (the precision gate's own `precision_of`), the widest
half-width reached, the machine-minutes the cell's runs took (their wall times) and the minutes from the
study's first run to the cell's last; the A/A control's half-width where the study carries one
(`aa_twin_of`: `stats.aa.aa_ratios`, the lab's comparison interval); and the run-to-run CV per target of
every pgbench tpcb cell. Each beside the issue's goal on this machine. Beside them, one measured limit of
the machine (issue 30 item 5): the CPU time the hypervisor took over the counted runs (CPU steal, from each
run's /proc/stat samples, stat.log; "not sampled" for raw folders recorded before). Values are read from the
raw files with the precision gate's and the ingest's parsers (no database): burn-in rounds and runs that did
not finish `ok` left out.

    .venv/bin/python -m benchmarks --only precision [--raw data/raw/<study>]
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from benchmarks import page
from pgfslab import yaml_text
from pgfslab.analysis import cpu_time
from pgfslab.analysis.answers import exchangeability as ex
from pgfslab.analysis.precision_gate import headline, precision_of
from pgfslab.analysis.stats import aa, steal_adjusted
from pgfslab.analysis.verdicts.ratio import METHOD_WORDS
from pgfslab.ingest.parsers import procstat

# the goals on this machine, nothing else running
GOAL_CV = 0.05  # run-to-run CV of every tpcb cell
GOAL_HALF_WIDTH = 0.05  # the headline cell's interval, each target ...
GOAL_MINUTES = 15.0  # ... within 15 minutes
GOAL_AA = 0.03  # the A/A interval within +-3 %
GOAL_COVERAGE = 0.90  # a 95 % interval's share covering the truth, less what 2,000 shared-run draws resolve
GOALS = (
    "goals (issue 30, this machine, nothing else running): run-to-run CV <= 5 % for every tpcb cell; the "
    "headline cell at +-5 % within 15 minutes; the A/A interval within +-3 % and covering 1"
)


@dataclass(frozen=True)
class Run:
    run_id: str
    target: str
    cell: str  # workload/c=clients (with .d<rung> in a ladder)
    builtin: str | None
    value: float
    wall_s: float
    started: dt.datetime
    ended: dt.datetime
    repeat: int | None = None  # the round (run.json `repeat`), for a comparison paired by round


@dataclass
class Summary:
    study: str
    cell: str
    confidence: float
    half_widths: dict[str, float | None]  # target -> relative half-width of its median's interval
    runs: dict[str, int]
    machine_min: float  # the cell's runs' wall time, all targets
    elapsed_min: float  # the study's first run start to the cell's last run end
    budget_min: float | None
    aa: dict[str, float] = field(default_factory=dict)  # twin -> A/A half-width (fraction)
    aa_ci: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # twin -> (ratio, lo, hi)
    primary: str = "runs"  # the study's comparison (analysis.primary): the A/A is compared as its verdicts compare
    # twin -> the primary comparison's coverage of an injected ratio on the twin's own rounds (verdicts.calibration)
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    cv: dict[tuple[str, str], float] = field(default_factory=dict)  # (tpcb cell, target) -> run-to-run CV
    steal: list[float | None] = field(default_factory=list)  # per counted run: CPU steal share (None: not sampled)
    # the headline cell adjusted for each run's CPU contention (stats.steal_adjusted; empty: not sampled)
    adjusted: dict[str, float] = field(default_factory=dict)  # target -> half-width of its adjusted ratio
    spread: tuple[float, float] | None = None  # (before, after): the runs' log-scale SD within targets


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def read_runs(raw: Path) -> list[Run]:
    """The finished, counted pgbench/sysbench runs of a raw folder with their headline values."""
    out = []
    for rj in sorted(raw.glob("*/run.json")):
        rec = json.loads(rj.read_text())
        if rec.get("status") != "ok" or rec.get("burn_in") or rec.get("tool") not in ("pgbench", "sysbench"):
            continue
        value = headline(rj.parent, rec["tool"])
        if value is None or not rec.get("started_at") or not rec.get("ended_at"):
            continue
        wl = rec["workload"] if rec.get("rung") is None else f"{rec['workload']}.d{rec['rung']}"
        out.append(
            Run(
                rec["run_id"],
                rec["target"],
                f"{wl}/c={rec['clients']}",
                (rec.get("workload_spec") or {}).get("builtin"),
                value,
                float(rec.get("wall_s") or 0),
                _ts(rec["started_at"]),
                _ts(rec["ended_at"]),
                rec.get("repeat"),
            )
        )
    return out


def cpu_steal(raw: Path, run_ids: list[str]) -> list[float | None]:
    """Per run (in the order given): the share of all CPU time the hypervisor took between the run's first
    and last /proc/stat sample (its stat.log), None where the run has none."""
    return [None if m is None else m["cpu_steal"] for m in cpu_shares(raw, run_ids)]


def cpu_shares(raw: Path, run_ids: list[str]) -> list[dict[str, float] | None]:
    """Per run (in the order given): cpu_time's CPU measures from its stat.log, None where it has none."""
    folders = {json.loads(rj.read_text()).get("run_id"): rj.parent for rj in raw.glob("*/run.json")}
    out: list[dict[str, float] | None] = []
    for rid in run_ids:
        log = folders.get(rid, raw / rid) / "stat.log"
        if not log.is_file():
            out.append(None)
            continue
        rows = procstat.parse(log)["cpu_stat"].filter(pl.col("cpu") == "cpu")
        samples = rows.select(
            pl.lit(rid).alias("run_id"),
            (pl.col("ts").dt.epoch("us") / 1e6).alias("epoch_s"),
            *cpu_time.CPU_STATES,
        )
        m = cpu_time.cpu_measures(samples)
        out.append({c: float(m[c][0]) for c in cpu_time.CPU_MEASURES} if m.height else None)
    return out


def headline_cell(cfg: dict[str, Any], runs: list[Run]) -> str | None:
    cells = (cfg.get("precision") or {}).get("cells") or []
    if cells:
        return str(cells[0])
    pg = [r.cell for r in runs if r.builtin is not None]
    return pg[0] if pg else (runs[0].cell if runs else None)


def _calibration(runs: list[Run], twins: dict[str, str], primary: str, alpha: float) -> dict[str, dict[str, Any]]:
    """Per twin, the paper's calibration row (`answers.exchangeability.calibration`) over every cell of the raw
    folder: how often the study's primary comparison covers an injected ratio on the twin's own rounds."""
    frame = pl.DataFrame(
        {
            "target": [r.target for r in runs],
            "workload": [r.cell for r in runs],
            "clients": [0] * len(runs),
            "repeat": [r.repeat for r in runs],
            "value": [r.value for r in runs],
        },
        schema={"target": pl.Utf8, "workload": pl.Utf8, "clients": pl.Int64, "repeat": pl.Int64, "value": pl.Float64},
    )
    table = ex.calibration(frame, twins, primary, alpha)
    return {row["twin"]: row for row in table.iter_rows(named=True)}


def _covers_one(ci: tuple[float, float, float] | None) -> bool:
    """The A/A goal asks for an interval that covers 1 (two identical targets), not only a narrow one."""
    return ci is not None and ci[1] <= 1 <= ci[2]


def _ci_text(ci: tuple[float, float, float] | None) -> str:
    return "" if ci is None else f"{ci[0]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}]"


def summarize(raw: Path) -> Summary | None:
    """The figures of a raw folder (None: no finished pgbench or sysbench run in it)."""
    cfg = yaml_text.safe_load((raw / "study.yaml").read_text())
    runs = read_runs(raw)
    cell = headline_cell(cfg, runs)
    if cell is None:
        return None
    prec = cfg.get("precision") or {}
    confidence = float(prec.get("confidence", 0.95))
    mine = [r for r in runs if r.cell == cell]
    twins = aa.twins_from_config(cfg)
    compared = [t for t in dict.fromkeys(r.target for r in mine) if t not in twins]
    per = {t: [r.value for r in mine if r.target == t] for t in compared}
    first = min(r.started for r in runs)
    s = Summary(
        study=str(cfg["study"]),
        cell=cell,
        confidence=confidence,
        half_widths={t: precision_of(v, confidence).half_width for t, v in per.items()},
        runs={t: len(v) for t, v in per.items()},
        machine_min=sum(r.wall_s for r in mine) / 60,
        elapsed_min=(max(r.ended for r in mine) - first).total_seconds() / 60 if mine else 0.0,
        budget_min=prec.get("budget_min"),
    )
    if twins and mine:
        frame = pl.DataFrame(
            {"target": [r.target for r in mine], "workload": [cell] * len(mine), "clients": [0] * len(mine)}
        ).with_columns(pl.Series("value", [r.value for r in mine]), pl.Series("repeat", [r.repeat for r in mine]))
        primary = str((cfg.get("analysis") or {}).get("primary", "runs"))
        s.primary = primary
        for row in aa.aa_ratios(frame, twins, alpha=1 - confidence, primary=primary).iter_rows(named=True):
            s.aa[row["twin"]] = row["aa_half_width_pct"] / 100
            s.aa_ci[row["twin"]] = (row["aa_ratio"], row["aa_lo"], row["aa_hi"])
        s.calibration = _calibration(runs, twins, primary, 1 - confidence)
    for r in runs:
        if r.builtin == "tpcb-like" and r.target not in twins:
            s.cv.setdefault((r.cell, r.target), 0.0)
    for cell_t in list(s.cv):
        vals = [r.value for r in runs if (r.cell, r.target) == cell_t]
        s.cv[cell_t] = statistics.stdev(vals) / statistics.mean(vals) if len(vals) > 1 else float("nan")
    shares = cpu_shares(raw, [r.run_id for r in runs])
    s.steal = [None if m is None else m["cpu_steal"] for m in shares]
    of_run = dict(zip([r.run_id for r in runs], shares, strict=True))
    busy = [(r, of_run[r.run_id]) for r in mine]
    frame = pl.DataFrame(
        {
            "target": [r.target for r, m in busy if m and m["cpu_busy"] > 0],
            "value": [r.value for r, m in busy if m and m["cpu_busy"] > 0],
            "contention": [m["cpu_steal"] / m["cpu_busy"] for _, m in busy if m and m["cpu_busy"] > 0],
        },
        schema={"target": pl.Utf8, "value": pl.Float64, "contention": pl.Float64},
    )
    base = next(iter(twins.values()), compared[0] if compared else None)
    fitted = steal_adjusted.fit(frame, base, alpha=1 - confidence) if base else pl.DataFrame()
    for row in fitted.iter_rows(named=True):
        s.adjusted[row["target"]] = (row["hi"] - row["lo"]) / 2 / row["ratio"]
        s.spread = (row["plain_sd"], row["resid_sd"])
    return s


def _pct(x: float | None) -> str:
    return "–" if x is None or x != x else f"±{100 * x:.1f} %"


def figures(s: Summary) -> list[page.Figure]:
    widest = max((h for h in s.half_widths.values() if h is not None), default=None)
    unreached = [t for t, h in s.half_widths.items() if h is None]
    within = s.elapsed_min <= GOAL_MINUTES
    out = [
        page.Figure(
            f"precision: {s.study}'s headline cell {s.cell}, widest target interval",
            _pct(widest),
            f"{s.machine_min:.1f} machine-min of its runs, {s.elapsed_min:.1f} min elapsed"
            + (f" (budget {s.budget_min:g} min)" if s.budget_min else ""),
            f"{100 * widest / GOAL_HALF_WIDTH:.2f} of the goal" if widest is not None else "–",
            "±5 % within 15 min",
            None if widest is None else (widest <= GOAL_HALF_WIDTH and within and not unreached),
            "per target: "
            + ", ".join(f"{t} {_pct(h)} ({s.runs[t]} runs)" for t, h in s.half_widths.items())
            + f"; {100 * s.confidence:g} % distribution-free intervals of the median"
            + (f"; {', '.join(unreached)}: too few runs for the confidence" if unreached else ""),
        )
    ]
    for twin, half in s.aa.items():
        out.append(
            page.Figure(
                f"precision: A/A control {twin} in {s.cell}",
                _pct(half),
                "its baseline, the same spec",
                f"{half / GOAL_AA:.2f} of the goal",
                "±3 %, covering 1",
                half <= GOAL_AA and _covers_one(s.aa_ci.get(twin)),
                f"twin/baseline {_ci_text(s.aa_ci.get(twin))}, compared as the study's verdicts compare: "
                + METHOD_WORDS.get(s.primary, METHOD_WORDS["runs"]),
            )
        )
    for twin, c in s.calibration.items():
        covered = c["covered %"] / 100
        out.append(
            page.Figure(
                f"precision: the primary comparison's coverage on {twin}",
                f"{100 * covered:.1f} %",
                f"{c['pseudo-studies']} pseudo-studies of {c['rounds']} rounds",
                f"{covered / s.confidence:.2f} of its stated level",
                f"≥ {100 * GOAL_COVERAGE:.0f} % (stated {100 * s.confidence:g} %)",
                covered >= GOAL_COVERAGE,
                f"{twin} and its baseline, drawn by round from every cell, labels swapped at random within each round "
                f"and B/A {ex.INJECT:g} injected (the paper's calibration table): how often the interval covers "
                f"{ex.INJECT:g}, median half-width ±{c['half-width %']:.1f} %; with the labels as recorded the "
                f"interval covered 1 in {c['as recorded %']:.1f} %; "
                + METHOD_WORDS.get(s.primary, METHOD_WORDS["runs"]),
            )
        )
    if not s.aa:
        out.append(
            page.Figure(f"precision: A/A control in {s.cell}", "–", "no A/A twin in this raw folder", "–", "±3 %", None)
        )
    if s.cv:
        worst = max(s.cv.items(), key=lambda kv: -1 if kv[1] != kv[1] else kv[1])
        out.append(
            page.Figure(
                "precision: run-to-run CV, tpcb cells (worst target cell)",
                f"{100 * worst[1]:.1f} %",
                f"{worst[0][1]} in {worst[0][0]}",
                f"{worst[1] / GOAL_CV:.2f} of the goal",
                "≤ 5 % every tpcb cell",
                all(v <= GOAL_CV for v in s.cv.values()),
                "; ".join(f"{t} {c}: {100 * v:.1f} %" for (c, t), v in sorted(s.cv.items())),
            )
        )
    if s.adjusted and s.spread:
        widest_adj = max(s.adjusted.values())
        out.append(
            page.Figure(
                f"precision: {s.cell} adjusted for CPU steal (a model, not used by the verdicts)",
                _pct(widest_adj),
                f"the widest of {len(s.adjusted)} comparisons with the baseline",
                f"{widest_adj / GOAL_HALF_WIDTH:.2f} of the goal",
                "±5 %",
                widest_adj <= GOAL_HALF_WIDTH,
                "log(tps) = target + slope x contention (steal over the CPU time wanted), least squares, t "
                f"interval; the runs' spread {100 * s.spread[0]:.1f} % within targets, {100 * s.spread[1]:.1f} % "
                "around the model; per comparison: " + ", ".join(f"{t} {_pct(h)}" for t, h in s.adjusted.items()),
            )
        )
    sampled = sorted(x for x in s.steal if x is not None)
    out.append(
        page.Figure(
            "precision: CPU steal over the counted runs (a limit of this machine)",
            f"{100 * statistics.median(sampled):.1f} %" if sampled else "–",
            f"median of {len(sampled)} of {len(s.steal)} runs" if sampled else "not sampled (no stat.log)",
            "–",
            "–",
            None,
            cpu_time.steal_sentence(s.steal, len(s.steal)),
        )
    )
    return out


def run(raw: Path) -> list[page.Figure]:
    """Print the figures of `raw` beside the goals (and return them for the page); "no raw folder" without one."""
    print(GOALS)
    if not (raw / "study.yaml").exists():
        print(
            f"precision: no raw folder ({raw.relative_to(page.REPO) if raw.is_relative_to(page.REPO) else raw}: make run)"
        )
        return []
    s = summarize(raw)
    if s is None:
        print(f"precision: {raw}: no finished pgbench or sysbench run")
        return []
    got = figures(s)
    for f in got:
        met = "–" if f.met is None else ("met" if f.met else "NOT met")
        print(f"{f.name}: {f.value} ({f.baseline}); goal {f.goal}: {met}" + (f"\n    {f.note}" if f.note else ""))
    return got
