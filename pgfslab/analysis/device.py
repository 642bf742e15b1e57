"""What each target's storage can do without PostgreSQL (the device baseline: fio and pg_test_fsync, see
pgfslab/run/device_baseline.py), and how close PostgreSQL comes to it.

* `device_table`: one row per target: the WAL commit floor (QD1 8 kB write + fdatasync: ops/s, fdatasync
  p50/p99), 8 kB random read/write IOPS at QD1 and QD32 (O_DIRECT), 1 MB sequential write MB/s, and
  pg_test_fsync's fdatasync rate for one 8 kB write.
* `ceilings`: each target's single-client commit rate (median tps of its 1-client runs of a writing
  pgbench/sysbench workload) against its device ceiling 1 / (median fdatasync latency).
* `ceiling_chart`: the figure of the two.
* `unsafe_settings`: PostgreSQL settings that are unsafe on the file system a target runs on.
"""

from __future__ import annotations

import statistics
from typing import Any

import polars as pl

from pgfslab.analysis import queries
from pgfslab.analysis.charts import alt
from pgfslab.config import run_copies
from pgfslab.config.model import StudyConfig
from pgfslab.ingest.run_rows import impl_label
from pgfslab.records.run_record import RunRecord

# workloads that commit writes (a select-only run has no fdatasync per transaction)
# copy-on-write file systems never tear a page: full_page_writes=off is safe there, and only there
COW_FS = {"zfs", "btrfs"}


def has_baseline(db: str, study: str) -> bool:
    if not queries.has_table(db, "device_baselines"):
        return False
    return bool(queries.frame(db, "SELECT count(*) AS n FROM device_baselines WHERE study = ?", [study])["n"][0])


def device_table(db: str, study: str) -> pl.DataFrame:
    """One row per measured target and host (see the module's docstring); numbers as the tools reported them.
    `host` is the host key a merge of several machines' or days' folders ends the baseline's id in (`@<host>`,
    ingest.study.baseline_id), null for a study measured on one: two hosts' baselines of a target are two rows,
    never one row mixing them."""
    return queries.frame(
        db,
        """
        WITH b AS (
          SELECT *, CASE WHEN baseline_id LIKE '%@%' THEN split_part(baseline_id, '@', 2) END AS host
          FROM device_baselines WHERE study = ?
        ), j AS (
          SELECT f.run_id AS baseline_id, f.job, f.direction, f.iops, f.bw_bytes_per_s, f.sync_p50_us, f.sync_p99_us
          FROM fio_job f JOIN b ON f.run_id = b.baseline_id
        ), p AS (
          SELECT t.run_id AS baseline_id, max(t.ops_per_s) AS pgtf_fdatasync_ops
          FROM pg_test_fsync t JOIN b ON t.run_id = b.baseline_id
          WHERE t.method = 'fdatasync' AND t.section ILIKE '%one 8kB write%'
          GROUP BY t.run_id
        )
        SELECT b.target, b.host, b.fs_label,
          max(CASE WHEN j.job = 'wal_qd1_fdatasync' AND j.direction = 'write' THEN j.iops END) AS wal_fdatasync_ops,
          max(CASE WHEN j.job = 'wal_qd1_fdatasync' AND j.direction = 'write' THEN j.sync_p50_us END)
            AS fdatasync_p50_us,
          max(CASE WHEN j.job = 'wal_qd1_fdatasync' AND j.direction = 'write' THEN j.sync_p99_us END)
            AS fdatasync_p99_us,
          max(CASE WHEN j.job = 'randread_qd1' AND j.direction = 'read' THEN j.iops END) AS randread_qd1_iops,
          max(CASE WHEN j.job = 'randread_qd32' AND j.direction = 'read' THEN j.iops END) AS randread_qd32_iops,
          max(CASE WHEN j.job = 'randwrite_qd1' AND j.direction = 'write' THEN j.iops END) AS randwrite_qd1_iops,
          max(CASE WHEN j.job = 'randwrite_qd32' AND j.direction = 'write' THEN j.iops END) AS randwrite_qd32_iops,
          max(CASE WHEN j.job = 'seqwrite_1m' AND j.direction = 'write' THEN j.bw_bytes_per_s END) / 1e6
            AS seqwrite_mb_s,
          max(p.pgtf_fdatasync_ops) AS pg_test_fsync_fdatasync_ops,
          any_value(b.ioengine) AS ioengine, any_value(b.direct) AS direct, any_value(b.notes) AS notes
        FROM b LEFT JOIN j USING (baseline_id) LEFT JOIN p USING (baseline_id)
        GROUP BY b.target, b.host, b.fs_label
        ORDER BY b.target, b.host NULLS FIRST
        """,
        [study],
    ).with_columns((1e6 / pl.col("fdatasync_p50_us")).alias("ceiling_commits_s"))


def run_host(run_id: pl.Expr) -> pl.Expr:
    """The host key a merged run's id ends in (`...r1@<host>`), null for a run of a study measured on one host."""
    return run_id.str.extract(r"@([a-z0-9][a-z0-9_-]*)$")


def writes(rec: RunRecord) -> bool:
    """Whether the run's workload writes (its config's builtin or sysbench test)."""
    wl = run_copies.workload(rec)
    return wl is not None and wl.options.writes()


def ceilings(db: str, study: str) -> pl.DataFrame:
    """Per target: the median tps of its single-client runs of a writing workload (pgbench/sysbench) against
    its device ceiling (1 / median fdatasync latency; for a target with `wal_on`, the WAL target's, named in
    `ceiling_of`) and their ratio. With synchronous_commit on, each
    such commit waits for at least one WAL flush, so tps / ceiling above 1 means commits shared flushes or
    did not wait for one (synchronous_commit=off, fsync=off)."""
    dev = device_table(db, study)
    recs = queries.run_records(db, study)
    head = queries.headline(db, study)
    head = head.with_columns(run_host(pl.col("run_id")).alias("host"))
    rows = []
    for t, host in dev.select("target", "host").iter_rows():
        vals = []
        workloads = set()
        mine = (pl.col("target") == t) & (pl.col("clients") == 1) & pl.col("host").eq_missing(host)
        for r in head.filter(mine).iter_rows(named=True):
            rec = recs.get(r["run_id"])
            if r["value"] is not None and rec is not None and writes(rec):
                vals.append(float(r["value"]))
                workloads.add(str(r["workload"]))
        rows.append(
            {
                "target": t,
                "host": host,
                "workloads": ", ".join(sorted(workloads)) or None,
                "runs": len(vals),
                "tps_1_client": statistics.median(vals) if vals else None,
            }
        )
    tps = pl.DataFrame(
        rows,
        schema={"target": pl.Utf8, "host": pl.Utf8, "workloads": pl.Utf8, "runs": pl.Int64, "tps_1_client": pl.Float64},
    )
    return (
        with_wal_ceiling(dev, wal_targets(queries.study_of(db)))
        .join(tps, on=["target", "host"], how="left", nulls_equal=True)
        .with_columns((pl.col("tps_1_client") / pl.col("ceiling_commits_s")).alias("share_of_ceiling"))
    )


def wal_targets(study: StudyConfig) -> dict[str, str]:
    """target -> the target its WAL lives on (`wal_on`), for the targets that have one."""
    return {t: s.wal_on for t, s in study.targets.items() if s.wal_on}


def with_wal_ceiling(dev: pl.DataFrame, wal_on: dict[str, str]) -> pl.DataFrame:
    """`device_table`'s target, fs_label, `ceiling_commits_s` and `wal_fdatasync_ops`, where a target that keeps
    its WAL on another target (`wal_on`) takes that target's: a commit waits for the WAL's fdatasync, on the
    WAL's device. `ceiling_of` names whose measurement it is (null where that target was not measured)."""
    dev = dev if "host" in dev.columns else dev.with_columns(pl.lit(None, pl.Utf8).alias("host"))
    own = dev.select("target", "host", "ceiling_commits_s", "wal_fdatasync_ops")
    of = dev.select("target", "host", "fs_label").with_columns(
        pl.col("target").replace_strict(wal_on, default=pl.col("target"), return_dtype=pl.Utf8).alias("ceiling_of")
    )
    return (
        of.join(own.rename({"target": "ceiling_of"}), on=["ceiling_of", "host"], how="left", nulls_equal=True)
        .select("target", "host", "fs_label", "ceiling_commits_s", "wal_fdatasync_ops", "ceiling_of")
        .with_columns(pl.when(pl.col("ceiling_commits_s").is_not_null()).then(pl.col("ceiling_of")).alias("ceiling_of"))
    )


def target_label(target: str, fs_label: str | None) -> str:
    """'zfs (zfs-fuse)' for a target zfs on zfs-fuse (as the runs' tables name it: ingest.run_rows.impl_label),
    'data (xfs)' for a target data on xfs."""
    if not fs_label or fs_label == target:
        return target
    if fs_label.startswith("zfs (") and "zfs" in target:
        return impl_label(target, fs_label)
    return f"{target} ({fs_label})"


def _host_label(target: str, fs_label: str | None, host: str | None) -> str:
    """`target_label`, with the host key where a merged study measured the target on several (`ext4 @day2`)."""
    return target_label(target, fs_label) + (f" @{host}" if host else "")


def section_tables(db: str, study: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The paper's device table and ceiling table, columns named for readers."""
    dev = device_table(db, study)
    table = dev.select(
        pl.struct("target", "fs_label", "host")
        .map_elements(lambda r: _host_label(r["target"], r["fs_label"], r["host"]), return_dtype=pl.Utf8)
        .alias("target"),
        pl.col("wal_fdatasync_ops").alias("8k write+fdatasync /s"),
        pl.col("fdatasync_p50_us").alias("fdatasync p50 µs"),
        pl.col("fdatasync_p99_us").alias("fdatasync p99 µs"),
        pl.col("randread_qd1_iops").alias("rand read QD1"),
        pl.col("randread_qd32_iops").alias("rand read QD32"),
        pl.col("randwrite_qd1_iops").alias("rand write QD1"),
        pl.col("randwrite_qd32_iops").alias("rand write QD32"),
        pl.col("seqwrite_mb_s").alias("seq write MB/s"),
        pl.col("pg_test_fsync_fdatasync_ops").alias("pg_test_fsync fdatasync /s"),
    )
    ceil = ceilings(db, study)
    ctable = ceil.select(
        pl.struct("target", "fs_label", "host")
        .map_elements(lambda r: _host_label(r["target"], r["fs_label"], r["host"]), return_dtype=pl.Utf8)
        .alias("target"),
        pl.col("ceiling_commits_s").alias("ceiling 1/p50 fdatasync /s"),
        pl.when(pl.col("ceiling_of") != pl.col("target"))
        .then(pl.format("{} (WAL there)", "ceiling_of"))
        .otherwise(pl.col("ceiling_of"))
        .fill_null("–")
        .alias("fdatasync measured on"),
        pl.col("tps_1_client").alias("PostgreSQL tps, 1 client (median)"),
        pl.col("share_of_ceiling").alias("share of ceiling"),
        pl.col("runs"),
        pl.col("workloads").fill_null("–"),
    )
    return table, ctable


def ceiling_chart(df: pl.DataFrame) -> Any:
    """Per target: its device ceiling (1 / median fdatasync latency) and PostgreSQL's single-client commit
    rate, as horizontal bars on one axis."""
    long = pl.concat(
        [
            df.select(
                "target",
                pl.lit("device ceiling: 1 / median fdatasync").alias("what"),
                pl.col("ceiling_commits_s").alias("per_s"),
            ),
            df.select(
                "target",
                pl.lit("PostgreSQL: median tps, 1 client").alias("what"),
                pl.col("tps_1_client").alias("per_s"),
            ),
        ]
    ).drop_nulls("per_s")
    labels = {t: target_label(t, f) for t, f in zip(df["target"], df["fs_label"], strict=False)}
    long = long.with_columns(pl.col("target").replace_strict(labels, return_dtype=pl.Utf8).alias("label"))
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title=None),
            yOffset=alt.YOffset("what:N"),
            x=alt.X("per_s:Q", title="commits (or fdatasyncs) per second"),
            color=alt.Color("what:N", title=None, legend=alt.Legend(orient="bottom")),
            tooltip=["target", "what", alt.Tooltip("per_s:Q", format=",.0f")],
        )
        .properties(width=420)
    )


def unsafe_settings(study: StudyConfig) -> list[str]:
    """PostgreSQL settings of a study that are unsafe on the file system a target runs on, one sentence
    each (the study's settings, overridden by the target's and the workloads')."""
    out = []
    for name, spec in study.targets.items():
        s = study.pg_settings_for(name)
        fs = spec.fs
        per_wl = [(w, study.pg_settings_for(name, w)) for w in study.workloads]
        for where, settings in [(None, s), *per_wl]:
            if where is not None and settings == s:
                continue
            tag = f"{name}" + (f" (workload {where})" if where else "")
            if str(settings.get("full_page_writes", "on")).lower() in ("off", "false", "0") and fs not in COW_FS:
                out.append(
                    f"{tag}: full_page_writes=off on {fs} is unsafe: a torn 8 kB page after a crash cannot be "
                    "repaired from WAL (only copy-on-write file systems such as zfs and btrfs never tear a page)"
                )
            if str(settings.get("fsync", "on")).lower() in ("off", "false", "0"):
                out.append(f"{tag}: fsync=off is unsafe on any file system: a crash can lose or corrupt data")
            if str(settings.get("synchronous_commit", "on")).lower() in ("off", "false", "0"):
                out.append(
                    f"{tag}: synchronous_commit=off may lose the last commits acknowledged before a crash "
                    "(at most 3 x wal_writer_delay), without corruption"
                )
    return out
