"""Was a cell in the seed's regime? The conditions under which a seed's mechanism acts, measured per run from
what the samplers recorded, and checked per cell: a cell that misses one gets "not tested in the seed's
regime" with the measured reason, never a verdict.

Per run (`run_measures`), from the study database:

* `device_busy`: the share of the sampled interval the data device had I/O in flight (/proc/diskstats
  io_ms, as iostat's %util) — the data device is the run's `mount.device` (run.json). On a target throttled
  by a device profile the throttle holds I/O back before it reaches the device, so diskstats see a device
  mostly idle; there the share of the throttle's capacity the run's cgroup used counts too
  (`throttle_busy`: what blkio charged, in operations and bytes, against the limits over the time the
  cgroup's usage covers, the busier direction; the larger of the two is `device_busy`);
* `read_await_ms` (reads' mean time queued and in service, iostat's r_await) and `read_await_var` (the
  variance of its per-second values, the seed 004 post's "variance in the service times");
* `reads_per_s`: reads the data device completed per second over the sampled interval (iostat's r/s);
* `written_bytes` to the data device and `commits` (xact_commit's increase over the run): their ratio is
  `written_per_tx`;
* `cpu_idle`, `cpu_iowait`, `cpu_steal`: the shares of all CPU time (every CPU, /proc/stat's aggregate
  `cpu` line, first to last sample of the run) spent idle, idle with I/O outstanding, and taken by the
  hypervisor for other guests; `cpu_busy` = 1 - idle - iowait (steal counts as busy: the run wanted the CPU
  and did not get it; pgfslab.analysis.cpu_time). Older raw folders have no stat.log: these are null there;
* `hit_ratio`: shared_buffers hits / (hits + reads) over the run (pg_stat_database);
* `checkpoints` the run spanned: the larger of those completed during it (pg_stat_bgwriter, timed + requested)
  and those that started during it, timed or requested by WAL volume, whether or not they completed (the
  server log's checkpoint lines, `pg_checkpoints`: PostgreSQL 15 counts a checkpoint only once it completes,
  and one on a slow disk can write through a whole run);
* `steady`: MSER-5 found a steady state in the run's per-second throughput (after the fixed trim), and
  `steady_n` the samples it had;
* `snapshots_alive`: the most snapshots alive at once (the snapshot scheduler's create/delete events);
* `randread_qd1_iops`: the target's device baseline (fio, 8 kB random reads at QD1, O_DIRECT);
* `fdatasync_p50_us`: the same baseline's median fdatasync of an 8 kB WAL write at QD1 (a WAL flush);
* `reads_per_tx` (in the run facts): blocks the data device read per pgbench transaction, reads_per_s over
  tps; near 0 where the data set is held in memory (the `from_memory` precondition), 1-2 where each
  transaction reads its account row from the device, as when a run starts from dropped caches and its cache
  is still filling;
* `read_budget_share`: on a data device throttled with separate read and write budgets (blkio read_iops and
  write_iops, a device profile), reads_per_s over the read IOPS budget; null on a real device. Near 1, the
  reads ran at their own budget, which writes cannot take from: seed 004's mechanism (checkpoint writes
  starving the reads of one disk head) cannot act there.

The lab's thresholds (stated beside each verdict): I/O-bound when the data device is busy at least
`IO_BOUND` of the run (the talk: by ~75 % utilisation an I/O system is already saturated); the message of a
miss gives the CPUs' I/O wait beside it as evidence, the device decides. CPU-bound when the data device is
busy at most `CPU_BOUND` and the CPUs busy at least `CPU_BUSY` of all CPU time (a run whose clients wait on
I/O or on each other leaves the CPUs idle or in I/O wait); where CPU time was not sampled (raw folders from
before the /proc/stat sampler) the device alone decides, and the check says so. A magnetic-class device does
at most `MAGNETIC_IOPS` random reads per second at QD1 (a 7,200 rpm disk: 100-200). Steady unless more of
the reference side's runs are flagged than stationary runs would be: MSER-5 on a short series is close to a
coin toss (it calls 45 % of perfectly stationary 18-sample series "not steady", more of autocorrelated ones),
so each run's flag is set against the rate of stationary AR(1) series of its length and its own estimated
lag-1 coefficient (stats.series.mser_null_rate, ar1_phi), and the number flagged gets an exact one-sided
Poisson-binomial p (`steady_test`); evaluate controls the family of a claim's cells (Holm, `STEADY_ALPHA`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

import polars as pl

from pgfslab.analysis import queries, stats
from pgfslab.analysis.cpu_time import CPU_MEASURES, cpu_measures
from pgfslab.analysis.device import device_table, has_baseline, run_host
from pgfslab.analysis.stats.series import PHI_STEP
from pgfslab.analysis.wal_device import device_roles
from pgfslab.records.run_record import CgroupRecord, PgFacts, RunRecord

IO_BOUND = 0.5
CPU_BOUND = 0.2
CPU_BUSY = 0.8
MAGNETIC_IOPS = 1000
SNAPSHOTS_ALIVE = 3
FROM_MEMORY_READS = 0.25  # blocks read from the data device per transaction: above it, the run read its data
READ_BUDGET_FULL = 0.9  # reads at >= 90 % of a separate read budget: the budget, not the writes, held them
WRITES_TAKE = 0.05  # writes holding the emulated disk's head >= 5 % of a run: time no read could have
STEADY_ALPHA = 0.05
PRECONDITIONS = {
    "io_bound": f"I/O-bound: the data device busy >= {IO_BOUND:.0%} of the run (median of the reference side A's runs)",
    "cpu_bound": f"CPU-bound: the data device busy <= {CPU_BOUND:.0%} of the run and the CPUs busy (neither idle "
    f"nor in I/O wait) >= {CPU_BUSY:.0%} of all CPU time (/proc/stat; median of the reference side A's runs): a run "
    "that leaves a fifth of the CPUs' time idle waits on something else",
    "steady": "steady: no more of the reference side A's runs flagged not steady by MSER-5 than stationary "
    "AR(1) runs of their length and autocorrelation are (Poisson-binomial test, Holm over the claim's cells at "
    f"alpha {STEADY_ALPHA:g}); B's steadiness is the response under test, shown beside the verdict",
    "magnetic_device": f"a magnetic-class data device: <= {MAGNETIC_IOPS} random 8 kB reads/s at QD1 (device baseline)",
    "snapshots_alive": f"{SNAPSHOTS_ALIVE} snapshots alive at once during the run (the talk's schedule)",
    "checkpoints": "runs that span checkpoints: at least one started (timed or by WAL volume) or completed per run "
    "(the server log and pg_stat_bgwriter; median of the reference side A's runs)",
    "files_2mb": "the deleted files are 2 MB, as seed 003's (an unlink frees what the file holds)",
    "slow_flush": "a WAL flush that takes at least twice the claim's commit_delay, as PostgreSQL's documentation "
    "advises for commit_delay (about half a flush; pg_test_fsync measures it): the WAL device's median fdatasync "
    "of an 8 kB write at QD1 (device baseline)",
    "from_memory": "the data set served from memory, as in the seed's runs below the memory threshold: the data "
    f"device reads at most {FROM_MEMORY_READS:g} blocks per transaction (pgbench; median of the reference side A's "
    "runs)",
    "reads_compete": "reads and writes share the data device's time, as on the seed's one disk (checkpoint "
    "writes can starve reads): on the emulated disk with one head, writes held the head >= "
    f"{WRITES_TAKE:.0%} of the reference side A's runs (the daemon's counters); not a throttle giving each its "
    "own budget while the reads run at theirs "
    f"(>= {READ_BUDGET_FULL:.0%} of the read IOPS budget, median of the reference side A's runs)",
}
MEASURES: dict[str, Any] = {
    "run_id": pl.Utf8,
    "device_busy": pl.Float64,
    "read_await_ms": pl.Float64,
    "read_await_var": pl.Float64,
    "written_bytes": pl.Float64,
    "reads_per_s": pl.Float64,
    "commits": pl.Float64,
    "hit_ratio": pl.Float64,
    "cpu_busy": pl.Float64,
    "cpu_idle": pl.Float64,
    "cpu_iowait": pl.Float64,
    "cpu_steal": pl.Float64,
    "checkpoints": pl.Int64,
    "steady": pl.Boolean,
    "steady_n": pl.Int64,
    "steady_phi": pl.Float64,
    "snapshots_alive": pl.Int64,
    "randread_qd1_iops": pl.Float64,
    "fdatasync_p50_us": pl.Float64,
    "read_await_ckpt": pl.Float64,
    "read_await_quiet": pl.Float64,
    "read_budget_share": pl.Float64,
    "write_busy_share": pl.Float64,
}


def _delta(before: dict[str, int | float | None], after: dict[str, int | float | None], key: str) -> float | None:
    b, a = before.get(key), after.get(key)  # a server counter, before and after the run
    return float(a) - float(b) if a is not None and b is not None else None


def _from_records(recs: dict[str, RunRecord]) -> pl.DataFrame:
    rows = []
    for rid, rec in recs.items():
        pb, pa = rec.postgres_before or PgFacts(), rec.postgres or PgFacts()
        sb, sa = pb.database_stats, pa.database_stats
        bb, ba = pb.bgwriter, pa.bgwriter
        hit, read = _delta(sb, sa, "blks_hit"), _delta(sb, sa, "blks_read")
        ckpt = [_delta(bb, ba, k) for k in ("checkpoints_timed", "checkpoints_req")]
        rows.append(
            {
                "run_id": rid,
                "throttle_busy": throttle_busy(rec),
                "target": rec.target,
                "commits": _delta(sb, sa, "xact_commit"),
                "hit_ratio": hit / (hit + read) if hit is not None and read is not None and hit + read > 0 else None,
                "checkpoints": int(sum(c for c in ckpt if c is not None)) if any(c is not None for c in ckpt) else None,
                "read_iops_budget": read_budget(rec),
                "write_busy_share": write_busy_share(rec),
            }
        )
    schema = {"run_id": pl.Utf8, "throttle_busy": pl.Float64, "target": pl.Utf8, "commits": pl.Float64,
              "hit_ratio": pl.Float64, "checkpoints": pl.Int64, "read_iops_budget": pl.Float64,
              "write_busy_share": pl.Float64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


# the phases of a pgbench/sysbench run (run.json phases_s) from the cgroup's creation to the reading of its usage
CGROUP_SPAN = ("server_start", "prewarm", "facts_before", "samplers_start", "measured", "tool_overhead",
               "samplers_stop", "facts_after")  # fmt: skip


def write_busy_share(rec: RunRecord) -> float | None:
    """On the emulated disk with one head (run.json `disk`, host.disk_daemon): the share of the measured
    window the head spent serving writes, from the daemon's own counters; None on any other device. Every
    millisecond of it is one no read could have: the evidence that reads and writes competed."""
    counters = ((rec.disk.counters if rec.disk else None) or {}).get("measured") or {}  # the daemon's own
    busy, up = counters.get("write_busy_ns"), counters.get("uptime_ns")
    return float(busy) / float(up) if busy is not None and up else None


def read_budget(rec: RunRecord) -> float | None:
    """The read IOPS budget of a data device throttled with separate read and write IOPS budgets (None
    otherwise: a real device, or a throttle on one direction only)."""
    limits = (rec.cgroup.limits if rec.cgroup else None) or {}  # pgfslab.host.cgroups' names
    if limits.get("read_iops") and limits.get("write_iops"):
        return float(limits["read_iops"])
    return None


def throttle_busy(rec: RunRecord) -> float | None:
    """The share of a throttled device's capacity a run used: per direction the larger of operations
    charged / (operations limit x seconds) and bytes charged / (bytes limit x seconds), the busier direction,
    at most 1 (None for a run without blkio throttles or without its usage)."""
    cg = rec.cgroup or CgroupRecord()
    limits, io = cg.limits or {}, (cg.usage or {}).get("io") or {}
    phases = rec.phases_s or {}
    seconds = sum(float(phases.get(p) or 0) for p in CGROUP_SPAN)
    if not io or seconds <= 0:
        return None
    shares = [
        float(io.get(used) or 0) / (float(limits[limit]) * seconds)
        for used, limit in (
            ("read_ios", "read_iops"),
            ("write_ios", "write_iops"),
            ("read_bytes", "read_bps"),
            ("write_bytes", "write_bps"),
        )  # fmt: skip
        if limits.get(limit)
    ]
    return min(1.0, max(shares)) if shares else None


def device_measures(samples: pl.DataFrame) -> pl.DataFrame:
    """Per run, from its data device's diskstats samples (run_id, epoch_s, reads_completed, read_ms, io_ms,
    sectors_written): device_busy, read_await_ms, read_await_var, written_bytes, reads_per_s (module docstring)."""
    if samples.height == 0:
        return pl.DataFrame(schema={k: MEASURES[k] for k in
                                    ("run_id", "device_busy", "read_await_ms", "read_await_var", "written_bytes",
                                     "reads_per_s")})  # fmt: skip
    s = samples.sort("run_id", "epoch_s")
    per_second = s.with_columns(
        (
            pl.col("read_ms").diff().over("run_id") / pl.col("reads_completed").diff().over("run_id").replace(0, None)
        ).alias("await_s")
    )

    def d(c: str) -> pl.Expr:
        return pl.col(c).last() - pl.col(c).first()

    return (
        per_second.group_by("run_id", maintain_order=True)
        .agg(
            (d("io_ms") / (1000 * d("epoch_s")).replace(0, None)).alias("device_busy"),
            (d("read_ms") / d("reads_completed").replace(0, None)).cast(pl.Float64).alias("read_await_ms"),
            pl.col("await_s").drop_nulls().var().alias("read_await_var"),
            (d("sectors_written") * 512).cast(pl.Float64).alias("written_bytes"),
            (d("reads_completed") / d("epoch_s").replace(0, None)).cast(pl.Float64).alias("reads_per_s"),
            pl.len().alias("_n"),
        )
        .filter(pl.col("_n") >= 2)
        .drop("_n")
    )


def checkpoint_read_wait(
    samples: pl.DataFrame, pgstat: pl.DataFrame, windows: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per run: the data device's read await (read ms / reads, as iostat's r_await) over the sampled seconds
    in which a checkpoint of the workload ran and over the other seconds: `read_await_ckpt` and
    `read_await_quiet` (seed 004's "first a checkpoint, then elevated read wait").

    A checkpoint's seconds are, where the run's server log gave them (`windows`: run_id, start_s, end_s in epoch
    seconds, end_s null for one the log ended in), from its start to its end; else the seconds after which
    pg_stat_bgwriter's buffers_checkpoint rose (`pgstat`), which PostgreSQL 15 reports only once a checkpoint
    completes: a checkpoint that outlasts the run leaves no such second."""
    schema = {"run_id": pl.Utf8, "read_await_ckpt": pl.Float64, "read_await_quiet": pl.Float64}
    if samples.height == 0:
        return pl.DataFrame(schema=schema)
    per_second = (
        samples.sort("run_id", "epoch_s")
        .with_columns(
            pl.col("reads_completed").diff().over("run_id").alias("reads"),
            pl.col("read_ms").diff().over("run_id").alias("ms"),
        )
        .drop_nulls("reads")
    )
    logged = windows if windows is not None and windows.height else None
    parts = []
    if logged is not None:
        in_log = per_second.join(logged.select("run_id").unique(), on="run_id", how="semi")
        flagged = (
            in_log.select("run_id", "epoch_s")
            .join(logged, on="run_id", how="inner")
            .with_columns(
                (
                    (pl.col("epoch_s") >= pl.col("start_s"))
                    & (pl.col("epoch_s") <= pl.col("end_s").fill_null(math.inf))
                ).alias("ckpt")
            )
            .group_by("run_id", "epoch_s")
            .agg(pl.col("ckpt").any())
        )
        parts.append(in_log.join(flagged, on=["run_id", "epoch_s"], how="left"))
        per_second = per_second.join(logged.select("run_id").unique(), on="run_id", how="anti")
    if pgstat.height and "buffers_checkpoint_delta" in pgstat.columns and per_second.height:
        marks = (
            pgstat.select(
                "run_id", pl.col("epoch_s").cast(pl.Float64), (pl.col("buffers_checkpoint_delta") > 0).alias("ckpt")
            )
            .drop_nulls()
            .sort("run_id", "epoch_s")
        )
        # both sides are sorted by run and time above (polars cannot check that within `by` groups)
        parts.append(
            per_second.join_asof(
                marks, on="epoch_s", by="run_id", strategy="nearest", tolerance=1.0, check_sortedness=False
            ).drop_nulls("ckpt")
        )
    if not parts:
        return pl.DataFrame(schema=schema)
    joined = pl.concat(parts, how="diagonal_relaxed")
    return joined.group_by("run_id").agg(
        (pl.col("ms").filter(pl.col("ckpt")).sum() / pl.col("reads").filter(pl.col("ckpt")).sum().replace(0, None))
        .cast(pl.Float64).alias("read_await_ckpt"),
        (pl.col("ms").filter(~pl.col("ckpt")).sum() / pl.col("reads").filter(~pl.col("ckpt")).sum().replace(0, None))
        .cast(pl.Float64).alias("read_await_quiet"),
    )  # fmt: skip


def _diskstats(db: str, study: str, recs: dict[str, RunRecord]) -> pl.DataFrame:
    roles = device_roles(recs).filter(pl.col("role") != "WAL")  # the tables' device (with WAL or without)
    if roles.height == 0 or not queries.has_table(db, "diskstats"):
        return pl.DataFrame()
    samples = queries.frame(
        db,
        """
        SELECT d.run_id, epoch(d.ts) AS epoch_s, d.device, d.reads_completed, d.read_ms, d.io_ms, d.sectors_written
        FROM diskstats d JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND list_contains(?, d.device)""",
        [study, sorted(set(roles["device"].to_list()))],
    )
    return samples.join(roles.select("run_id", "device"), on=["run_id", "device"], how="inner")


def alive_at_once(events: pl.DataFrame) -> pl.DataFrame:
    """Per run, the most snapshots alive at once (creates +1, deletes -1, in time order; a delete at the
    same instant as a create counts first, as the scheduler expires before it creates)."""
    if events.height == 0:
        return pl.DataFrame(schema={"run_id": pl.Utf8, "snapshots_alive": pl.Int64})
    step = pl.when(pl.col("action") == "create").then(1).when(pl.col("action") == "delete").then(-1).otherwise(0)
    return (
        events.with_columns(step.alias("step"))
        .sort("run_id", "epoch_s", "step")
        .with_columns(pl.col("step").cum_sum().over("run_id").alias("alive"))
        .group_by("run_id")
        .agg(pl.col("alive").max().cast(pl.Int64).alias("snapshots_alive"))
    )


def steadiness(series: pl.DataFrame, trim_s: float) -> pl.DataFrame:
    """Per run: did MSER-5 find a steady state in its per-second throughput after `trim_s` seconds, on how
    many samples (`steady_n`), and the lag-1 coefficient of its AR(1) noise (`steady_phi`, stats.ar1_phi,
    from first differences): what the check's false-alarm rate depends on."""
    schema = {"run_id": pl.Utf8, "steady": pl.Boolean, "steady_n": pl.Int64, "steady_phi": pl.Float64}
    if series.height == 0:
        return pl.DataFrame(schema=schema)
    kept = stats.trim_warmup(series.select("run_id", "t_s", "tps"), trim_s)
    steady = (
        stats.apply_steady_state(kept, "tps", "t_s", by=["run_id"]).group_by("run_id").agg(pl.col("steady").first())
    )
    values = kept.filter(pl.col("tps").is_not_null()).sort("run_id", "t_s")
    n = values.group_by("run_id").agg(
        pl.len().cast(pl.Int64).alias("steady_n"),
        pl.col("tps").map_batches(lambda s: pl.Series([stats.ar1_phi(s.to_numpy())]), returns_scalar=True,
                                  return_dtype=pl.Float64).alias("steady_phi"),
    )  # fmt: skip
    return steady.join(n, on="run_id", how="left").cast(schema)  # type: ignore[arg-type]


# a checkpoint of the workload: timed or requested by WAL volume (`xlog` before PostgreSQL 10); not the lab's own
# forced one before the measured window, nor the shutdown checkpoint
WORKLOAD_CHECKPOINT = r"\b(time|wal|xlog)\b"


def checkpoint_windows(db: str, study: str) -> pl.DataFrame:
    """The workload's checkpoints in each successful run's server log: run_id, start_s, end_s (epoch seconds;
    end_s null for one the log ended in)."""
    return (
        queries.checkpoint_log(db, study)
        .filter(
            pl.col("start_epoch").is_not_null()
            & pl.col("reason").fill_null("").str.to_lowercase().str.contains(WORKLOAD_CHECKPOINT)
        )
        .select("run_id", pl.col("start_epoch").alias("start_s"), pl.col("end_epoch").alias("end_s"))
    )


def checkpoints_started(db: str, study: str) -> pl.DataFrame:
    """Per run with a server log: the checkpoints that started during it, timed or requested by WAL volume
    (`time`, `wal`; `xlog` before PostgreSQL 10), completed or not: run_id, checkpoints_started. The lab's own
    checkpoint before the measured window (`immediate force wait`) and the shutdown checkpoint are not the
    workload's."""
    if not queries.has_table(db, "pg_checkpoints"):
        return pl.DataFrame(schema={"run_id": pl.Utf8, "checkpoints_started": pl.Int64})
    return queries.frame(
        db,
        """
        SELECT c.run_id, count(*)::BIGINT AS checkpoints_started
        FROM pg_checkpoints c JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND regexp_matches(lower(coalesce(c.reason, '')), ?)
        GROUP BY c.run_id""",
        [study, WORKLOAD_CHECKPOINT],
    )


def run_measures(db: str, study: str, trim_s: float, series: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per successful run: MEASURES (null where the sampler did not record it)."""
    recs = queries.run_records(db, study)
    base = _from_records(recs)
    if base.height == 0:
        return pl.DataFrame(schema=MEASURES)
    disk = _diskstats(db, study, recs)
    dev = device_measures(disk)
    pgs = queries.pgstat(db, study)
    windows = checkpoint_windows(db, study)
    dev = dev.join(checkpoint_read_wait(disk, pgs, windows), on="run_id", how="left") if dev.height else dev
    if series is None:
        try:
            series = queries.throughput(db, study)
        except queries.MissingData:
            series = pl.DataFrame()
    out = base.join(dev, on="run_id", how="left") if dev.height else base
    out = out.with_columns(
        pl.max_horizontal("device_busy", "throttle_busy").alias("device_busy")
        if "device_busy" in out.columns
        else pl.col("throttle_busy").alias("device_busy")
    )
    out = out.with_columns(
        (pl.col("reads_per_s") / pl.col("read_iops_budget")).alias("read_budget_share")
        if "reads_per_s" in out.columns
        else pl.lit(None, pl.Float64).alias("read_budget_share")
    )
    logged = checkpoints_started(db, study)
    if logged.height:
        out = (
            out.join(logged, on="run_id", how="left")
            .with_columns(pl.max_horizontal("checkpoints", "checkpoints_started").alias("checkpoints"))
            .drop("checkpoints_started")
        )
    out = out.join(cpu_measures(queries.cpu_stat(db, study)), on="run_id", how="left")
    out = out.join(steadiness(series, trim_s), on="run_id", how="left")
    out = out.join(alive_at_once(queries.snapshot_events(db, study)), on="run_id", how="left")
    if has_baseline(db, study):  # else the device class is not measured (the precondition says so)
        # each run against its own host's baseline of its target (a merge of days measured each day's)
        device = device_table(db, study).select(
            "target", "host", *(pl.col(c).cast(pl.Float64) for c in ("randread_qd1_iops", "fdatasync_p50_us"))
        )
        out = (
            out.with_columns(run_host(pl.col("run_id")).alias("host"))
            .join(device, on=["target", "host"], how="left", nulls_equal=True)
            .drop("host")
        )
    return pl.concat([pl.DataFrame(schema=MEASURES), out.select([c for c in MEASURES if c in out.columns])],
                     how="diagonal_relaxed")  # fmt: skip


def _median(runs: pl.DataFrame, col: str) -> float | None:
    if col not in runs.columns:
        return None
    v = runs[col].drop_nulls()
    return float(statistics.median(v.cast(pl.Float64).to_list())) if v.len() else None


# quantities read from the data device's read await (diskstats), which a blkio throttle hides (module docstring)
AWAIT_QUANTITIES = ("read_await_variance", "checkpoint_read_wait")


def throttled_await(quantity: str, a: pl.DataFrame, b: pl.DataFrame) -> list[str]:
    """A read-await quantity on a throttled (emulated) data device is the real device's below the throttle:
    the cell is not in the seed's regime (empty when the quantity or the targets are not concerned)."""
    if quantity not in AWAIT_QUANTITIES:
        return []
    # the emulated disk's diskstats are its own (the loop device sits on it); only a throttle hides its waits
    throttled = [
        s.filter(pl.col("write_busy_share").is_null()) if "write_busy_share" in s.columns else s for s in (a, b)
    ]
    profiles = sorted({p for s in throttled if "device_profile" in s.columns for p in s["device_profile"].drop_nulls()})
    if not profiles:
        return []
    return [f"the data device is emulated ({', '.join(profiles)}: a blkio throttle), and diskstats' read await "
            "does not see the throttle's waits: it is the real device's below it"]  # fmt: skip


def _cpu_shares(s: pl.DataFrame) -> dict[str, float] | None:
    """One side's medians of the CPU measures, or None when its CPU time was not sampled (cpu_measures
    gives all four or none)."""
    m = {c: _median(s, c) for c in CPU_MEASURES}
    return None if any(v is None for v in m.values()) else m  # type: ignore[return-value]


def _cpu_bound(busy: float, a: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The CPU-bound precondition on the reference side A: its data device quiet and, where CPU time was
    sampled, its CPUs busy. Without CPU samples the device alone decides, as before the lab sampled
    /proc/stat, and the check says so."""
    device = f"the data device busy {busy:.0%} of the run"
    shares = _cpu_shares(a)
    if shares is None:
        unchecked = ["cpu-bound: CPU time was not sampled (no /proc/stat samples, stat.log): the data device "
                     "alone decided"]  # fmt: skip
        if busy <= CPU_BOUND:
            return [], unchecked
        return [f"not CPU-bound: {device} (median of A's runs; the lab calls <= {CPU_BOUND:.0%} CPU-bound)"], unchecked
    if busy <= CPU_BOUND and shares["cpu_busy"] >= CPU_BUSY:
        return [], []
    cpu = (f"the CPUs busy {shares['cpu_busy']:.0%} of their time (idle {shares['cpu_idle']:.0%}, I/O wait "
           f"{shares['cpu_iowait']:.0%})")  # fmt: skip
    return [f"not CPU-bound: {device}, {cpu} (medians of A's runs; the lab calls CPU-bound a device busy <= "
            f"{CPU_BOUND:.0%} and the CPUs busy >= {CPU_BUSY:.0%})"], []  # fmt: skip


def _iowait_evidence(a: pl.DataFrame) -> str:
    """The CPUs' I/O wait of side A beside the device's utilisation (empty when not sampled)."""
    wait = _median(a, "cpu_iowait")
    return "" if wait is None else f"; the CPUs in I/O wait {wait:.0%} of their time"


@dataclass(frozen=True)
class SteadyTest:
    """One side's steady-state test: `p` (None: it could not be checked, `message` says why) and the
    message a flagged side gets."""

    p: float | None
    message: str
    too_short: int | None = None  # samples per run (median) when every run is too short for MSER-5


MSER_TOO_SHORT = "too few for MSER-5 ever to find a steady state (15 at least)"


def steady_test(label: str, side: pl.DataFrame) -> SteadyTest:
    """Are more of a side's runs flagged not steady by MSER-5 than stationary runs would be? Each run's own
    null rate (`stats.mser_null_rate` at its length and its AR(1) coefficient, on the PHI_STEP grid), and
    the exact one-sided p of the number flagged (Poisson-binomial). Runs too short for MSER-5 ever to
    find a steady state carry no information and are left out."""
    v = side["steady"] if "steady" in side.columns else pl.Series([], dtype=pl.Boolean)
    if v.drop_nulls().len() == 0:
        return SteadyTest(None, f"the steady state of side {label} could not be checked: no per-second throughput")
    if "steady_n" not in side.columns or side["steady_n"].drop_nulls().len() == 0:
        return SteadyTest(None, f"the steady state of side {label} could not be checked: the runs' series "
                          "lengths are unknown")  # fmt: skip
    phi = side["steady_phi"] if "steady_phi" in side.columns else pl.Series([None] * side.height, dtype=pl.Float64)
    runs = [
        (bool(s), int(n), stats.mser_null_rate(int(n), round(round((f or 0.0) / PHI_STEP) * PHI_STEP, 2)))
        for s, n, f in zip(v, side["steady_n"], phi)
        if s is not None and n is not None
    ]
    usable = [(s, n, r) for s, n, r in runs if r < 1.0]
    if not usable:
        n = round(_median(side, "steady_n") or 0)
        return SteadyTest(None, f"the steady state of side {label} could not be checked: {n} samples per run, "
                          f"{MSER_TOO_SHORT}", too_short=n)  # fmt: skip
    flagged = sum(not s for s, _, _ in usable)
    p = stats.poisson_binomial_sf(flagged, [r for *_, r in usable])
    rate = sum(r for *_, r in usable) / len(usable)
    n_med, phi_med = _median(side, "steady_n"), _median(side, "steady_phi")
    ar = f", AR(1) φ {phi_med:.2f} (median)" if phi_med is not None else ""
    return SteadyTest(p, f"not steady: {flagged} of {len(usable)} runs of side {label} found no steady state "
                      f"(MSER-5), where stationary runs of their length and autocorrelation ({n_med:.0f} samples"
                      f"{ar}) are flagged {rate:.0%} of the time (Poisson-binomial p = {p:.3f})")  # fmt: skip


def steady_check(label: str, side: pl.DataFrame, alpha: float = STEADY_ALPHA) -> list[str]:
    """The steady precondition for one side at `alpha`: the miss, or why it could not be checked (empty when
    the side is steady)."""
    t = steady_test(label, side)
    if t.p is None:
        return [t.message]
    return [t.message] if t.p < alpha else []


def _delay_against_flush(a: pl.DataFrame, b: pl.DataFrame) -> list[str]:
    """The slow_flush precondition: the sides' larger commit_delay (a setting of the conditions) against the WAL
    device's measured flush (the device baseline), never against the throughput under test."""
    flush = [x for x in (_median(s, "fdatasync_p50_us") for s in (a, b)) if x is not None]
    delays = [_microseconds(v) for s in (a, b) if "commit_delay" in s.columns for v in s["commit_delay"].drop_nulls()]
    delay = max((d for d in delays if d is not None), default=0.0)
    if not flush:
        return ["the WAL device's flush time could not be checked: no device baseline (the study ran none)"]
    if 2 * delay <= min(flush):
        return []
    return [f"commit_delay {delay:,.0f} µs is more than half the WAL device's flush ({min(flush):,.0f} µs, median "
            "fdatasync of an 8 kB write at QD1, device baseline): PostgreSQL's documentation sets it at about half "
            "a flush; a longer delay holds each commit longer than the flush it would share"]  # fmt: skip


def _microseconds(value: object) -> float | None:
    """commit_delay as the facts carry it (text, microseconds: PostgreSQL's unit for it)."""
    try:
        return float(str(value))
    except ValueError:
        return None


def _separate_budgets(a: pl.DataFrame) -> list[str]:
    """The reads_compete precondition on the reference side A: a throttled data device that ran A's reads at
    their own budget measured how many reads each transaction needs, not how checkpoint writes starve
    reads."""
    share, rate = _median(a, "read_budget_share"), _median(a, "reads_per_s")
    if share is None or rate is None or share < READ_BUDGET_FULL:
        return []
    # the budget run.json recorded (one per target), not the ratio of two medians from different runs
    budget = _median(a, "read_iops_budget") or rate / share
    return [f"reads and writes do not compete for the data device: its throttle gives them separate budgets "
            f"(blkio, cgroup v1), and side A's reads ran at {share:.0%} of theirs (median {rate:,.0f} reads/s "
            f"of {budget:,.0f} allowed), so checkpoint writes could not take time from them as on the seed's "
            "one disk"]  # fmt: skip


def check(
    names: tuple[str, ...] | list[str], a: pl.DataFrame, b: pl.DataFrame, steady: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The cell's runs against the claim's preconditions: (what the cell misses, with the measured reason;
    notes on a check made with less than the lab samples today). A miss means "not tested in the seed's
    regime", and so does a precondition that could not be checked at all (no device baseline, no diskstats,
    ...): the lab cannot say the seed's mechanism could act, so it draws no verdict.

    A precondition asks whether the seed's mechanism could act, so it is measured on the conditions (the
    device baseline, the snapshot schedule, the files' size: both sides) and on the reference side A, never
    on the response under test: a treatment that idles the device or unsettles the throughput must not
    silence its own finding. `steady`: the steady check's outcome when the caller decided it over several
    cells at once (evaluate: Holm over a claim's cells)."""
    miss: list[str] = []
    unchecked: list[str] = []
    for name in names:
        if name in ("io_bound", "cpu_bound"):
            busy = _median(a, "device_busy")
            if busy is None:
                miss.append(f"{'I/O' if name == 'io_bound' else 'CPU'}-bound could not be checked: the data "
                            "device's diskstats were not sampled")  # fmt: skip
            elif name == "io_bound" and busy < IO_BOUND:
                miss.append(f"not I/O-bound: the data device busy {busy:.0%} of side A's run (median; the lab "
                            f"calls >= {IO_BOUND:.0%} I/O-bound){_iowait_evidence(a)}")  # fmt: skip
            elif name == "cpu_bound":
                m, u = _cpu_bound(busy, a)
                miss += m
                unchecked += u
        elif name == "steady":
            miss += steady_check("A", a) if steady is None else steady
        elif name == "magnetic_device":
            iops = [_median(s, "randread_qd1_iops") for s in (a, b)]
            known = [x for x in iops if x is not None]
            if not known:
                miss.append("the device class could not be checked: no device baseline (the study ran none)")
            elif max(known) > MAGNETIC_IOPS:  # both sides' data devices: one fast side is not the seed's set-up
                miss.append(f"not a magnetic-class device: the data device does {max(known):,.0f} random 8 kB "
                            f"reads/s at QD1 (device baseline; a magnetic disk does 100-200)")  # fmt: skip
        elif name == "slow_flush":
            miss += _delay_against_flush(a, b)
        elif name == "snapshots_alive":
            alive = [_median(s, "snapshots_alive") for s in (a, b)]
            most = max((x for x in alive if x is not None), default=None)
            if most is None:
                miss.append("no snapshots were taken during these runs")
            elif most < SNAPSHOTS_ALIVE:
                miss.append(f"at most {most:.0f} snapshots alive at once (the talk kept {SNAPSHOTS_ALIVE} alive)")
        elif name == "checkpoints":
            ck = _median(a, "checkpoints")
            if ck is None:
                miss.append("checkpoints could not be checked: pg_stat_bgwriter not recorded")
            elif ck < 1:
                miss.append("side A's runs span no checkpoint (median 0 started or completed per run)")
        elif name == "files_2mb":
            sizes = [_median(s, "file_bytes") for s in (a, b)]
            known = [x for x in sizes if x is not None]
            if len(known) < len(sizes):
                miss.append("the file size could not be checked: not an fsmicro delete")
            elif min(known) < 2_000_000:
                miss.append(f"files of {min(known) / 1024:,.0f} KiB were deleted, the seed's were 2 MB")
        elif name == "from_memory":
            per_tx = _median(a, "reads_per_tx")
            if per_tx is None:
                miss.append("serving from memory could not be checked: no diskstats or no pgbench throughput")
            elif per_tx > FROM_MEMORY_READS:
                miss.append(f"the data set was not served from memory: side A's data device read {per_tx:.1f} "
                            "blocks per transaction (median), so the runs measured a cache filling from the "
                            "device, not a data set held in memory")  # fmt: skip
        elif name == "reads_compete":
            share = _median(a, "write_busy_share")
            if share is None:
                miss += _separate_budgets(a)
            elif share < WRITES_TAKE:
                miss.append(f"reads had the emulated disk's one head to themselves: writes held it {share:.1%} of "
                            f"side A's runs (median; the lab asks >= {WRITES_TAKE:.0%} for reads and writes to "
                            "compete)")  # fmt: skip
            else:
                shares = ", ".join(f"{label} {v:.0%}" for label, v in (("A", share), ("B", _median(b, "write_busy_share")))
                                   if v is not None)  # fmt: skip
                unchecked.append(f"reads competed with writes for the emulated disk's one head: writes held it "
                                 f"{shares} of the runs (median, the daemon's counters)")  # fmt: skip
    return miss, unchecked
