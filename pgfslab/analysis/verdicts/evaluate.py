"""Does a seed's finding hold here? Each claim of the seeds a study reproduces (config key `seeds`), set
against what the study measured, with an interval and a verdict.

A claim (`claims.yaml`) names two sides, A and B, by what distinguishes them (file system, compression,
PostgreSQL or OS settings, fillfactor, snapshots) and says of B/A: within a tolerance of 1, at least a
factor, or at most one. The study's runs that fit the claim's workload are grouped by everything else
that defines a cell (workload kind, clients, data-set rung and regime, the settings the claim does not
name); in each group where both sides ran, each pair of targets (A's, B's) gets B/A with its
distribution-free interval (`ratio.ratio_ci`) and a verdict (`ratio.verdict`): holds / does not hold /
not resolved at the precision reached. A claim the study has no runs for says so; a claim no machine of
this kind can test is listed apart, with the reason.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from pgfslab.analysis.verdicts.claims import Claim
from pgfslab.analysis.verdicts.facts import FS_KEYS, PG_DEFAULTS, PG_KEYS
from pgfslab.analysis.verdicts.ratio import ratio_ci, verdict
from pgfslab.config.vm_settings import parse_bytes

# what a target is (set per target in a study) and what a run is (set per workload, or per target)
TARGET_KEYS = ("fs", "compression", "fillfactor", "snapshots")
RUN_KEYS = ("dirty_background_bytes", *PG_KEYS, *FS_KEYS)
CELL_DIMS = ("kind", "clients", "rung", "regime")
# the facts column each quantity compares (B/A of it, except `saving`: B's own): the headline (tps, timed
# fsmicro ops/s), the within-run CV, compression saving, compression ratio (uncompressed / on disk), the
# database's size at the end of a run, bytes synced per second of sync latency
VALUE = {
    "ratio": "value",
    "variance_ratio": "cv",
    "saving": "saving",
    "compression_ratio": "compress_ratio",
    "footprint": "database_bytes",
    "bandwidth": "bytes_per_s",
}

RESULT_SCHEMA: dict[str, Any] = {
    "claim": pl.Utf8,
    "seed": pl.Utf8,
    "cell": pl.Utf8,
    "compared": pl.Utf8,  # B against A in words (`xfs / ext4`, `ext4: write_size 100 MB / 10 MB`)
    "a": pl.Utf8,
    "b": pl.Utf8,
    "n_a": pl.Int64,
    "n_b": pl.Int64,
    "estimate": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "coverage": pl.Float64,
    "test": pl.Utf8,
    "verdict": pl.Utf8,
}


def _normal(key: str, value: Any) -> Any:
    """A side's value in the facts' terms (settings as lower-case text, byte counts as bytes)."""
    if key == "dirty_background_bytes":
        return parse_bytes(value)
    if key in PG_KEYS:
        return {True: "on", False: "off"}.get(value, str(value).lower())
    if key in FS_KEYS:
        return int(value)
    if key == "mount_options":
        return None
    return value


def side_filter(side: dict[str, Any]) -> pl.Expr:
    """Rows whose facts match every key the side names (keys the facts do not know are ignored: the
    claim's curation keeps only the ones the lab can set)."""
    expr = pl.lit(True)
    for key, value in side.items():
        if key in (*TARGET_KEYS, *RUN_KEYS):
            expr = expr & (pl.col(key) == _normal(key, value))
    return expr


def _count(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def _size(n: int) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("GB", 10**9)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n / 1e6:g} MB"


def setting_value(key: str, value: Any) -> str:
    """A run setting's value as a reader reads it: 10k files, 100 MB writes, 32 MiB, off."""
    if key in ("files", "directory_files"):
        return _count(int(value))
    if key == "write_size":
        return f"{int(value) / 1e6:g} MB"
    if key == "dirty_background_bytes":
        return _size(int(_normal(key, value)))
    return str(_normal(key, value))


def setting_text(key: str, value: Any) -> str:
    """`files=10k`, `directory_files=100k`, `write_size=10 MB`, `dirty_background_bytes=32 MiB`,
    `synchronous_commit=off`."""
    return f"{key}={setting_value(key, value)}"


def _cell_label(group: dict[str, Any], shared: dict[str, Any] | None = None) -> str:
    parts = [str(group.get("kind"))]
    if group.get("clients") is not None:
        parts.append(f"c={group['clients']}")
    if group.get("rung") is not None:
        parts.append(f"d{group['rung']}")
    if group.get("regime"):
        parts.append(str(group["regime"]).replace("_", " "))
    # the settings both sides of the claim name alike (the claim's own condition, e.g. files=10k), then the
    # settings the cell shares that are not PostgreSQL's defaults (a default says nothing of the cell)
    parts += [setting_text(k, v) for k, v in (shared or {}).items()]
    parts += [
        setting_text(k, v) for k, v in group.items() if k in RUN_KEYS and v is not None and v != PG_DEFAULTS.get(k)
    ]
    return ", ".join(parts)


def _named_settings(claim: Claim) -> tuple[dict[str, Any], list[str]]:
    """The run settings the claim names: those both sides name alike (a condition of every cell) and those
    that tell the sides apart (part of each side's label, so a claim comparing one target with itself says
    what differs: `ext4 (write_size=100 MB) / ext4 (write_size=10 MB)`)."""
    keys = [k for k in dict.fromkeys([*claim.a, *claim.b]) if k in RUN_KEYS]
    shared = {
        k: claim.a[k]
        for k in keys
        if k in claim.a and k in claim.b and _normal(k, claim.a[k]) == _normal(k, claim.b[k])
    }
    return shared, [k for k in keys if k not in shared]


def _side_label(target: str, side: dict[str, Any], differ: list[str]) -> str:
    text = ", ".join(setting_text(k, side[k]) for k in differ if k in side)
    return f"{target} ({text})" if text and target else target


def _compared(claim: Claim, ta: str, tb: str, differ: list[str]) -> str:
    """B against A in a few words: `xfs / ext4`; one target against itself by the settings that differ,
    `ext4: write_size 100 MB / 10 MB`, `ext4: full_page_writes, wal_init_zero, wal_recycle off / on`; a
    saving, B alone."""
    if claim.quantity == "saving":
        return tb
    if ta != tb or not differ:
        return f"{_side_label(tb, claim.b, differ)} / {_side_label(ta, claim.a, differ)}"
    va = {setting_value(k, claim.a[k]) for k in differ if k in claim.a}
    vb = {setting_value(k, claim.b[k]) for k in differ if k in claim.b}
    if len(va) == len(vb) == 1 and all(k in claim.a and k in claim.b for k in differ):
        return f"{ta}: {', '.join(differ)} {vb.pop()} / {va.pop()}"
    side = lambda s: ", ".join(setting_text(k, s[k]) for k in differ if k in s)  # noqa: E731
    return f"{ta}: {side(claim.b)} / {side(claim.a)}"


def scope(facts: pl.DataFrame, claim: Claim) -> pl.DataFrame:
    """The runs a claim speaks of: its tool and workload kinds (or fsmicro ops), its client count
    (`max`: the study's largest per kind; `1`), its memory regime."""
    m = claim.match
    f = facts
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
    if claim.regime not in ("any", "n/a", None):
        f = f.filter(pl.col("regime") == claim.regime)
    return f


def run_dims(f: pl.DataFrame, named: set[str], across: bool) -> list[str]:
    """The run settings that define a cell, besides those the claim names. Comparing targets, a setting
    that never varies within any target is part of what the target is (e.g. a zfs target's
    full_page_writes off, set for the target as the talk recommends), not a cell: ext4 as it runs and
    zfs as it runs are compared. A setting the study varies within a target (per workload) still splits
    cells, so targets are only compared at the same value of it."""
    keys = [k for k in RUN_KEYS if k not in named]
    if not across or f.is_empty():
        return keys
    varies = f.group_by("target_label").agg(pl.col(k).n_unique() for k in keys)
    return [k for k in keys if int(varies[k].max() or 0) > 1]


def evaluate(facts: pl.DataFrame, claim: Claim, alpha: float = 0.05) -> pl.DataFrame:
    """One row per cell and pair of targets where both sides of the claim ran (empty: not tested here)."""
    f = scope(facts, claim)
    column = VALUE.get(claim.quantity)
    if column is None or f.is_empty() or column not in f.columns:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    f = f.filter(pl.col(column).is_not_null() & (pl.col(column) > 0))
    named = set(claim.a) | set(claim.b)
    # a claim about settings compares them on one target (grouped by target); a claim about targets
    # compares targets that agree in every target key it does not name
    across = bool(named & set(TARGET_KEYS))
    by_target = [k for k in TARGET_KEYS if k not in named] if across else ["target_label"]
    dims = [*CELL_DIMS, *(k for k in run_dims(f, named, across)), *by_target]
    shared, differ = _named_settings(claim)
    side_a, side_b = f.filter(side_filter(claim.a)), f.filter(side_filter(claim.b))
    if claim.quantity == "saving":  # B's own saving: an uncompressed A has none to compare, B alone decides
        side_a = side_b
    rows = []
    for key, part_a in side_a.group_by(dims, maintain_order=True):
        group = dict(zip(dims, key))
        cell = _cell_label(group, shared)
        part_b = side_b.filter(pl.all_horizontal([pl.col(d).eq_missing(v) for d, v in group.items()]))
        for ta in part_a["target_label"].unique(maintain_order=True).to_list():
            for tb in part_b["target_label"].unique(maintain_order=True).to_list():
                if claim.quantity == "saving" and ta != tb:
                    continue
                a = part_a.filter(pl.col("target_label") == ta)[column].to_numpy()
                b = part_b.filter(pl.col("target_label") == tb)[column].to_numpy()
                label_a, label_b = _side_label(ta, claim.a, differ), _side_label(tb, claim.b, differ)
                row = _row(claim, cell, label_a, label_b, a, b, alpha)
                rows.append(row | {"compared": _compared(claim, ta, tb, differ)})
    return pl.DataFrame(rows, schema=RESULT_SCHEMA) if rows else pl.DataFrame(schema=RESULT_SCHEMA)


def _row(claim: Claim, cell: str, ta: str, tb: str, a: np.ndarray, b: np.ndarray, alpha: float) -> dict[str, Any]:
    threshold = float(claim.threshold) if isinstance(claim.threshold, (int, float)) else math.nan
    if claim.quantity == "saving":  # B's own saving against the threshold: the range over its runs
        lo, hi, est = float(b.min()), float(b.max()), float(np.median(b))
        if claim.direction == "greater":
            v = "holds" if lo >= threshold else "does not hold" if hi < threshold else "not resolved"
        else:
            v = "holds" if hi <= threshold else "does not hold" if lo > threshold else "not resolved"
        test = "range over runs (one measurement each)"
        coverage = math.nan
        ta, a = "", b[:0]  # no A side: B's own saving
    else:
        ci = ratio_ci(a, b, alpha)
        est, lo, hi, coverage = ci.ratio, ci.lo, ci.hi, ci.confidence
        v = verdict(ci, claim.direction, threshold, 1 - alpha)  # type: ignore[arg-type]
        test = "Hodges-Lehmann ratio, exact rank interval"
        test += {
            "variance_ratio": " (per-run CV)",
            "compression_ratio": " (per-run compression ratio)",
            "footprint": " (database size after each run)",
            "bandwidth": " (bytes per second of sync)",
        }.get(claim.quantity, "")
    return {
        "claim": claim.id,
        "seed": claim.seed,
        "cell": cell,
        "a": ta,
        "b": tb,
        "n_a": len(a),
        "n_b": len(b),
        "estimate": est,
        "lo": lo,
        "hi": hi,
        "coverage": coverage,
        "test": test,
        "verdict": v,
    }


def evaluate_all(facts: pl.DataFrame, claims: list[Claim], alpha: float = 0.05) -> pl.DataFrame:
    """Every reproducible claim's rows (see `evaluate`), and one row per claim with nothing to compare
    in this study (verdict `not tested in this study`)."""
    out = []
    for c in claims:
        if not c.reproducible_here:
            continue
        rows = evaluate(facts, c, alpha) if c.match else pl.DataFrame(schema=RESULT_SCHEMA)
        if rows.is_empty():
            why = (
                "judged from the figures (qualitative)"
                if c.quantity in ("qualitative", "count")
                else "not evaluated automatically"
                if not c.match
                else "not tested in this study"
            )
            rows = pl.DataFrame([{"claim": c.id, "seed": c.seed, "verdict": why}], schema=RESULT_SCHEMA)
        out.append(rows)
    return pl.concat(out) if out else pl.DataFrame(schema=RESULT_SCHEMA)


def summary(results: pl.DataFrame) -> pl.DataFrame:
    """Per claim: how many of its cells hold, do not hold, are not resolved; its verdict overall (one
    word when every cell agrees, `mixed` otherwise) and the widest interval's half-width in %."""
    tested = results.filter(pl.col("verdict").is_in(["holds", "does not hold", "not resolved"]))
    half = 100 * (pl.col("hi") - pl.col("lo")) / 2 / pl.col("estimate")
    agg = tested.group_by("claim", maintain_order=True).agg(
        pl.len().alias("cells"),
        (pl.col("verdict") == "holds").sum().alias("holds"),
        (pl.col("verdict") == "does not hold").sum().alias("does_not_hold"),
        (pl.col("verdict") == "not resolved").sum().alias("not_resolved"),
        pl.col("verdict").unique().alias("_v"),
        half.filter(half.is_finite()).max().alias("widest_half_width_pct"),
    )
    return agg.with_columns(
        pl.when(pl.col("_v").list.len() == 1)
        .then(pl.col("_v").list.first())
        .otherwise(pl.lit("mixed"))
        .alias("overall")
    ).drop("_v")
