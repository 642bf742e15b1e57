"""Read the study database for notebooks and the paper: one function per question, SQL in
DuckDB, results as polars frames. A question without the data it needs raises MissingData
with one clear sentence (notebooks show it instead of a traceback).

The SQL is grouped by topic (`study_runs`, `throughputs`, `latency`, `samplers`, `storage_facts`,
`fsmicro`, `published_results`) over one way of reading the database (`connection`); every question
is importable from here.

Conventions:
* `targets`: an optional list of target names; None (or empty) means every target of the study.
* Only the study's own runs (`runs.study = study`, origin 'local'); the published reference
  results have their own functions (`published_*`).
* Times: `t_s` is seconds since the start of the benchmark for the tool's own series (pgbench -P,
  sysbench intervals, pgbench logs), and seconds since the run's first /proc sample for the
  samplers (`run_clock_origin`), which share one epoch clock with pgstat.csv and postgresql.log.
"""

from __future__ import annotations

from pgfslab.analysis.queries.connection import (
    RUN_COLS,
    MissingData,
    connect,
    frame,
    has_table,
    of_ok_runs,
    reading,
    require,
    sharing,
    target_condition,
    workload_condition,
)
from pgfslab.analysis.queries.fsmicro import (
    SIZE_SUFFIX,
    benchmark_family,
    fs_benchmark_names,
    fs_op_latencies,
    fs_ops,
)
from pgfslab.analysis.queries.latency import (
    aggregate_latency,
    latency_source,
    sysbench_histogram,
    sysbench_latency,
    sysbench_summaries,
    txlog_latency,
    txlog_p95,
)
from pgfslab.analysis.queries.published_results import (
    published,
    published_fs_ops,
    published_pgbench,
)
from pgfslab.analysis.queries.samplers import (
    checkpoint_log,
    cpu_stat,
    meminfo,
    pg_io_reads,
    pgstat,
    run_clock_origin,
    snapshot_events,
    throughput_on_sampler_clock,
)
from pgfslab.analysis.queries.storage_facts import (
    dataset_label,
    fillfactor,
    memory_facts,
    setting_bytes,
    storage,
)
from pgfslab.analysis.queries.study_runs import (
    baseline_target,
    in_config_order,
    run_records,
    runs,
    study_config,
    study_info,
    study_of,
    target_names,
    target_records,
    targets,
    workloads_with_tool,
)
from pgfslab.analysis.queries.throughputs import (
    METRICS,
    Metric,
    cell_label,
    headline,
    progress,
    summaries,
    sysbench_qps,
    throughput,
)

__all__ = [
    "METRICS",
    "Metric",
    "MissingData",
    "RUN_COLS",
    "SIZE_SUFFIX",
    "aggregate_latency",
    "baseline_target",
    "benchmark_family",
    "cell_label",
    "connect",
    "cpu_stat",
    "dataset_label",
    "fillfactor",
    "frame",
    "fs_benchmark_names",
    "fs_op_latencies",
    "fs_ops",
    "has_table",
    "headline",
    "in_config_order",
    "latency_source",
    "meminfo",
    "memory_facts",
    "of_ok_runs",
    "pg_io_reads",
    "pgstat",
    "progress",
    "published",
    "published_fs_ops",
    "published_pgbench",
    "reading",
    "require",
    "run_clock_origin",
    "run_records",
    "runs",
    "checkpoint_log",
    "setting_bytes",
    "sharing",
    "snapshot_events",
    "storage",
    "study_config",
    "study_info",
    "study_of",
    "summaries",
    "sysbench_histogram",
    "sysbench_latency",
    "sysbench_qps",
    "sysbench_summaries",
    "target_condition",
    "target_names",
    "target_records",
    "targets",
    "throughput",
    "throughput_on_sampler_clock",
    "txlog_latency",
    "txlog_p95",
    "workload_condition",
    "workloads_with_tool",
]
