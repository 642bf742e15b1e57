"""What a study's plan can decide, before anything runs: per workload cell (a client count at a ladder rung), the
runs each target gets and the smallest ratio B/A the verdicts' interval resolves with 80 % power at the
run-to-run noise of this host; per claim of the study's seeds, its cells in the plan beside the seed's own size
and what the runs cost.

The noise is the run-to-run standard deviation of log throughput, per cell: measured from the study's last
database where it has one (the median over targets), else `DEFAULT_SIGMA`, stated. The smallest resolvable
ratio is exp(shift × sigma), shift the standard deviations the exact two-sided rank test (the verdicts'
interval) finds with 80 % power at n_a + n_b runs (`stats.power.detectable_shift_sd`), at alpha split over
the claim's primary cells (Bonferroni, as the verdicts do). Where A has an A/A twin, B must clear A and the
twin, each at that level: about the same runs, so the same number, read twice. Which of a claim's cells are
its primary ones depends on what the runs measure: the plan takes the cells of its workload kind and clients,
in the memory regime the claim names where it can place the data set (its tool's estimate of the data set's size
against the memory limit; the runs' own measures decide the preconditions), and pairs them as the verdicts do
(an interaction across regimes or settings is one cell of two rows). A cell the study marks as context
(`workloads.<name>.context`) is never a claim's primary cell, here as in the verdicts.

A claim about steadiness (a ratio of the runs' CV or variance of per-second throughput) is sized at the noise of
that quantity, several times throughput's: the SD of its logarithm per run, measured from the study's last
database where it has the runs (`measured_spread`), else `SPREAD_SIGMA`, stated.

A study that states `analysis.primary: rounds` compares runs paired by round (`verdicts.ratio.paired_ratio_ci`):
the plan then uses the exact signed-rank test over the rounds (`stats.signed_rank.detectable_shift_sd`), the
noise of a round's log-ratio sqrt(2) sigma, sigma measured as the SD of the per-round log-ratios over sqrt(2)
where the study's last database has them (what the rounds share cancels there) and `DEFAULT_SIGMA` otherwise
(nothing shared credited). A ratio of ratios is never paired.

A study whose seeds' claims would rest on a primary cell that cannot give an interval at all (fewer runs per
target than the exact rank test needs at 95 %) is refused before anything runs (`refuse_undecidable`): such a
cell gets more runs, or is kept as context with the reason in the config.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pgfslab.analysis import plan_record
from pgfslab.analysis.plan_record import PlanInputs
from pgfslab.analysis.stats import paired_t, signed_rank
from pgfslab.analysis.stats.power import detectable_shift_sd
from pgfslab.analysis.verdicts.claims import RUN_KEYS, SPECIAL, TARGET_KEYS, Claim, for_seeds
from pgfslab.analysis.verdicts.ratio import PAIRED_TEST, PAIRING
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.tools import TOOLS

# log-scale run-to-run SD of the headline cell on this 2-vCPU VM on a quiet day (docs/noise.md: CV 5-10 %)
DEFAULT_SIGMA = 0.10
PER_LOAD = ("saving", "compression_ratio", "footprint")  # properties of a load (the verdicts' PER_LOAD)
# the SD of the log of a run's CV (variance) of per-second throughput between runs of one cell on this VM: 0.12-0.22
# (0.28-0.47) in the seed studies' runs on a quiet host (pgbench, 20-60 s runs; 2026-11-28), about twice for the
# variance, whose log is twice the CV's
SPREAD_SIGMA = {"cv_ratio": 0.20, "variance_ratio": 0.40}
SPREAD_COLUMN = {"cv_ratio": "cv", "variance_ratio": "variance"}
LAST_RUNS = (
    "the study's last runs here"  # where the plan's measures came from when it read them from data/<study>.duckdb
)
RUN_OVERHEAD_S = 7.0  # a run's set-up and teardown around its measured window (docs/benchmarks.md)
# what a run costs beyond run.json's own wall time: Snakemake's job and the command's start (fs-compare, 2026-11-29:
# 210 runs of 21 s wall each took 84 minutes end to end, preparation included)
JOB_START_S = 3.0
POWER = 0.8
# the test a claim's cells are sized with, by pairing (None: the runs unpaired)
PLAN_TEST = {
    None: "the exact rank test",
    "signed-rank": "the signed-rank test over rounds",
    "t": "the paired t test over rounds",
}


def _kind(study: Study, workload: str) -> str:
    wl = study.workloads[workload]
    return wl.options.what() or workload


def _config_workload(runs: pl.DataFrame) -> pl.DataFrame:
    """The workload as the config names it: the database names a ladder's workload per rung (`tpcb.d2`,
    `ingest.run_rows`), and a plan that looked up `tpcb` never found its own study's noise."""
    if "rung" not in runs.columns:
        return runs
    return runs.with_columns(
        pl.when(pl.col("rung").is_not_null())
        .then(pl.col("workload").str.replace(r"\.d\d+$", ""))
        .otherwise(pl.col("workload"))
        .alias("workload")
    )


def _cell_keys(runs: pl.DataFrame) -> list[str]:
    """A cell's keys as `cells` forms them: a ladder's rungs apart (a rung changes throughput by a factor; pooled,
    the rungs' gap would pass for run-to-run noise)."""
    return ["workload", "clients", *(["rung"] if "rung" in runs.columns else [])]


def measured_sigma(db: str | Path, study: str, rounds: bool = False) -> pl.DataFrame:
    """Per cell (workload, clients, rung): the median over targets of the SD of log headline throughput (targets
    with at least three runs); with `rounds`, the median over pairs of targets of the SD of their per-round
    log-ratios over sqrt(2) (pairs with at least three rounds in common), the noise a paired comparison sees.
    Empty without a database."""
    from pgfslab.analysis import queries

    runs = _last_runs(db, study, queries.headline)
    return sigma_per_cell(runs, rounds) if runs.height else runs


def _last_runs(db: str | Path, study: str, read: Any) -> pl.DataFrame:
    """`read(db, study)` of the study's last database here, empty where it has none or lacks the data."""
    from pgfslab.analysis import queries

    if not Path(db).exists():
        return pl.DataFrame()
    try:
        out: pl.DataFrame = read(db, study)
    except queries.MissingData:
        return pl.DataFrame()
    return out


def sigma_per_cell(runs: pl.DataFrame, rounds: bool = False) -> pl.DataFrame:
    """`measured_sigma` of a frame of runs (workload, clients, rung where a ladder has one, target, repeat, value)."""
    runs = _config_workload(runs)
    if rounds:
        return _paired_sigma(runs.filter(pl.col("value") > 0))
    keys = _cell_keys(runs)
    return (
        runs.filter(pl.col("value") > 0)
        .group_by(*keys, "target")
        .agg(pl.col("value").log().std().alias("sd"), pl.len().alias("n"))
        .filter(pl.col("n") >= 3)
        .group_by(keys)
        .agg(pl.col("sd").median().alias("sigma"))
    )


def measured_cost(db: str | Path, study: str) -> pl.DataFrame:
    """Per cell (workload, clients, rung) and target, from the study's last runs: the median wall time of a run
    (run.json's, its set-up and teardown with it: a prewarm, a shutdown checkpoint on a slow disk) and the median
    of that less its measured window (`duration_s`), what a run costs beyond its length. Empty without a database."""
    from pgfslab.analysis import queries

    return cost_per_cell(_last_runs(db, study, queries.runs))


def cost_per_cell(runs: pl.DataFrame) -> pl.DataFrame:
    """`measured_cost` of a frame of runs (workload, clients, rung where a ladder has one, target, status, wall_s,
    duration_s); a skipped optional round cost nothing and says nothing of the others."""
    if runs.is_empty():
        return pl.DataFrame()
    runs = _config_workload(runs.filter(pl.col("status").is_in(["ok", "failed"]) & pl.col("wall_s").is_not_null()))
    return runs.group_by(*_cell_keys(runs), "target").agg(
        pl.col("wall_s").median().alias("wall_s"),
        (pl.col("wall_s") - pl.col("duration_s").fill_null(0)).median().alias("beyond_s"),
    )


def measured_spread(db: str | Path, study: str, trim_s: float) -> pl.DataFrame:
    """Per cell (workload, clients, rung) and steadiness quantity (`SPREAD_SIGMA`'s): the median over targets of the SD of
    the log of the runs' CV (variance) of per-second throughput (targets with at least three runs); empty without
    a database or per-second series."""
    from pgfslab.analysis import queries
    from pgfslab.analysis.verdicts.facts import run_facts

    if not Path(db).exists():
        return pl.DataFrame()
    try:
        f = run_facts(db, study, trim_s)
    except queries.MissingData:
        return pl.DataFrame()
    if f.is_empty() or "cv" not in f.columns:
        return pl.DataFrame()
    f, keys = _config_workload(f), _cell_keys(f)
    parts = [
        f.filter(pl.col(column) > 0)
        .group_by(*keys, "target")
        .agg(pl.col(column).log().std().alias("sd"), pl.len().alias("n"))
        .filter(pl.col("n") >= 3)
        .group_by(keys)
        .agg(pl.col("sd").median().alias("sigma"))
        .with_columns(pl.lit(quantity).alias("quantity"))
        for quantity, column in SPREAD_COLUMN.items()
    ]
    return pl.concat(parts)


def _paired_sigma(runs: pl.DataFrame) -> pl.DataFrame:
    """`measured_sigma` for a comparison paired by round (runs: workload, clients, rung, target, repeat, value)."""
    keys = _cell_keys(runs)
    logs = runs.select(*keys, "target", "repeat", pl.col("value").log().alias("x"))
    # a study without a ladder has no rung: null, which a join would never match (nulls_equal keeps them)
    both = logs.join(logs, on=[*keys, "repeat"], suffix="_b", nulls_equal=True)
    return (
        both.filter(pl.col("target") < pl.col("target_b"))
        .group_by(*keys, "target", "target_b")
        .agg((pl.col("x_b") - pl.col("x")).std().alias("sd"), pl.len().alias("n"))
        .filter(pl.col("n") >= 3)
        .group_by(keys)
        .agg((pl.col("sd").median() / math.sqrt(2)).alias("sigma"))
    )


def smallest_ratio(n_a: int, n_b: int, sigma: float, alpha: float, pairing: str | None = None) -> float:
    """The smallest B/A above 1 the verdicts' interval resolves with POWER (inf: no interval at all): the exact
    rank-sum one, or paired by round (`pairing`: "signed-rank" or "t", `ratio.PAIRING`) the signed-rank or the t
    one over min(n_a, n_b) rounds, whose per-round log-ratio has SD sqrt(2) sigma."""
    if pairing is not None:
        test = paired_t if pairing == "t" else signed_rank
        shift = test.detectable_shift_sd(min(n_a, n_b), alpha, POWER)
        return math.exp(shift * sigma * math.sqrt(2)) if math.isfinite(shift) else math.inf
    shift = detectable_shift_sd(n_a, n_b, alpha, POWER)
    return math.exp(shift * sigma) if math.isfinite(shift) else math.inf


def _pg_bytes(value: object) -> float | None:
    """A PostgreSQL memory setting in bytes: a bare number counts 8 kB pages, kB/MB/GB/TB are powers of 1024."""
    units = {"": 8192, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT][bB])?\s*", str(value))
    return None if m is None else int(m.group(1)) * units[(m.group(2) or "").lower()]


def regime_at(study: Study, workload: str, rung: int | None) -> str | None:
    """Where the workload's data set sits at a rung, from its tool's own estimate of the data set's size (the
    runner's `dataset_bytes`) against shared_buffers and the memory limit: the regime the verdicts read from the
    runs (`facts.regime`), placed before anything runs. None when the tool gives no estimate or no memory limit
    is set (the host's memory is known only where the runs run)."""
    from pgfslab.analysis.verdicts.facts import regime
    from pgfslab.runners import runner

    estimate = getattr(runner(study.workloads[workload].tool), "dataset_bytes", None)
    limit = (study.ladder.memory_limit_mb if study.ladder else None) or study.resources.memory_limit_mb
    if estimate is None or limit is None:
        return None
    size = estimate(study.dataset_for(study.targets_for(workload)[0], rung))
    return regime(size, _pg_bytes(_settings(study, workload).get("shared_buffers", "128MB")), limit * 2**20)


def _settings(study: Study, workload: str) -> dict[str, Any]:
    """The PostgreSQL settings the study gives a workload's runs (a target's own are the runs' to record)."""
    return {**study.postgres.settings, **(study.workloads[workload].postgres_settings or {})}


def runs_needed(alpha: float, pairing: str | None = None) -> int:
    """The fewest runs per side (as many on each) whose exact rank interval exists at `alpha` (paired by round:
    the fewest rounds whose signed-rank, or t, interval does)."""
    if pairing == "t":
        return paired_t.MIN_ROUNDS
    if pairing is not None:
        return signed_rank.pairs_needed(alpha)
    return next(n for n in range(2, 100) if math.isfinite(smallest_ratio(n, n, DEFAULT_SIGMA, alpha)))


def cells(
    study: Study,
    sigma: pl.DataFrame | None = None,
    cost: pl.DataFrame | None = None,
    source: str = LAST_RUNS,
) -> pl.DataFrame:
    """Per workload cell (a tool whose comparisons are ratios of runs; each client count at each ladder rung, as
    the verdicts compare them): its kind, the runs per target (the plan's, optional precision rounds included),
    the data set's regime where the plan can place it, the noise used and where it came from, the smallest
    resolvable B/A at alpha 0.05, and the cell's cost in minutes. A target's runs cost their length and what its
    runs in this cell cost beyond it last time (`measured_cost`: on an emulated disk a prewarm and the shutdown's
    checkpoint take minutes), else `RUN_OVERHEAD_S`; a run of a fixed number of transactions costs its whole last
    wall time, else its set-up and teardown only (how long the transactions take is what the runs measure)."""
    known = {
        (r["workload"], r["clients"], r.get("rung")): r["sigma"]
        for r in (sigma if sigma is not None else pl.DataFrame()).iter_rows(named=True)
    }
    paid = {
        (r["workload"], r["clients"], r.get("rung"), r["target"]): (r["wall_s"], r["beyond_s"])
        for r in (cost if cost is not None else pl.DataFrame()).iter_rows(named=True)
    }

    def run_s(name: str, clients: int, rung: int | None, target: str, duration: int) -> float | None:
        """A run's measured cost (None: this cell of this target has no runs on record)."""
        last = paid.get((name, clients, rung, target))
        if last is None:
            return None
        return JOB_START_S + (float(last[0]) if not duration else duration + max(float(last[1]), 0.0))

    pairing = PAIRING.get(study.analysis.primary)
    rows: list[dict[str, Any]] = []
    for name, wl in study.workloads.items():
        if not TOOLS[wl.tool].sized_by_plan:
            continue
        # a run of a fixed number of transactions (pgbench -t) lasts as long as they take: unknown before it runs
        per_client = wl.options.transactions_per_client()
        duration = 0 if per_client else int(wl.duration_s or study.run.duration_s)
        targets = study.targets_for(name)
        for rung in study.rungs_for(name):
            for clients in wl.clients:
                n = study.repeats_for(name, clients)
                s = known.get((name, clients, rung))
                each = [run_s(name, clients, rung, t, duration) for t in targets]
                seconds = sum(x if x is not None else duration + RUN_OVERHEAD_S for x in each)
                rows.append(
                    {
                        "workload": name,
                        "kind": _kind(study, name),
                        "clients": clients,
                        "rung": rung,
                        "regime": regime_at(study, name, rung),
                        "cell": f"{name}/c={clients}" + (f"/d{rung}" if rung is not None else ""),
                        "targets": len(targets),
                        "runs_per_target": n,
                        "duration_s": duration,
                        "length": f"{per_client} transactions per client" if per_client else f"{duration} s",
                        "sigma": float(s) if s is not None and np.isfinite(s) else DEFAULT_SIGMA,
                        "sigma_from": source if s is not None and np.isfinite(s) else "default",
                        "minutes": n * seconds / 60,
                        "cost_from": source if all(x is not None for x in each) else "estimate",
                        "context": wl.context_why(clients),
                    }
                )
    out = pl.DataFrame(rows, schema_overrides={"rung": pl.Int64, "regime": pl.Utf8, "context": pl.Utf8})
    if out.is_empty():
        return out
    return out.with_columns(
        pl.struct("runs_per_target", "sigma")
        .map_elements(
            lambda r: smallest_ratio(r["runs_per_target"], r["runs_per_target"], r["sigma"], 0.05, pairing),
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
    if m.get("ops") and _kind(study, workload) not in m["ops"]:  # an fsmicro workload's kind is its op
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


def _primary(claim: Claim, study: Study, row: dict[str, Any]) -> bool:
    """Is the cell one of the claim's primary ones, as far as the plan can tell: its kind and clients, and its
    regime where the claim names one and the plan can place the cell's data set (else the runs decide)."""
    from pgfslab.analysis.verdicts.facts import FS_KEYS, PG_DEFAULTS, PG_KEYS
    from pgfslab.analysis.verdicts.labels import _normal

    p = {k: v if isinstance(v, list) else [v] for k, v in claim.primary.items()}  # a list: any of its values
    if "kind" in p and _kind(study, row["workload"]) not in p["kind"]:
        return False
    if "clients" in p and p["clients"] != ["max"] and row["clients"] not in [int(c) for c in p["clients"]]:
        return False
    if "regime" in p and row["regime"] is not None and row["regime"] not in p["regime"]:
        return False
    for key in FS_KEYS:  # what an fsmicro workload works on: the claim's primary value, or the one both sides name
        same = claim.a.get(key) if claim.a.get(key) is not None and claim.a.get(key) == claim.b.get(key) else None
        want = p.get(key) or ([same] if same is not None else None)
        if want is not None and _level(study, row, key) not in [str(_normal(key, v)) for v in want]:
            return False
    # the seed's settings, where the study sets them for the workload (a target's own are checked by the runs),
    # and none the claim does not name off its default (fsync=off runs are context to an fsync-on claim)
    named = {*claim.a, *claim.b, *p, *([claim.interaction["key"]] if claim.interaction else [])}
    for key in PG_KEYS:
        have = _setting(study, row["workload"], key, default=False)
        if have is None:
            continue
        if key in p and have not in [str(_normal(key, v)) for v in p[key]]:
            return False
        if key not in named and have != PG_DEFAULTS.get(key):
            return False
    return True


def _setting(study: Study, workload: str, key: str, *, default: bool = True) -> str | None:
    """A PostgreSQL setting of a workload's runs as the study sets it, as the verdicts compare it (with `default`,
    the server's default when the study does not set it); `dirty_background_bytes` is the workload's OS setting."""
    from pgfslab.analysis.verdicts.facts import PG_DEFAULTS
    from pgfslab.analysis.verdicts.labels import _normal

    if key == "dirty_background_bytes":  # an OS setting of the workload's runs (the verdicts read run.json's copy)
        value = study.os_for(workload).vm_dirty_background_bytes
    else:
        value = _settings(study, workload).get(key, PG_DEFAULTS.get(key) if default else None)
    return None if value is None else str(_normal(key, value))


def _level(study: Study, row: dict[str, Any], key: str) -> str | None:
    from pgfslab.analysis.verdicts.facts import FS_KEYS, fsmicro_facts

    if key in ("regime", "clients"):
        return None if row[key] is None else str(row[key])
    if key in FS_KEYS:  # what an fsmicro workload works on, as the verdicts' facts resolve it (its runner's defaults)
        value = fsmicro_facts(study.workloads[row["workload"]])[key]
        return None if value is None else str(value)
    return _setting(study, row["workload"], key)


def _runs(cell: dict[str, Any]) -> str:
    return str(cell["n_a"]) if cell["n_a"] == cell["n_b"] else f"{cell['n_a']} and {cell['n_b']}"


def _target_facts(study: Study, workload: str, target: str) -> dict[str, str | None]:
    """What the verdicts' run facts will say of a target's runs of a workload, in the claims' target keys (and the
    device profile, which the verdicts never compare across), as text."""
    from pgfslab.analysis.verdicts.facts import spec_compression

    spec = study.targets[target]
    ds = study.dataset_for(target)
    sysbench = TOOLS[study.workloads[workload].tool].loads == "sysbench"
    data_mode = next((o.split("=", 1)[1] for o in spec.mount_options if o.startswith("data=")), "ordered")
    recordsize = (spec.zfs or {}).get("recordsize")
    return {
        "fs": spec.fs,
        "compression": spec_compression(spec),
        "fillfactor": str((ds.sysbench.fillfactor if sysbench else ds.fillfactor) or 100),
        "snapshots": str(study.snapshots is not None and target in study.snapshots.targets).lower(),
        "recordsize": str(recordsize).lower() if recordsize is not None else None,
        "data_mode": data_mode if spec.fs == "ext4" else None,
        "device_profile": spec.device_profile,
    }


def _is_side(study: Study, workload: str, target: str, side: dict[str, Any]) -> bool:
    """Does the target fit what a claim's side says of a target (its file system, compression, fillfactor,
    snapshots, recordsize, data mode)? An A/A twin is never a side (the verdicts use it as A's second reference)."""
    from pgfslab.analysis.verdicts.labels import _normal

    if study.targets[target].aa_twin_of is not None:
        return False
    facts = _target_facts(study, workload, target)

    def fits(key: str, value: Any) -> bool:  # as the verdicts' side filter: a list is any of its values
        if value is None:
            return facts[key] is None
        return facts[key] in {str(_normal(key, v)).lower() for v in (value if isinstance(value, list) else [value])}

    return all(fits(k, side[k]) for k in TARGET_KEYS if k in side)


def _target_pairs(study: Study, claim: Claim, workload: str) -> list[tuple[str, str]]:
    """The pairs of targets (A, B) a claim across targets compares in a workload's cell, as the verdicts pair them:
    each target fitting side A with each fitting side B that agrees with it in the target keys the claim does not
    name (btrfs with snapshots is compared with a target with snapshots only)."""
    named = {*claim.a, *claim.b}
    apart = [k for k in ("compression", "fillfactor", "snapshots", "device_profile") if k not in named]
    targets = study.targets_for(workload)
    side_a = [t for t in targets if _is_side(study, workload, t, claim.a)]
    side_b = [t for t in targets if _is_side(study, workload, t, claim.b)]
    facts = {t: _target_facts(study, workload, t) for t in {*side_a, *side_b}}
    return [
        (ta, tb)
        for ta in side_a for tb in side_b
        if ta != tb and all(facts[ta][k] == facts[tb][k] for k in apart)
    ]  # fmt: skip


def _paired(claim: Claim, study: Study, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A claim's cells as the verdicts form them from the plan's rows. An interaction (the ratio B/A at one level
    of a key against another: a memory regime, a setting) is one cell per pair of rows at the two levels, of the
    same kind and clients (and rung, for a setting); its ratio of ratios has twice the variance of one B/A, so it
    needs sqrt(2) times the shift. A claim whose sides differ in settings or client counts compares the rows that
    run side A's values with those that run side B's. Any other claim: each row is a cell. A claim whose sides are
    the same target (settings, client counts) is judged on each target apart; one across targets on each pair of
    targets the verdicts form (`_target_pairs`): each pair of a row is a cell."""
    from pgfslab.analysis.verdicts.labels import _normal

    inter = claim.interaction
    keys = (*RUN_KEYS, "clients")
    differ = [k for k in keys if k in claim.a and k in claim.b and claim.a[k] != claim.b[k]]
    per_target = not any(claim.a.get(k) != claim.b.get(k) for k in TARGET_KEYS)
    if per_target:  # a claim about settings or client counts on one target is judged on each target apart
        rows = [
            {**r, "target": t, "cell": f"{r['cell']} on {t}"}
            for r in rows for t in study.targets_for(r["workload"]) if _is_side(study, r["workload"], t, claim.a)
        ]  # fmt: skip
    else:  # a claim across targets: each pair of targets in a row is a cell (named when a row has several)
        rows = [
            {**r, "target": f"{tb} / {ta}", "pair": f" ({tb} / {ta})" if len(pairs) > 1 else ""}
            for r in rows for pairs in [_target_pairs(study, claim, r["workload"])] for ta, tb in pairs
        ]  # fmt: skip

    def fits(row: dict[str, Any], want: dict[str, Any]) -> bool:
        return all(_level(study, row, k) == v for k, v in want.items())

    if inter:
        key, lv0, lv1 = inter["key"], str(inter["from"]), str(inter["to"])
        if key != "regime":
            lv0, lv1 = str(_normal(key, lv0)), str(_normal(key, lv1))
        want0, want1, inflate = {key: lv0}, {key: lv1}, math.sqrt(2)
    elif differ:
        want0 = {k: str(_normal(k, v)) for k, v in claim.a.items() if k in keys}
        want1 = {k: str(_normal(k, v)) for k, v in claim.b.items() if k in keys}
        key, inflate = differ[0], 1.0
    else:
        return [
            {**r, "cell": r["cell"] + r.get("pair", ""), "n_a": r["runs_per_target"], "n_b": r["runs_per_target"],
             "inflate": 1.0}
            for r in rows
        ]  # fmt: skip
    # the rows a pair shares: all but what tells the sides apart (a regime is a rung's), and the target where each
    # is judged apart
    apart = {*want0, *want1} | ({"rung"} if key == "regime" else set())
    same = [k for k in ("kind", "clients", "rung") if k not in apart] + ["target"]
    out = []
    for r0 in (r for r in rows if fits(r, want0)):
        for r1 in (r for r in rows if fits(r, want1) and all(r[k] == r0[k] for k in same)):
            out.append({
                "cell": f"{r0['cell']} against {r1['cell']}{r0.get('pair', '')}",
                "n_a": r0["runs_per_target"],
                "n_b": r1["runs_per_target"],
                "runs_per_target": min(r0["runs_per_target"], r1["runs_per_target"]),
                "sigma": max(r0["sigma"], r1["sigma"]),
                "inflate": inflate,
            })  # fmt: skip
    return out


def claims(
    study: Study, cell_table: pl.DataFrame, spread: pl.DataFrame | None = None, source: str = LAST_RUNS
) -> pl.DataFrame:
    """Per reproducible claim of the study's seeds compared over runs: its primary cells in the plan (paired as
    the verdicts pair them), the smallest B/A they resolve at alpha split over them, and the seed's own size (B/A)
    beside it. A steadiness claim's cells take the noise of its quantity (`spread`: `measured_spread`'s table,
    else `SPREAD_SIGMA`), named in `noise`."""
    pairing = PAIRING.get(study.analysis.primary)
    known = {
        (r["quantity"], r["workload"], r["clients"], r.get("rung")): r["sigma"]
        for r in (spread if spread is not None else pl.DataFrame()).iter_rows(named=True)
        if r["sigma"] is not None and math.isfinite(r["sigma"])
    }
    rows: list[dict[str, Any]] = []
    for c in for_seeds(list(study.seeds or [])):
        # a property of a load (`load_claims`), or a special quantity whose verdict is no interval of a ratio
        if not c.reproducible_here or not c.match or c.quantity in (*PER_LOAD, *SPECIAL):
            continue
        candidates = [
            r for r in cell_table.iter_rows(named=True)
            if _matches(c, study, r["workload"], r["clients"]) and _primary(c, study, r) and r["context"] is None
        ]  # fmt: skip
        noise: str | None = None
        if c.quantity in SPREAD_SIGMA:  # steadiness: the noise of the runs' CV or variance, not of their throughput
            measured = [known.get((c.quantity, r["workload"], r["clients"], r["rung"])) for r in candidates]
            used = [m if m is not None else SPREAD_SIGMA[c.quantity] for m in measured]
            got = sum(m is not None for m in measured)
            came = source if got == len(measured) else "default" if not got else "runs and default"
            noise = f"SD of log {SPREAD_COLUMN[c.quantity]} per run {max(used, default=math.nan):.3f} ({came})"
            candidates = [{**r, "sigma": s} for r, s in zip(candidates, used)]
        mine = _paired(c, study, candidates)
        if not mine:
            continue
        k = len(mine)

        def resolves(r: dict[str, Any], alpha: float) -> float:
            # a ratio of ratios (inflate > 1) is never paired by round: the verdicts bootstrap its runs
            paired = pairing if r["inflate"] == 1.0 else None
            return smallest_ratio(r["n_a"], r["n_b"], r["sigma"] * r["inflate"], alpha, paired)

        smallest = max(resolves(r, 0.05 / k) for r in mine)
        paired = pairing if any(r["inflate"] == 1.0 for r in mine) else None
        seed = c.seed_range
        effect = None if seed is None else max(abs(math.log(v)) for v in seed if v > 0 and math.isfinite(v))
        rows.append(
            {
                "claim": c.id,
                "cells": ", ".join(r["cell"] for r in mine),
                "smallest_ratio": smallest,
                "seed_size": None if seed is None else (f"{seed[0]:.2f}" if seed[0] == seed[1] else f"{seed[0]:.2f}-{seed[1]:.2f}"),
                "resolves_seed": None if effect is None else bool(effect >= math.log(smallest)),
                # a claim of no difference: can the runs show B/A inside its band (the ratio that resolves must
                # lie inside it)
                "band": None if c.expect != "same" or c.band_range is None else list(c.band_range),
                # the primary cells whose runs give no interval at the claim's level (alpha split over its cells)
                "no_interval": ", ".join(
                    f"{r['cell']} ({_runs(r)} runs per target)" for r in mine
                    if not math.isfinite(resolves(r, 0.05 / k))
                ),
                "k": k,
                "noise": noise,
                "runs_needed": runs_needed(0.05 / k, paired),
                "test": PLAN_TEST[paired],
            }
        )  # fmt: skip
    return pl.DataFrame(rows)


def load_claims(study: Study, cell_table: pl.DataFrame) -> pl.DataFrame:
    """Per reproducible claim on a property of a load (footprint, compression ratio, saving): its primary cells in
    the plan, the independent loads a side they measure (one per target and rung, unless `run.reload` gives every
    run its own), and whether those give an interval at the claim's level (alpha split over its cells): a saving's
    median from its loads' order statistics, a ratio's exact rank interval over loads."""
    from pgfslab.analysis.stats.median_ci import median_ci_samples_needed

    rows: list[dict[str, Any]] = []
    for c in for_seeds(list(study.seeds or [])):
        if not c.reproducible_here or not c.match or c.quantity not in PER_LOAD:
            continue
        candidates = [
            r for r in cell_table.iter_rows(named=True)
            if _matches(c, study, r["workload"], r["clients"]) and _primary(c, study, r) and r["context"] is None
        ]  # fmt: skip
        if c.quantity == "saving":  # B's own: each target of side B in a cell
            mine = [
                {"cell": f"{r['cell']} on {t}", "n_a": 0, "n_b": r["runs_per_target"]}
                for r in candidates for t in study.targets_for(r["workload"]) if _is_side(study, r["workload"], t, c.b)
            ]  # fmt: skip
        else:
            mine = _paired(c, study, candidates)
        if not mine:
            continue
        alpha = 0.05 / len(mine)
        need = median_ci_samples_needed(1 - alpha) if c.quantity == "saving" else runs_needed(alpha)
        for r in mine:
            loads = [
                n if study.run.reload else 1 for n in ((r["n_b"],) if c.quantity == "saving" else (r["n_a"], r["n_b"]))
            ]
            rows.append(
                {
                    "claim": c.id,
                    "quantity": c.quantity,
                    "cell": r["cell"],
                    "loads": " and ".join(str(n) for n in loads),
                    "needed": need,
                    "interval": need is not None and min(loads) >= need,
                    "k": len(mine),
                }
            )
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
        f"{r['claim']}: its primary cell {r['no_interval']} cannot give "
        + (
            "a 95 % interval"
            if r["k"] == 1
            else f"an interval at the claim's level (95 % over its {r['k']} primary cells, Bonferroni)"
        )
        + f" ({r['test']} needs {r['runs_needed']} runs per side): give it more `repeats`, or keep it as "
        "context (`workloads.<name>.context: {why: ..., clients: [...]}`)"
        for r in per_claim.iter_rows(named=True)
        if r["no_interval"]
    ]


def refuse_undecidable(study: Study, source: str) -> None:
    """Refuse, before anything runs, a study whose seeds' claims would rest on cells that cannot decide."""
    bad = undecidable(study)
    if bad:
        raise LabError(f"{source}: the plan cannot decide what its seeds claim:\n  " + "\n  ".join(bad))


def _cost_text(r: dict[str, Any]) -> str:
    """A cell's cost as the plan prints it, saying where it came from."""
    if r["cost_from"] != "estimate":
        return f"{r['minutes']:.0f} min (as its runs took last time)"
    return f"{r['minutes']:.0f} min" if r["duration_s"] else f"{r['minutes']:.0f} min and the transactions' time"


def measured_inputs(db: str | Path, study: str, trim_s: float, source: str = LAST_RUNS) -> PlanInputs:
    """Everything a plan is sized from, measured on the study's database `db` (empty frames where it has none):
    what `pgfslab seed-summary` keeps with the study's record, and what `report` reads."""
    return plan_record.inputs(
        source,
        sigma=measured_sigma(db, study),
        sigma_rounds=measured_sigma(db, study, rounds=True),
        spread=measured_spread(db, study, trim_s),
        cost=measured_cost(db, study),
    )


def report(study: Study, measured: PlanInputs | None = None) -> str:
    """The plan's design in plain text: the cells table, then the claims table, sized from `measured` (the study's
    last runs: `measured_inputs`, or a record of them) where it has a cell, else from the stated defaults."""
    pairing = PAIRING.get(study.analysis.primary)
    sigma = measured.sigma_for(pairing is not None) if measured is not None else None
    spread = measured.spread if measured is not None else None
    cost = measured.cost if measured is not None else None
    source = measured.source if measured is not None else LAST_RUNS
    table = cells(study, sigma, cost, source)
    if table.is_empty():
        return "# no pgbench or sysbench cells: nothing compared as a ratio of runs"
    test = PAIRED_TEST[pairing] if pairing is not None else "exact rank interval"
    lines = [f"# what the plan can resolve (80 % power, {test}; noise: SD of log throughput per run)"]
    for r in table.iter_rows(named=True):
        lines.append(
            f"#   {r['cell']} ({r['kind']}{', ' + r['regime'].replace('_', ' ') if r['regime'] else ''}): "
            f"{r['runs_per_target']} runs x {r['targets']} "
            f"targets of {r['length']}, sigma {r['sigma']:.3f} ({r['sigma_from']}): smallest B/A "
            f"{r['smallest_ratio']:.3f} (or its inverse), "
            + _cost_text(r)
            + (f"; context, not a claim's primary cell: {r['context']}" if r["context"] else "")
        )
    costed = table.filter(pl.col("cost_from") != "estimate").height
    lines.append(
        f"# the cells' runs: about {table['minutes'].sum():.0f} min ("
        + (
            f"every cell costed from {source}"
            if costed == table.height
            else f"{costed} of {table.height} cells costed from {source}, the others at their length "
            f"+ {RUN_OVERHEAD_S:.0f} s"
            if costed
            else f"each run its length + {RUN_OVERHEAD_S:.0f} s: no runs of this study on record here or in docs/results"
        )
        # a reload (run.reload) is part of a run's recorded wall time, but an estimate knows nothing of it
        + ("; each estimated run's reload of its data set on top" if study.run.reload and costed < table.height else "")
        + "; preparing the targets comes on top)"
    )
    per_claim = claims(study, table, spread, source)
    if per_claim.height:
        lines.append(
            "# per claim (its primary cells by workload kind, clients and, where the plan can place it, the data set's "
            "regime; an interaction is one cell of two; alpha split over them):"
        )
        for r in per_claim.iter_rows(named=True):
            seed = "no size from the seed" if r["seed_size"] is None else f"seed's size {r['seed_size']}"
            if r["band"] is not None:
                lo, hi = r["band"]
                shows = r["smallest_ratio"] <= min(hi, 1 / lo)
                seed = f"a claim of no difference, band B/A {lo:.2f}-{hi:.2f}" + (
                    " - can show it" if shows else " - CANNOT show it (an interval this wide reaches past the band)"
                )
            verdict = (
                ""
                if r["resolves_seed"] is None
                else (" - resolves it" if r["resolves_seed"] else " - CANNOT resolve it")
            )
            noise = f" (noise: {r['noise']})" if r["noise"] else ""
            lines.append(f"#   {r['claim']}: {r['cells']}: smallest B/A {r['smallest_ratio']:.3f}{noise}; {seed}{verdict}")  # fmt: skip
    loads = load_claims(study, table)
    if loads.height:
        lines.append(
            "# per claim on what a load leaves on disk (footprint, compression, saving: one measurement per load, "
            + ("each run its own load, run.reload):" if study.run.reload else "each target loaded once; run.reload gives every run its own):")
        )  # fmt: skip
        for r in loads.iter_rows(named=True):
            level = "95 %" if r["k"] == 1 else f"the claim's level (95 % over {r['k']} cells)"
            what = "the median's interval" if r["quantity"] == "saving" else "an exact rank interval of the ratio"
            shows = "gives" if r["interval"] else f"CANNOT give (needs {r['needed']} loads a side)"
            lines.append(f"#   {r['claim']}: {r['cell']}: {r['loads']} load(s) - {shows} {what} at {level}")
    return "\n".join(lines)
