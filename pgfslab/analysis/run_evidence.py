"""What the samplers saw during each run: the evidence set beside a run that stands out from its cell
(`stats.exchangeability.outlier_runs`).

Per successful run, where recorded:

* `checkpoints_req`, `checkpoints_timed`: checkpoints requested (WAL filled max_wal_size, an explicit
  CHECKPOINT) and timed (checkpoint_timeout) during the run: pg_stat_bgwriter before and after it, as
  run.json records them (the `runs` table);
* `autovacuum`: autovacuum and autoanalyze runs during the run, when the pg_stat sampler recorded
  counters named `*autovacuum*`/`*autoanalyze*` (pg_stat_user_tables' autovacuum_count and
  autoanalyze_count); the lab's pgstat v2 samples do not have them, so the column is absent then;
* `reads_per_s`: reads completed per second on the device under the target's data (/proc/diskstats,
  first to last sample of the run; `wal_device.per_run`);
* `cpu_steal`, `cpu_iowait`: the shares of all CPU time the hypervisor took for other guests and the CPUs
  spent waiting for I/O (/proc/stat, first to last sample of the run; `cpu_time`), when the run sampled
  /proc/stat (stat.log); absent for raw folders recorded before.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.analysis import cpu_time, queries, wal_device


def _autovacuum(db: str | Path, study: str) -> pl.DataFrame | None:
    samples = queries.pgstat(db, study)
    cols = [c for c in samples.columns if "autovacuum" in c or "autoanalyze" in c]
    if samples.height == 0 or not cols:
        return None
    total = pl.sum_horizontal(*(pl.col(c) for c in cols))
    return samples.sort("run_id", "epoch_s").group_by("run_id").agg((total.last() - total.first()).alias("autovacuum"))


def run_evidence(db: str | Path, study: str) -> pl.DataFrame:
    """One row per successful run: run_id and the evidence columns recorded for the study."""
    out = queries.runs(db, study, only_ok=True).select("run_id", "checkpoints_req", "checkpoints_timed")
    io = wal_device.per_run(str(db), study)
    if io.height:
        reads = io.filter(pl.col("role").is_in([wal_device.ROLE_DATA, wal_device.ROLE_BOTH]))
        out = out.join(reads.select("run_id", pl.col("read_iops").alias("reads_per_s")), on="run_id", how="left")
    cpu = cpu_time.per_run(db, study)
    if cpu.height:
        out = out.join(cpu.select("run_id", "cpu_steal", "cpu_iowait"), on="run_id", how="left")
    av = _autovacuum(db, study)
    if av is not None:
        out = out.join(av, on="run_id", how="left")
    return out
