# %% [markdown]
# # Are the runs exchangeable, and where is the noise floor?
#
# **Question.** A comparison treats each target's runs in a cell as draws from one distribution: the round
# a run had and what ran before it must not matter. Per target and cell, four checks over the repeats
# (rounds): a trend over rounds (Kendall's tau, Theil-Sen slope in % per round), the first round against
# the rest, two groups of runs (the gap ratio), and run-level outliers (median ± k·MAD on the log scale,
# k calibrated per run count) with what the samplers saw during that run (checkpoints, autovacuum, device
# reads per second). Where the study carries an A/A control (a twin of the baseline, `aa_twin_of: <baseline>` in
# the twin's target spec), the A/A ratio per cell and its band beside every comparison with the baseline:
# an effect inside the band is not a finding. Burn-in rounds (`run.burn_in_rounds`) are shown, never compared;
# a study analysed with a second day (`make analyse DAY2=...`) gets, per comparison, whether the two days agree.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the
# default study (`make run` first); papermill and `pgfslab notebook` pass another study's.
db = "data/default.duckdb"
study = "default"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/default"
tables_dir = "build/default/tables"
aa_twins = None  # {twin: baseline}; None: the targets that name their baseline under `aa_twin_of` in the config

# %%
import polars as pl

from pgfslab.analysis import cpu_time, queries, report, run_evidence
from pgfslab.analysis.answers import exchangeability as ex
from pgfslab.analysis.notebook import setup
from pgfslab.analysis.stats import aa

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
every_run = queries.require(
    queries.headline(db, study, targets, burn_in=True).filter(pl.col("tool").is_in(["pgbench", "sysbench"])),
    "run summaries (pgbench or sysbench)",
)
runs = ex.counted(every_run)  # burn-in rounds are shown, never compared
evidence = run_evidence.run_evidence(db, study)
pub = report.Publication(
    "exchangeability",
    "Exchangeable runs and the noise floor",
    "Do a cell's runs depend on their round, and how far apart do two identical targets come out?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)

# %% [markdown]
# ## Per target and cell: the four checks

# %%
checks = queries.in_config_order(
    ex.checks(runs, evidence, alpha), db, study, ["workload", "clients"], col="target_label"
)
pub.save(checks)
pub.table(
    checks.select(
        "cell",
        pl.col("target_label").alias("target"),
        pl.col("n").alias("runs"),
        (100 * pl.col("cv")).alias("CV %"),
        pl.col("slope_pct_per_round").alias("trend %/round"),
        pl.col("trend_p").alias("trend p"),
        pl.col("first_ratio").alias("first/rest"),
        pl.col("gap_ratio").alias("gap ratio"),
        "outliers",
        "reason",
    ),
    caption=f"Per target and cell: run-to-run CV; the Theil-Sen trend of the runs' log throughput over rounds "
    f"with Kendall's p; the first round's value over the median of the other rounds; the gap ratio (the widest gap "
    f"between two groups of at least two runs, over the wider group's spread); outlier runs; and in words what "
    f"was flagged at α = {alpha:g} (critical values for each run count simulated from one log-normal mode; "
    "no adjustment for the number of cells).",
    digits={"CV %": 1, "trend %/round": 1, "trend p": 3, "first/rest": 2, "gap ratio": 2},
    notes=("reason",),
)

# %%
carried = ex.carry_over(every_run, alpha)
if carried.height:
    pub.table(
        carried.select(
            "cell",
            pl.col("target_label").alias("target"),
            pl.col("after").alias("after target"),
            "runs",
            pl.col("median_over_target").alias("median / target's"),
            pl.col("carry_over_p").alias("Kruskal-Wallis p"),
        ),
        caption="Carry-over: each target's runs grouped by the target that ran just before (run.json "
        "`predecessor`), each group's median over the target's own median, and a Kruskal-Wallis test across the "
        f"groups of at least two runs (α = {alpha:g}, no adjustment for the number of cells). Under the Williams "
        "order every target follows every other equally often; a group sitting apart is a carry-over from the "
        "run before, which a comparison of targets would otherwise take for a file-system difference.",
        digits={"median / target's": 3, "Kruskal-Wallis p": 3},
    )

# %%
states = ex.start_states(every_run, queries.run_records(db, study, targets=targets))
if states.height:
    pub.table(
        states.select(
            "cell",
            pl.col("target_label").alias("target"),
            "cache",
            "runs",
            pl.col("autovacuum_quiet").alias("autovacuum quiet"),
            pl.col("hit_ratio").alias("hit ratio (warm)"),
            pl.format("{} of {}", "steady", "warm").alias("steady (warm)"),
        ),
        caption="The starting state each run reached and recorded (run.json `start_state`): the cache mode, the "
        "runs that started with no autovacuum worker running, and for warm starts the buffer hit ratio of the "
        "last probe (median) and how many warm starts reached a steady ratio within the passes allowed. A cell "
        "whose warm starts did not settle has no defined starting state: read its comparisons with that in mind.",
        digits={"hit ratio (warm)": 3},
    )

# %%
flagged = ex.flagged_runs(runs, evidence, alpha)
if flagged.height:
    pub.table(
        flagged.select("cell", pl.col("run_id").alias("run"), pl.col("repeat").alias("round"), "reason"),
        caption="Outlier runs and what the samplers recorded during them, beside the median of the cell's other runs.",
        notes=("reason",),
    )

# %%
pub.figure(
    ex.rounds_chart(every_run, flagged, colors),
    "exchangeability",
    "Each run's throughput by round (log scale), one line per target, one panel per cell; outlier runs ringed in "
    "red; rounds 0 and below are the burn-in, never compared.",
)

# %%
burn = ex.burn_in_table(every_run)
if burn.height:
    pub.table(
        burn.select(
            "cell",
            pl.col("target_label").alias("target"),
            pl.col("run_id").alias("run"),
            pl.col("value").alias("tps"),
            pl.col("median_counted").alias("median of counted runs"),
            pl.col("over_median").alias("burn-in / median"),
        ),
        caption="The burn-in rounds the study asked for (run.burn_in_rounds): each run against the median of the "
        "cell's counted runs. They are measured and shown here, and left out of every comparison.",
        digits={"tps": 0, "median of counted runs": 0, "burn-in / median": 2},
    )

# %% [markdown]
# ## The noise floor: the A/A control

# %%
twins = ex.twins(cfg, aa_twins)
# compared as the study's verdicts compare (`analysis.primary`: unpaired, or paired by round)
primary = (cfg.get("analysis") or {}).get("primary", "runs")
aa_cells = aa.aa_ratios(runs, twins, alpha=alpha, primary=primary) if twins else pl.DataFrame()
if aa_cells.height:
    pub.table(
        aa_cells.select(
            ex.cell_expr(),
            "twin",
            "baseline",
            pl.format("{}+{}", "n_twin", "n_baseline").alias("runs"),
            pl.col("aa_ratio").alias("A/A ratio"),
            pl.col("aa_lo").alias("lo"),
            pl.col("aa_hi").alias("hi"),
            (100 * pl.col("aa_coverage")).alias("coverage %"),
            pl.col("band_lo").alias("band lo"),
            pl.col("band_hi").alias("band hi"),
        ),
        caption=f"Per cell: the twin's throughput over its baseline's ({ex.method_words(primary)}, as every "
        "comparison in this study) and the A/A band it implies, symmetric on the log scale because which twin is "
        "which is arbitrary.",
        digits={"A/A ratio": 3, "lo": 3, "hi": 3, "coverage %": 1, "band lo": 3, "band hi": 3},
    )
    aa_twin, aa_baseline = next(iter(twins.items()))
    compared = ex.against_baseline_and_twin(runs, aa_baseline, aa_twin, alpha, primary=primary)
    if compared.height:
        pub.table(
            compared.select(
                ex.cell_expr(),
                "target",
                pl.col("n").alias("runs (A+twin+B)"),
                pl.col("to_baseline").alias(f"B/{aa_baseline}"),
                pl.col("to_twin").alias(f"B/{aa_twin}"),
                "ratio",
                "lo",
                "hi",
                "resolved",
            ),
            caption=f"Every comparison as the verdicts read it: B against the baseline {aa_baseline} and against its "
            f"identical twin {aa_twin}, and one interval spanning both intervals (α = {alpha:g} each; a direction "
            "only where B differs from both identical targets, so the twin's own difference from its baseline "
            "widens the interval by as much as it really is, and the noise is counted once).",
            digits={f"B/{aa_baseline}": 3, f"B/{aa_twin}": 3, "ratio": 3, "lo": 3, "hi": 3},
        )
    # does the study's interval keep its stated level on this machine's noise? the twin's own rounds, relabelled
    calibrated = ex.calibration(runs, twins, primary, alpha)
    if calibrated.height:
        pub.table(
            calibrated,
            caption=f"The study's comparison ({ex.method_words(primary)}) checked on its own twin: pseudo-studies "
            "drawn by round from the twin and its baseline in every cell, their labels swapped at random within "
            f"each round (either labelling is what the study could have recorded), B/A {ex.INJECT:g} injected; "
            f"the share of intervals at {100 * (1 - alpha):g} % that cover {ex.INJECT:g} should be near that level "
            "(pgfslab.analysis.verdicts.calibration). With the labels as recorded (two rounds fewer), the share "
            "covering 1 falls where "
            "the twin differs from its baseline.",
            digits={"covered %": 1, "as recorded %": 1, "half-width %": 1},
        )
else:
    pub.text(
        "This study carries no A/A control (no target names its baseline under `aa_twin_of`): how far apart two "
        "identical targets come out on this machine is not measured here.",
        paper=False,
    )

# %%
cpu_tx = cpu_time.cpu_per_transaction(queries.cpu_stat(db, study, targets), runs)
if cpu_tx.height:
    per_tx = runs.join(cpu_tx, on="run_id")
    summary = per_tx.group_by("target_label", "workload", "clients", maintain_order=True).agg(
        pl.len().alias("runs"), pl.col("cpu_ms_per_tx").median().alias("CPU ms/tx")
    )
    pub.table(
        summary.select(ex.cell_expr(), pl.col("target_label").alias("target"), "runs", "CPU ms/tx"),
        caption="Machine-wide CPU time per transaction (median of the runs): every CPU's user, nice, system, irq "
        "and softirq time per second of the run (/proc/stat, so kworkers, journal and btrfs threads and the "
        "zfs-fuse daemon count, not only the server's processes) over the run's transactions per second. Steal, "
        "idle and I/O wait are not work done for the run.",
        digits={"CPU ms/tx": 3},
    )
    if twins:
        cpu_twin, cpu_base = next(iter(twins.items()))
        cpu_aa = aa.aa_ratios(per_tx, twins, value="cpu_ms_per_tx", alpha=alpha, primary=primary)
        cpu_cmp = ex.against_baseline_and_twin(
            per_tx, cpu_base, cpu_twin, alpha, value="cpu_ms_per_tx", primary=primary
        )
        if cpu_aa.height and cpu_cmp.height:
            pub.table(
                cpu_aa.select(
                    ex.cell_expr(), pl.col("aa_ratio").alias(f"{cpu_twin}/{cpu_base}"), "aa_lo", "aa_hi"
                ).join(cpu_cmp.select(ex.cell_expr(), "target", "ratio", "lo", "hi", "resolved"), on="cell"),
                caption=f"CPU per transaction against the baseline {cpu_base} and its twin {cpu_twin}: the A/A "
                "control of this measure (the twin over its baseline, with its interval) and every other target "
                "read as the verdicts read throughput (one interval spanning B/baseline and B/twin).",
                digits={f"{cpu_twin}/{cpu_base}": 3, "aa_lo": 3, "aa_hi": 3, "ratio": 3, "lo": 3, "hi": 3},
            )
else:
    pub.text("CPU time per transaction needs the /proc/stat sampler (stat.log), which these runs did not record.")

# %% [markdown]
# ## The hypervisor's share: comparisons adjusted for CPU steal

# %%
adjusted = ex.steal_adjusted_comparisons(runs, cpu_time.per_run(db, study), ex.baseline_of(cfg, twins), alpha)
if adjusted.height:
    pub.table(
        adjusted.select(
            ex.cell_expr(),
            "target",
            "baseline",
            "n",
            pl.col("ratio").alias("adjusted ratio"),
            "lo",
            "hi",
            (100 * pl.col("plain_sd")).alias("spread before %"),
            (100 * pl.col("resid_sd")).alias("spread after %"),
            pl.col("slope").alias("slope per unit contention"),
        ),
        caption="A sensitivity analysis, not used by the verdicts: per cell, each target over the baseline with "
        "every run's CPU contention (the share of the CPU time the guest wanted that the hypervisor gave to other "
        "guests, /proc/stat) as a covariate: log(tps) = target + slope x contention (and a shift per day or host where "
        "the runs come from several), least squares, t interval. "
        "Spread: the runs' standard deviation on the log scale (about the run-to-run CV) within targets before, "
        "and around the model after. It assumes the file system under test does not change what the hypervisor "
        "takes, and a log-linear effect the same for every target.",
        digits={
            "adjusted ratio": 3,
            "lo": 3,
            "hi": 3,
            "spread before %": 1,
            "spread after %": 1,
            "slope per unit contention": 2,
        },
    )
else:
    pub.text(
        "CPU steal was not sampled in these runs (no /proc/stat samples, or too few runs per cell): how much of "
        "the run-to-run noise the hypervisor's share explains is not measured here.",
        paper=False,
    )

# %% [markdown]
# ## The same answer on another day

# %%
agreement = ex.two_days(runs, ex.baseline_of(cfg, twins), alpha, primary)
if agreement.height:
    pub.table(
        agreement.select(
            ex.cell_expr(),
            "target",
            "baseline",
            pl.col("ratio_day_1").alias("day 1"),
            pl.format("[{}, {}]", pl.col("lo_day_1").round(2), pl.col("hi_day_1").round(2)).alias("day 1 interval"),
            pl.col("ratio_day_2").alias("day 2"),
            pl.format("[{}, {}]", pl.col("lo_day_2").round(2), pl.col("hi_day_2").round(2)).alias("day 2 interval"),
            pl.col("ratio_blocked").alias("blocked by day"),
            (100 * pl.col("day_share_target")).alias("between-day share %"),
            pl.col("covers_other")
            .replace_strict({True: "yes", False: "no"}, default="no interval", return_dtype=pl.Utf8)
            .alias("each covers the other"),
            "verdict",
        ),
        caption=f"Per comparison, each day's ratio target/baseline with its interval ({ex.method_words(primary)}), "
        "the estimate blocked by day "
        "(within-day pairs only, van Elteren's day-stratified interval) and the share of the target's variance "
        "that lies between the days; the days agree when their intervals overlap, and each covers the other's "
        "estimate where marked (docs/two-days.md).",
        digits={"day 1": 2, "day 2": 2, "blocked by day": 2, "between-day share %": 0},
    )

# %%
judged = checks.filter(pl.col("judged"))
kinds = {k: int(judged[k].sum()) for k in ("trend", "first_round_off", "bimodal")}
if judged.height == 0:
    text = f"No target cell has the four runs the exchangeability checks need (at most {checks['n'].max()})."
else:
    text = (
        f"{judged.height - int(judged['flagged'].sum())} of {judged.height} target cells with at least four runs "
        f"pass all four exchangeability checks at α = {alpha:g}; {kinds['trend']} show a trend over rounds, "
        f"{kinds['first_round_off']} a first round off the rest, {kinds['bimodal']} two groups of runs, and "
        f"{flagged.height} run(s) are outliers."
    )
    if judged.height < checks.height:
        text += f" {checks.height - judged.height} target cells have too few runs to judge."
text += f" Run-to-run CV: median {report.pct(checks['cv'].median())} over target cells."
if aa_cells.height:
    widest = aa_cells.sort("aa_half_width_pct", descending=True).row(0, named=True)
    text += (
        f" The A/A control ({widest['twin']} against {widest['baseline']}) came out at {widest['aa_ratio']:.3f} "
        f"[{widest['aa_lo']:.3f}, {widest['aa_hi']:.3f}] in its widest cell ({widest['workload']}/c={widest['clients']})."
    )
if adjusted.height:
    before, after = adjusted["plain_sd"].median(), adjusted["resid_sd"].median()
    text += (
        f" Adjusted for the CPU the hypervisor took from each run (a model, not used by the verdicts), the "
        f"run-to-run spread falls from {report.pct(before)} to {report.pct(after)} (medians over cells)."
    )
if agreement.height:
    agreed = int(agreement["agree"].sum())
    bounded = agreement.filter(pl.col("covers_other").is_not_null())
    covered = int(bounded["covers_other"].sum())
    text += (
        f" On two days ({agreement.height} comparisons against {agreement['baseline'][0]}), {agreed} agree and "
        f"{agreement.height - agreed} differ."
    )
    if bounded.height:
        text += (
            f" Of the {bounded.height} whose runs give an interval on both days, in {covered} "
            f"({report.pct(covered / bounded.height)}) each day's interval covers the other day's estimate "
            "(the lab's goal: 90 %)."
        )
pub.text(text)
