"""The paper's methodology section: how targets were prepared and runs interleaved, each workload's
cells and repeats, the starting state of a run, and the statistics used and why."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import report
from pgfslab.analysis.scalar import number, whole
from pgfslab.analysis.verdicts.claims import seed_runs
from pgfslab.config.model import Precision, RunSettings
from pgfslab.paper.context import Context, show, workload_what
from pgfslab.runners import runner


def _workload_rows(ctx: Context) -> pl.DataFrame:
    rows = []
    for wl, spec in ctx.cfg.workloads.items():
        runs = ctx.runs.filter((pl.col("workload") == wl) & (pl.col("status") != "skipped"))
        if runs.height == 0:
            continue
        reps = runs.group_by("target", "clients").len()["len"]
        tool = spec.tool
        how = []
        per_client = spec.options.transactions_per_client()
        if per_client:
            how.append(f"{per_client} transactions per client")
        else:
            how.append(f"{whole(runs['duration_s'].median())} s")
        how += runner(tool).how(spec)
        os_ = spec.os.to_dict() if spec.os else {}
        if os_:
            how.append(", ".join(f"{k.removeprefix('vm_')}={v}" for k, v in os_.items()))
        if spec.postgres_settings:
            how.append(", ".join(f"{k}={v}" for k, v in spec.postgres_settings.items()))
        rows.append(
            {
                "workload": wl,
                "tool": tool,
                "what": workload_what(spec).split(" ", 1)[1],
                "clients": ", ".join(str(c) for c in sorted(runs["clients"].unique().to_list())),
                "repeats": f"{whole(reps.min())}"
                if reps.min() == reps.max()
                else f"{whole(reps.min())}–{whole(reps.max())}",
                "run": "; ".join(h for h in how if h),
            }
        )
    return pl.DataFrame(rows)


def context_cells(ctx: Context) -> list[str]:
    """The cells the study keeps as context (`workloads.<name>.context`), each with its reason."""
    out = []
    for name, wl in ctx.cfg.workloads.items():
        if wl.context is not None:
            at = wl.context.clients or wl.clients
            out.append(f"{name} at {', '.join(map(str, at))} client(s): {wl.context.why}")
    return out


def seed_lengths(ctx: Context) -> pl.DataFrame:
    """Per seed the study names: what it ran and for how long (claims.seed_runs), and this study's run
    lengths (the runs' own duration_s, shortest to longest)."""
    mine = ctx.runs.filter(pl.col("status") != "skipped")["duration_s"].drop_nulls()
    here = "–" if mine.len() == 0 else (
        f"{number(mine.min()):g} s" if mine.min() == mine.max() else f"{number(mine.min()):g}–{number(mine.max()):g} s"
    )  # fmt: skip
    wanted = set(ctx.cfg.seeds or ())
    rows = [
        {"seed": r["seed"], "the seed ran": r["ran"], "its runs": r["length"], "this study's runs": here}
        for r in seed_runs()
        if r["seed"] in wanted
    ]
    return pl.DataFrame(rows, schema={k: pl.Utf8 for k in ("seed", "the seed ran", "its runs", "this study's runs")})


def _headline_kinds(ctx: Context) -> str:
    kinds = {
        "pgbench": "pgbench's transactions per second without connection time",
        "sysbench": "sysbench's transactions per second",
        "fsmicro": "fsmicro's operations per second",
    }
    return "; ".join(kinds[t] for t in ctx.tools if t in kinds)


def methodology(ctx: Context) -> None:
    c = ctx.cfg
    a = c.analysis
    samplers = c.sampler.to_dict()
    sampled = ", ".join(
        f"{k.removesuffix('_hz')} at {v:g} Hz"
        for k, v in samplers.items()
        if k.endswith("_hz") and v and (k != "pgstat_hz" or ctx.uses_postgres)
    )
    show(f"""## Methodology

**Targets and runs.** Each target is formatted and mounted by the lab (a sparse image on a loop device with
direct I/O, so the host's page cache does not absorb the target's I/O), and, for the PostgreSQL workloads, a
cluster is initialised on it and loaded once. Every run then mounts the target, drops the kernel's page
cache{"" if c.run.drop_caches else " (disabled in this study)"}, starts the server, runs
one workload, stops the server and unmounts, while samplers record {sampled}. Runs are interleaved (repeat 1 of
every target and cell, then repeat 2, ...), so that drift of the machine over time does not masquerade as a
difference between targets{_order_sentence(ctx)}

{_start_sentence(ctx)}""")
    show(
        report.markdown_table(
            _workload_rows(ctx),
            caption="Workloads: tool, script, client counts (cells), repeats per "
            "cell and target, and how each run was driven.",
        )
    )
    kept = context_cells(ctx)
    if kept:
        show(
            "**Cells kept as context.** The study designed these cells to show, not to decide: they are never a "
            "claim's primary cell (the verdicts list them as context), and why is the study's own word: "
            + "; ".join(kept)
            + "."
        )
    lengths = seed_lengths(ctx)
    if lengths.height:
        ctx.defer(
            "Methodology",
            report.markdown_table(
                lengths,
                caption="How long the seeds this study tests ran their workloads, as each seed says, beside this "
                "study's own run lengths (every workload's measured window, the shortest to the longest): a "
                "finding about sustained writing or jitter over time was made over the seed's runs, not the lab's.",
                notes=("its runs",),
            ),
        )
    if not _headline_kinds(ctx):  # durability checks only: no throughput, nothing to trim or compare
        show("""**What is measured.** No throughput: every run is a durability check (crash, restart,
verification), described with its results in the durability section. Its counts are exact, not estimates: every
transaction the client saw commit is looked up after the restart.""")
        return
    show(f"""**Warm-up.** Per-second series drop the first {a.trim_s:g} s of every run; the throughput
stability analysis then finds the end of each run's warm-up with MSER-5 (White 1997: the truncation point that
minimises the standard error of the remaining batch means) and records the trim per run, flagging runs whose
truncation hits its limit (never settled).

**Statistics, and why.** Repeats, not seconds, are the unit of comparison: per-second samples of one run are
autocorrelated. A cell's value is the median of its runs' headline numbers ({_headline_kinds(ctx)}) with a
distribution-free confidence interval from order statistics (its
exact coverage is reported; with few repeats the widest interval falls short of 95 %). Targets are compared
benchstat-style: two-sided Mann-Whitney U test per cell (exact for small samples), p-values Holm-adjusted over all
comparisons of a table (the family a reader scans), `~` when not significant at α = {a.alpha} or when the
sample sizes cannot reach it at all. The seed verdicts' primary comparison, stated in the config before the
runs (`analysis.primary`), is {_primary_words(a.primary)}. Within a run, a mean gets an interval from the effective sample size of its
autocorrelated samples (Geyer's initial positive sequence), not the naive iid one. Variances are compared with the
Brown-Forsythe test (robust to non-normal data) and variance ratios with F and circular block-bootstrap intervals
(the block length from Politis-White, respecting autocorrelation). Goodput: a run's failed transactions or ignored
errors per attempt, flagged above 1 %, so a run that is fast because it fails is not mistaken for a fast one.
Latency percentiles are exact from per-transaction logs, bounded from pgbench's aggregate logs (only count, sum,
min and max per second survive), and known to the bucket from sysbench's histogram; every table says which.""")


def _primary_words(primary: str) -> str:
    """The verdicts' primary comparison in words (`analysis.primary`)."""
    if primary == "rounds-t":
        return ("the runs paired by round: each run of one side with the other side's run in the same round, the mean "
                "of the per-round log-ratios with Student's t interval (what a round shares cancels; its calibration "
                "checked on the lab's A/A twins); the unpaired comparison is in each verdict's notes")  # fmt: skip
    if primary == "rounds":
        return ("the runs paired by round: each run of one side with the other side's run in the same round, the "
                "Hodges-Lehmann shift of the per-round log-ratios with its exact Wilcoxon signed-rank interval (what a "
                "round shares cancels); the unpaired comparison is in each verdict's notes")  # fmt: skip
    return ("the runs as independent samples: the Hodges-Lehmann ratio of the two sides with the exact interval "
            "that inverts the Mann-Whitney test")  # fmt: skip


def _order_sentence(ctx: Context) -> str:
    """The order within a round (run.order: a Williams design by default; raw folders recorded before it
    carry no `predecessor` and rotated; before the rotation, no `position`: the config's order), the
    burn-in, the A/A control."""
    c = ctx.cfg
    run = c.run
    recs = ctx.records.values()
    # which keys the runs recorded says which order they ran in (a first run's predecessor is recorded, as none)
    kind = run.order or ("williams" if any("predecessor" in r.model_fields_set for r in recs) else "rotate")
    if kind != "fixed" and not any("position" in r.model_fields_set for r in recs):
        kind = "fixed"
    out = {
        "williams": "; the rounds follow a Williams design (each round one row of a Williams Latin square), so "
        "that over a full cycle every target runs first, second, ... equally often and follows every other "
        "target equally often: neither a position effect nor a carry-over from the run before can pass for a "
        "file-system effect (each run's predecessor is recorded in run.json and checked in the exchangeability "
        "section).",
        "rotate": "; within a round the target order rotates (round r starts at the r-th target), so that every "
        "target runs first, second, ... equally often and a position effect cannot pass for a file-system "
        "effect (the target that runs before each is not balanced).",
        "fixed": " (the targets in the config's order in every round).",
    }[kind]
    if run.burn_in_rounds:
        out += (
            f" The first {run.burn_in_rounds} round(s) of every pgbench and sysbench cell are burn-in: run and "
            "shown in the exchangeability checks, never compared."
        )
    twins = {t: s.aa_twin_of for t, s in c.targets.items() if s.aa_twin_of}
    if twins:
        out += (
            " "
            + "; ".join(f"Target {t} is an A/A control: {b}'s exact spec" for t, b in twins.items())
            + (
                ", interleaved like every target and never a side of a comparison; how far apart it and its baseline "
                "come out is the noise floor shown beside the comparisons (an effect inside that band is not a finding)."
            )
        )
    return out


def _cache_words(run: RunSettings) -> str:
    cache = run.cache
    if cache == "warm":
        return (
            ", its page cache dropped and then a defined pass over the data set (pg_prewarm of every table, then "
            "every index, by name) repeated until two short probes read the same buffer hit ratio (warm start)"
        )
    if cache == "cold" or (cache is None and run.drop_caches and not run.prewarm):
        return ", its page cache dropped and its shared_buffers empty (cold start)"
    if run.prewarm:
        return ", its relations loaded into shared_buffers with pg_prewarm before the measured interval (warm start)"
    return " and the page cache as the previous run left it"


def _state_measured(ctx: Context) -> str:
    """What the runs' records say about the starting state they reached (run.json `start_state`)."""
    states = [r.start_state for r in ctx.records.values() if r.start_state is not None]
    if not states:
        return ""
    quiet = sum(1 for s in states if s.autovacuum_quiet)
    out = f"{quiet} of {len(states)} runs started with no autovacuum worker running. "
    ratios = sorted(s.hit_ratio for s in states if s.hit_ratio is not None)
    if ratios:
        steady = sum(1 for s in states if s.steady)
        out += (
            f"The warm starts' buffer hit ratio, measured by the last probe: median {ratios[len(ratios) // 2]:.2f} "
            f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}); {steady} of {len(ratios)} reached a steady ratio within "
            "the passes allowed. "
        )
    return out


def _start_sentence(ctx: Context) -> str:
    """Which state a run starts from (the issue every seed comparison needs said), how many checkpoints the
    runs spanned, and how repeats were decided."""
    c = ctx.cfg
    rungs = "; each rung of the data-set ladder has a database of its own" if c.ladder else ""
    # raw folders measured before the defined starting state have neither record: said as they ran
    settled = any(r.settled is not None for r in ctx.target_records.values())
    stated = any(r.start_state is not None for r in ctx.records.values())
    restored = any(r.restored is not None for r in ctx.records.values())  # as the runs did it
    reloaded = any(r.reloaded is not None for r in ctx.records.values())
    if reloaded:
        return (
            f"**Starting state.** Every run starts from a load of its own{rungs}: just before it, its database is "
            "dropped, created and loaded again as the target's preparation loaded it, vacuumed, analysed and "
            "checkpointed (`run.reload`, timed in each run's run.json, `reloaded`), so what a load leaves on disk is "
            "measured on as many independent loads as the target has runs; then a freshly started server"
            + _cache_words(c.run)
            + (", and a checkpoint just before the measured interval (`start_state` in run.json). " if stated else ". ")
            + _state_measured(ctx)
            + _steal_sentence(ctx)
            + _checkpoint_sentence(ctx)
            + _precision_sentence(c.precision)
        )
    return (
        (
            f"**Starting state.** Every target's data set is loaded once{rungs}"
            if restored
            else f"**Starting state.** Every target's data set is loaded once (not restored before each run{rungs})"
        )
        + (
            ", then vacuumed, analysed and checkpointed, and the target's first run waits until no autovacuum "
            "worker runs"
            if settled
            else ""
        )
        + (
            "; the cluster so prepared is copied aside (outside the target's file system) and copied back before "
            "every run (`run.restore`, timed in each run's run.json, `restored`), so a run starts from the data "
            "set as loaded, whatever the runs before it wrote, with a freshly started server"
            if restored
            else ". A run starts from the data as the target's previous run left it, with a freshly started server"
        )
        + _cache_words(c.run)
        + (
            ", and a checkpoint just before the measured interval (its LSN and the cache state reached are in each "
            "run's run.json, `start_state`). "
            if stated
            else ". "
        )
        + _state_measured(ctx)
        + _steal_sentence(ctx)
        + _checkpoint_sentence(ctx)
        + _precision_sentence(c.precision)
    )


def _steal_sentence(ctx: Context) -> str:
    """How much CPU time the host took during the runs (run.json `host_steal`) and, under `run.steal_retry`, which
    runs were measured again for it."""
    recs = [r for r in ctx.records.values() if r.status == "ok"]
    steal = sorted(r.host_steal for r in recs if r.host_steal is not None)
    retry = ctx.cfg.run.steal_retry
    if not steal:
        return ""
    out = (
        f"The hypervisor took a median {100 * steal[len(steal) // 2]:.1f} % of the CPU time the runs wanted (at most "
        f"{100 * steal[-1]:.1f} %; steal over user, system, irq, softirq and steal time, /proc/stat over each tool run). "
    )
    if retry is None:
        return out
    again = [r for r in recs if r.steal_attempts]
    aside = sum(len(r.steal_attempts or []) for r in again)
    over = sum(1 for r in recs if r.host_steal is not None and r.host_steal > retry.above)
    return out + (
        f"A run during which it took more than {100 * retry.above:g} % was measured again, up to {retry.attempts} "
        f"attempts in all (`run.steal_retry`, stated before the runs; a condition of the host, not of the file system): "
        f"{len(again)} of {len(recs)} runs were, {aside} attempts set aside in `_attempts/`"
        + (f", and {over} kept at their last attempt above the limit. " if over else ". ")
    )


def _checkpoint_sentence(ctx: Context) -> str:
    """How many checkpoints the runs spanned (the seeds' long runs span many; short ones may span none)."""
    ok = ctx.runs.filter(pl.col("status") == "ok")
    if "checkpoints_timed" not in ok.columns:
        return ""
    n = (ok["checkpoints_timed"].fill_null(0) + ok["checkpoints_req"].fill_null(0)).drop_nulls()
    if n.is_empty():
        return ""
    return (
        f"Runs spanned {whole(n.min())} to {whole(n.max())} checkpoints (median {number(n.median()):g}; timed and requested, from "
        f"pg_stat_bgwriter before and after); {int((n < 2).sum())} of {n.len()} runs spanned fewer than two."
    )


def _precision_sentence(prec: Precision | None) -> str:
    if prec is None:
        return ""
    return (
        f" **Repeats until precise.** The cells {', '.join(prec.cells or ['(every cell)'])} ran "
        f"{prec.min_repeats} rounds, then further rounds (up to {prec.max_repeats}) only while some target's median "
        f"was not yet known to ±{100 * prec.half_width:g} % ({100 * prec.confidence:g} % distribution-free "
        "interval)"
        + (f" and less than {prec.budget_min:g} minutes had passed since the first run" if prec.budget_min else "")
        + "; the decision never looked at a p-value. The precision reached per cell is in the precision section."
    )
