"""pgbench: data loading (`pgbench -i`, timed as the bulk-load result) and timed runs with `-P`
progress and an aggregate (or per-transaction) log.

pgbench writes its summary to stdout, and `starting vacuum`, progress lines and all of `-i` to
stderr; its logs go to the current directory, one file per thread (prefix.PID, prefix.PID.1, ...).
So each run executes in its own run directory and both streams are kept as files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pgfslab.config.model import Dataset, RunSettings, Workload
from pgfslab.errors import LabError
from pgfslab.progress import Progress
from pgfslab.runners.process import Outcome, regex_progress
from pgfslab.runners.process import execute as _execute
from pgfslab.tools.pgbench import PgbenchOptions

if TYPE_CHECKING:
    from pgfslab.config.study import RunView
    from pgfslab.host.postgres import Cluster

__all__ = ["Outcome", "execute", "init_command", "run_command"]

PROGRESS = regex_progress(
    r"^progress: ([0-9.]+) s, ([0-9.]+) tps", lambda m: f"t={float(m.group(1)):.0f} s  {float(m.group(2)):.0f} tps"
)


def describe(spec: Workload) -> str:
    """The workload in a few words, as the paper names it."""
    return f"pgbench {spec.options.what() or 'custom'}"


def how(spec: Workload) -> list[str]:
    """How the runs were driven beyond their length, as the methodology's workload table says it."""
    o = spec.options_as(PgbenchOptions)
    out = [f"-M {o.query_mode}"] if o.query_mode else []
    out += [f"--rate {o.rate_tps}"] if o.rate_tps else []
    log = {"aggregate": "aggregate log per second", "transactions": "per-transaction log", "none": "no log"}
    return [*out, log.get(o.log, "")]


# pgbench_accounts' 100,000 rows per scale unit with their primary key (the other tables are small): about
# 15.6 MB at fillfactor 100 (PostgreSQL 15's own sizes of a freshly loaded data set)
BYTES_PER_SCALE = 15.6e6


def dataset_bytes(dataset: Dataset) -> float:
    """About how large `pgbench -i` makes the data set (what the plan places against memory before it runs)."""
    return dataset.scale * BYTES_PER_SCALE * 100 / (dataset.fillfactor or 100)


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
    o = workload.options_as(PgbenchOptions)
    threads = min(o.threads or min(clients, os.cpu_count() or 1), clients)
    cmd = [str(pgbench), *conn]
    if o.builtin:
        cmd += ["-b", o.builtin]
    for path, weight in scripts or []:
        cmd += ["-f", f"{path}@{weight}"]
    cmd += ["-c", str(clients), "-j", str(threads)]
    if o.transactions:
        cmd += ["-t", str(o.transactions)]
    else:
        cmd += ["-T", str(duration_s)]
    cmd += ["-P", str(run.progress_interval_s)]
    if o.rate_tps:
        cmd += [f"--rate={o.rate_tps:g}"]
    if o.latency_limit_ms:
        cmd += [f"--latency-limit={o.latency_limit_ms:g}"]
    if o.query_mode:
        cmd += ["-M", o.query_mode]
    if o.per_statement:
        cmd += ["-r"]
    if o.log == "aggregate":
        cmd += ["--log", "--log-prefix=pgbench_log", f"--aggregate-interval={run.aggregate_interval_s}"]
    elif o.log == "transactions":
        cmd += ["--log", "--log-prefix=pgbench_tx"]
        if o.sampling_rate:
            cmd += [f"--sampling-rate={o.sampling_rate:g}"]
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


# ------------------------------------------------------------------ a run against the lab's server (run.pg_run)


def client_command(view: RunView, cl: Cluster, rdir: Path) -> list[str]:
    """The run's pgbench command against the running cluster (its custom scripts copied into the run folder)."""
    scripts = copy_scripts(view, rdir)
    return run_command(
        cl.bindir / "pgbench",
        cl.client_args(),
        view.workload,
        view.spec.clients,
        view.duration_s,
        view.run,
        scripts,
        view.postgres.database,
    )


def run_client(view: RunView, cmd: list[str], rdir: Path) -> Outcome:
    """The run's pgbench command (as the cgroup wraps it) in the run folder."""
    return execute(cmd, rdir, "pgbench.stdout", "pgbench.stderr", view.timeout_s, Progress(view.label), view.duration_s)


def copy_scripts(view: RunView, rdir: Path) -> list[tuple[Path, int]]:
    """Custom pgbench scripts, copied into the run folder (the raw data carries what was run)."""
    out = []
    for item in view.workload.options_as(PgbenchOptions).scripts or ():
        src = Path(item.file)  # made absolute, relative to the config file, by config.load
        if not src.exists():
            raise LabError(f"pgbench script {src} not found (workloads: scripts are relative to the config file)")
        dest = rdir / f"script_{src.name}"
        shutil.copyfile(src, dest)
        out.append((dest.resolve(), int(item.weight)))
    return out
