"""Storage facts per run from run.json: footprints, compression, memory settings, data sets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.analysis.queries.study_runs import run_records, runs
from pgfslab.config import run_copies
from pgfslab.records.run_record import Compsize, Dataset, PgFacts, RunRecord, ZfsFootprint
from pgfslab.tools import TOOLS

_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2, "GB": 1024**3}


def setting_bytes(settings: dict[str, Any], name: str) -> float | None:
    """A pg_settings entry ({setting, unit}) in bytes (shared_buffers 16384 x 8kB -> 134217728)."""
    s = (settings or {}).get(name) or {}
    value, unit = s.get("setting"), s.get("unit")
    if value is None or unit not in _UNIT_BYTES or not str(value).lstrip("-").isdigit():
        return None
    return float(int(value) * _UNIT_BYTES[unit])


def _loads(rec: RunRecord) -> str | None:
    """The data set the run's tool runs on (pgfslab.tools: pgbench's tables, sysbench's; None: none)."""
    tool = TOOLS.get(rec.tool or "")
    return tool.loads if tool is not None else None


def fillfactor(rec: RunRecord) -> int | None:
    ds = rec.dataset or Dataset()
    sb = ds.sysbench or {}  # the config's sysbench data set
    if _loads(rec) == "sysbench" or (sb and "fillfactor" in sb and ds.fillfactor is None):
        return sb.get("fillfactor") or 100
    return ds.fillfactor or 100


def dataset_label(rec: RunRecord) -> str:
    """The data set a run used: `pgbench scale 20` or `sysbench 4 x 250,000 rows`."""
    ds = rec.dataset or Dataset()
    if _loads(rec) == "sysbench":
        sb = ds.sysbench or {}
        return f"sysbench {sb.get('tables', '?')} x {sb.get('table_size', 0):,} rows"
    if rec.tool in TOOLS and _loads(rec) is None:
        return f"files ({rec.tool})"
    return f"pgbench scale {ds.scale if ds.scale is not None else '?'}"


def storage(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Per successful run, its footprint at the end of the run, from run.json: PostgreSQL's sizes
    (`database_bytes` = pg_database_size of the benchmark database, `all_databases_bytes`,
    `relations_bytes` = sum of the listed relations' total size), the file system's
    (`fs_used_bytes`, statvfs of the target; ZFS's `used` on zfs), btrfs `compsize` (`compsize_disk_bytes` on
    disk after compression, `compsize_uncompressed_bytes` the files' logical size, `compsize_referenced_bytes`),
    ZFS's own accounting of the target's dataset (`zfs get`, run.json `zfs_footprint`: `zfs_used_bytes`,
    `zfs_logicalused_bytes` where the pool has the property, else null, `zfs_logicalused_est_bytes` = used x
    compressratio where it has not (zfs-fuse), `zfs_compressratio`, `zfs_implementation`), with the cell
    columns, `fillfactor` and `dataset`."""
    rows = []
    info = runs(db, study, only_ok=True, targets=targets)
    recs = run_records(db, study, targets=targets)
    for r in info.iter_rows(named=True):
        rec = recs.get(r["run_id"]) or RunRecord()
        pg = rec.postgres or PgFacts()
        comp = rec.compsize or Compsize()
        zfp = rec.zfs_footprint or ZfsFootprint()
        rels = pg.relations
        rows.append(
            {
                "run_id": r["run_id"],
                "target": r["target"],
                "target_label": r["target_label"],
                "fs": r["fs"],
                "mount_options": r["mount_options"],
                "workload": r["workload"],
                "tool": r["tool"],
                "clients": r["clients"],
                "repeat": r["repeat"],
                "plan_index": r["plan_index"],
                "fillfactor": fillfactor(rec),
                "dataset": dataset_label(rec),
                "database_bytes": pg.database_bytes,
                "all_databases_bytes": pg.all_databases_bytes,
                "relations_bytes": sum(int(x.get("total_bytes") or 0) for x in rels) if rels else None,
                "fs_used_bytes": rec.fs_used_bytes,
                "compsize_disk_bytes": comp.disk_bytes,
                "compsize_uncompressed_bytes": comp.uncompressed_bytes,
                "compsize_referenced_bytes": comp.referenced_bytes,
                "zfs_used_bytes": zfp.used,
                "zfs_logicalused_bytes": zfp.logicalused,
                "zfs_logicalused_est_bytes": zfp.logicalused_est,
                "zfs_compressratio": zfp.compressratio,
                "zfs_implementation": zfp.implementation,
            }
        )
    schema = {
        "run_id": pl.Utf8,
        "target": pl.Utf8,
        "target_label": pl.Utf8,
        "fs": pl.Utf8,
        "mount_options": pl.Utf8,
        "workload": pl.Utf8,
        "tool": pl.Utf8,
        "clients": pl.Int64,
        "repeat": pl.Int64,
        "plan_index": pl.Int64,
        "fillfactor": pl.Int64,
        "dataset": pl.Utf8,
        "database_bytes": pl.Int64,
        "all_databases_bytes": pl.Int64,
        "relations_bytes": pl.Int64,
        "fs_used_bytes": pl.Int64,
        "compsize_disk_bytes": pl.Int64,
        "compsize_uncompressed_bytes": pl.Int64,
        "compsize_referenced_bytes": pl.Int64,
        "zfs_used_bytes": pl.Int64,
        "zfs_logicalused_bytes": pl.Int64,
        "zfs_logicalused_est_bytes": pl.Int64,
        "zfs_compressratio": pl.Float64,
        "zfs_implementation": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def memory_facts(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Per successful run the memory sizes that bound a data set: `shared_buffers_bytes` (as in
    force), `ram_bytes` (MemTotal), `cgroup_limit_bytes` (the study's memory limit when the cgroup
    was applied, else null), `cgroup_applied`, and the run's `database_bytes` and `dataset`."""
    rows = []
    info = runs(db, study, only_ok=True, targets=targets)
    recs = run_records(db, study, targets=targets)
    for r in info.iter_rows(named=True):
        rec = recs.get(r["run_id"]) or RunRecord()
        pg = rec.postgres or PgFacts()
        limit_mb = run_copies.resources(rec).memory_limit_mb  # the study's `resources`, as the run copied them
        applied = bool(rec.cgroup and rec.cgroup.applied)
        rows.append(
            {
                "run_id": r["run_id"],
                "target": r["target"],
                "workload": r["workload"],
                "shared_buffers_bytes": setting_bytes(pg.settings, "shared_buffers"),
                "ram_bytes": float((rec.host.mem_total_kb if rec.host else None) or 0) * 1024 or None,
                "cgroup_limit_bytes": float(limit_mb) * 2**20 if limit_mb and applied else None,
                "cgroup_limit_requested_bytes": float(limit_mb) * 2**20 if limit_mb else None,
                "cgroup_applied": applied,
                "database_bytes": pg.database_bytes,
                "dataset": dataset_label(rec),
            }
        )
    schema = {
        "run_id": pl.Utf8,
        "target": pl.Utf8,
        "workload": pl.Utf8,
        "shared_buffers_bytes": pl.Float64,
        "ram_bytes": pl.Float64,
        "cgroup_limit_bytes": pl.Float64,
        "cgroup_limit_requested_bytes": pl.Float64,
        "cgroup_applied": pl.Boolean,
        "database_bytes": pl.Int64,
        "dataset": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)
