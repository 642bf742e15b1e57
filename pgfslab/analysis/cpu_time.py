"""CPU time per run, from the /proc/stat sampler (`stat.log`, table `cpu_stat`, aggregate `cpu` line: every
CPU of the machine): the shares of all CPU time between the run's first and last sample spent idle
(`cpu_idle`), idle with I/O outstanding (`cpu_iowait`), taken by the hypervisor for other guests
(`cpu_steal`), and `cpu_busy` = 1 - idle - iowait (steal counts as busy: the run wanted the CPU and did not
get it). The counters are machine-wide: the server, the clients and anything else running.

Used by the verdicts' CPU-bound precondition (`verdicts.regime`), by the run evidence beside an outlying run
(`run_evidence`), and as one measured limit of the instrument's precision (CPU steal: `steal_sentence`, in
the paper's threats and `make bench`'s precision figures). Raw folders recorded before the lab sampled
/proc/stat have no stat.log: their runs have no CPU measures, and the sentences say it was not sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
from scipy.stats import spearmanr

from pgfslab.analysis import queries

# the states a CPU's time is split into (guest and guest_nice are already counted in user and nice)
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
CPU_MEASURES = ("cpu_busy", "cpu_idle", "cpu_iowait", "cpu_steal")
SCHEMA = {"run_id": pl.Utf8, **{c: pl.Float64 for c in CPU_MEASURES}}


def cpu_measures(samples: pl.DataFrame) -> pl.DataFrame:
    """Per run, from the aggregate `cpu` line's samples (run_id, epoch_s, CPU_STATES; a counter the kernel
    does not print is null and counts as 0): CPU_MEASURES over its first to last sample. A run with fewer
    than two samples, or no ticks between them, has none."""
    if samples.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    s = samples.sort("run_id", "epoch_s").with_columns([pl.col(c).cast(pl.Int64).fill_null(0) for c in CPU_STATES])
    d = s.group_by("run_id", maintain_order=True).agg(
        *[(pl.col(c).last() - pl.col(c).first()).alias(c) for c in CPU_STATES], pl.len().alias("_n")
    )
    total = pl.sum_horizontal(CPU_STATES).replace(0, None).cast(pl.Float64)
    return (
        d.filter(pl.col("_n") >= 2)
        .with_columns(total.alias("_total"))
        .select(
            "run_id",
            (1 - (pl.col("idle") + pl.col("iowait")) / pl.col("_total")).alias("cpu_busy"),
            (pl.col("idle") / pl.col("_total")).alias("cpu_idle"),
            (pl.col("iowait") / pl.col("_total")).alias("cpu_iowait"),
            (pl.col("steal") / pl.col("_total")).alias("cpu_steal"),
        )
        .drop_nulls("cpu_busy")
        .cast(SCHEMA)  # type: ignore[arg-type]
    )


# /proc/stat counts in USER_HZ, which Linux fixes at 100 on every architecture the lab runs on (the kernel's
# own HZ may differ; /proc/stat converts)
USER_HZ = 100
# the time the machine spent working for the run: every CPU's user, nice, system, irq and softirq time (the
# server, the clients, kworkers, journal and btrfs threads, the zfs-fuse daemon), not idle, I/O wait or steal
WORK_STATES = ("user", "nice", "system", "irq", "softirq")


def cpu_per_transaction(samples: pl.DataFrame, headline: pl.DataFrame) -> pl.DataFrame:
    """Per run: machine-wide CPU milliseconds per transaction (`cpu_ms_per_tx`), the CPU seconds per second of
    the sampled interval (WORK_STATES over the aggregate `cpu` line, first to last sample) over the run's
    throughput (`headline`'s value, transactions per second). A file system that spends more CPU per commit
    (checksums, compression, copy-on-write bookkeeping, a userspace daemon) shows it here even where the
    throughput is the same. Rates on both sides, so that the sampler's window need not match the workload's
    to the second."""
    schema = {"run_id": pl.Utf8, "cpu_ms_per_tx": pl.Float64}
    if samples.height == 0 or headline.height == 0:
        return pl.DataFrame(schema=schema)
    s = samples.sort("run_id", "epoch_s").with_columns([pl.col(c).cast(pl.Int64).fill_null(0) for c in WORK_STATES])
    work = pl.sum_horizontal(WORK_STATES)
    per_s = (
        s.group_by("run_id", maintain_order=True)
        .agg(
            ((work.last() - work.first()) / USER_HZ).alias("_cpu_s"),
            (pl.col("epoch_s").last() - pl.col("epoch_s").first()).alias("_wall_s"),
        )
        .filter(pl.col("_wall_s") > 0)
    )
    return (
        per_s.join(headline.select("run_id", "value"), on="run_id", how="inner")
        .filter(pl.col("value") > 0)
        .select("run_id", (1000 * pl.col("_cpu_s") / pl.col("_wall_s") / pl.col("value")).alias("cpu_ms_per_tx"))
        .cast(schema)  # type: ignore[arg-type]
    )


def per_run(db: str | Path, study: str) -> pl.DataFrame:
    """CPU_MEASURES of the study's successful runs that sampled /proc/stat."""
    return cpu_measures(queries.cpu_stat(db, study))


def steal_sentence(steal: Sequence[float | None], runs: int) -> str:
    """What the hypervisor took, over the runs: the median and largest per-run steal share of those that
    sampled /proc/stat, out of `runs`; or that it was not sampled."""
    got = sorted(x for x in steal if x is not None)
    if not got:
        return ("CPU steal: not sampled (no /proc/stat samples in these runs' raw folders): how much CPU time "
                "the hypervisor took from the runs is not known")  # fmt: skip
    n = len(got)
    median = got[n // 2] if n % 2 else (got[n // 2 - 1] + got[n // 2]) / 2
    of = f"{n} runs" if n == runs else f"{n} of {runs} runs"
    return (f"CPU steal: {100 * median:.1f} % of the CPUs' time over the runs (median of {of}, at most "
            f"{100 * got[-1]:.1f} %; /proc/stat): the hypervisor gave it to other guests")  # fmt: skip


def steal_and_throughput(runs: pl.DataFrame, steal: pl.DataFrame) -> tuple[float, float, int] | None:
    """Does a run's throughput follow what the hypervisor took? `runs` holds one cell's runs (run_id, target,
    value), `steal` the per-run shares (run_id, cpu_steal). Each run's value is set against its target's
    median (so the targets' own levels do not count) and ranked against its steal: Spearman's rho, its
    two-sided p and the number of runs; None with fewer than 6 runs that sampled /proc/stat, or no spread."""
    both = runs.join(steal.select("run_id", "cpu_steal"), on="run_id").drop_nulls(["value", "cpu_steal"])
    if both.height < 6 or both["cpu_steal"].n_unique() < 2:
        return None
    rel = both.with_columns((pl.col("value") / pl.col("value").median().over("target")).alias("rel"))
    res = spearmanr(rel["cpu_steal"].to_numpy(), rel["rel"].to_numpy())
    return float(res.statistic), float(res.pvalue), rel.height


def steal_effect_sentence(effect: tuple[float, float, int] | None, cell: str) -> str:
    """The headline cell's runs against their CPU steal, in words (empty when not measured)."""
    if effect is None:
        return ""
    rho, p, n = effect
    shown = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
    if p < 0.05 and rho < 0:
        return (f" In the headline cell ({cell}) a run's throughput, against its target's median, falls as the "
                f"steal rises (Spearman ρ = {rho:.2f}, {shown}, {n} runs): much of the run-to-run noise is the "
                "hypervisor's, not the file systems'.")  # fmt: skip
    return (f" In the headline cell ({cell}) the runs' throughput, against each target's median, does not follow "
            f"the steal (Spearman ρ = {rho:.2f}, {shown}, {n} runs).")  # fmt: skip
