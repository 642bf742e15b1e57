"""The paper's threats to validity, each from what the study recorded: the machine, loop devices,
fallback targets, run length against checkpoint_timeout, repeats too few for the tests, noise, CPU steal,
memory limits, zfs-fuse and unsafe settings, machine-wide counters, failed runs."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import cpu_time, report, stats
from pgfslab.analysis.scalar import number, whole
from pgfslab.config import run_copies
from pgfslab.paper.context import Context, names, show
from pgfslab.paper.device_baseline import device_threats
from pgfslab.tools import PG_TOOLS


def threats(ctx: Context) -> None:
    r0 = ctx.runs.row(0, named=True)
    cpus, mem_gib = r0["cpus"], (r0["mem_total_kb"] or 0) / 2**20
    items = []
    max_clients = whole(ctx.runs.filter(pl.col("tool").is_in(list(PG_TOOLS)))["clients"].max())
    if max_clients:
        items.append(
            f"**Small hardware.** {cpus} logical CPUs and {mem_gib:.0f} GiB of memory; the benchmark clients "
            f"share the CPUs with the server{f' (up to {max_clients} clients on {cpus} CPUs)' if max_clients > (cpus or 1) else ''}, "
            "so CPU, not storage, may cap the higher client counts."
        )
    else:
        items.append(f"**Small hardware.** {cpus} logical CPUs and {mem_gib:.0f} GiB of memory.")
    mounts = [ctx.records[r].mount for r in ctx.runs["run_id"].to_list() if r in ctx.records]
    kinds = {m.kind for m in mounts if m is not None}
    if "image" in kinds:
        items.append(
            "**Loop devices.** The targets are image files on the host's own file system; even with direct "
            "I/O, the host's storage stack and its device cache sit below every target. Absolute numbers say "
            "little about dedicated disks; the differences between file systems on the same device are the result."
        )
    fallback = ctx.runs.filter(pl.col("fallback"))["target"].unique().to_list()
    if fallback:
        items.append(
            f"**Fallback targets.** {names(fallback)} ran on plain directories, not on their own file systems."
        )
    dur = whole(ctx.runs["duration_s"].max())
    if ctx.uses_postgres and ctx.ok.height:  # a crash check measures no throughput: nothing to warm up
        rec = ctx.first_record(PG_TOOLS)
        ct = (rec.postgres.settings if rec.postgres else {}).get("checkpoint_timeout") or {}
        ct_s = int(ct.get("setting", 300)) if str(ct.get("setting", "")).isdigit() else 300
        if dur < ct_s:
            items.append(
                f"**Short runs.** Runs of at most {dur} s are shorter than checkpoint_timeout ({ct_s} s): "
                "timed checkpoints and write-back storms of long runs are not sampled; warm-up is a large "
                "share of each run."
            )
    reps = ctx.ok.group_by("target", "workload", "clients").len()["len"]
    if reps.len():
        n = whole(reps.min())
        limits = []
        if stats.median_ci_ranks(n)[2] < 0.95:
            limits.append(f"no cell's median interval reaches 95 % coverage with {n} repeats (6 are needed)")
        if stats.min_possible_p(n, n) >= ctx.cfg.analysis.alpha:
            limits.append(f"the U test cannot reach α = {ctx.cfg.analysis.alpha} with {n}+{n} repeats")
        if limits:
            items.append(
                f"**Few repeats.** As few as {n} repeats per cell: "
                + "; ".join(limits)
                + ". Not significant (`~`) then means 'not shown', not 'no difference'."
            )
    spread = (
        ctx.ok.group_by("target", "workload", "clients")
        .agg((pl.col("value").std() / pl.col("value").mean()).alias("cv"))
        .drop_nulls()
    )
    if spread.height:
        items.append(
            f"**Noise.** Runs of the same cell differ by a coefficient of variation of up to "
            f"{report.pct(number(spread['cv'].max()), 0)} (median {report.pct(number(spread['cv'].median()), 0)}) on this "
            "machine; only interleaved repeats and rank tests are used to compare targets."
        )
    counted = ctx.runs.filter((pl.col("status") == "ok") & ~pl.col("burn_in").fill_null(False)).height
    if counted:  # what the hypervisor took: one measured limit of the instrument's precision
        per_run = cpu_time.per_run(ctx.db, ctx.study)
        effect = ""
        if ctx.ok.height:  # a study of crashes (durability) has runs but no throughput to set steal against
            wl, clients = ctx.headline_cell()
            cell = ctx.ok.filter((pl.col("workload") == wl) & (pl.col("clients").eq_missing(clients)))
            label = f"{wl}, {clients} client{'s' if clients != 1 else ''}" if clients is not None else wl
            effect = cpu_time.steal_effect_sentence(
                cpu_time.steal_and_throughput(cell.select("run_id", "target", "value"), per_run), label
            )
        items.append(f"**Neighbours.** {cpu_time.steal_sentence(per_run['cpu_steal'].to_list(), counted)}." + effect)
    limit_req = [run_copies.resources(r).memory_limit_mb for r in ctx.records.values()]  # the study's, as copied
    applied = [bool(r.cgroup and r.cgroup.applied) for r in ctx.records.values()]
    if any(limit_req) and not all(applied):
        items.append(
            "**Memory limit not applied.** The study asked for a cgroup memory limit, but some runs went ahead "
            "without it (cgroups not writable): their data set was not forced out of memory."
        )
    items += device_threats(ctx)
    items.append(
        "**System-wide counters.** /proc/meminfo, vmstat, diskstats and /proc/stat are machine-wide: anything "
        "else running on the host shows up in Dirty and Writeback, and in the CPU time (busy, I/O wait) the "
        "CPU-bound precondition reads."
    )
    items.append(
        "**Published numbers.** The seed documents ran other hardware, data-set sizes, client counts and "
        "versions; only the direction and relative size of differences are compared."
    )
    failed = ctx.runs.filter(~pl.col("status").is_in(["ok", "skipped"]))  # skipped: a precision round not needed
    if failed.height:
        items.append(f"**Failed runs.** {failed.height} run(s) did not complete and are left out of every statistic.")
    show("## Threats to validity\n\n" + "\n".join(f"* {i}" for i in items))
