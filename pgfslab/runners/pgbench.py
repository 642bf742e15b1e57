"""pgbench: data loading (`pgbench -i`, timed as the bulk-load result) and timed runs with `-P`
progress and an aggregate (or per-transaction) log.

pgbench writes its summary to stdout, and `starting vacuum`, progress lines and all of `-i` to
stderr; its logs go to the current directory, one file per thread (prefix.PID, prefix.PID.1, ...).
So each run executes in its own run directory and both streams are kept as files.
"""

from __future__ import annotations

import os
from pathlib import Path

from pgfslab.config.model import Dataset, RunSettings, Workload
from pgfslab.progress import Progress
from pgfslab.runners.process import Outcome, regex_progress
from pgfslab.runners.process import execute as _execute

__all__ = ["Outcome", "execute", "init_command", "run_command"]

PROGRESS = regex_progress(
    r"^progress: ([0-9.]+) s, ([0-9.]+) tps", lambda m: f"t={float(m.group(1)):.0f} s  {float(m.group(2)):.0f} tps"
)


def describe(spec: Workload) -> str:
    """The workload in a few words, as the paper names it."""
    what = spec.builtin or ", ".join(Path(s.file).name for s in spec.scripts or ()) or "custom"
    return f"pgbench {what}"


def how(spec: Workload) -> list[str]:
    """How the runs were driven beyond their length, as the methodology's workload table says it."""
    out = [f"-M {spec.query_mode}"] if spec.query_mode else []
    out += [f"--rate {spec.rate_tps}"] if spec.rate_tps else []
    log = {"aggregate": "aggregate log per second", "transactions": "per-transaction log", "none": "no log"}
    return [*out, log.get(spec.log, "")]


def init_command(pgbench: Path | str, conn: list[str], dataset: Dataset, dbname: str = "postgres") -> list[str]:
    extra: list[str] = []
    if dataset.fillfactor:
        extra += ["-F", str(dataset.fillfactor)]
    if dataset.partitions:
        extra += [f"--partitions={dataset.partitions}"]
    return [str(pgbench), *conn, "-i", "-s", str(dataset.scale), *extra, dbname]


def run_command(
    pgbench: Path | str,
    conn: list[str],
    workload: Workload,
    clients: int,
    duration_s: int,
    run: RunSettings,
    scripts: list[tuple[Path, int]] | None = None,
    dbname: str = "postgres",
) -> list[str]:
    """The pgbench command of one run of `duration_s` (unless the workload counts transactions). `scripts` are
    (path, weight) of custom scripts, already resolved; `dbname` is the database holding the run's data set
    (a ladder's rung has its own)."""
    threads = min(workload.threads or min(clients, os.cpu_count() or 1), clients)
    cmd = [str(pgbench), *conn]
    if workload.builtin:
        cmd += ["-b", workload.builtin]
    for path, weight in scripts or []:
        cmd += ["-f", f"{path}@{weight}"]
    cmd += ["-c", str(clients), "-j", str(threads)]
    if workload.transactions:
        cmd += ["-t", str(workload.transactions)]
    else:
        cmd += ["-T", str(duration_s)]
    cmd += ["-P", str(run.progress_interval_s)]
    if workload.rate_tps:
        cmd += [f"--rate={workload.rate_tps:g}"]
    if workload.latency_limit_ms:
        cmd += [f"--latency-limit={workload.latency_limit_ms:g}"]
    if workload.query_mode:
        cmd += ["-M", workload.query_mode]
    if workload.per_statement:
        cmd += ["-r"]
    if workload.log == "aggregate":
        cmd += ["--log", "--log-prefix=pgbench_log", f"--aggregate-interval={run.aggregate_interval_s}"]
    elif workload.log == "transactions":
        cmd += ["--log", "--log-prefix=pgbench_tx"]
        if workload.sampling_rate:
            cmd += [f"--sampling-rate={workload.sampling_rate:g}"]
    return [*cmd, dbname]


def execute(
    cmd: list[str],
    cwd: Path,
    stdout_name: str,
    stderr_name: str,
    timeout_s: float,
    progress: Progress | None = None,
    duration_s: float | None = None,
) -> Outcome:
    """Run a pgbench command in `cwd`, its progress lines (stderr) echoed to the progress line."""
    return _execute(cmd, cwd, stdout_name, stderr_name, timeout_s, progress, PROGRESS, "stderr")
