"""What distinguishes a run, in the terms the seeds' claims use: its target's file system, compression, zfs
recordsize and ext4 data mode, whether it is another target's A/A twin, the PostgreSQL and OS settings it ran
with, its fillfactor, snapshots, the workload kind, client count, data-set rung and memory regime, what an
fsmicro run worked on (files pre-created, files already in the directory, bytes per sync, the size of each
deleted file), and its values: the headline, the within-run σ² and CV of per-second throughput, the p95 of its
per-second latency and of its logged transactions' latency, an fsmicro run's p99/p50, the footprint and
compression, and what the samplers say of its regime (`regime.run_measures`: data-device utilisation, read
await, bytes written per commit, buffer hit ratio, CPU time busy/idle/in I/O wait/stolen, checkpoints, steady
state, snapshots alive, the device baseline's random-read rate).

One row per successful run (from the run records in the study database: a few hundred at most).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.analysis import queries
from pgfslab.analysis.answers import micro
from pgfslab.analysis.verdicts import regime as measured
from pgfslab.config import run_copies
from pgfslab.config.model import TargetSpec, Workload
from pgfslab.config.vm_settings import parse_bytes
from pgfslab.records.run_record import PgFacts, RunRecord
from pgfslab.tools import fsmicro_ops
from pgfslab.tools.fsmicro import FsmicroOptions

# settings a claim may name, read from the run's effective PostgreSQL settings
PG_KEYS = ("synchronous_commit", "fsync", "full_page_writes", "wal_init_zero", "wal_recycle", "commit_delay")
# PostgreSQL's defaults of those (the same in 12 to 17): a run records only the settings that are not at
# their default (pg_settings' source), so a run that does not name one ran with this value
PG_DEFAULTS = {
    "synchronous_commit": "on",
    "fsync": "on",
    "full_page_writes": "on",
    "wal_init_zero": "on",
    "wal_recycle": "on",
    "commit_delay": "0",
}
REGIMES = ("fits_shared_buffers", "fits_ram", "exceeds_ram")
# what an fsmicro run worked on (None for the other tools): files pre-created for the delete benchmarks,
# files already in the directory (seed 003's small and large directories), bytes written per timed sync
FS_KEYS = ("files", "directory_files", "write_size")
# delete_small_dir and delete_large_dir are one benchmark (pebble's deleteBench) in a directory of 1k or 100k
# files: one kind, told apart by directory_files
_FS_KIND = {"delete_small_dir": "delete_in_dir", "delete_large_dir": "delete_in_dir"}
_COMPRESS = re.compile(r"^compress(?:-force)?(?:=([a-z0-9]+))?")


def compression(rec: RunRecord) -> str:
    """The run's target's compression (see `spec_compression`), from the target spec as the run copied it."""
    spec = run_copies.target_spec(rec)
    return spec_compression(spec) if spec is not None else "none"


def spec_compression(spec: TargetSpec) -> str:
    """A target spec's compression: btrfs `compress[-force]=alg[:level]`, a zfs `compression` property,
    else `none`."""
    for opt in spec.mount_options:
        m = _COMPRESS.match(opt)
        if m:
            return m.group(1) or "zlib"
    value = str((spec.zfs or {}).get("compression", "off"))
    return "none" if value in ("off", "none") else value


def regime(dataset_bytes: float | None, shared_buffers: float | None, memory: float | None) -> str | None:
    """Where the data set sits: below shared_buffers, below the memory available to the page cache
    (the cgroup limit when one applied, else RAM), or beyond it (seed 000's three regimes)."""
    if dataset_bytes is None:
        return None
    if shared_buffers is not None and dataset_bytes <= shared_buffers:
        return "fits_shared_buffers"
    if memory is not None and dataset_bytes <= memory:
        return "fits_ram"
    return "exceeds_ram" if memory is not None else None


def ext4_data_mode(rec: RunRecord) -> str | None:
    """ext4's journalling mode (`data=` mount option; `ordered` when not given), None on other file systems."""
    if rec.fs != "ext4":
        return None
    spec = run_copies.target_spec(rec)
    for opt in spec.mount_options if spec is not None else ():
        if str(opt).startswith("data="):
            return str(opt).split("=", 1)[1]
    return "ordered"


def recordsize(rec: RunRecord) -> str | None:
    """A zfs target's recordsize property as configured (`8k`), None elsewhere."""
    spec = run_copies.target_spec(rec)
    value = (spec.zfs or {}).get("recordsize") if spec is not None else None
    return str(value).lower() if value is not None else None


def fsmicro_facts(wl: Workload | None) -> dict[str, Any]:
    """An fsmicro workload's op, its kind (its op; the two directory deletes are one kind) and FS_KEYS, with the
    runner's defaults filled in (all None when the spec does not resolve, or the workload is another tool's)."""
    if wl is None or not isinstance(wl.options, FsmicroOptions):
        return {"op": None, "kind": None, "file_bytes": None, **dict.fromkeys(FS_KEYS)}
    try:
        p = fsmicro_ops.resolve({"duration_s": wl.duration_s or 1, **wl.options.to_dict()})
    except ValueError:
        return {"op": wl.options.op, "kind": wl.options.op, "file_bytes": None, **dict.fromkeys(FS_KEYS)}
    op = p["op"]
    return {
        "op": op,
        "kind": _FS_KIND.get(op, op),
        "files": p.get("files") if op == "delete" else None,
        "directory_files": p.get("bg_files") or None,  # files already in the directory (none: not a key)
        "write_size": p.get("size_bytes") if op == "write_fsync" else None,
        # the size of each file an unlink removes (seed 003 deleted 2 MB files)
        "file_bytes": p.get("size_bytes") if op in ("delete", "delete_small_dir", "delete_large_dir") else None,
    }


def _bytes(value: Any) -> int | None:
    """A byte count the run recorded (validated when the study was): one that does not parse is an error
    naming it, never a silent null."""
    return parse_bytes(value) if value is not None else None


def run_facts(db: str | Path, study: str, trim_s: float = 2.0) -> pl.DataFrame:
    """One row per successful run: run_id, target, target_label, fs, compression, recordsize, data_mode,
    aa_twin_of, kind (pgbench builtin, sysbench test, or the fsmicro workload's name), tool, op, clients, repeat,
    load (the run's own with run.reload, else its target and rung), rung, regime, fillfactor, snapshots, device_profile, dirty_background_bytes, each of PG_KEYS (as text), `value` (the
    headline), `within_run` (`cv`, `variance`, `latency_p95`), `latency_p95_tx` (`queries.txlog_p95`), `saving`
    (btrfs compression's, where compsize measured it), `compress_ratio` (uncompressed / on disk, the same measurement) and `database_bytes` (the
    benchmark database's size at the end of the run), the regime measures of `regime.run_measures` and
    `written_per_tx`, and for pgbench `reads_per_tx` (the data device's reads per second over tps). fsmicro runs:
    `kind` is the op (`fsmicro_facts`), FS_KEYS and `file_bytes` say what it worked on, `value` is the timed
    operations per second (`micro.timed_rates`, seed 003's quantity), `bytes_per_s` (write_fsync) the bytes synced
    per second of sync latency, `tail_ratio` its p99 / p50."""
    head = queries.headline(db, study)
    recs = queries.run_records(db, study) if head.height else {}
    rows = []
    for r in head.iter_rows(named=True):
        rec = recs.get(r["run_id"]) or RunRecord()
        # the study's parts, as the run copied them: workload, target, os, resources
        wl, spec = run_copies.workload(rec), run_copies.target_spec(rec)
        pg = rec.postgres or rec.postgres_before or PgFacts()
        settings = rec.postgres_settings or {}
        in_force = pg.settings
        limit_mb = run_copies.resources(rec).memory_limit_mb
        applied = bool(rec.cgroup and rec.cgroup.applied)
        ram = float((rec.host.mem_total_kb if rec.host else None) or 0) * 1024 or None
        memory = float(limit_mb) * 2**20 if limit_mb and applied else ram
        size = (rec.target_setup.database_bytes_loaded if rec.target_setup else None) or pg.database_bytes
        tool = rec.tool
        fsm = fsmicro_facts(wl)
        row = {
            "run_id": r["run_id"],
            "target": r["target"],
            "target_label": r["target_label"],
            "fs": rec.fs,
            "compression": compression(rec),
            "tool": tool,
            "kind": (wl.options.kind() if wl is not None else None) or fsm["kind"] or r["workload"],
            "op": fsm["op"],
            "workload": r["workload"],
            "clients": r["clients"],
            "repeat": r["repeat"],  # the round of the plan it ran in (a comparison paired by round pairs on it)
            # the load it measured: its own (run.reload) or its target's one load of this rung
            "load": r["run_id"] if rec.reloaded is not None else f"{r['target']}/{rec.rung}",
            # the study kept this cell as context (it cannot decide): never a claim's primary cell
            "context_cell": wl.context_why(r["clients"]) if wl is not None else None,
            "rung": rec.rung,
            "regime": regime(size, queries.setting_bytes(in_force, "shared_buffers"), memory),
            "fillfactor": queries.fillfactor(rec),
            "recordsize": recordsize(rec),
            "data_mode": ext4_data_mode(rec),
            # the A/A control: a target with the baseline's exact spec, naming it (`aa_twin_of: ext4`)
            "aa_twin_of": spec.aa_twin_of if spec is not None else None,
            "snapshots": bool(rec.snapshots),
            # a slow-device profile (docs/slow-device.md): throttled targets are compared with each other only
            "device_profile": spec.device_profile if spec is not None else None,
            "dirty_background_bytes": _bytes(run_copies.os_settings(rec).vm_dirty_background_bytes),
            **{k: fsm[k] for k in FS_KEYS},
            "file_bytes": fsm["file_bytes"],
            "value": r["value"],
        }
        for key in PG_KEYS:
            v = settings.get(key, (in_force.get(key) or {}).get("setting"))
            if v is None and in_force:
                v = PG_DEFAULTS[key]  # the server's facts were read and did not list it: at its default
            row[key] = None if v is None else str(v).lower()
        rows.append(row)
    schema: dict[str, Any] = {
        "run_id": pl.Utf8,
        "target": pl.Utf8,
        "target_label": pl.Utf8,
        "fs": pl.Utf8,
        "compression": pl.Utf8,
        "tool": pl.Utf8,
        "kind": pl.Utf8,
        "op": pl.Utf8,
        "workload": pl.Utf8,
        "clients": pl.Int64,
        "repeat": pl.Int64,
        "load": pl.Utf8,
        "context_cell": pl.Utf8,
        "rung": pl.Int64,
        "regime": pl.Utf8,
        "fillfactor": pl.Int64,
        "recordsize": pl.Utf8,
        "data_mode": pl.Utf8,
        "aa_twin_of": pl.Utf8,
        "snapshots": pl.Boolean,
        "device_profile": pl.Utf8,
        "dirty_background_bytes": pl.Int64,
        **dict.fromkeys(FS_KEYS, pl.Int64),
        "file_bytes": pl.Int64,
        **dict.fromkeys(PG_KEYS, pl.Utf8),
        "value": pl.Float64,
    }
    facts = pl.DataFrame(rows, schema=schema)
    timed = fsmicro_rates(db, study)
    try:
        series = queries.throughput(db, study)
    except queries.MissingData:
        series = pl.DataFrame()
    return (
        facts.join(timed, on="run_id", how="left")
        .with_columns(pl.coalesce("timed_ops_per_s", "value").alias("value"))
        .with_columns((pl.col("write_size") * pl.col("value")).alias("bytes_per_s"))
        .drop("timed_ops_per_s")
        .join(within_run(series, trim_s), on="run_id", how="left")
        .join(queries.txlog_p95(db, study, trim_s).drop("n_tx"), on="run_id", how="left")
        .join(fsmicro_tails(db, study), on="run_id", how="left")
        .join(compression_saving(db, study), on="run_id", how="left")
        .join(measured.run_measures(str(db), study, trim_s, series), on="run_id", how="left")
        .with_columns(
            (pl.col("written_bytes") / pl.col("commits").replace(0, None)).alias("written_per_tx"),
            # blocks the data device read per transaction (pgbench: value is tps), the from_memory precondition's
            pl.when(pl.col("tool") == "pgbench")
            .then(pl.col("reads_per_s") / pl.col("value").replace(0, None))
            .alias("reads_per_tx"),
        )
    )


def fsmicro_rates(db: str | Path, study: str) -> pl.DataFrame:
    """Per fsmicro run: `timed_ops_per_s` (`micro.timed_rates`: exact from every timed operation when logged)."""
    ops = queries.fs_ops(db, study)
    if ops.height == 0:
        return pl.DataFrame(schema={"run_id": pl.Utf8, "timed_ops_per_s": pl.Float64})
    return micro.timed_rates(ops, queries.fs_op_latencies(db, study)).select(
        "run_id", pl.col("timed_ops_per_s").cast(pl.Float64)
    )


WITHIN_RUN: dict[str, Any] = {"run_id": pl.Utf8, "cv": pl.Float64, "variance": pl.Float64, "latency_p95": pl.Float64}


def within_run(series: pl.DataFrame, trim_s: float) -> pl.DataFrame:
    """Per run, over its per-second samples after `trim_s` seconds: `cv`, the coefficient of variation of
    throughput (jitter as a chart shows it; seed 000), `variance`, its σ² in (tx/s)² (seed 002's tables
    give σ²), and `latency_p95`, the 95th percentile of the per-second mean latency (ms)."""
    if series.height == 0:
        return pl.DataFrame(schema=WITHIN_RUN)
    return (
        series.filter(pl.col("t_s") > trim_s)
        .group_by("run_id")
        .agg(
            (pl.col("tps").std() / pl.col("tps").mean()).alias("cv"),
            pl.col("tps").var().alias("variance"),
            pl.col("latency_ms").quantile(0.95, "linear").alias("latency_p95"),
        )
    )


def fsmicro_tails(db: str | Path, study: str) -> pl.DataFrame:
    """Per fsmicro run with per-operation latencies: `tail_ratio`, p99 / p50 of its timed operations (how
    heavy the tail is; seed 003's tables give p50 and p99 per run)."""
    lat = queries.fs_op_latencies(db, study)
    if lat.height == 0:
        return pl.DataFrame(schema={"run_id": pl.Utf8, "tail_ratio": pl.Float64})
    return lat.group_by("run_id").agg(
        (pl.col("latency_ms").quantile(0.99, "nearest") / pl.col("latency_ms").quantile(0.5, "nearest"))
        .cast(pl.Float64)
        .alias("tail_ratio")
    )


def compression_saving(db: str | Path, study: str) -> pl.DataFrame:
    """Per run: on a compressing btrfs target 1 - on disk / uncompressed (`saving`) and uncompressed / on disk
    (`compress_ratio`), compsize at the end of the run; on every PostgreSQL run `database_bytes`."""
    st = queries.storage(db, study)
    return st.select(
        "run_id",
        (1 - pl.col("compsize_disk_bytes") / pl.col("compsize_uncompressed_bytes")).alias("saving"),
        (pl.col("compsize_uncompressed_bytes") / pl.col("compsize_disk_bytes")).alias("compress_ratio"),
        pl.col("database_bytes").cast(pl.Float64),
    )


def durability_runs(db: str | Path, study: str) -> pl.DataFrame:
    """The durability check's rows (table `durability`: one per crash) of the study's successful runs; empty
    where the study ran no durability check."""
    if not queries.has_table(db, "durability"):
        return pl.DataFrame()
    return queries.frame(
        db,
        """
        SELECT r.run_id, r.target, d.crash, d.synchronous_commit, d.lost_ids, d.lost_within_window, d.violations
        FROM durability d JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok'""",
        [study],
    )
