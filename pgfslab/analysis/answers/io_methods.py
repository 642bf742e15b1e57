"""Which file systems gain from PostgreSQL 18's asynchronous I/O, and which do not (notebook io_methods)?

A *family* is a set of the study's workloads identical in everything but their `postgres_settings` (and the
targets they run on): the same tool, scripts or builtin, clients, rungs, prewarm, duration... Its *baseline*
is the member whose io_method is `sync` (every read done by the backend that needs it; the first such member
in the config's order when there are several), and each member is a *variant*, named by the settings that
differ within the family ("worker, io_workers 3"; a setting the variant leaves to the server is not named).
Effective settings are the study-wide `postgres.settings` with the workload's over them. Only families in
which some workload sets `io_method` are read here.

Per family, target, client count and rung (a cell), each variant against the baseline:

* the median tps over its runs and variant/sync as the lab's ratio: the Hodges-Lehmann ratio with the
  exact Mann-Whitney interval (`verdicts.ratio.ratio_ci`); 3 runs a side allow no 95 % interval, and the
  widest there is (90 %) is given with its coverage;
* in words, the direction apart from the size: "gained" (the interval above 1), "lost" (below 1), or "no
  difference resolved at ±X %" (it covers 1; X its half-width), and why a cell was not compared (no sync
  variant in the family, the sync variant not run on that target, fewer than 2 runs a side);
* beside it, medians over the variant's runs of what was read and what the CPUs did: the data device's
  reads per second (diskstats), pg_stat_io's reads per second (PostgreSQL 16+), the CPUs' busy and I/O wait
  shares of all CPU time (/proc/stat; `verdicts.regime.run_measures`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import polars as pl

from pgfslab.analysis.charts import alt
from pgfslab.analysis.verdicts.ratio import RatioCI, direction_words, ratio_ci
from pgfslab.config.model import StudyConfig, Workload
from pgfslab.tools import TOOLS

SYNC = "sync"
MIN_RUNS = 2  # a side, for any interval at all
MEASURES = ("reads_per_s", "pg_reads_per_s", "cpu_busy", "cpu_iowait")
VARIANTS_SCHEMA = {
    "workload": pl.Utf8,
    "family": pl.Utf8,
    "what": pl.Utf8,
    "variant": pl.Utf8,
    "io_method": pl.Utf8,
    "baseline": pl.Utf8,
}


def _shape(wl: Workload) -> Workload:
    """What a family's members share: the workload without its settings and its targets."""
    return dataclasses.replace(wl, postgres_settings=None, targets=None)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _what(wl: Workload) -> str:
    """The family's workload in a few words: its scripts, builtin or test, and its prewarm."""
    out = wl.options.what() or wl.tool
    if wl.prewarm:
        out += f", prewarm {wl.prewarm if isinstance(wl.prewarm, str) else 'shared_buffers'}"
    return out


def families(cfg: StudyConfig) -> pl.DataFrame:
    """One row per workload of a family in which some workload sets io_method: its family (the baseline's
    name, else the first member's), what it runs, its variant name, effective io_method (null: the server's
    default) and the family's baseline workload (null: no sync member)."""
    groups: list[list[str]] = []
    for name, wl in cfg.workloads.items():
        if not TOOLS[wl.tool].compared_over_runs:
            continue
        for g in groups:
            if _shape(cfg.workloads[g[0]]) == _shape(wl):
                g.append(name)
                break
        else:
            groups.append([name])
    rows = []
    for members in groups:
        if not any("io_method" in (cfg.workloads[w].postgres_settings or {}) for w in members):
            continue
        eff = {w: {**cfg.postgres.settings, **(cfg.workloads[w].postgres_settings or {})} for w in members}
        keys = list(dict.fromkeys(k for w in members for k in eff[w]))
        differing = [k for k in keys if len({_value(eff[w].get(k)) if k in eff[w] else None for w in members}) > 1]
        differing.sort(key=lambda k: k != "io_method")  # io_method first, the rest in the config's order
        syncs = [w for w in members if _value(eff[w].get("io_method")) == SYNC]
        baseline = syncs[0] if syncs else None
        for w in members:
            method = _value(eff[w]["io_method"]) if "io_method" in eff[w] else None
            parts = [_value(eff[w][k]) if k == "io_method" else f"{k} {_value(eff[w][k])}" for k in differing
                     if k in eff[w]]  # fmt: skip
            if "io_method" in differing and method is None:
                parts.insert(0, "io_method default")
            rows.append(
                {
                    "workload": w,
                    "family": baseline or members[0],
                    "what": _what(cfg.workloads[w]),
                    "variant": ", ".join(parts) or method or "io_method default",
                    "io_method": method,
                    "baseline": baseline,
                }
            )
    return pl.DataFrame(rows, schema=VARIANTS_SCHEMA)


def _cell(cfg: StudyConfig, workload: str, target: str, rung: int | None, clients: int) -> str:
    """`1 client, scale 24`: the client count and the data set a cell runs at."""
    ds = cfg.dataset_for(target, rung)
    sysbench = TOOLS[cfg.workloads[workload].tool].loads == "sysbench"
    data = f"{ds.sysbench.tables} x {ds.sysbench.table_size:,} rows" if sysbench else f"scale {ds.scale}"
    return f"{clients} client{'s' if clients != 1 else ''}, {data}"


def cells(cfg: StudyConfig, fam: pl.DataFrame, targets: list[str] | None = None) -> pl.DataFrame:
    """The cells the config asks of each family member: workload, target, rung (null without a ladder), clients,
    and `cell` in words (`_cell`)."""
    rows = [
        {"workload": w, "target": t, "rung": r, "clients": c, "cell": _cell(cfg, w, t, r, c)}
        for w in fam["workload"]
        for t in cfg.targets_for(w)
        if targets is None or t in targets
        for r in cfg.rungs_for(w)
        for c in cfg.workloads[w].clients
    ]
    schema = {"workload": pl.Utf8, "target": pl.Utf8, "rung": pl.Int64, "clients": pl.Int64, "cell": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def with_measures(headline: pl.DataFrame, measures: pl.DataFrame, pg_reads: pl.DataFrame) -> pl.DataFrame:
    """`headline`'s runs (`queries.headline`) as `compare` reads them: the config's workload name, and beside
    each run its MEASURES from `measures` (`verdicts.regime.run_measures`) and `pg_reads`
    (`queries.pg_io_reads`), null where a run has none."""
    base = pl.coalesce("base_workload", "workload") if "base_workload" in headline.columns else pl.col("workload")
    out = headline.with_columns(base.alias("workload"))
    for extra in (measures, pg_reads):
        cols = [m for m in MEASURES if m in extra.columns and m not in out.columns]
        out = out.join(extra.select("run_id", *cols), on="run_id", how="left") if cols else out
    return out.with_columns(pl.lit(None, pl.Float64).alias(m) for m in MEASURES if m not in out.columns)


def finding(ci: RatioCI, n_base: int, n_variant: int, alpha: float) -> str:
    """The direction in words (the size is the ratio beside it), or why there is none."""
    if n_base < MIN_RUNS or n_variant < MIN_RUNS:
        return f"not compared: {n_variant} run(s) against {n_base} of sync ({MIN_RUNS} a side needed)"
    return direction_words(ci, alpha, "gained", "lost", "no difference")


COMPARISON_SCHEMA = {
    "family": pl.Utf8,
    "what": pl.Utf8,
    "target": pl.Utf8,
    "target_label": pl.Utf8,
    "rung": pl.Int64,
    "clients": pl.Int64,
    "cell": pl.Utf8,
    "workload": pl.Utf8,
    "variant": pl.Utf8,
    "io_method": pl.Utf8,
    "is_baseline": pl.Boolean,
    "n": pl.Int64,
    "median_tps": pl.Float64,
    "ratio": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "coverage": pl.Float64,
    "finding": pl.Utf8,
    **{m: pl.Float64 for m in MEASURES},
}


KEY = ["workload", "target", "rung", "clients"]


def compare(runs: pl.DataFrame, fam: pl.DataFrame, wanted: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Per cell of `wanted` (`cells`) and variant of `fam` (`families`): its runs' median tps, variant/sync
    with its interval and the finding, and the medians of MEASURES. `runs` holds one row per successful run:
    workload (the config's: a ladder's `tpcb.d2` is `tpcb`), target, target_label, rung, clients, value
    (tps) and MEASURES (null where not sampled)."""
    rung0 = pl.col("rung").fill_null(0)  # a study without a ladder has no rung: one key all the same
    per_cell = (
        runs.filter(pl.col("value").is_not_null())
        .with_columns(rung0)
        .group_by(KEY)
        .agg(
            pl.col("value").alias("values"),
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("value").median().alias("median_tps"),
            *[pl.col(m).median() for m in MEASURES],
        )
    )
    labels = runs.select("target", "target_label").unique("target")
    asked = wanted.select(  # the cells the config asks of each workload, as a baseline's to look up
        pl.col("workload").alias("baseline"), "target", rung0.alias("_rung"), "clients", pl.lit(True).alias("_asked")
    ).unique()
    cells = (
        wanted.with_columns(rung0.alias("_rung"))
        .join(fam, on="workload", maintain_order="left")
        .join(
            per_cell.rename({"rung": "_rung"}),
            on=["workload", "target", "_rung", "clients"],
            how="left",
            maintain_order="left",
        )
        .join(
            per_cell.select(
                "workload", "target", pl.col("rung").alias("_rung"), "clients", pl.col("values").alias("base")
            ),
            left_on=["baseline", "target", "_rung", "clients"],
            right_on=["workload", "target", "_rung", "clients"],
            how="left",
            maintain_order="left",
        )
        .join(asked, on=["baseline", "target", "_rung", "clients"], how="left", maintain_order="left")
        .join(labels, on="target", how="left", maintain_order="left")
        .with_columns(
            pl.col("target_label").fill_null(pl.col("target")),
            pl.col("n").fill_null(0),
            (pl.col("workload") == pl.col("baseline")).fill_null(False).alias("is_baseline"),
        )
    )
    rows = []
    for r in cells.iter_rows(named=True):
        values, base = r["values"] or [], r["base"] or []
        ci = ratio_ci(base, values, alpha) if len(base) >= MIN_RUNS and len(values) >= MIN_RUNS else None
        if r["is_baseline"]:
            said = "the baseline (sync)"
        elif r["baseline"] is None:
            said = "not compared: no io_method sync variant in this family"
        elif not r["_asked"]:
            said = "not compared: the sync variant does not run on this target"
        else:
            said = finding(ci or RatioCI(math.nan, 0, math.inf, 0, 0, math.nan), len(base), len(values), alpha)
        shown = ci if ci is not None and not r["is_baseline"] else None
        rows.append(
            {
                **{k: r.get(k) for k in COMPARISON_SCHEMA},
                "cell": r.get("cell") or f"{r['clients']} client(s)",
                "ratio": shown.ratio if shown else None,
                "lo": shown.lo if shown else None,
                "hi": shown.hi if shown else None,
                "coverage": shown.confidence if shown else None,
                "finding": said,
            }
        )
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)


def table(comp: pl.DataFrame) -> pl.DataFrame:
    """`compare`'s result as the reader sees it: one row per cell and variant."""
    shown = [
        "–" if r["ratio"] is None else f"{_num(r['ratio'])} [{_num(r['lo'])}, {_num(r['hi'])}]"
        for r in comp.select("ratio", "lo", "hi").iter_rows(named=True)
    ]
    return comp.select(
        "family",
        pl.col("target_label").alias("target"),
        "variant",
        pl.col("n").alias("runs"),
        pl.col("median_tps").alias("tps"),
        pl.Series("vs sync", shown, dtype=pl.Utf8),
        "finding",
        pl.col("reads_per_s").alias("device reads/s"),
        pl.col("pg_reads_per_s").alias("pg_stat_io reads/s"),
        (100 * pl.col("cpu_busy")).alias("CPU busy %"),
        (100 * pl.col("cpu_iowait")).alias("I/O wait %"),
    )


def chart(comp: pl.DataFrame, color_scale: Any = None) -> Any:
    """Variant/sync with its interval per family, variant and target on a log axis, a rule at 1: one panel
    per family, one row per variant, the targets side by side within it."""
    df = comp.filter(pl.col("ratio").is_not_null()).with_columns(
        pl.when(pl.col("lo") > 0).then(pl.col("lo")).alias("lo"),
        pl.when(pl.col("hi").is_finite()).then(pl.col("hi")).alias("hi"),
        pl.format("{} ({}; {})", "family", "what", "cell").alias("panel"),
    )
    lo = min([*df["lo"].drop_nulls().to_list(), *df["ratio"].to_list(), 1.0])
    hi = max([*df["hi"].drop_nulls().to_list(), *df["ratio"].to_list(), 1.0])
    x_scale = alt.Scale(type="log", domain=[lo / 1.05, hi * 1.05], nice=False)
    shown = df["target_label"].unique(maintain_order=True).to_list()  # the config's order
    color = alt.Color("target_label:N", scale=color_scale, title=None, legend=alt.Legend(values=shown))

    def panel(part: pl.DataFrame, title: str) -> Any:
        y = alt.Y("variant:N", title=None, sort=None, axis=alt.Axis(labelLimit=260))
        base = alt.Chart(part).encode(y=y, yOffset=alt.YOffset("target_label:N", sort=shown), color=color)
        one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(color="#888", strokeDash=[4, 3]).encode(x="x:Q")
        bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("lo:Q", scale=x_scale), x2="hi:Q")
        dots = base.mark_point(filled=True, size=45).encode(
            x=alt.X("ratio:Q", scale=x_scale, title="tps of the variant / tps with io_method sync (log)"),
            tooltip=["target_label", "variant", "n", "ratio", "lo", "hi", "coverage", "finding"],
        )
        rows = part["variant"].n_unique() * max(1, part["target_label"].n_unique())
        return alt.layer(one, bars, dots).properties(width=420, height=12 * rows + 10, title=title)

    panels = [panel(df.filter(pl.col("panel") == p), p) for p in df["panel"].unique(maintain_order=True)]
    return alt.vconcat(*panels, spacing=16)


def _num(x: float) -> str:
    """A ratio with two decimals ("∞" for an interval's unbounded end)."""
    return "∞" if not math.isfinite(x) else f"{x:.2f}"


def summary(comp: pl.DataFrame) -> str:
    """Per family and variant, in words: the targets that gained, lost, or showed no difference, with
    variant/sync and its interval; then the cells that were not compared and the intervals' coverage."""
    paragraphs = []
    compared = comp.filter(pl.col("ratio").is_not_null())
    for (family, what, cell), part in compared.group_by("family", "what", "cell", maintain_order=True):
        sentences = []
        for (variant,), vpart in part.group_by("variant", maintain_order=True):
            groups: dict[str, list[str]] = {}
            for r in vpart.iter_rows(named=True):
                key = r["finding"].split(" (")[0]
                key = "no difference resolved" if key.startswith("no difference") else key
                groups.setdefault(key, []).append(
                    f"{r['target_label']} {_num(r['ratio'])} [{_num(r['lo'])}, {_num(r['hi'])}]"
                )
            said = "; ".join(f"{k} on {', '.join(v)}" for k, v in groups.items())
            sentences.append(f"{variant}: {said}.")
        paragraphs.append(f"**{family}** ({what}; {cell}), each variant's tps over sync's: " + " ".join(sentences))
    skipped = comp.filter(~pl.col("is_baseline") & pl.col("ratio").is_null())
    if skipped.height:
        paragraphs.append(
            "Not compared: "
            + "; ".join(
                f"{r['family']} {r['variant']} on {r['target_label']} ({r['finding'].removeprefix('not compared: ')})"
                for r in skipped.iter_rows(named=True)
            )
            + "."
        )
    cov = compared["coverage"].drop_nulls()
    if cov.len():
        lo_cov, hi_cov = float(cov.min()), float(cov.max())  # type: ignore[arg-type]
        level = f"{100 * lo_cov:.0f} %" if abs(hi_cov - lo_cov) < 1e-9 else f"{100 * lo_cov:.0f}–{100 * hi_cov:.0f} %"
        paragraphs.append(
            f"Ratios are Hodges-Lehmann estimates with exact Mann-Whitney intervals of {level} coverage (the widest "
            "a cell's run counts allow when they allow no 95 % interval); a gain or loss is said only where the whole "
            "interval lies on one side of 1."
        )
    if not paragraphs:
        return "No variant could be compared with io_method sync in this study."
    return "\n\n".join(paragraphs)
