"""The WAL device apart from the data device: per run, the block-device counters (/proc/diskstats, the
lab's sampler) of the device under the target's tables and, when the target keeps WAL on another target
(`wal_on`: initdb -X), of the device under its WAL, each on its own, never summed.

Which device is which comes from the run's own provenance (run.json): `mount.device` is the data
device, `wal.device` the WAL device (a loop device attached for that run; its number may change from
run to run, so the role is looked up per run). A target without `wal_on` keeps WAL in PGDATA: its one
device is `data+WAL`.

Per run and device, over the sampled interval (first to last sample of the run, set-up of pgbench and
all; sectors are 512 bytes whatever the device, Documentation/admin-guide/iostats.rst):

* write_iops = writes completed / s; write_mb_s = sectors written x 512 / 1e6 / s;
* write_await_ms = write_ms / writes completed (the mean time a write spent queued and in service, as
  iostat's w_await); flushes_per_s = flush requests completed / s (kernel 5.5+, null before);
* read_iops = reads completed / s.

A cell's value is the median of its runs with the distribution-free interval (`stats.cell_summary`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pgfslab.analysis import queries, stats
from pgfslab.records.run_record import MountFacts, RunRecord

ROLE_DATA = "data"
ROLE_WAL = "WAL"
ROLE_BOTH = "data+WAL"
METRICS = {
    "write_iops": "write IOPS",
    "write_mb_s": "write MB/s",
    "write_await_ms": "write await ms",
    "flushes_per_s": "flushes/s",
}
ROLE_SCHEMA: dict[str, Any] = {"run_id": pl.Utf8, "role": pl.Utf8, "device": pl.Utf8, "on_target": pl.Utf8}


def _dev(path: Any) -> str | None:
    """'/dev/loop3' -> 'loop3' (the name /proc/diskstats prints); None for no device."""
    if not path:
        return None
    return str(path).rstrip("/").rsplit("/", 1)[-1]


def device_roles(records: dict[str, RunRecord]) -> pl.DataFrame:
    """Per run, its data device and (with `wal_on`) its WAL device, from run.json: run_id, role, device,
    on_target (the target whose file system is on that device). Runs without a block device (a fallback
    directory, tmpfs) have no row."""
    rows = []
    for rid, rec in records.items():
        mount, wal = rec.mount or MountFacts(), rec.wal
        data_dev, wal_dev = _dev(mount.device), _dev(wal.device if wal else None)
        target = str(rec.target or mount.name or "")
        if data_dev and not str(mount.device).startswith("/dev/"):
            data_dev = None  # tmpfs, an existing mount's source name: not a block device
        if wal_dev and wal is not None and not str(wal.device).startswith("/dev/"):
            wal_dev = None
        if data_dev:
            role = ROLE_DATA if wal else ROLE_BOTH
            rows.append({"run_id": rid, "role": role, "device": data_dev, "on_target": target})
        if wal_dev and wal_dev != data_dev:
            rows.append(
                {"run_id": rid, "role": ROLE_WAL, "device": wal_dev, "on_target": str(wal.target if wal else None)}
            )
    return pl.DataFrame(rows, schema=ROLE_SCHEMA)


def diskstats(db: str, study: str, devices: list[str]) -> pl.DataFrame:
    """The diskstats samples of the study's successful runs for the named devices (epoch seconds)."""
    if not devices or not queries.has_table(db, "diskstats"):
        return pl.DataFrame()
    return queries.frame(
        db,
        """
        SELECT d.run_id, epoch(d.ts) AS epoch_s, d.device, d.reads_completed, d.writes_completed,
               d.sectors_written, d.write_ms, d.flushes_completed
        FROM diskstats d JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND list_contains(?, d.device)
        ORDER BY d.run_id, d.device, d.ts""",
        [study, sorted(set(devices))],
    )


def run_io(samples: pl.DataFrame, roles: pl.DataFrame) -> pl.DataFrame:
    """Per run and role (`device_roles`): the device's counters from the run's first to its last sample
    as rates (the module's docstring), with `seconds` and `samples`."""
    if samples.height == 0 or roles.height == 0:
        return pl.DataFrame()

    def d(c: str) -> pl.Expr:
        return pl.col(c).last() - pl.col(c).first()

    per = (
        samples.join(roles, on=["run_id", "device"], how="inner")
        .sort("run_id", "device", "epoch_s")
        .group_by("run_id", "role", "device", "on_target", maintain_order=True)
        .agg(
            pl.len().alias("samples"),
            d("epoch_s").alias("seconds"),
            d("writes_completed").alias("writes"),
            d("sectors_written").alias("sectors"),
            d("write_ms").alias("write_ms"),
            d("flushes_completed").alias("flushes"),
            d("reads_completed").alias("reads"),
        )
        .filter(pl.col("samples") >= 2)
    )
    s = pl.col("seconds").replace(0, None)
    return per.with_columns(
        (pl.col("writes") / s).alias("write_iops"),
        (pl.col("sectors") * 512 / 1e6 / s).alias("write_mb_s"),
        (pl.col("write_ms") / pl.col("writes").replace(0, None)).alias("write_await_ms"),
        (pl.col("flushes") / s).alias("flushes_per_s"),
        (pl.col("reads") / s).alias("read_iops"),
    )


def per_run(db: str, study: str) -> pl.DataFrame:
    """`run_io` of every successful run of the study with its cell (target, workload, clients, repeat)."""
    recs = queries.run_records(db, study)
    roles = device_roles(recs)
    io = run_io(diskstats(db, study, roles["device"].to_list()), roles)
    if io.height == 0:
        return io
    runs = queries.runs(db, study, only_ok=True).select(
        "run_id", "target", "workload", "clients", "repeat", "plan_index"
    )
    return io.join(runs, on="run_id", how="inner").sort("plan_index", "role")


def has_wal_device(io: pl.DataFrame) -> bool:
    return io.height > 0 and bool((io["role"] == ROLE_WAL).any())


def cells(io: pl.DataFrame, confidence: float = 0.95) -> pl.DataFrame:
    """Per target, workload, clients and role: runs, the device names seen, and the median with its
    distribution-free interval of each of `METRICS` (`<metric>`, `<metric>_low`, `<metric>_high`)."""
    by = ["target", "workload", "clients", "role"]
    out = io.group_by(by, maintain_order=True).agg(
        pl.len().alias("runs"),
        pl.col("on_target").first(),
        pl.col("device").unique().sort().str.join(", ").alias("devices"),
        pl.col("run_id").sort().str.join(", ").alias("run_ids"),
    )
    for m in METRICS:
        s = stats.cell_summary(io, m, by, confidence).select(
            *by,
            pl.col("median").alias(m),
            pl.col("median_ci_low").alias(f"{m}_low"),
            pl.col("median_ci_high").alias(f"{m}_high"),
        )
        out = out.join(s, on=by, how="left")
    return out
