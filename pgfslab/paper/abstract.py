"""The paper's abstract: what ran, the headline cell's result and its test, compression and noise, in a
paragraph computed from the study database (a durability-only study gets its crash summary)."""

from __future__ import annotations

import math

import polars as pl
from IPython.display import Markdown, display

from pgfslab.analysis import queries, report, stats
from pgfslab.analysis.answers.exchangeability import method_words
from pgfslab.analysis.scalar import whole
from pgfslab.analysis.stats.aa import aa_ratios, primary_ratio
from pgfslab.paper.build import write_meta
from pgfslab.paper.context import Context, names, workload_what
from pgfslab.paper.durability import durability_abstract, durability_frame
from pgfslab.tools import PG_TOOLS


def abstract_text(ctx: Context) -> str:
    twins = ctx.twins
    ok = ctx.ok
    studied = ctx.compared_targets
    n_targets = len(studied)
    tools = names([t for t in ctx.tools])
    controls = [f"{t}, a twin of {b}" for t, b in twins.items() if t in ctx.target_names]
    control = f" and {'an A/A control' if len(controls) == 1 else 'A/A controls'} ({'; '.join(controls)})"
    text = (
        f"We ran {tools} against {n_targets} storage target{'s' if n_targets > 1 else ''} "
        f"({names(studied)}){control if controls else ''} on one machine ({ctx.runs['cpus'][0]} CPUs, "
        f"{report.bytes_h((ctx.runs['mem_total_kb'][0] or 0) * 1024)} RAM): {ctx.ran.height} runs of "
        f"{_run_lengths(ctx)}, repeats interleaved across {'targets' if n_targets > 1 else 'workloads'}. "
    )
    if ok.height == 0:
        return text + "No run completed, so there are no results to summarise."
    wl, clients = ctx.headline_cell()
    in_cell = ok.filter(
        (pl.col("workload") == wl) & (pl.col("clients") == clients) if clients is not None else pl.col("workload") == wl
    )
    # the A/A controls measure the instrument: reported as the noise band below, never as a target result
    cell = in_cell.filter(~pl.col("target").is_in(list(twins)))
    tool = cell["tool"][0]
    unit = ctx.unit(tool)
    base = cell["base_workload"][0] if "base_workload" in cell.columns and cell["base_workload"][0] else wl
    spec = ctx.cfg.workloads.get(base)
    rung = f", data set {wl.rpartition('.d')[2]} of the ladder" if base != wl else ""
    what = f"{workload_what(spec) if spec else base}{rung}" + (
        f", {clients} client{'s' if clients != 1 else ''}" if tool in PG_TOOLS else ""
    )
    med = (
        cell.group_by("target_label")
        .agg(pl.col("value").median().alias("m"), pl.len().alias("n"))
        .sort("m", descending=True)
    )
    if med.height >= 2:
        best, worst = med.row(0, named=True), med.row(-1, named=True)
        gap = 100 * (best["m"] - worst["m"]) / worst["m"] if worst["m"] else math.nan
        base = cell.filter(pl.col("target") == ctx.baseline)["target_label"]
        baseline = base[0] if base.len() else med["target_label"][-1]
        tests = _holm_tests(ctx, cell.with_columns(pl.lit(wl).alias("cell")), "target_label", baseline)
        sig = tests.filter(pl.col("significant"))
        lo_n, hi_n = whole(med["n"].min()), whole(med["n"].max())
        reps = f"{lo_n}" if lo_n == hi_n else f"{lo_n}–{hi_n}"
        text += (
            f"In the headline cell ({what}, {reps} repeats per target) "
            f"{best['target_label']} reached a median of {report.num(best['m'])} {unit} and {worst['target_label']} "
            f"{report.num(worst['m'])} {unit} ({gap:.0f} % apart). "
            + _primary_comparisons(cell, baseline, ctx.cfg.analysis.alpha, ctx.cfg.analysis.primary)
            + f"The plain rank test beside it (Mann-Whitney U, Holm-adjusted, α = {ctx.cfg.analysis.alpha}) finds "
            f"{sig.height} of {tests.height} differences from {baseline} significant. "
        )
        text += _noise_floor(in_cell, twins, ctx.cfg.analysis.alpha, ctx.cfg.analysis.primary)
    else:  # one target: compare the workloads of the study instead
        per_wl = (
            ok.group_by("workload", "clients")
            .agg(pl.col("value").median().alias("m"), pl.col("tool").first(), pl.len().alias("n"))
            .sort("m", descending=True)
        )
        text += (
            "Median throughput per workload: "
            + "; ".join(
                f"{r['workload']} {report.num(r['m'])} {ctx.unit(r['tool'])} ({r['n']} runs)"
                for r in per_wl.iter_rows(named=True)
            )
            + ". "
        )
        first = next((w for w in ctx.cfg.workloads if w in per_wl["workload"].to_list()), None)
        # a data-set ladder names its workloads by rung (tpcb.d1), none of them the config's own: no baseline
        if first is not None:
            tests = _holm_tests(ctx, ok.with_columns(pl.col("clients").cast(pl.Utf8).alias("cell")), "workload", first)
            if tests.height:
                text += (
                    f"{tests.filter(pl.col('significant')).height} of {tests.height} differences from {first} are "
                    f"significant (Mann-Whitney U, Holm-adjusted, α = {ctx.cfg.analysis.alpha}). "
                )
    wl_count = ok.select("workload", "clients").unique().height
    if wl_count > 1 and med.height >= 2:  # the other axis of the study: its workloads on the baseline target
        per_wl = (
            ok.filter(pl.col("target_label") == baseline)
            .group_by("workload", "clients", maintain_order=True)
            .agg(pl.col("value").median().alias("m"), pl.col("tool").first())
        )
        if per_wl.height > 1:
            text += (
                f"On {baseline}, the median per workload: "
                + "; ".join(
                    f"{queries.cell_label(r['workload'], r['clients'], r['tool'])} {report.num(r['m'])} {ctx.unit(r['tool'])}"
                    for r in per_wl.iter_rows(named=True)
                )
                + ". "
            )
    comp = _parquet(ctx, "compression_footprint")
    if comp is not None and "ratio" in comp.columns and (comp["ratio"].fill_null(0) > 1.01).any():
        b = comp.filter(pl.col("ratio").is_not_null()).sort("ratio", descending=True).row(0, named=True)
        text += (
            f"Compression on {b['target']} stored the files at {b['ratio']:.2f}:1 "
            f"({report.pct(b['space_savings'], 0)} space savings). "
        )
    var = _parquet(ctx, "variance_significance")
    twin_labels = ok.filter(pl.col("target").is_in(list(twins)))["target_label"].unique().to_list()
    if var is not None and "cv_within" in var.columns and twin_labels:
        var = var.filter(~pl.col("level").is_in(twin_labels))
    if var is not None and "cv_within" in var.columns and var.height:
        lo, hi = var.sort("cv_within").row(0, named=True), var.sort("cv_within").row(-1, named=True)
        text += (
            f"Per-second throughput varied within runs by {report.pct(lo['cv_within'], 0)} "
            f"({lo['level']}) to {report.pct(hi['cv_within'], 0)} ({hi['level']}) (coefficient of variation)."
        )
    return text.strip()


def _primary_comparisons(cell: pl.DataFrame, baseline: str, alpha: float, primary: str) -> str:
    """Each target's ratio to `baseline` in the headline cell as the study's verdicts compare it (`analysis.primary`,
    stats.aa.primary_ratio), with its interval, and how many of those intervals exclude 1: the abstract quotes the
    analysis the study stated before its runs, not the test it reports beside it. `cell`: one row per run with
    `target_label`, `value` and `repeat`."""
    a = cell.filter(pl.col("target_label") == baseline)
    others = [t for t in cell["target_label"].unique(maintain_order=True).to_list() if t != baseline]
    if a.is_empty() or not others:
        return ""
    parts, excluding = [], 0
    for label in others:
        ci = primary_ratio(a, cell.filter(pl.col("target_label") == label), "value", alpha, primary)
        if not (math.isfinite(ci.hi) and ci.lo > 0 and ci.confidence >= 1 - alpha - 1e-9):
            # too few runs for the asked coverage: the ratio alone, never an interval counted as if it reached it
            parts.append(
                f"{label}/{baseline} {ci.ratio:.2f} (no {100 * (1 - alpha):.0f} % interval from {ci.n_b} runs)"
            )
            continue
        excluding += ci.lo > 1 or ci.hi < 1
        parts.append(f"{label}/{baseline} {ci.ratio:.2f} [{ci.lo:.2f}, {ci.hi:.2f}]")
    return (
        f"Compared as the study states before its runs ({method_words(primary)}, {100 * (1 - alpha):.0f} % "
        f"intervals): {'; '.join(parts)}; {excluding} of {len(others)} exclude 1. "
    )


def _noise_floor(cell: pl.DataFrame, twins: dict[str, str], alpha: float, primary: str = "runs") -> str:
    """The headline cell's A/A control as one sentence: twin/baseline with its interval (stats.aa), compared as the
    study's verdicts compare (`analysis.primary`)."""
    aa = aa_ratios(cell, twins, alpha=alpha, primary=primary) if twins else pl.DataFrame()
    if aa.height == 0:
        return ""
    r = aa.row(0, named=True)
    spread = 100 * (r["band_hi"] - 1)
    return (
        f"The A/A control, {r['twin']} against its identical twin {r['baseline']}, came out at "
        f"{r['aa_ratio']:.2f} [{r['aa_lo']:.2f}, {r['aa_hi']:.2f}] ({100 * r['aa_coverage']:.0f} % interval, "
        f"{r['n_twin']}+{r['n_baseline']} runs): on this machine two identical targets can differ by "
        f"{spread:.0f} % in this cell, and no difference inside that band is a finding. "
    )


def _run_lengths(ctx: Context) -> str:
    """`20 s`, `10–60 s`, or with transaction-limited pgbench workloads `30 s or 1,500–5,000 transactions per client`."""
    wls = ctx.cfg.workloads
    per_client = {w: spec.options.transactions_per_client() for w, spec in wls.items()}
    timed = [w for w, n in per_client.items() if not n]
    counted = sorted({n for n in per_client.values() if n})
    durations = sorted({int(d) for d in ctx.runs.filter(pl.col("workload").is_in(timed))["duration_s"].drop_nulls()})
    parts = []
    if durations:
        parts.append(f"{durations[0]} s" if len(durations) == 1 else f"{durations[0]}–{durations[-1]} s")
    if counted:
        n = f"{counted[0]:,}" if len(counted) == 1 else f"{counted[0]:,}–{counted[-1]:,}"
        parts.append(f"{n} transactions per client")
    return " or ".join(parts) or "unknown length"


def _parquet(ctx: Context, name: str) -> pl.DataFrame | None:
    p = ctx.tables_dir / f"{name}.parquet"
    return pl.read_parquet(p) if p.exists() else None


def abstract(ctx: Context) -> None:
    text = durability_abstract(ctx) if ctx.ok.height == 0 and durability_frame(ctx).height else abstract_text(ctx)
    write_meta(ctx.build_dir, abstract=text)
    # the PDF typesets the abstract under the title from the notebook metadata; HTML shows this output
    display(Markdown(f"**Abstract.** {text}"), metadata={"pgfs": {"front_matter": True}})


def _holm_tests(ctx: Context, runs: pl.DataFrame, config: str, baseline: str) -> pl.DataFrame:
    """benchstat's rank test of each `config` against `baseline` per cell, Holm-adjusted (no geomean row)."""
    grid = stats.benchstat_grid(runs, "value", "cell", config, baseline, alpha=ctx.cfg.analysis.alpha, adjust="holm")
    return grid.filter(pl.col("benchmark") != "geomean")
