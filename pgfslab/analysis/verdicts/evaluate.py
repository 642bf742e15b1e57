"""Does a seed's finding hold here? Each claim of the seeds a study reproduces (config key `seeds`), set
against what the study measured: per cell and pair of targets, B/A (or a ratio of ratios) with its
interval, and a verdict that says the direction and the magnitude apart (`ratio.judge`).

The runs that fit the claim's workload (`match`) are grouped by everything else that defines a cell
(workload kind, clients, data-set rung and regime, the settings the claim does not name). The cells that are
the seed's own condition (`primary`) give the claim's verdict, their intervals Bonferroni-adjusted over the
claim's primary cells; every other cell is context, shown at the plain level and never pooled into it. A cell
that misses one of the claim's preconditions (`regime.check`, measured on the conditions and on the
reference side A, never on the response under test) gets "not tested in the seed's regime" with the
measured reason, never a verdict. Where the study carries an A/A twin of A (a target with the same spec,
`aa_twin_of` naming it), B is compared with A and with the twin, and the interval spans both
(`ratio.both_references`): the twin is used once, as a second reference.

The study's config states its primary comparison before the runs (`analysis.primary`): `runs` compares two sides'
runs as independent samples (`ratio.ratio_ci`); `rounds` pairs each run of B with the run of A in the same round
of the plan (`ratio.paired_ratio_ci`: what the round shares, the host's speed then and the drift of data sets that
grow alike on every target, cancels), and the row's notes give the unpaired interval beside it. A cell whose
sides cannot be paired (a round with two runs of one side) falls back to the unpaired comparison and says so;
a ratio of ratios and a property of a load are never paired.

Footprint, compression ratio and saving are properties of a load, not of a run: each load gives one measurement
(the median of its runs' readings, which re-read the same load). A target loads its data set once per rung, one
measurement per side, said without an interval; with `run.reload` every run loads its own, and the loads are
compared with an interval (a ratio's exact rank interval, a saving's median with its order-statistic interval).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from pgfslab.analysis.stats import min_possible_p
from pgfslab.analysis.stats.median_ci import median_ci_ranks, median_ci_samples_needed
from pgfslab.analysis.verdicts import ratio as R
from pgfslab.analysis.verdicts import regime
from pgfslab.analysis.verdicts.claims import RUN_KEYS, TARGET_KEYS, Claim
from pgfslab.analysis.verdicts.facts import PG_DEFAULTS, PG_KEYS
from pgfslab.analysis.verdicts.labels import (  # noqa: F401  (re-exported: the notebook and tests use them here)
    _cell_label,
    _compared,
    _named_settings,
    _normal,
    _side_label,
    setting_text,
    setting_value,
    side_filter,
)

CELL_DIMS = ("kind", "clients", "rung", "regime")
# the role of a cell whose claim is the lab's own finding (Claim.lab_own): tested in the seed's condition, but on
# the lab's stack, not the seed's, so never counted as the seed's verdict
OWN_ROLE = "the lab's own"
# the facts column each quantity compares (B/A of it, except `saving`: B's own)
VALUE = {
    "ratio": "value",
    "variance_ratio": "variance",
    "cv_ratio": "cv",
    "latency_p95_ratio": "latency_p95",
    "tx_latency_p95_ratio": "latency_p95_tx",
    "read_await_variance": "read_await_var",
    "written_per_tx": "written_per_tx",
    "tail_ratio": "tail_ratio",
    "saving": "saving",
    "compression_ratio": "compress_ratio",
    "footprint": "database_bytes",
    "bandwidth": "bytes_per_s",
    "checkpoint_read_wait": "read_await_ckpt",
}
PER_LOAD = ("saving", "compression_ratio", "footprint")
# quantities that set two columns of the same runs against each other: side A's runs read the first, side B's
# the second (read await in seconds with a checkpoint writing against the other seconds)
PAIRED = {"checkpoint_read_wait": ("read_await_quiet", "read_await_ckpt")}
TEST = {
    "ratio": "Hodges-Lehmann ratio, exact rank interval",
    "variance_ratio": "ratio of per-run σ² of per-second throughput, exact rank interval",
    "cv_ratio": "ratio of per-run CV of per-second throughput, exact rank interval",
    "latency_p95_ratio": "ratio of per-run p95 of per-second latency, exact rank interval",
    "tx_latency_p95_ratio": "ratio of per-run p95 of logged transactions' latency, exact rank interval",
    "read_await_variance": "ratio of per-run σ² of the data device's per-second read await, exact rank interval",
    "written_per_tx": "ratio of bytes written to the data device per commit, exact rank interval",
    "tail_ratio": "ratio of per-run p99/p50 operation latency, exact rank interval",
    "bandwidth": "ratio of bytes synced per second of sync, exact rank interval",
    "checkpoint_read_wait": "read await in seconds with checkpoint writes / the other seconds, per run, exact rank "
    "interval",
}

# a property of a load compared across independent loads (run.reload: each run its own)
TEST_PER_LOAD = "Hodges-Lehmann ratio over independent loads, exact rank interval"

# quantities read from the runs' per-second throughput: their cells say whether a side was steady
SERIES_QUANTITIES = ("ratio", "variance_ratio", "cv_ratio", "latency_p95_ratio", "tx_latency_p95_ratio")

RESULT_SCHEMA: dict[str, Any] = {
    "claim": pl.Utf8,
    "seed": pl.Utf8,
    "cell": pl.Utf8,
    "role": pl.Utf8,  # primary (the seed's own condition: the claim's verdict) or context
    "compared": pl.Utf8,  # B against A in words (`xfs / ext4`, `ext4: write_size 100 MB / 10 MB`)
    "a": pl.Utf8,
    "b": pl.Utf8,
    "n_a": pl.Int64,
    "n_b": pl.Int64,
    "estimate": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "coverage": pl.Float64,
    "aa_lo": pl.Float64,  # the A/A control in the cell: A's twin against A (its interval), where A has a twin
    "aa_hi": pl.Float64,
    "seed_value": pl.Float64,
    "test": pl.Utf8,
    "direction": pl.Utf8,
    "magnitude": pl.Utf8,
    "verdict": pl.Utf8,  # the category (ratio.CATEGORIES), or why there is none
    "verdict_text": pl.Utf8,
    "unchecked": pl.Utf8,  # notes beside the verdict: a check made with less than today's samplers, a side not steady
}


def scope(facts: pl.DataFrame, claim: Claim, twins: bool = False) -> pl.DataFrame:
    """The runs a claim speaks of: its tool and workload kinds (or fsmicro ops), its client count (`max`:
    the study's largest per kind; a number). A target marked as another's A/A twin is never a side (kept
    only with `twins`, as A's second reference)."""
    m = claim.match
    f = facts
    if "aa_twin_of" in f.columns and not twins:
        f = f.filter(pl.col("aa_twin_of").is_null())
    if m.get("tool"):
        f = f.filter(pl.col("tool") == m["tool"])
    if m.get("kinds"):
        f = f.filter(pl.col("kind").is_in(m["kinds"]))
    if m.get("ops"):
        f = f.filter(pl.col("op").is_in(m["ops"]))
    if m.get("clients") == "max":
        f = f.filter(pl.col("clients") == pl.col("clients").max().over("kind"))
    elif m.get("clients") is not None:
        f = f.filter(pl.col("clients") == int(m["clients"]))
    return f


def run_dims(f: pl.DataFrame, named: set[str], across: bool) -> list[str]:
    """The run settings that define a cell, besides those the claim names. Comparing targets, a setting
    that never varies within any target is part of what the target is (e.g. a zfs target's
    full_page_writes off, set for the target as the talk recommends), not a cell. A setting the study
    varies within a target still splits cells, so targets are only compared at the same value of it."""
    keys = [k for k in RUN_KEYS if k not in named]
    if not across or f.is_empty():
        return keys
    varies = f.group_by("target_label").agg(pl.col(k).n_unique() for k in keys)
    return [k for k in keys if bool((varies[k] > 1).any())]


def is_primary(claim: Claim, group: dict[str, Any], facts: pl.DataFrame) -> bool:
    """Is this cell the seed's own condition: every key of `primary` as the seed ran it (a list: any of its
    values), and no PostgreSQL or OS setting off its default that the claim does not name?"""
    for key, want in claim.primary.items():
        have = group.get(key)
        wants = list(want) if isinstance(want, list) else [want]  # a list: any of its values (two regimes)
        if key == "clients" and want == "max":
            kinds = facts.filter(pl.col("kind") == group.get("kind")) if "kind" in group else facts
            wants = [kinds["clients"].max() if kinds.height else None]
        elif key in RUN_KEYS or key == "clients":
            wants = [_normal(key, w) for w in wants]
        if have is None and key in RUN_KEYS:
            continue  # a setting that is part of the target (not a cell dimension): checked by the sides
        if have not in wants:
            return False
    # a setting the seed never changed: a cell that ran it off its default (fsync=off inside an fsync-on
    # claim) is context, unless the claim names it
    named = {*claim.a, *claim.b, *claim.primary, *([claim.interaction["key"]] if claim.interaction else [])}
    for key in (*PG_KEYS, "dirty_background_bytes"):
        value = group.get(key)
        if key not in named and value is not None and value != PG_DEFAULTS.get(key):
            return False
    return True


def _values(part: pl.DataFrame, target: str, column: str, per_load: bool) -> np.ndarray:
    rows = part.filter(pl.col("target_label") == target)
    if per_load:  # one measurement per load (facts' `load`): a target's runs re-read its one load unless each
        # run loaded its own (run.reload); facts made before the column group by target and rung, as it was then
        keys = ["load"] if "load" in rows.columns else ["target_label", "rung"]
        rows = rows.group_by(keys, maintain_order=True).agg(pl.col(column).median())
    return rows[column].to_numpy()


def _twin_rows(facts: pl.DataFrame, group: dict[str, Any], target: str, column: str) -> pl.DataFrame | None:
    """The runs of `target`'s A/A twin in this cell with a value (None when it has no twin that ran there)."""
    if "aa_twin_of" not in facts.columns:
        return None
    names = facts.filter(pl.col("target_label") == target)["target"].unique().to_list()
    twins = facts.filter(pl.col("aa_twin_of").is_in(names))  # the twin names its baseline by target name
    same = pl.all_horizontal([pl.col(d).eq_missing(v) for d, v in group.items() if d in facts.columns])
    rows = twins.filter(same).filter(pl.col(column).is_not_null()) if twins.height else twins
    return rows if rows.height else None


def _by_round(rows: pl.DataFrame, column: str) -> dict[int, float] | None:
    """A side's values keyed by the round they ran in (`repeat`); None when a round holds two of its runs or a
    run has no round (they cannot be paired)."""
    if "repeat" not in rows.columns or rows["repeat"].null_count() or rows["repeat"].n_unique() < rows.height:
        return None
    return dict(zip(rows["repeat"].to_list(), rows[column].to_list()))


def _in_common_rounds(sides: list[tuple[pl.DataFrame, str]]) -> tuple[list[list[float]], int] | None:
    """Each side's values (its rows, its column) over the rounds every side ran in, in round order, and how many
    runs were left out for want of all sides in their round; None when a round holds two runs of one side."""
    keyed = [_by_round(rows, column) for rows, column in sides]
    maps = [k for k in keyed if k is not None]
    if len(maps) < len(keyed):
        return None
    common = sorted(set(maps[0]).intersection(*maps[1:]))
    left = sum(len(k) for k in maps) - len(maps) * len(common)
    return [[k[r] for r in common] for k in maps], left


def _paired(
    ra: pl.DataFrame, rb: pl.DataFrame, col_a: str, col_b: str, alpha: float, method: str = "signed-rank"
) -> tuple[R.RatioCI | None, str]:
    """B/A paired by round over the rounds both sides ran in, and what was left unpaired (None and the reason
    when the sides cannot be paired)."""
    found = _in_common_rounds([(ra, col_a), (rb, col_b)])
    if found is None:
        return None, "not paired by round (a round holds two runs of one side): the runs compared unpaired"
    (a, b), left = found
    ci = R.paired_ratio_ci(a, b, alpha, method)
    return ci, (f"{left} run(s) without a partner in their round left out" if left else "")


def _judged(claim: Claim, ci: R.RatioCI, per_load_once: bool, alpha: float, sized: bool = True) -> R.Verdict:
    """The interval against the claim: its direction, and the seed's size where `sized` (not for a comparison
    whose size is not the seed's kind of system's, `_userspace_against_kernel`)."""
    expect = claim.expect or "greater"
    seed = claim.seed_range if sized else None
    if per_load_once:
        return R.judge_once(ci.ratio, expect, seed, claim.band_range)  # type: ignore[arg-type]
    return R.judge(ci, expect, seed, claim.band_range, 1 - alpha)  # type: ignore[arg-type]


def _userspace_against_kernel(ta: str, tb: str) -> str | None:
    """zfs-fuse on one side and a kernel file system on the other: the difference carries FUSE's round trip per
    call, so its size is not kernel ZFS's and no machine without the zfs module can judge it; said as the reason,
    None otherwise."""
    fuse = ["zfs-fuse" in str(t) for t in (ta, tb)]
    if fuse[0] == fuse[1]:
        return None
    return f"{ta if fuse[0] else tb} (userspace) against {tb if fuse[0] else ta} (kernel)"


# quantities FUSE's round trip per call moves one known way on the zfs-fuse side: its throughput down, its latency up
FUSE_RAISES = {"ratio": False, "latency_p95_ratio": True, "tx_latency_p95_ratio": True}


def _fuse_way(claim: Claim, fuse_is_b: bool) -> str | None:
    """Which way FUSE's cost moves B/A against the claim's direction, where the quantity says (None elsewhere): with
    it, a direction found here could be FUSE's alone; against it, a direction found holds despite it."""
    raises = FUSE_RAISES.get(claim.quantity)
    if raises is None or claim.expect not in ("greater", "less"):
        return None
    up = raises == fuse_is_b  # B/A rises when the fuse side's value rises and it is B, or falls and it is A
    if up == (claim.expect == "greater"):
        return ("FUSE's cost moves B/A the claim's way here: a direction found could be FUSE's round trip alone, "
                "not ZFS's")  # fmt: skip
    return "FUSE's cost moves B/A against the claim here: a direction found holds despite it"


def evaluate(facts: pl.DataFrame, claim: Claim, alpha: float = 0.05, primary: str = "runs") -> pl.DataFrame:
    """One row per cell and pair of targets where both sides of the claim ran (empty: not tested here);
    `primary` is the study's comparison (module docstring)."""
    f = scope(facts, claim)
    column = VALUE.get(claim.quantity)
    if column is None or f.is_empty() or column not in f.columns:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    ran = f  # every run the claim speaks of, measured or not (`_unmeasured`)
    f = f.filter(pl.col(column).is_not_null() & (pl.col(column) > 0))
    for extra in PAIRED.get(claim.quantity, ()):
        f = f.filter(pl.col(extra).is_not_null() & (pl.col(extra) > 0))
    with_twins = scope(facts, claim, twins=True).filter(pl.col(column).is_not_null() & (pl.col(column) > 0))
    named = set(claim.a) | set(claim.b)
    inter = claim.interaction
    if inter:
        named.add(inter["key"])
    # a claim about targets compares targets that differ in a target key the sides name; a claim whose sides
    # name the same target (ext4 in a small and a large directory) compares settings on one target
    across = any(k in TARGET_KEYS and claim.a.get(k) != claim.b.get(k) for k in named)
    # targets are compared where they agree in what the claim does not name (a file system's own keys, zfs's
    # recordsize or ext4's data mode, never split a comparison across file systems); a throttled (emulated)
    # data device is compared with another throttled one only, never with the real device
    by_target = (
        [k for k in ("compression", "fillfactor", "snapshots", "device_profile") if k not in named]
        if across
        else ["target_label"]
    )
    drop = {*named, *(["rung"] if inter and inter["key"] == "regime" else [])}
    dims = [d for d in CELL_DIMS if d not in drop] + run_dims(f, named, across) + by_target
    dims = [d for d in dict.fromkeys(dims) if d in f.columns]
    shared, differ = _named_settings(claim)
    side_a, side_b = f.filter(side_filter(claim.a)), f.filter(side_filter(claim.b))
    if claim.quantity == "saving":  # B's own saving: an uncompressed A has none to compare, B alone decides
        side_a = side_b
    cells = []
    for key, part_a in side_a.group_by(dims, maintain_order=True):
        group = dict(zip(dims, key))
        match = pl.all_horizontal([pl.col(d).eq_missing(v) for d, v in group.items()])
        part_b = side_b.filter(match)
        for ta in part_a["target_label"].unique(maintain_order=True).to_list():
            for tb in part_b["target_label"].unique(maintain_order=True).to_list():
                if (claim.quantity == "saving" and ta != tb) or (claim.quantity != "saving" and across and ta == tb):
                    continue
                pa, pb = part_a.filter(pl.col("target_label") == ta), part_b.filter(pl.col("target_label") == tb)
                kept = _kept_as_context(pa)
                cells.append((group, pa, pb, ta, tb, is_primary(claim, group, f) and kept is None, kept))
    # the claim's verdict rests on all its primary cells at once: their intervals are Bonferroni-adjusted so
    # that the chance of any of them misleading stays at alpha (context cells are shown at the plain level)
    k = max(1, sum(c[5] for c in cells))
    steady = _steady_over_cells(claim, [pa for _, pa, *_ in cells])
    rows = [
        _row(claim, group, pa, pb, ta, tb, column, f, with_twins, alpha / k if is_p else alpha, is_p, k,
             shared, differ, held, pairing=R.PAIRING.get(primary))
        for (group, pa, pb, ta, tb, is_p, _), held in zip(cells, steady)
    ]  # fmt: skip
    for row, (*_, kept) in zip(rows, cells):
        if row is not None and kept is not None:
            row["test"] = f"{row['test']}; kept as context by the study: {kept}".lstrip("; ")
    found = [r for r in rows if r is not None] + _unmeasured(claim, ran, f, dims, shared, column)
    return pl.DataFrame(found, schema=RESULT_SCHEMA) if found else pl.DataFrame(schema=RESULT_SCHEMA)


# what a run must show for a quantity it can lack (the runs ran, and measured nothing the claim compares)
NEEDS = {
    "checkpoint_read_wait": "seconds with checkpoint writes and seconds without them, both in one run, with reads",
    "read_await_variance": "reads from the data device in its per-second samples",
    "written_per_tx": "writes to the data device and committed transactions",
    "tx_latency_p95_ratio": "a per-transaction log (the workload's `log: transactions`)",
}


def _unmeasured(
    claim: Claim, ran: pl.DataFrame, measured: pl.DataFrame, dims: list[str], shared: dict[str, Any], column: str
) -> list[dict[str, Any]]:
    """A row for each primary cell where both sides ran and no run of a side measured what the claim compares (a
    claim about read wait at checkpoints, in a cell where a checkpoint wrote through every second of every run):
    the claim is said "not resolved" there with why, never dropped from its own cell unseen. Not for an interaction
    (its cell is two cells) nor a property of a load."""
    if claim.interaction or claim.quantity in PER_LOAD:
        return []
    dims = [d for d in dims if d in ran.columns]
    if not dims:
        return []
    need = NEEDS.get(claim.quantity, f"the claim's quantity ({column})")
    sides = [(ran.filter(side_filter(s)), measured.filter(side_filter(s))) for s in (claim.a, claim.b)]
    out = []
    for key, part_a in sides[0][0].group_by(dims, maintain_order=True):
        group = dict(zip(dims, key))
        if not is_primary(claim, group, ran) or _kept_as_context(part_a) is not None:
            continue
        match = pl.all_horizontal([pl.col(d).eq_missing(v) for d, v in group.items()])
        n_b = sides[1][0].filter(match).height
        got = [m.filter(match).height for _, m in sides]
        if n_b == 0 or all(got):  # B never ran here (not tested), or the cell was measured and judged
            continue
        lacking = f"side A's {part_a.height}" if not got[0] else f"side B's {n_b}"
        out.append(
            {
                "claim": claim.id, "seed": claim.seed, "cell": _cell_label(group, shared), "role": "primary",
                "compared": None, "a": None, "b": None, "n_a": got[0], "n_b": got[1],
                "test": TEST.get(claim.quantity, ""), "direction": None, "magnitude": None, "verdict": R.UNRESOLVED,
                "verdict_text": f"not resolved: none of {lacking} runs here measured it (it needs {need})",
            }
        )  # fmt: skip
    return out


def _kept_as_context(side: pl.DataFrame) -> str | None:
    """Why the study keeps this cell as context (`workloads.<name>.context`), or None: it may be primary."""
    if "context_cell" not in side.columns:
        return None
    why = side["context_cell"].drop_nulls()
    return str(why[0]) if why.len() else None


def _steady_over_cells(claim: Claim, sides: list[pl.DataFrame]) -> list[list[str] | None]:
    """The steady precondition of each cell's reference side, decided over the claim's cells at once: Holm's
    step-down over their p-values at regime.STEADY_ALPHA (a claim over many cells would otherwise find some
    cell "not steady" by chance alone). None where the claim does not need steady runs."""
    if "steady" not in claim.preconditions:
        return [None] * len(sides)
    tests = [regime.steady_test("A", side) for side in sides]
    ps = [t.p for t in tests if t.p is not None]
    order = sorted(ps)
    m = len(order)
    # Holm: the i-th smallest p is compared with alpha / (m - i); every p after the first one kept is kept
    cut = next((order[i] for i in range(m) if order[i] >= regime.STEADY_ALPHA / (m - i)), math.inf)
    out: list[list[str] | None] = []
    for t in tests:
        if t.p is None:
            out.append([t.message])
        elif t.p < cut:
            out.append([f"{t.message}; Holm over the claim's {m} cells"])
        else:
            out.append([])
    return out


def _steady_notes(sides: tuple[tuple[str, pl.DataFrame], ...]) -> list[str]:
    """The sides flagged not steady, and those whose runs were too short for the steady-state check: both sides
    too short said once ("2 (A) and 1 (B) samples per run") rather than twice in the same words."""
    tests = [regime.steady_test(label, side) for label, side in sides]
    short = [t.too_short for t in tests if t.too_short is not None]
    flagged = [t.message for t in tests if t.p is not None and t.p < regime.STEADY_ALPHA]
    if len(short) == 2:
        counts = str(short[0]) if short[0] == short[1] else f"{short[0]} (A) and {short[1]} (B)"
        return [*flagged, f"the steady state of neither side could be checked: {counts} samples per run, "
                f"{regime.MSER_TOO_SHORT}"]  # fmt: skip
    return [t.message for t in tests if t.too_short is not None or (t.p is not None and t.p < regime.STEADY_ALPHA)]


def _row(
    claim,
    group,
    pa,
    pb,
    ta,
    tb,
    column,
    f,
    with_twins,
    alpha,
    primary,
    k,
    shared,
    differ,
    steady=None,
    pairing=None,
) -> dict[str, Any] | None:
    cell = _cell_label(group, shared)
    inter = claim.interaction
    per_load = claim.quantity in PER_LOAD
    role = "primary" if primary else "context"
    notes: list[str] = []
    aa: R.RatioCI | None = None
    if inter:
        k_, lv0, lv1 = inter["key"], inter["from"], inter["to"]
        norm = (lambda v: v) if k_ == "regime" else (lambda v: _normal(k_, v))  # noqa: E731
        at = lambda p, lv: p.filter(pl.col(k_) == norm(lv))[column].to_numpy()  # noqa: E731
        a0, b0, a1, b1 = at(pa, lv0), at(pb, lv0), at(pa, lv1), at(pb, lv1)
        if min(len(a0), len(b0), len(a1), len(b1)) == 0:
            return None
        ci = R.interaction_ci(a0, b0, a1, b1, alpha)
        how = "Welch t interval over runs"
        if pairing is not None:
            # the study's primary comparison pairs by round: each round's own change, the unpaired one beside it
            levels = [(pa, lv0), (pb, lv0), (pa, lv1), (pb, lv1)]
            found = _in_common_rounds([(p.filter(pl.col(k_) == norm(lv)), column) for p, lv in levels])
            if found is None:
                notes.append("not paired by round (a round holds two runs of one group): the runs compared unpaired")
            else:
                g, left = found
                paired_ci = R.paired_interaction_ci(g[0], g[1], g[2], g[3], alpha, pairing)
                notes.append(f"the runs unpaired: {R.interval_text(ci)}"
                             + (f"; {left} run(s) without all four groups in their round left out" if left else ""))  # fmt: skip
                ci, how = paired_ci, R.PAIRED_TEST[pairing]
        test = f"ratio of ratios ({k_} {setting_value(k_, lv1) if k_ != 'regime' else lv1} against {lv0}), {how}"
        cell = f"{cell}, {k_}: {lv1} / {lv0}".replace("_", " ") if k_ == "regime" else f"{cell}, {k_} {lv1} / {lv0}"
    else:
        col_a, col_b = PAIRED.get(claim.quantity, (column, column))
        a, b = _values(pa, ta, col_a, per_load), _values(pb, tb, col_b, per_load)
        if claim.quantity == "saving":
            ci = _saving_ci(b, alpha)
        else:
            ci = R.ratio_ci(a, b, alpha)
        test = (
            ("one measurement per load" if min(len(a), len(b)) < 3 else TEST_PER_LOAD)
            if per_load
            else TEST.get(claim.quantity, "")
        )
        if claim.quantity == "saving":
            test = f"median saving over {len(b)} load(s), order-statistic interval" if len(b) > 1 else test
        twin_rows = None if per_load or claim.quantity in PAIRED else _twin_rows(with_twins, group, ta, column)
        rows_a, rows_b = pa.filter(pl.col("target_label") == ta), pb.filter(pl.col("target_label") == tb)
        paired = pairing is not None and not per_load and claim.quantity != "saving"
        if paired:
            # the study's primary comparison pairs the runs by round; the unpaired one is shown beside it
            plain, (ci_r, why) = ci, _paired(rows_a, rows_b, col_a, col_b, alpha, pairing)
            if ci_r is None:
                notes.append(why)
                paired = False
            else:
                ci = ci_r
                notes.append(f"the runs unpaired: {R.interval_text(plain)}" + (f"; {why}" if why else ""))
                if pairing == "t":  # the point is the rounds' mean log-ratio, not a Hodges-Lehmann estimate
                    test = test.replace("Hodges-Lehmann ratio, ", "ratio, ")
                test = test.replace("exact rank interval", R.PAIRED_TEST[pairing])
        if twin_rows is not None:
            # A's A/A twin, used once: B must differ from A and from the twin (ratio.both_references)
            twin = twin_rows[column].to_numpy()
            to_twin, aa = R.ratio_ci(twin, b, alpha), R.ratio_ci(a, twin, alpha)
            if paired:
                to_twin_r, _ = _paired(twin_rows, rows_b, column, col_b, alpha, pairing)
                aa_r, _ = _paired(rows_a, twin_rows, col_a, column, alpha, pairing)
                if to_twin_r is None or aa_r is None:
                    notes.append("A's A/A twin not paired by round (a round holds two of its runs): compared unpaired")
                to_twin, aa = to_twin_r or to_twin, aa_r or aa
            notes.append(f"B against A {R.interval_text(ci)} and against A's A/A twin {R.interval_text(to_twin)}; "
                         "the interval spans both")  # fmt: skip
            ci = R.both_references(ci, to_twin)
            test += "; against A and its A/A twin (intersection-union)"
    if primary and k > 1:
        test += f"; Bonferroni over the claim's {k} primary cells"
    miss, unchecked = regime.check(claim.preconditions, pa, pb, steady)
    miss += regime.throttled_await(claim.quantity, pa, pb)
    if claim.quantity in SERIES_QUANTITIES:
        # B's steadiness is the response under test, never a precondition: a reader sees it beside the
        # verdict; A's is noted where the claim does not require it (seed 001's -t 1000 runs last seconds)
        sides = (("B", pb),) if "steady" in claim.preconditions else (("A", pa), ("B", pb))
        unchecked += _steady_notes(sides)
    fuse = _userspace_against_kernel(ta, tb)
    if fuse and claim.expect == "same" and claim.quantity != "saving":
        miss.append(f"{fuse}: an equivalence is a statement of size, and a userspace ZFS's sizes are not kernel ZFS's")
    if miss:
        v = R.Verdict(R.NOT_IN_REGIME, None, None, "not tested in the seed's regime: " + "; ".join(miss))
    elif claim.quantity == "saving":
        v = _saving(ci, claim.seed_range, 1 - alpha)
    else:
        once = per_load and min(ci.n_a, ci.n_b) < 3
        v = _judged(claim, ci, once, alpha, sized=not fuse)
        if fuse and claim.seed_range is not None:
            unchecked.append(f"{fuse}: direction only, the seed's size ({R.range_text(claim.seed_range)}) not "
                             "judged (a userspace ZFS pays a round trip through FUSE per call that kernel ZFS does "
                             "not)")  # fmt: skip
        way = _fuse_way(claim, "zfs-fuse" in str(tb)) if fuse else None
        if way:
            unchecked.append(way)
    label_a, label_b = _side_label(ta, claim.a, differ), _side_label(tb, claim.b, differ)
    if claim.quantity == "saving":
        label_a = ""
    return {
        "claim": claim.id, "seed": claim.seed, "cell": cell, "role": role,
        "compared": f"{ta}: seconds with checkpoint writes / the other seconds" if claim.quantity in PAIRED
        else _compared(claim, ta, tb, differ), "a": label_a, "b": label_b,
        "n_a": ci.n_a, "n_b": ci.n_b, "estimate": ci.ratio, "lo": ci.lo, "hi": ci.hi, "coverage": ci.confidence,
        "aa_lo": aa.lo if aa else None, "aa_hi": aa.hi if aa else None,
        "seed_value": claim.seed_range[0] if claim.seed_range and claim.seed_range[0] == claim.seed_range[1]
        else None, "test": test, "direction": v.direction, "magnitude": v.magnitude,
        "verdict": v.category, "verdict_text": v.text, "unchecked": "; ".join(notes + unchecked) or None,
    }  # fmt: skip


def _saving_ci(b: np.ndarray, alpha: float) -> R.RatioCI:
    """B's saving over its loads: the median, with the distribution-free interval of the median from the loads'
    order statistics (stats.median_ci_ranks) and its exact coverage, which falls short of 1 - alpha below six
    loads at 95 % (the sample's range then, its coverage said)."""
    if len(b) == 0:
        return R.RatioCI(math.nan, math.nan, math.nan, 0, 0, math.nan)
    x = np.sort(b)
    lo, hi, coverage = median_ci_ranks(len(x), 1 - alpha)
    return R.RatioCI(float(np.median(x)), float(x[lo - 1]), float(x[hi - 1]), 0, len(x), coverage)


def _pct(v: float) -> str:
    return f"{100 * v:.0f} %"


def _saving(ci: R.RatioCI, seed_range: tuple[float, float] | None, level: float) -> R.Verdict:
    """B's own saving (1 - on disk / logical) against the seed's (a number or the range it gave): with the
    interval of its median over independent loads (`_saving_ci`) where they reach `level`, else said as measured
    on that many loads, without an interval."""
    seed = None
    if seed_range is not None:
        lo_s, hi_s = seed_range
        seed = _pct(lo_s) if lo_s == hi_s else f"{100 * lo_s:.0f}–{100 * hi_s:.0f} %"
    if ci.n_b < 2 or not ci.confidence >= level - 1e-9:
        loads = "once per load" if ci.n_b < 2 else f"on {ci.n_b} loads"
        text = f"measured {loads}: saving {_pct(ci.ratio)}"
        if ci.n_b >= 2:
            need = median_ci_samples_needed(level)
            text += (f" (median; the loads {_pct(ci.lo)} to {_pct(ci.hi)}, no {100 * level:.3g} % interval: "
                     f"{need} loads give one)")  # fmt: skip
        if seed_range is None:
            return R.Verdict(R.ONCE, None, None, text)
        lo_s, hi_s = seed_range
        if lo_s <= ci.ratio <= hi_s and lo_s != hi_s:
            return R.Verdict(R.ONCE, None, "inside", f"{text}, within the seed's {seed}")
        word = "smaller" if ci.ratio < lo_s else "larger"
        return R.Verdict(R.ONCE, None, word, f"{text}, {word} than the seed's {seed}")
    shown = f"saving {_pct(ci.ratio)} [{_pct(ci.lo)}, {_pct(ci.hi)}] (the median of {ci.n_b} loads)"
    if ci.lo <= 0:
        return R.Verdict(R.UNRESOLVED, "unresolved", None, f"not resolved: {shown} reaches no saving")
    if seed_range is None:
        return R.Verdict(R.DIRECTION_ONLY, "agrees", None, f"holds (direction only; the seed gave no size): {shown}")
    lo_s, hi_s = seed_range
    if ci.lo <= hi_s and lo_s <= ci.hi:
        return R.Verdict(R.HOLDS, "agrees", "inside", f"holds: {shown} overlaps the seed's {seed}")
    size = "smaller" if ci.hi < lo_s else "larger"
    category = R.SMALLER if size == "smaller" else R.LARGER
    return R.Verdict(category, "agrees", size, f"same direction, {size} effect: {shown} against the seed's {seed}")


def crash_bound(n: int, alpha: float = 0.05) -> float:
    """The largest share of crashes that could break the claim and still give none in `n` crashes, at 1 - alpha
    (the exact one-sided Clopper-Pearson bound for no event in n trials: 1 - alpha^(1/n), 63 % for 3 crashes at
    95 %): what a clean crash check rules out, so that "holds" on a few crashes is not read as proof."""
    return 1 - alpha ** (1 / n) if n > 0 else 1.0


def durability(claim: Claim, runs: pl.DataFrame, alpha: float = 0.05) -> pl.DataFrame:
    """The durability check's runs (table `durability`) against a claim that the stack honours fsync (no
    committed transaction lost, side B synchronous_commit on) or that asynchronous commit loses only within
    its documented window (side B synchronous_commit off): per target and crash kind; power loss is the
    seed's condition. A clean check says what its crashes rule out (`crash_bound`)."""
    want = _normal("synchronous_commit", (claim.b or {}).get("synchronous_commit", "on"))
    rows = []
    sel = runs.filter(pl.col("synchronous_commit").str.to_lowercase() == want) if runs.height else runs
    for (target, crash), part in sel.group_by("target", "crash", maintain_order=True) if sel.height else []:
        n = part.height
        crashes = f"{n} crash" if n == 1 else f"{n} crashes"
        bad = int((part["violations"].fill_null(0) > 0).sum())
        lost = int(part["lost_ids"].fill_null(0).sum())
        within = int(part["lost_within_window"].fill_null(0).sum())
        ruled_out = (f"; a stack that breaks it in more than {100 * crash_bound(n, alpha):.0f} % of crashes is ruled "
                     f"out at {100 * (1 - alpha):.0f} %")  # fmt: skip
        if bad:
            v = R.Verdict(R.VIOLATED, "opposite", None, f"violated: {bad} of {n} crashes lost committed transactions "
                          "beyond what the setting allows")  # fmt: skip
        elif want == "off":
            v = R.Verdict(R.HOLDS, "agrees", None, f"holds: {crashes} lost {lost} committed transactions, "
                          f"{'each' if within == lost else f'{within}'} committed within the documented window "
                          f"(3 x wal_writer_delay) before the crash{ruled_out}")  # fmt: skip
        else:
            v = R.Verdict(R.HOLDS, "agrees", None, f"holds: {crashes}, no committed transaction lost{ruled_out}")
        rows.append({
            "claim": claim.id, "seed": claim.seed, "cell": f"{crash}, synchronous_commit={want}",
            "role": "primary" if crash == "power-loss" else "context", "compared": str(target), "a": "",
            "b": str(target), "n_a": 0, "n_b": n, "test": "crash, restart, committed ids checked",
            "direction": v.direction, "verdict": v.category, "verdict_text": v.text,
        })  # fmt: skip
    return pl.DataFrame(rows, schema=RESULT_SCHEMA) if rows else pl.DataFrame(schema=RESULT_SCHEMA)


def rank_test_floor(claim: Claim) -> pl.DataFrame:
    """Seed 003's benchstat table: with n runs per side, the smallest two-sided p an exact rank test can give
    (arithmetic, no runs needed): below 0.05 or not."""
    n = 3  # the seed's n = 3 + 3
    floor = float(min_possible_p(n, n))
    agrees = floor >= 0.05
    text = (f"holds: with {n}+{n} runs the smallest exact two-sided p is {floor:.3f}, never below 0.05 (the "
            f"seed's table: {claim.seed_number})")  # fmt: skip
    v = R.Verdict(R.HOLDS if agrees else R.OPPOSITE, "agrees" if agrees else "opposite", "inside", text)
    return pl.DataFrame([{
        "claim": claim.id, "seed": claim.seed, "cell": f"{n}+{n} runs", "role": "primary", "compared": "exact U test",
        "a": "", "b": "", "n_a": n, "n_b": n, "estimate": floor, "seed_value": claim.seed_value,
        "test": "exact Mann-Whitney distribution of U under no difference", "direction": v.direction, "magnitude": v.magnitude,
        "verdict": v.category, "verdict_text": v.text,
    }], schema=RESULT_SCHEMA)  # fmt: skip


def evaluate_all(
    facts: pl.DataFrame,
    claims: list[Claim],
    alpha: float = 0.05,
    durability_runs: pl.DataFrame | None = None,
    primary: str = "runs",
) -> pl.DataFrame:
    """Every reproducible claim's rows (see `evaluate`; `primary`: the study's `analysis.primary`), and one row per
    claim with nothing to compare in this study, saying why (not tested in this study; only a figure can speak to
    it, and which)."""
    out = []
    for c in claims:
        if not c.reproducible_here:
            continue
        if c.quantity == "rank_test_floor":
            out.append(rank_test_floor(c))
            continue
        if c.quantity == "durability":
            rows = durability(c, durability_runs if durability_runs is not None else pl.DataFrame(), alpha)
        elif c.match:
            rows = evaluate(facts, c, alpha, primary)
        else:
            rows = pl.DataFrame(schema=RESULT_SCHEMA)
        if c.lab_own and not rows.is_empty():
            # a finding about the lab's own stack, not the seed's: never the seed's verdict (table.OWN_ROLE)
            rows = rows.with_columns(
                pl.when(pl.col("role") == "primary").then(pl.lit(OWN_ROLE)).otherwise(pl.col("role")).alias("role")
            )
        if rows.is_empty():
            why = f"only a figure: {c.figure}" if c.figure and not c.match else "not tested in this study"
            rows = pl.DataFrame([{"claim": c.id, "seed": c.seed, "verdict": why, "verdict_text": why}],
                                schema=RESULT_SCHEMA)  # fmt: skip
        out.append(rows)
    return pl.concat(out) if out else pl.DataFrame(schema=RESULT_SCHEMA)


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per claim: its verdict from the seed's own condition (the primary cells: one category when they
    agree, else each with its count), how many context cells were shown, and the primary cells' widest
    interval half-width in %."""
    judged = results.filter(pl.col("role").is_not_null())
    half = 100 * (pl.col("hi") - pl.col("lo")) / 2 / pl.col("estimate")
    prim = pl.col("role") == "primary"
    return (
        judged.group_by("claim", maintain_order=True)
        .agg(
            prim.sum().alias("primary_cells"),
            (~prim).sum().alias("context_cells"),
            pl.col("verdict").filter(prim).unique(maintain_order=True).alias("_v"),
            half.filter(prim & half.is_finite()).max().alias("widest_half_width_pct"),
        )
        .with_columns(
            pl.when(pl.col("_v").list.len() == 0)
            .then(pl.lit("no primary cell (none in the seed's condition, or each kept as context by the study)"))
            .when(pl.col("_v").list.len() == 1)
            .then(pl.col("_v").list.first())
            .otherwise(pl.col("_v").list.join(" / "))
            .alias("overall")
        )
        .drop("_v")
    )
