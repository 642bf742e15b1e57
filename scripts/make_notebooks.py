"""Regenerate the lab's notebooks from this readable source (outputs stripped).

The .ipynb files are what users open and papermill runs; edit them here and regenerate:
    .venv/bin/python scripts/make_notebooks.py

Every analysis notebook has a `parameters` cell (db, study, targets, workload where relevant,
alpha, trim_s, figures_dir, tables_dir), says what it asks, loads its data first (a study without
that data stops there with one `STOP: ...` line, `data.MissingData`), and calls only into
`pipeline/` (queries in data.py, statistics in stats*.py, charts in charts.py, text in report.py).
What it shows is also recorded for the paper (`report.Publication` -> <tables_dir>/<name>.json),
and its table is written to <tables_dir>/<name>.parquet.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

REPO = Path(__file__).resolve().parent.parent
KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}

COMMON_PARAMS = """
db = "data/default.duckdb"
study = "default"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/default"
tables_dir = "build/default/tables"
"""


def params(src: str):
    cell = new_code_cell(src.strip())
    cell.metadata["tags"] = ["parameters"]
    return cell


def code(src: str):
    return new_code_cell(src.strip())


def md(src: str):
    return new_markdown_cell(src.strip())


def write(path: Path, cells: list) -> None:
    nb = new_notebook(cells=cells, metadata=KERNEL)
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i:02d}"
    nbformat.write(nb, path)
    print(path)


SETUP = """
import polars as pl

from pipeline import charts, report, stats

charts.use_theme()
cfg = data.study_config(db)
colors = charts.target_colors(data.target_names(db, study))  # one colour per target, the same in every figure
"""

# ------------------------------------------------------------------------------------------------

THROUGHPUT = [
    md("""
# Throughput stability over time

**Question.** Does a file system change not only how fast PostgreSQL runs, but how *steadily*?
Every run's per-second throughput (pgbench `-P 1`, sysbench `--report-interval=1`) is drawn thin, one
line per repeat, and its trailing moving average bold; one row of panels per target and one column per
client count, all panels on one y scale so heights compare. The table gives each run's mean after its
warm-up (MSER-5, after a fixed `trim_s`) with a confidence interval that accounts for the
autocorrelation of per-second samples, and per cell the median over repeats.
"""),
    params(COMMON_PARAMS + """workload = "tpcb"
moving_average_s = 15
"""),
    code("""
import polars as pl

from pipeline import data

progress = data.require(data.throughput(db, study, workload, targets), f"per-second throughput for workload {workload!r}")
"""),
    code(SETUP + """
label = report.workload_label(workload, cfg["workloads"].get(workload))
pub = report.Publication(f"throughput_stability-{workload}", f"Throughput stability: {label}",
                         "Does the storage change how steadily PostgreSQL runs, not only how fast?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
"""),
    md("## Per-second throughput, with the moving average"),
    code("""
smoothed = charts.moving_average(progress, value="tps", window_s=moving_average_s, by=["run_id"])
panels, n_cols = charts.cell_panels(smoothed)  # one row per target, one column per client count
chart = charts.throughput_small_multiples(
    panels, time="t_s", value="tps", smooth=f"tps_ma{moving_average_s}", facet="panel", columns=n_cols,
    color_scale=colors, title=f"{workload}: throughput per second ({moving_average_s} s moving average bold)",
)
pub.figure(chart, f"throughput_stability-{workload}",
           f"{label}: throughput per second of every run (thin, one line per repeat) and its {moving_average_s} s "
           "moving average (bold); one row of panels per target, one column per client count, all on one y scale. "
           "Look for the height of the bold line and how far the thin lines scatter around it.")
"""),
    md("""
## Warm-up, run means with autocorrelation-aware intervals, and cells

Per run: the first `trim_s` seconds are dropped, then the MSER-5 truncation point of the rest (White
1997: the batch-means cut that minimises the standard error of the remaining mean) ends the warm-up.
The run's mean throughput after that gets a 95 % interval from the effective sample size of its
autocorrelated samples (`stats.mean_ci_autocorr`, Geyer's initial positive sequence), not the naive
iid interval, which would be several times too narrow. Per cell (the repeats of one target and client
count): the median of the run means with its distribution-free interval over repeats.
"""),
    code("""
floor = stats.trim_warmup(progress, trim_s)
steady = stats.apply_steady_state(floor, "tps", "t_s", by=["run_id"])  # MSER-5 per run
trims = steady.group_by("run_id").agg(
    pl.max_horizontal(pl.lit(float(trim_s)), pl.col("trim_s").first()).alias("trim_s"), pl.col("steady").first())
keys = ["run_id", "target", "target_label", "workload", "clients", "repeat"]
per_run = (stats.run_mean_table(steady, "tps", keys)
           .join(trims, on="run_id")
           .join(steady.group_by("run_id").agg(pl.col("tps").std().alias("stdev")), on="run_id")
           .with_columns((pl.col("stdev") / pl.col("mean")).alias("cv"),
                         pl.lit(f"fixed {trim_s:g} s + MSER-5").alias("trim_method"))
           .rename({"lo": "ci_lo", "hi": "ci_hi", "method": "ci_method"}))
per_run = data.in_config_order(per_run.sort("repeat"), db, study, ["clients"])
pub.save(per_run.select(*keys, "trim_s", "trim_method", "steady", "n", "mean", "ci_lo", "ci_hi", "confidence",
                        "ci_method", "n_eff", "rho1", "stdev", "cv"))
cells = (stats.cell_summary(per_run, "mean", ["target_label", "clients"])
         .join(per_run.group_by("target_label", "clients").agg(
               ((pl.col("ci_hi") - pl.col("ci_lo")) / 2 / pl.col("mean")).median().alias("half_width"),
               pl.col("n_eff").median().alias("n_eff"), pl.col("cv").median().alias("within_cv"),
               pl.col("trim_s").median().alias("trim_med"), pl.col("trim_s").max().alias("trim_max"),
               (~pl.col("steady")).sum().alias("not_steady")), on=["target_label", "clients"])
        )
cells = data.in_config_order(cells, db, study, ["clients"], col="target_label")
pub.table(cells.select(
    pl.col("target_label").alias("target"), "clients", pl.col("n").alias("runs"),
    pl.col("median").alias("median tps"), pl.col("median_ci_low").alias("CI low"),
    pl.col("median_ci_high").alias("CI high"), (100 * pl.col("half_width")).alias("run CI ± %"),
    pl.col("n_eff").alias("n_eff"), (100 * pl.col("within_cv")).alias("CV in run %"),
    pl.col("trim_med").alias("trim s (median)"), pl.col("trim_max").alias("trim s (max)"),
    pl.col("not_steady").alias("not steady")),
    caption=f"{label}: median of the run means per cell with its distribution-free confidence interval over repeats "
            f"(coverage at least {100 * cells['ci_coverage'].min():.1f} %); median half-width of the runs' "
            "autocorrelation-aware 95 % intervals of the mean and their effective sample size n_eff; median "
            f"coefficient of variation within a run; warm-up dropped per run (fixed {trim_s:g} s, then MSER-5), "
            "and runs whose MSER-5 cut hit its limit (not steady).",
    digits={"n_eff": 0})
"""),
    code("""
best = cells.sort("median", descending=True).row(0, named=True)
steadiest = cells.sort("within_cv").row(0, named=True)
pub.text(
    f"The highest median throughput is {best['target_label']}'s at {best['clients']} client(s), "
    f"{report.num(best['median'])} tps; the steadiest cell is {steadiest['target_label']} at {steadiest['clients']} "
    f"client(s), with a within-run CV of {report.pct(steadiest['within_cv'])}. MSER-5 dropped a median of "
    f"{per_run['trim_s'].median():g} s per run; {int((~per_run['steady']).sum())} of {per_run.height} runs did not "
    f"settle by its criterion. A run's mean is known to a median ± {report.pct(cells['half_width'].median())} "
    f"(n_eff median {per_run['n_eff'].median():.0f} of {per_run['n'].median():.0f} samples).")
"""),
]

# ------------------------------------------------------------------------------------------------

LATENCY = [
    md("""
# Latency percentiles over time

**Question.** Does the storage change the latency distribution, and when: a shifted median, or a
fatter tail at some moments (checkpoints, write-back)? Per target (and client count) the
p25/p50/p75/p95/p99 bands of transaction latency are drawn per second over the run, pooled over the
repeats, all rows on one y scale (seed 000). How exact the bands are depends on what the workload
logged, and the caption says which:

* **exact**: pgbench's per-transaction log (`log: transactions`): every latency is known;
* **aggregate**: pgbench's aggregate log (one line per second: count, sum, min, max): percentiles are
  not recoverable per second, so the band is min to max with the exact mean; the table bounds each
  percentile over the run (`stats.aggregate_latency_summary`);
* **sysbench**: sysbench reports one percentile (`--percentile`, 95 by default) per interval: the band
  spans the repeats; the table uses the end-of-run histogram when `--histogram` was on.
"""),
    params(COMMON_PARAMS + """workload = "tpcb"
"""),
    code("""
import polars as pl

from pipeline import data

method = data.latency_source(db, study, workload, targets)
if method == "exact":
    lat = data.require(data.txlog_latency(db, study, workload, targets), f"per-transaction latencies for {workload!r}")
elif method == "aggregate":
    lat = data.require(data.aggregate_latency(db, study, workload, targets), f"aggregate latency logs for {workload!r}")
else:
    lat = data.require(data.sysbench_latency(db, study, workload, targets), f"sysbench interval latencies for {workload!r}")
"""),
    code(SETUP + """
label = report.workload_label(workload, cfg["workloads"].get(workload))
pub = report.Publication(f"latency_percentiles-{workload}", f"Latency percentiles: {label}",
                         "Does the storage shift the latency distribution, and when does the tail grow?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
cell = ["target", "target_label", "clients"]
steady = stats.trim_warmup(lat, trim_s)  # the table: whole runs after the first trim_s seconds
"""),
    md("## Percentile bands per second"),
    code("""
if method == "exact":
    per_s = stats.latency_percentiles(lat, "latency_us", [*cell, "t_s"], percentiles=(25, 50, 75, 95, 99))
    bands = per_s.filter(pl.col("stat").str.starts_with("p")).pivot("stat", index=[*cell, "t_s"], values="value")
    band_title = "percentile band"
    cols, mid, how = ["p25", "p50", "p75", "p95", "p99"], "p50", (
        "exact percentiles of every logged transaction in each second, pooled over the repeats "
        "(pgbench per-transaction log); bands p25–p50–p75–p95–p99, line: median")
elif method == "aggregate":
    # seconds in which no transaction ended have no latency (pgbench writes 0 for their min and max)
    bands = lat.filter(pl.col("n_tx") > 0).group_by([*cell, "t_s"]).agg(
        (pl.col("latency_min_us").min() / 1e3).alias("min"),
        (pl.col("latency_sum_us").sum() / pl.col("n_tx").sum() / 1e3).alias("mean"),
        (pl.col("latency_max_us").max() / 1e3).alias("max"))
    band_title = "per second"
    cols, mid, how = ["min", "mean", "max"], "mean", (
        "pgbench aggregate log (per second only count, sum, min and max survive, so percentiles cannot be "
        "drawn): band from the minimum to the maximum latency of each second over the repeats, line: the exact "
        "mean; the table bounds the percentiles")
else:
    pct = int(lat["latency_pct"].drop_nulls().mode()[0])
    band_title = f"p{pct} over repeats"
    bands = lat.group_by([*cell, "t_s"]).agg(
        pl.col("latency_ms").min().alias("lowest"), pl.col("latency_ms").median().alias("median"),
        pl.col("latency_ms").max().alias("highest"))
    cols, mid, how = ["lowest", "median", "highest"], "median", (
        f"sysbench's {pct}th percentile per one-second interval (the only percentile it reports per interval): "
        f"band from the lowest to the highest p{pct} over the repeats, line: their median")
bands, n_cols = charts.cell_panels(bands.sort(*cell, "t_s"))
chart = charts.percentile_bands(bands, "t_s", cols, facet="panel", color="target", color_scale=colors, median=mid,
                                columns=n_cols, title=f"{workload}: latency per second", log_y=True,
                                subtitle=f"method: {method}", band_title=band_title)
pub.figure(chart, f"latency_percentiles-{workload}",
           f"{label}: transaction latency over time (log scale), one row of panels per target and one column per "
           f"client count, all on one y scale. Method {method}: {how}. Look for a band that widens at moments, not only for a "
           "higher line.")
"""),
    md("## Latency over the whole run"),
    code("""
by = ["target_label", "clients"]
if method == "exact":
    summary = stats.latency_percentiles(steady, "latency_us", by, percentiles=(25, 50, 75, 95, 99))
elif method == "aggregate":
    summary = stats.aggregate_latency_summary(steady, by, percentiles=(25, 50, 75, 95, 99))
else:
    hist = data.sysbench_histogram(db, study, workload, targets)
    if hist.height:  # the end-of-run histogram: every transaction, known to its bucket
        summary = stats.histogram_percentiles(hist, "value_ms", "count", by, percentiles=(25, 50, 75, 95, 99))
    else:  # only the per-interval percentile: its median over each cell's seconds
        summary = (steady.group_by(by).agg(pl.col("latency_ms").median().alias("value"), pl.len().alias("n"))
                   .with_columns(pl.lit(f"p{pct}").alias("stat"), pl.lit(float(pct)).alias("percentile"),
                                 pl.col("value").alias("lo"), pl.col("value").alias("hi"), pl.lit(0.0).alias("error_bound"),
                                 pl.lit("sysbench interval (median of seconds)").alias("method")))
summary = data.in_config_order(summary, db, study, ["clients"], col="target_label")
pub.save(summary.with_columns(pl.lit(workload).alias("workload"), pl.lit(float(trim_s)).alias("trim_s")))
shown = ["mean", "min", "p25", "p50", "p75", "p95", "p99", "max"]
cell_text = pl.when((pl.col("method") == "aggregate-bounds") & (pl.col("error_bound") > 0)).then(
    pl.format("{}–{}", pl.col("lo").round(2), pl.col("hi").round(2))).otherwise(pl.col("value").round(2).cast(pl.Utf8))
pct_method = summary.filter(pl.col("percentile").is_between(1, 99.99)).group_by(by).agg(pl.col("method").first())
wide = (summary.filter(pl.col("stat").is_in(shown)).with_columns(cell_text.alias("v"))
        .pivot("stat", index=[*by, "n"], values="v").join(pct_method, on=by, how="left"))
wide = data.in_config_order(wide.select(pl.col("target_label").alias("target"), "clients", pl.col("n").alias("transactions"),
                                       "method", *[c for c in shown if c in wide.columns]), db, study, ["clients"])
pub.table(wide, caption=f"{label}: latency (ms) over each cell's runs after the first {trim_s:g} s. Method "
          "`exact`: every transaction; `aggregate-bounds`: pgbench aggregate log, a percentile shown as lo–hi is only "
          "known to lie in that range (exact mean, min, max); `histogram`: sysbench --histogram, the bucket's value "
          "(known to within about ±1 %) "
          "(end-of-run histogram: warm-up included).", align={"transactions": "right"})
"""),
    code("""
stat = "mean" if "mean" in summary["stat"].to_list() else "p50"  # exact in every method that has it
mid_rows = summary.filter(pl.col("stat") == stat).sort("value")
if mid_rows.height:
    lo, hi = mid_rows.row(0, named=True), mid_rows.row(-1, named=True)
    text = (f"The {'mean' if stat == 'mean' else 'median'} latency ranges from {lo['value']:.2f} ms "
            f"({lo['target_label']}, {lo['clients']} client(s)) to {hi['value']:.2f} ms ({hi['target_label']}, "
            f"{hi['clients']} client(s)); method: {method}.")
    tail = summary.filter(pl.col("stat") == "p99").sort("hi")
    if tail.height:
        worst = tail.row(-1, named=True)
        known = (f"{worst['value']:.2f} ms" if worst["method"] != "aggregate-bounds" else
                 f"between {worst['lo']:.2f} and {worst['hi']:.2f} ms (bounds from the aggregate log)")
        text += f" The largest p99 is {known}: {worst['target_label']} at {worst['clients']} client(s)."
    pub.text(text)
"""),
]

# ------------------------------------------------------------------------------------------------

VARIANCE = [
    md("""
# Variance and significance

**Question.** Is one storage target's throughput not only faster or slower but *steadier*, and which
differences are real? Seed 002 reported the average and variance σ² of per-second TPS per thread count
and device; here the same table per cell, the Brown-Forsythe test of equal variances, and the variance
ratio against the baseline target (the config's first) with an F interval and a block-bootstrap interval
(per-second samples are autocorrelated, which makes F intervals and p-values optimistic). Then the
benchstat-style comparison of the runs' throughput against the baseline per cell, with the p-values
Holm-adjusted over the whole grid (every cell x target), and goodput columns: a run that is fast
because its transactions fail is flagged.
"""),
    params(COMMON_PARAMS),
    code("""
import polars as pl

from pipeline import data

progress = data.require(data.throughput(db, study, None, targets), "per-second throughput (pgbench or sysbench)")
runs = data.require(data.headline(db, study, targets).filter(pl.col("tool").is_in(["pgbench", "sysbench"])
                                                              & pl.col("value").is_not_null()),
                    "run summaries (pgbench or sysbench)")
"""),
    code(SETUP + """
pub = report.Publication("variance_significance", "Variance and significance",
                         "Which differences between targets are real, and which target is steadier?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
# compare targets within each workload and client count; a study with one target compares its workloads
group = "target_label" if progress["target"].n_unique() > 1 else "workload"
cell = ["workload", "clients"] if group == "target_label" else ["target_label", "clients"]
if group == "target_label":
    baseline = progress.filter(pl.col("target") == data.baseline_target(db, study, targets))["target_label"][0]
else:
    baseline = list(cfg["workloads"])[0] if list(cfg["workloads"])[0] in progress["workload"].to_list() else progress["workload"][0]
steady = stats.trim_warmup(progress, trim_s)
# within-run variation: each run's samples around its own mean (plus the cell's mean), so that repeats
# that ran at different levels do not count as instability
steady = steady.with_columns((pl.col("tps") - pl.col("tps").mean().over("run_id")
                              + pl.col("tps").mean().over([*cell, group])).alias("tps_within"))
"""),
    md("""
## Stability: average and variance of per-second throughput (seed 002's table)

σ² within runs is the variance of each run's per-second samples around that run's own mean, pooled over
the repeats: how unsteady a run is. σ² total also counts the differences between repeats. The tests
and ratios below use the within-run samples.
"""),
    code("""
stab = (stats.stability_table(steady, "tps", [*cell, group])
        .join(stats.stability_table(steady, "tps_within", [*cell, group]).select(
              *cell, group, pl.col("variance").alias("variance_within"), pl.col("cv").alias("cv_within")),
              on=[*cell, group]))
stab = data.in_config_order(stab, db, study, cell, col=group) if group == "target_label" else stab.sort(*cell, group)
chart = charts.grouped_bars_with_error(
    stab.with_columns((100 * pl.col("cv_within")).alias("cv_pct")),
    "clients", "cv_pct", group, color_scale=colors if group == "target_label" else None,
    column=cell[0], x_title="clients (threads)", y_title="CV within runs (%)",
    title="Variation of per-second throughput per cell")
pub.figure(chart, "variance_significance",
           f"Coefficient of variation (σ / mean) of the per-second throughput within runs (each run around its own "
           f"mean, after the first {trim_s:g} s, pooled over the repeats); one panel per {cell[0].replace('_label', '')}, one bar per "
           f"{group.replace('_label', '')}. Lower is steadier; compare bars within a group.")
pub.table(stab.select(*[pl.col(c).alias(c.replace("_label", "")) for c in cell],
                      pl.col(group).alias(group.replace("_label", "")), pl.col("n").alias("seconds"),
                      pl.col("mean").alias("avg tps"), pl.col("variance_within").alias("σ² within runs"),
                      (100 * pl.col("cv_within")).alias("CV within %"), pl.col("variance").alias("σ² total"),
                      pl.col("min").alias("min"), pl.col("max").alias("max")),
          caption=f"Average and variance σ² of per-second throughput per cell (seed 002's table), after the first "
                  f"{trim_s:g} s of every run: within runs (around each run's mean, pooled over the repeats) and total "
                  "(all seconds of all repeats).")
"""),
    md("## Are the variances different?"),
    code("""
bf = stats.variance_test(steady, "tps_within", group, cell)
vc = stats.variance_comparison(steady, "tps_within", group, baseline, cell, n_boot=999, block=True)
if vc.height:
    vtab = vc.join(bf.select(*cell, pl.col("p").alias("bf_p_all")), on=cell, how="left").sort(*cell, group)
    pub.table(vtab.select(*[pl.col(c).alias(c.replace("_label", "")) for c in cell],
                          pl.col(group).alias(group.replace("_label", "")), pl.col("ratio").alias(f"σ² / σ² {baseline}"),
                          pl.col("f_lo").alias("F CI low"), pl.col("f_hi").alias("F CI high"),
                          pl.col("boot_lo").alias("boot CI low"), pl.col("boot_hi").alias("boot CI high"),
                          pl.col("bf_p").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("BF p (pair)"),
                          pl.col("bf_p_all").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("BF p (all)")),
              caption=f"Within-run variance of per-second throughput relative to {baseline} per cell: the ratio with its F interval "
                      "(exact only for independent normal samples) and a circular block-bootstrap interval (blocks of "
                      "Politis-White length: respects autocorrelation), and Brown-Forsythe p-values for the pair and "
                      "for all levels of the cell. Per-second samples are autocorrelated: read the p-values as optimistic.",
              digits={f"σ² / σ² {baseline}": 2, "F CI low": 2, "F CI high": 2, "boot CI low": 2, "boot CI high": 2})
else:
    vtab = pl.DataFrame()
    pub.text(f"Only one {group.replace('_label', '')} per cell: no variance comparison.")
"""),
    md("## benchstat-style comparison of the runs, with goodput"),
    code("""
runs = runs.with_columns(pl.struct(cell).map_elements(lambda r: "/".join(f"{v}" if k != "clients" else f"c={v}"
                                                                        for k, v in r.items()),
                                                      return_dtype=pl.Utf8).alias("cell"))
grid = stats.benchstat_grid(runs, "value", "cell", group, baseline, alpha=alpha, adjust="holm", higher_is_better=True)
good = stats.goodput(runs.drop("duration_s").rename({"value": "tps", "transactions": "transactions_processed",
                                  "failed": "failed_transactions", "elapsed_s": "duration_s"}), by=["cell", group])
gp = good.select("cell", pl.col(group).alias("candidate"), pl.col("error_rate").alias("err"), "flagged")
cmp = grid.filter(pl.col("benchmark") != "geomean").join(gp, left_on=["benchmark", "candidate"],
                                                         right_on=["cell", "candidate"], how="left")
cmp = cmp.join(gp.filter(pl.col("candidate") == baseline).select(
               "cell", pl.col("err").alias("err_base"), pl.col("flagged").alias("flag_base")),
               left_on="benchmark", right_on="cell", how="left")
if cmp.height:
    pub.table(cmp.select(
        pl.col("benchmark").alias("cell"), pl.col("candidate").alias(group.replace("_label", "")),
        report.pm_expr("center_baseline", "pm_baseline").alias(f"{baseline} tps"),
        report.pm_expr("center_candidate", "pm_candidate").alias("tps"),
        pl.col("delta"), pl.col("p_adjusted").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("p (Holm)"),
        pl.format("{}+{}", "n_baseline", "n_candidate").alias("n"),
        (100 * pl.col("err")).alias("errors %"),
        pl.when(pl.col("flagged") | pl.col("flag_base")).then(pl.lit("FAILS")).otherwise(pl.lit("ok")).alias("goodput")),
        caption=f"Run throughput (median ± the order-statistic 95 % interval as % of it; ± ∞ when n is too small "
                f"for one) of each {group.replace('_label', '')} against {baseline} per cell. `delta` is `~` unless "
                f"the Mann-Whitney U test, Holm-adjusted over all {int(cmp['p'].is_not_nan().sum())} comparisons of "
                f"the grid, is below α = {alpha}. errors %: failed transactions (pgbench) or ignored errors "
                "(sysbench) per attempt; FAILS marks a side above 1 %.",
        digits={"errors %": 2})
    sig = cmp.filter(pl.col("significant"))
    flagged = good.filter(pl.col("flagged"))
    pub.text(f"{sig.height} of {cmp.height} comparisons with {baseline} are significant after the Holm adjustment"
             + (": " + "; ".join(f"{r['candidate']} {r['benchmark']} {r['delta']}" for r in sig.iter_rows(named=True))
                if sig.height else "") + ". "
             + (f"{flagged.height} cell(s) lose more than 1 % of their attempts to errors: "
                + ", ".join(f"{r[group]} {r['cell']} ({report.pct(r['error_rate'], 2)})" for r in flagged.iter_rows(named=True))
                + "." if flagged.height else "No cell loses more than 1 % of its attempts to errors."))
"""),
    code("""
out = stab.rename({group: "level"}).with_columns(pl.lit(group).alias("compared"), pl.lit(baseline).alias("baseline"))
if vtab.height:
    out = out.join(vtab.select(*cell, pl.col(group).alias("level"), "ratio", "f_lo", "f_hi", "boot_lo", "boot_hi",
                               "bf_p", "bf_p_all"), on=[*cell, "level"], how="left")
runs_cell = runs.group_by(*cell, group).agg(pl.col("value").median().alias("run_median"), pl.len().alias("runs"))
out = out.join(runs_cell.rename({group: "level"}), on=[*cell, "level"], how="left")
pub.save(out.with_columns(pl.lit(float(trim_s)).alias("trim_s")))
"""),
]

# ------------------------------------------------------------------------------------------------

DIRTY = [
    md("""
# Dirty memory, write-back and checkpoints

**Question.** How much dirty page cache does each storage target let build up, how fast is it written
back, and do checkpoints line up with the dips in throughput (seeds 000 and 004)? `Dirty` and
`Writeback` from /proc/meminfo are drawn over one run per cell (the repeat with the median throughput);
checkpoints are shaded, from the server log's `checkpoint starting` to `checkpoint complete` lines (the
raw folder keeps `postgresql.log`), or marked where the pg_stat sampler saw the checkpoint counters grow.
The table gives, per run, the share of the throughput variance that falls in checkpoint windows next to
the share of time they cover (`stats.checkpoint_attribution`).
"""),
    params(COMMON_PARAMS + """raw_dir = "data/raw"  # the folder holding <study>/<run-id>/postgresql.log
"""),
    code("""
import polars as pl

from pipeline import data

mem = data.require(data.meminfo(db, study, ["Dirty", "Writeback"], targets).filter(
    pl.col("tool").is_in(["pgbench", "sysbench"])), "/proc/meminfo samples of PostgreSQL runs")
"""),
    code(SETUP + """
pub = report.Publication("dirty_memory_checkpoints", "Dirty memory, write-back and checkpoints",
                         "How much dirty page cache builds up, and do checkpoints line up with throughput dips?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
origin = data.run_clock_origin(db, study)
logs = data.server_logs(db, study, raw_dir)
tps = data.throughput_on_sampler_clock(db, study, targets)
pgs = data.pgstat(db, study, targets)
run_ids = mem["run_id"].unique(maintain_order=True).to_list()
"""),
    code("""
# checkpoint windows per run, on the samplers' clock, within the benchmark (shutdown checkpoints left out)
windows = []
for run_id in run_ids:
    series = tps.filter(pl.col("run_id") == run_id)
    t_end = float(series["t_s"].max()) if series.height else float(mem.filter(pl.col("run_id") == run_id)["t_s"].max())
    if run_id in logs:
        w = stats.checkpoint_windows_from_log(logs[run_id], origin[run_id])
        w = w.filter(~pl.col("reason").fill_null("").str.contains("shutdown") & (pl.col("start_s") <= t_end))
        windows.append(w.with_columns(pl.lit(run_id).alias("run_id"), pl.lit("server log").alias("from")))
    elif pgs.height:  # no log: the sample after which the counters grew (known to a second)
        ev = pgs.filter((pl.col("run_id") == run_id) & (pl.col("checkpoints") > 0))
        windows.append(ev.select(pl.lit(run_id).alias("run_id"),
                                 (pl.col("epoch_s") - origin[run_id]).alias("start_s"),
                                 (pl.col("epoch_s") - origin[run_id]).alias("end_s"),
                                 pl.lit("pg_stat counters").alias("from")))
windows = pl.concat(windows, how="diagonal_relaxed") if windows else pl.DataFrame(
    schema={"run_id": pl.Utf8, "start_s": pl.Float64, "end_s": pl.Float64, "from": pl.Utf8})
ckpt_source = ", ".join(sorted(set(windows["from"].to_list())))
"""),
    md("## Dirty and Writeback over one run per cell"),
    code("""
cellcols = ["target", "target_label", "workload", "clients"]
heads = data.headline(db, study, targets)
rep = (heads.filter(pl.col("run_id").is_in(run_ids)).sort("value")
       .group_by(cellcols, maintain_order=True).agg(pl.col("run_id").get(pl.len() // 2).alias("run_id")))
shown = mem.filter(pl.col("run_id").is_in(rep["run_id"].implode())).with_columns((pl.col("kb") / 1024).alias("MiB"))
shown = charts.panel_labels(shown)
panel_of = dict(shown.select("run_id", "panel").unique().iter_rows())
wins = windows.filter(pl.col("run_id").is_in(list(panel_of))).with_columns(
    pl.col("run_id").replace_strict(panel_of).alias("panel"), pl.col("end_s").fill_null(pl.col("start_s")))
n_cells = shown.select("workload", "clients").n_unique()
chart = charts.timeline_with_windows(shown, "t_s", "MiB", "key", "panel", wins, y_title="MiB",
                                     title="Dirty and Writeback page cache", window_label="checkpoint",
                                     columns=min(4, n_cells), panel_height=70 if n_cells > 1 else 90)
pub.figure(chart, "dirty_memory_checkpoints",
           "Dirty and Writeback memory (/proc/meminfo, MiB) over one run per cell (the repeat with the median "
           f"throughput), seconds since the samplers started; one row of panels per target; "
           + (f"grey: checkpoints (from the {ckpt_source}). " if ckpt_source else
              "no checkpoint started during these benchmarks (only at shutdown). ") + "All panels share "
           "one y scale: compare how high Dirty climbs before write-back drains it on each target.")
"""),
    md("## Per run: dirty memory, checkpoints and their share of the throughput variance"),
    code("""
rows = []
for run_id in run_ids:
    m = mem.filter(pl.col("run_id") == run_id)
    d, wb = m.filter(pl.col("key") == "Dirty"), m.filter(pl.col("key") == "Writeback")
    series = tps.filter(pl.col("run_id") == run_id)
    w = windows.filter(pl.col("run_id") == run_id)
    att = stats.checkpoint_attribution(series, w, "tps", "t_s") if series.height else {}
    ck_pgstat = pgs.filter(pl.col("run_id") == run_id)["checkpoints"].sum() if pgs.height else None
    rows.append({"run_id": run_id, **{c: m[c][0] for c in ("target", "target_label", "workload", "clients", "repeat")},
                 "dirty_mean_mib": d["kb"].mean() / 1024, "dirty_max_mib": d["kb"].max() / 1024,
                 "writeback_max_mib": wb["kb"].max() / 1024, "samples": d.height,
                 "checkpoints_log": int(w.filter(pl.col("from") == "server log").height),
                 "checkpoints_pgstat": ck_pgstat, "tps_source": series["source"][0] if series.height else None,
                 **{k: att.get(k) for k in ("n", "n_in", "time_share", "variance_share", "mean_in", "mean_out",
                                            "delta_pct", "delta_pct_lo", "delta_pct_hi")}})
per_run = data.in_config_order(pl.DataFrame(rows, infer_schema_length=None).sort("repeat"), db, study,
                                ["workload", "clients"])
pub.save(per_run)
cells = per_run.group_by("target_label", "workload", "clients", maintain_order=True).agg(
    pl.len().alias("runs"), pl.col("dirty_mean_mib").median(), pl.col("dirty_max_mib").median(),
    pl.col("writeback_max_mib").median(), pl.col("checkpoints_log").sum(), pl.col("checkpoints_pgstat").sum(),
    pl.col("time_share").median(), pl.col("variance_share").median(), pl.col("delta_pct").median())
pub.table(cells.select(
    pl.col("target_label").alias("target"), "workload", "clients", "runs",
    pl.col("dirty_mean_mib").alias("Dirty mean MiB"), pl.col("dirty_max_mib").alias("Dirty max MiB"),
    pl.col("writeback_max_mib").alias("Writeback max MiB"), pl.col("checkpoints_log").alias("ckpt (log)"),
    pl.col("checkpoints_pgstat").alias("ckpt (pg_stat)"), (100 * pl.col("time_share")).alias("time in ckpt %"),
    (100 * pl.col("variance_share")).alias("tps var in ckpt %"), pl.col("delta_pct").alias("tps in vs out %")),
    caption="Per cell (medians over runs; checkpoint counts summed): dirty and write-back memory; checkpoints that "
            "started during the benchmark (server log), and the pg_stat_bgwriter checkpoint counters' increase while the "
            "server ran (also after the benchmark, until shutdown); the share of time in checkpoint "
            "windows and the share of the throughput's variance (sum of squared deviations) that falls in them "
            f"(variance share well above the time share: checkpoints drive the variation); throughput in vs out of "
            f"checkpoints. Throughput on the samplers' clock: {', '.join(sorted(set(per_run['tps_source'].drop_nulls().to_list()))) or 'none'}.")
"""),
    code("""
top = cells.sort("dirty_max_mib", descending=True).row(0, named=True)
text = (f"Dirty memory peaks highest on {top['target_label']} ({top['workload']}, {top['clients']} client(s)): "
        f"{top['dirty_max_mib']:.0f} MiB (median over runs). ")
with_ckpt = per_run.filter(pl.col("n_in").fill_null(0) > 0)
if with_ckpt.height:
    text += (f"In the {with_ckpt.height} run(s) with checkpoints during the benchmark, they cover a median of "
             f"{report.pct(with_ckpt['time_share'].median())} of the seconds and hold "
             f"{report.pct(with_ckpt['variance_share'].median())} of the throughput variance.")
else:
    text += "No checkpoint started during any benchmark (only shutdown checkpoints): the runs are shorter than checkpoint_timeout and did not fill max_wal_size."
pub.text(text)
"""),
]

# ------------------------------------------------------------------------------------------------

COMPRESSION = [
    md("""
# Footprint and compression

**Question.** How much space does the same data take on each target: PostgreSQL's logical size against
what the file system stores (seeds 002 and 004)? Logical: `pg_database_size` of the benchmark database
and the sum of its relations (run.json's PostgreSQL facts). Physical: the target file system's used
space (statvfs, WAL and metadata included) and, on btrfs, `compsize`'s on-disk bytes against the files'
uncompressed bytes, which gives the compression ratio and the space savings 1 − physical / logical.
A page-level estimate (`stats.page_compression_estimate`, each 8 kB page compressed on its own) would
need the relation files, which the raw folder does not keep; the numbers here are what run.json holds.
"""),
    params(COMMON_PARAMS),
    code("""
import polars as pl

from pipeline import data

st = data.require(data.storage(db, study, targets), "run.json footprint facts")
"""),
    code(SETUP + """
pub = report.Publication("compression_footprint", "Footprint and compression",
                         "How much space does the same data take on each target, and how well does it compress?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
loaded = data.targets(db, study, targets).select("target", pl.col("database_bytes").alias("load_database_bytes"),
                                                 pl.col("fs_used_bytes").alias("load_fs_used_bytes"))
last = (st.sort("plan_index").group_by("target", maintain_order=True).last()
        .join(loaded, on="target", how="left")
        .with_columns(*stats.compression_exprs("compsize_uncompressed_bytes", "compsize_disk_bytes")))
order = {t: i for i, t in enumerate(data.target_names(db, study))}  # the config's order
last = last.sort(pl.col("target").replace_strict(order, default=len(order), return_dtype=pl.Int64))
base = data.baseline_target(db, study, targets)
# physical footprint relative to the first target holding the same data set (same dataset and fillfactor)
ref = last.sort(pl.col("target") != base).group_by("dataset", "fillfactor", maintain_order=True).agg(
    pl.col("target").first().alias("reference"), pl.col("fs_used_bytes").first().alias("ref_used"))
has_data = bool(last["database_bytes"].is_not_null().any())  # fsmicro removes its files: nothing stays
last = last.join(ref, on=["dataset", "fillfactor"], how="left").with_columns(
    pl.when(pl.lit(has_data)).then(1 - pl.col("fs_used_bytes") / pl.col("ref_used")).alias("used_vs_reference"))
pub.save(last.select("target", "fs", "mount_options", "fillfactor", "dataset", "run_id", "database_bytes",
                     "relations_bytes", "all_databases_bytes", "fs_used_bytes", "compsize_uncompressed_bytes",
                     "compsize_disk_bytes", "ratio", "space_savings", "load_database_bytes", "load_fs_used_bytes",
                     "reference", "used_vs_reference"))
"""),
    md("## Logical and physical size per target"),
    code("""
mib = lambda c: (pl.col(c) / 2**20)  # noqa: E731
measures = {"PostgreSQL database": "database_bytes", "file system used": "fs_used_bytes",
            "files, uncompressed (compsize)": "compsize_uncompressed_bytes", "on disk (compsize)": "compsize_disk_bytes"}
long = pl.concat([last.select("target", pl.lit(k).alias("measure"), mib(v).alias("MiB")) for k, v in measures.items()])
long = long.filter(pl.col("MiB").is_not_null())
chart = charts.grouped_bars_with_error(long, "target", "MiB", "measure", x_title="target", y_title="MiB",
                                       title="Logical and physical size after each target's last run")
pub.figure(chart, "compression_footprint",
           "Size of the same data on each target after its last run: PostgreSQL's database size (logical), the file "
           "system's used space (physical, WAL and file-system metadata included), and on btrfs compsize's uncompressed "
           "and on-disk bytes of all files. A short 'on disk' bar next to a tall 'uncompressed' bar is compression at work.")
comp = lambda c: pl.col(c).map_elements(report.bytes_h, return_dtype=pl.Utf8)  # noqa: E731
pub.table(last.select(
    "target", "fs", pl.col("fillfactor"), pl.col("dataset"),
    comp("load_database_bytes").alias("database after load"), comp("database_bytes").alias("database"),
    comp("fs_used_bytes").alias("fs used"), comp("compsize_uncompressed_bytes").alias("files (uncompr.)"),
    comp("compsize_disk_bytes").alias("on disk"), pl.col("ratio").alias("ratio"),
    (100 * pl.col("space_savings")).alias("savings %"), (100 * pl.col("used_vs_reference")).alias("fs used vs ref. %")),
    caption="Footprint per target after its last run (database size also right after the bulk load). ratio = "
            "uncompressed / on-disk bytes of the files (btrfs compsize; other file systems do not compress), savings = "
            "1 − on-disk / uncompressed; `fs used vs ref.`: 1 − used space / the used space of the first target holding "
            "the same data set and fillfactor (positive: smaller).",
    digits={"ratio": 2})
"""),
    code("""
comp_rows = last.filter(pl.col("ratio") > 1.01)  # a ratio of 1.00 is a file system that stored everything as is
text = ""
if comp_rows.height:
    best = comp_rows.sort("ratio", descending=True).row(0, named=True)
    text += (f"Compression is best on {best['target']}: {best['ratio']:.2f}:1, space savings "
             f"{report.pct(best['space_savings'])} (compsize, all files of the file system). ")
else:
    text += "No target compresses (no btrfs compsize numbers in this study). "
if not has_data:
    text += ("This study keeps no data on its targets between runs (the file-system micro-benchmarks remove the files "
             "they make), so the used space is the file systems' own metadata and there is nothing to compress. ")
else:
    big = last.sort("database_bytes", descending=True).row(0, named=True)
    small = last.sort("database_bytes").row(0, named=True)
    text += (f"PostgreSQL's own database size ranges from {report.bytes_h(small['database_bytes'])} ({small['target']}) "
             f"to {report.bytes_h(big['database_bytes'])} ({big['target']}).")
text += (" The page-level estimate (each 8 kB page compressed alone, `stats.page_compression_estimate`) needs the "
         "relation files, which the raw folder does not keep.")
pub.text(text)
"""),
]

# ------------------------------------------------------------------------------------------------

SCALING = [
    md("""
# Throughput against data-set size

**Question.** How does throughput fall as the data set outgrows shared_buffers, then the memory the
server may use (cgroup limit), then RAM (seeds 000 and 004)? Each run's throughput is placed at its
database size, with the memory thresholds as labelled reference lines. A scale ladder needs several data
set sizes (targets with different `dataset` overrides, or several studies); with one size, the figure
shows throughput per target and the table says where that one size sits against the thresholds.
"""),
    params(COMMON_PARAMS),
    code("""
import polars as pl

from pipeline import data

runs = data.require(data.headline(db, study, targets).filter(pl.col("tool").is_in(["pgbench", "sysbench"])
                                                              & pl.col("value").is_not_null()),
                    "PostgreSQL runs (pgbench or sysbench) with a throughput")
"""),
    code(SETUP + """
pub = report.Publication("scaling", "Throughput against data-set size",
                         "Where does the data set sit against shared_buffers, the memory limit and RAM, and what does it cost?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
mem = data.memory_facts(db, study, targets)
runs = runs.join(mem.select("run_id", "dataset", "database_bytes", "shared_buffers_bytes", "ram_bytes",
                            "cgroup_limit_bytes", "cgroup_limit_requested_bytes", "cgroup_applied"), on="run_id")
runs = runs.with_columns((pl.col("database_bytes") / 2**20).alias("size_mib"),
                         pl.struct("workload", "clients").map_elements(
                             lambda r: data.cell_label(r["workload"], r["clients"]), return_dtype=pl.Utf8).alias("cell"))
thr = dict(shared_buffers_bytes=runs["shared_buffers_bytes"].median(), ram_bytes=runs["ram_bytes"].median(),
           cgroup_limit_bytes=runs["cgroup_limit_bytes"].median() if runs["cgroup_applied"].any() else None,
           bytes_per_size_unit=float(2**20))
sizes = runs.group_by("workload", "clients", "fs").agg(pl.col("dataset").n_unique().alias("k"))
ladder = bool((sizes["k"] > 1).any())
# size of each run's data set: its median database size per target and data set (grows a little during a run)
runs = runs.with_columns(pl.col("size_mib").median().over("target", "dataset").alias("size_mib"))
sc = stats.scaling_table(runs, "size_mib", "value", ["cell", "target_label"], **thr)
sc = sc._replace(table=data.in_config_order(sc.table, db, study, ["cell"], col="target_label"))
"""),
    code("""
refs = [(float(r["size"]), r["threshold"]) for r in sc.thresholds.iter_rows(named=True) if r["size"] is not None]
if ladder:
    lines = [charts.scaling_curve(sc.table.filter(pl.col("cell") == c), "size_mib", "median", "target_label",
                                  reference_lines=refs, color_scale=colors, err_low="median_ci_low",
                                  err_high="median_ci_high", x_title="database size (MiB)", y_title="tps",
                                  title=f"{c}: throughput against database size", log_x=True)
             for c in sc.table["cell"].unique(maintain_order=True).to_list()]
    chart = charts.alt.vconcat(*lines)
    caption = ("Median throughput (with its interval over repeats) against the database size, one line per target, "
               "log x; dashed: shared_buffers, the cgroup memory limit (when applied) and RAM. Look for the drop where "
               "a line crosses a threshold.")
else:
    chart = charts.grouped_bars_with_error(sc.table, "cell", "median", "target_label", "median_ci_low",
                                           "median_ci_high", colors, x_title="workload / clients",
                                           y_title="median throughput (tps)",
                                           title="Throughput per target at this study's one data-set size")
    caption = ("Median throughput per target and cell with its interval over repeats, at the study's single data-set "
               "size (see the table for where it sits against the memory thresholds). A scale ladder needs several "
               "data-set sizes: targets with different `dataset` overrides, or one study per scale.")
pub.figure(chart, "scaling", caption)
"""),
    code("""
pub.save(sc.table)
facts = data.in_config_order(runs.group_by("target_label", "dataset").agg(pl.col("size_mib").first(),
                                                                         pl.len().alias("runs")), db, study,
                             col="target_label")
regime = sc.table.group_by("target_label").agg(pl.col("regime").first())
th = pl.DataFrame({"threshold": ["shared_buffers", "cgroup memory limit", "RAM (MemTotal)"],
                   "size": [report.bytes_h(runs["shared_buffers_bytes"].median()),
                            report.bytes_h(runs["cgroup_limit_requested_bytes"].median()) +
                            ("" if runs["cgroup_applied"].any() else " (not applied)")
                            if runs["cgroup_limit_requested_bytes"].is_not_null().any() else "none",
                            report.bytes_h(runs["ram_bytes"].median())]})
pub.table(th, caption="Memory thresholds of this study's runs (as in force: shared_buffers from pg_settings, the "
                      "cgroup limit of PostgreSQL and its clients, page cache included, RAM from /proc/meminfo).")
pub.table(facts.join(regime, on="target_label", how="left").select(
    pl.col("target_label").alias("target"), "dataset", pl.col("size_mib").alias("database MiB"), "runs",
    pl.col("regime").fill_null("–")), caption="Data set of each target: its database size (median over runs, MiB) and "
                                             "where it sits against the thresholds.")
pub.table(sc.table.select(pl.col("target_label").alias("target"), "cell", pl.col("size_mib").alias("MiB"), "n",
                          pl.col("median").alias("median tps"), pl.col("median_ci_low").alias("CI low"),
                          pl.col("median_ci_high").alias("CI high"),
                          *([pl.col("rel_to_smallest").alias("vs smallest")] if ladder else [])),
          caption="Median run throughput per target, cell and data-set size, with its distribution-free interval over "
                  "repeats" + (", relative to the same target's smallest size." if ladder else "."),
          digits={"vs smallest": 2})
pub.text(("Several data-set sizes: see how throughput falls across the thresholds. " if ladder else
          f"This study uses one data-set size per target ({', '.join(sorted(set(runs['dataset'])))}); "
          "a scale ladder needs several sizes. ")
         + "The data set of " + ", ".join(f"{r['target_label']} is {r['size_mib']:.0f} MiB ({r['regime'] or '–'})"
                                          for r in facts.join(regime, on="target_label").iter_rows(named=True)) + ".")
"""),
]

# ------------------------------------------------------------------------------------------------

FSMICRO = [
    md("""
# File-system micro-benchmarks

**Question.** Which file system is faster at the operations a database leans on: creating and syncing
files, deleting them from small and large directories, writing with fsync, statfs (seed 003)? Per
operation and target: ops/s and latency percentiles over the repeats, and a benchstat table like seed
003's: median ops/s ± the interval as % of it, delta against the baseline target (the config's first)
when the Mann-Whitney U test, Holm-adjusted over the grid, says so, else `~`.
"""),
    params(COMMON_PARAMS),
    code("""
import polars as pl

from pipeline import data

ops = data.require(data.fs_ops(db, study, targets), "fsmicro (file-system micro-benchmark) results")
op_lat = data.fs_op_latencies(db, study, targets)
"""),
    code(SETUP + """
pub = report.Publication("fs_micro", "File-system micro-benchmarks",
                         "Which file system is faster at the file operations a database leans on?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
base = ops.filter(pl.col("target") == data.baseline_target(db, study, targets))["target_label"]
baseline = base[0] if base.len() else ops["target_label"][0]
per = ops.group_by("benchmark", "target", "target_label", maintain_order=True).agg(
    pl.len().alias("n"), pl.col("ops_per_s").median().alias("ops_med"), pl.col("ops_per_s").min().alias("ops_min"),
    pl.col("ops_per_s").max().alias("ops_max"),
    *[pl.col(f"{s}_ms").median().alias(f"{s}_ms") for s in ("avg", "p50", "p95", "p99", "max")],
    pl.col("errors").sum().alias("errors"))
per = data.in_config_order(per, db, study, ["benchmark"])
"""),
    md("## Operations per second"),
    code("""
n_bench = per["benchmark"].n_unique()
chart = charts.grouped_bars_with_error(per, "target_label", "ops_med", "target_label", "ops_min", "ops_max", colors,
                                       column="benchmark", x_title="", y_title="ops/s", resolve_y="independent",
                                       columns=min(3, n_bench), height=120,
                                       title="Operations per second (median of repeats, bars: min–max)")
pub.figure(chart, "fs_micro-ops",
           "Operations per second per benchmark and target: median over the repeats, error bars from the slowest to the "
           "fastest repeat. Each panel has its own y scale (the operations differ by orders of magnitude): compare "
           "targets within a panel.")
if op_lat.height:  # every operation's latency: exact percentiles per run, then the median over repeats
    pr = stats.latency_percentiles(op_lat, "latency_ms", ["benchmark", "target_label", "run_id"],
                                   percentiles=(50, 95, 99), scale=1.0)
    lat = (pr.filter(pl.col("stat").is_in(["mean", "p50", "p95", "p99", "max"]))
           .group_by("benchmark", "target_label", "stat").agg(pl.col("value").median().alias("ms")))
    lat_how = "exact percentiles of every timed operation (fsmicro_ops.csv, nearest rank) per run, median over repeats"
else:  # only the printed summary (0.1 ms resolution)
    lat = per.unpivot(index=["benchmark", "target_label"], on=["avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"],
                      variable_name="stat", value_name="ms").with_columns(
        pl.col("stat").str.replace("_ms", "").str.replace("avg", "mean"))
    lat_how = "the runner's printed percentiles (0.1 ms resolution), median over repeats"
order = {"mean": -1, "p50": 0, "p95": 1, "p99": 2, "max": 3}
lat = lat.sort("benchmark", pl.col("stat").replace_strict(order, return_dtype=pl.Int64), "target_label")
chart = charts.grouped_bars_with_error(lat.filter((pl.col("ms") > 0) & (pl.col("stat") != "mean")), "stat", "ms", "target_label", color_scale=colors,
                                       column="benchmark", x_title="", y_title="latency (ms, log)", x_sort=None,
                                       resolve_y="independent", columns=min(3, n_bench), height=120, log_y=True,
                                       title="Latency percentiles per operation (dots, log scale)")
pub.figure(chart, "fs_micro-latency",
           f"Latency per operation: p50, p95, p99 and the maximum per benchmark and target ({lat_how}); log scale, each "
           "panel its own y scale. Look at the tail (p99, max) as much as at the median.")
"""),
    md("## benchstat table (seed 003's layout)"),
    code("""
grid = stats.benchstat_grid(ops, "ops_per_s", "benchmark", "target_label", baseline, alpha=alpha, adjust="holm",
                            higher_is_better=True)
rows = grid.filter(pl.col("benchmark") != "geomean")
pub.table(grid.select(
    pl.col("benchmark").alias("name"), pl.col("candidate").alias("target"),
    report.pm_expr("center_baseline", "pm_baseline").alias(f"{baseline} ops/s"),
    report.pm_expr("center_candidate", "pm_candidate").alias("ops/s"),
    pl.col("delta"),
    pl.when(pl.col("p").is_null()).then(pl.lit("")).otherwise(
        pl.format("p={} n={}+{}", pl.col("p_adjusted").map_elements(report.pvalue, return_dtype=pl.Utf8),
                  "n_baseline", "n_candidate")).alias("test")),
    caption=f"benchstat-style comparison with {baseline}: median ops/s ± the order-statistic 95 % interval as % of it "
            f"(± ∞: too few repeats for one), delta when the Mann-Whitney U test, Holm-adjusted over all "
            f"{rows.height} comparisons, is below α = {alpha} (else `~`); geomean rows summarise each target.")
wide = lat.pivot("stat", index=["benchmark", "target_label"], values="ms")
per = per.drop("avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms").join(
    wide.rename({c: f"{c}_ms" for c in ("mean", "p50", "p95", "p99", "max")}), on=["benchmark", "target_label"], how="left")
pub.table(per.select("benchmark", pl.col("target_label").alias("target"), "n", pl.col("ops_med").alias("ops/s"),
                     pl.col("mean_ms").alias("mean ms"), pl.col("p50_ms").alias("p50 ms"), pl.col("p95_ms").alias("p95 ms"),
                     pl.col("p99_ms").alias("p99 ms"), pl.col("max_ms").alias("max ms"), "errors"),
          caption=f"Per benchmark and target: repeats, median ops/s over the repeats, and the latency's mean and "
                  f"percentiles in ms ({lat_how}).",
          digits={"mean ms": 3, "p50 ms": 3, "p95 ms": 3, "p99 ms": 3, "max ms": 2})
out = per.join(rows.select(pl.col("benchmark"), pl.col("candidate").alias("target_label"), "delta_pct", "p", "p_adjusted",
                           "significant"), on=["benchmark", "target_label"], how="left")
pub.save(out)
"""),
    code("""
geo = grid.filter(pl.col("benchmark") == "geomean")
sig = rows.filter(pl.col("significant"))
pub.text("Over all benchmarks (geometric mean of medians), " +
         "; ".join(f"{r['candidate']} is {r['delta_pct']:+.1f} % against {baseline}" for r in geo.iter_rows(named=True)) +
         f". {sig.height} of {rows.height} per-benchmark differences are significant after the Holm adjustment" +
         ((": " + ", ".join(f"{r['benchmark']} on {r['candidate']} {r['delta']}" for r in sig.iter_rows(named=True)))
          if sig.height else f" (with {int(per['n'].min())} repeats per cell the U test's smallest p limits what can be shown)") + ".")
"""),
]

# ------------------------------------------------------------------------------------------------

PUBLISHED = [
    md("""
# This lab's numbers beside the published ones

**Question.** Where this study measured something a seed document also reports, how do the numbers
compare? The published results ship with the lab (`data/external/`, ingested with origin `published`):
pgbench summaries (seed 001), sysbench TPS average and variance and disk space (seed 002), file-system
micro-benchmarks (seed 003) and btrfs compression savings (seed 004). **Caveat:** different hardware,
data-set sizes, client counts, PostgreSQL versions and run lengths; absolute numbers are not comparable,
and the ratios between configurations (which setup is faster, by how much) are the comparable part.
"""),
    params(COMMON_PARAMS),
    code("""
import polars as pl

from pipeline import data

runs = data.headline(db, study, targets)
pg_pub, sb_pub = data.published_pgbench(db), data.published(db, "published_sysbench_variance")
fs_pub, comp_pub = data.published_fs_ops(db), data.published(db, "published_compression")
space_pub = data.published(db, "published_space")
if not (pg_pub.height or sb_pub.height or fs_pub.height or comp_pub.height or space_pub.height):
    raise data.MissingData("no published reference results in this study database (data/external/ not ingested)")
"""),
    code(SETUP + """
pub = report.Publication("local_vs_published", "Comparison with published results",
                         "How do this lab's numbers compare with the seed documents' where both measured the same thing?",
                         tables_dir=tables_dir, figures_dir=figures_dir, study=study)
LAB, PUB = "this lab", "published"
items = []  # kind, item, source, value, unit, note
"""),
    code("""
# seed 001: pgbench summaries by built-in script
pgb = runs.filter((pl.col("tool") == "pgbench") & pl.col("value").is_not_null())
if pgb.height and pg_pub.height:
    builtins = {w: (s or {}).get("builtin") for w, s in cfg["workloads"].items()}
    pgb = pgb.with_columns(pl.col("workload").replace_strict(builtins, default=None).alias("builtin"))
    ours = pgb.group_by("builtin", "target_label", "clients").agg(pl.col("value").median().alias("tps"), pl.len().alias("n"))
    theirs = pg_pub.filter(pl.col("builtin").is_in(ours["builtin"].drop_nulls().implode()))
    for r in ours.sort("builtin", "clients", "target_label").iter_rows(named=True):
        items.append(("pgbench tps (seed 001)", f"{r['builtin']} · {r['target_label']} · c={r['clients']}", LAB, r["tps"], "tps",
                      f"median of {r['n']} runs, scale {cfg.get('dataset', {}).get('scale')}"))
    for r in theirs.iter_rows(named=True):
        sync = next((f" · sync {v}" for v in ("off", "on") if f"synchronous_commit={v}" in r["settings"]), "")
        items.append(("pgbench tps (seed 001)", f"{r['builtin']} · {r['target']} · c={r['clients']}{sync}", PUB, r["tps"], "tps",
                      f"{r['fs']}, scale {r['scale']}, PG {r['pg_version']}; {r['settings']}"))
"""),
    code("""
# seed 002: sysbench per-second TPS average and variance (compare CV = sigma / mean: scale-free)
sbr = data.throughput(db, study, None, targets).filter(pl.col("tool") == "sysbench")
if sbr.height and sb_pub.height:
    tests = {w: (s or {}).get("test") for w, s in cfg["workloads"].items()}
    per_run = stats.stability_table(stats.trim_warmup(sbr, trim_s).with_columns(
        pl.col("workload").replace_strict(tests, default=None).alias("test")), "tps",
        ["test", "target_label", "clients", "run_id"])  # seed 002 measured single runs: CV within a run
    st = per_run.group_by("test", "target_label", "clients").agg(
        pl.col("cv").median(), pl.col("mean").median(), pl.col("variance").median(), pl.len().alias("runs"))
    for r in st.sort("test", "clients", "target_label").iter_rows(named=True):
        items.append(("sysbench CV of per-second tps (seed 002)", f"{r['test']} · {r['target_label']} · {r['clients']} thr", LAB,
                      100 * r["cv"], "%", f"avg {r['mean']:.0f} tps, σ² {r['variance']:.0f} (medians of {r['runs']} runs)"))
    for r in sb_pub.filter(pl.col("workload").is_in(st["test"].drop_nulls().implode())).iter_rows(named=True):
        items.append(("sysbench CV of per-second tps (seed 002)", f"{r['workload']} · {r['device']} ff{r['fillfactor']} · {r['threads']} thr",
                      PUB, 100 * r["tps_variance"] ** 0.5 / r["tps_avg"], "%", f"avg {r['tps_avg']:.0f} tps, σ² {r['tps_variance']:.0f}"))
"""),
    code("""
# seed 003: file-system micro-benchmarks, matched by benchmark family (name without its size)
ours_fs = data.fs_ops(db, study, targets)
if ours_fs.height and fs_pub.height:
    ours_fs = ours_fs.with_columns(pl.col("benchmark").map_elements(data.benchmark_family, return_dtype=pl.Utf8).alias("family"))
    fam = set(ours_fs["family"].to_list())
    theirs = fs_pub.with_columns(pl.col("benchmark").map_elements(data.benchmark_family, return_dtype=pl.Utf8).alias("family"))
    theirs = theirs.filter(pl.col("family").is_in(list(fam)))
    for r in ours_fs.group_by("benchmark", "family", "target_label").agg(pl.col("ops_per_s").median(), pl.len().alias("n")).sort("family", "target_label").iter_rows(named=True):
        items.append(("fs micro-benchmark ops/s (seed 003)", f"{r['benchmark']} · {r['target_label']}", LAB, r["ops_per_s"], "ops/s",
                      f"median of {r['n']} repeats"))
    for r in theirs.group_by("benchmark", "family", "fs").agg(pl.col("ops_per_s").median(), pl.len().alias("n")).sort("family", "fs").iter_rows(named=True):
        items.append(("fs micro-benchmark ops/s (seed 003)", f"{r['benchmark']} · {r['fs']}", PUB, r["ops_per_s"], "ops/s",
                      f"median of {r['n']} published runs"))
"""),
    code("""
# seeds 002 and 004: compression (space savings = 1 - physical / logical)
stg = data.storage(db, study, targets).filter(pl.col("compsize_disk_bytes").is_not_null())
if stg.height and (comp_pub.height or space_pub.height):
    last = stg.sort("plan_index").group_by("target", maintain_order=True).last().with_columns(
        *stats.compression_exprs("compsize_uncompressed_bytes", "compsize_disk_bytes"))
    for r in last.iter_rows(named=True):
        opt = ",".join(o for o in (r["mount_options"] or "").split(",") if o.startswith("compress"))
        items.append(("space savings % (seeds 002, 004)", f"{r['target']} ({r['fs']} {opt})".replace(" )", ")"), LAB,
                      100 * r["space_savings"], "%", f"compsize ratio {r['ratio']:.2f}:1"))
    for r in comp_pub.iter_rows(named=True):
        lo, hi = r["space_savings_min_pct"], r["space_savings_max_pct"]
        if lo is None and r["logical_gb"] and r["physical_gb"]:
            lo = hi = 100 * (1 - r["physical_gb"] / r["logical_gb"])
        if lo is not None:
            items.append(("space savings % (seeds 002, 004)", f"{r['fs']} {r['mount_options']} · {r['workload']}", PUB,
                          (lo + hi) / 2, "%", f"published {lo:.0f}–{hi:.0f} %" if lo != hi else "from logical/physical GB"))
    for r in space_pub.filter(pl.col("compression_ratio").is_not_null()).iter_rows(named=True):
        items.append(("space savings % (seeds 002, 004)", f"{r['device']} · fillfactor {r['fillfactor']}", PUB,
                      100 * (1 - 1 / r["compression_ratio"]), "%", f"compression ratio {r['compression_ratio']:.2f}:1"))
"""),
    code("""
table = pl.DataFrame(items, schema={"kind": pl.Utf8, "item": pl.Utf8, "source": pl.Utf8, "value": pl.Float64,
                                    "unit": pl.Utf8, "note": pl.Utf8}, orient="row")
kinds_ours = set(table.filter(pl.col("source") == LAB)["kind"].to_list())
kinds_pub = set(table.filter(pl.col("source") == PUB)["kind"].to_list())
table = table.filter(pl.col("kind").is_in(list(kinds_ours & kinds_pub)))
if table.height == 0:
    raise data.MissingData("nothing in this study is comparable with the published results (no pgbench, sysbench, "
                           "fsmicro or btrfs-compression data that a seed also reports)")
pub.save(table)
chart = charts.comparison_dots(table, "value", "item", "source", "kind", x_title="value (log scale; unit per panel)",
                               title="This lab and the seed documents")
pub.figure(chart, "local_vs_published",
           "This lab's numbers (one dot per target and cell) beside the published ones (seed documents), one panel per "
           "comparable measure with its own log scale: pgbench tps, sysbench CV of per-second tps (%), fs ops/s, space "
           "savings (%). Different hardware and sizes: read the spread between configurations, not the absolute gap.")
for kind in table["kind"].unique(maintain_order=True).to_list():
    part = table.filter(pl.col("kind") == kind)
    pub.table(part.select("source", "item", pl.col("value").alias(part["unit"][0]), "note"),
              caption=f"{kind}: this lab and the published numbers. Caveat: different machines, sizes and run lengths.")
"""),
    code("""
notes = []
for kind in table["kind"].unique(maintain_order=True).to_list():
    part = table.filter(pl.col("kind") == kind)
    a, b = part.filter(pl.col("source") == LAB)["value"], part.filter(pl.col("source") == PUB)["value"]
    notes.append(f"{kind}: this lab {a.min():,.1f}–{a.max():,.1f} {part['unit'][0]} against published "
                 f"{b.min():,.1f}–{b.max():,.1f}")
pub.text("; ".join(notes) + ". The published numbers come from larger machines (up to 16 vCPUs, NVMe or network "
         "storage) with larger data sets and longer runs; only the direction and size of differences between "
         "configurations carry over.")
"""),
]

# ------------------------------------------------------------------------------------------------

PAPER = [
    params("""
db = "data/default.duckdb"
study = "default"
figures_dir = "figures/default"
tables_dir = "build/default/tables"
build_dir = "build/default"
"""),
    code("""
from pipeline import paper_sections as ps

ctx = ps.Context.load(db, study, figures_dir=figures_dir, tables_dir=tables_dir, build_dir=build_dir)
ps.abstract(ctx)
"""),
    code("ps.setup(ctx)"),
    code("ps.methodology(ctx)"),
    code("ps.results(ctx)"),
    code("ps.published(ctx)"),
    code("ps.durability(ctx)"),
    code("ps.threats(ctx)"),
    code("ps.appendix(ctx)"),
]

NOTEBOOKS = {
    "throughput_stability": THROUGHPUT,
    "latency_percentiles": LATENCY,
    "variance_significance": VARIANCE,
    "dirty_memory_checkpoints": DIRTY,
    "compression_footprint": COMPRESSION,
    "scaling": SCALING,
    "fs_micro": FSMICRO,
    "local_vs_published": PUBLISHED,
}

if __name__ == "__main__":
    for name, cells in NOTEBOOKS.items():
        write(REPO / "notebooks" / f"{name}.ipynb", cells)
    write(REPO / "paper" / "whitepaper.ipynb", PAPER)
