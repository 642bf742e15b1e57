"""sysbench OLTP against PostgreSQL: prepare (timed, the bulk load), an optional fillfactor change
after it (seed 002: `ALTER TABLE ... SET (fillfactor=70)` then `VACUUM FULL`), and timed runs with
`--report-interval=1`.

sysbench prints interval lines and its summary on stdout; errors on stderr. Its pgsql driver
connects as `sbtest` unless told otherwise, so the user is always passed; a socket directory works
as `--pgsql-host`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pgfslab.config.model import Dataset, RunSettings, Workload
from pgfslab.errors import LabError
from pgfslab.progress import Progress
from pgfslab.runners.process import Outcome, regex_progress
from pgfslab.runners.process import execute as _execute
from pgfslab.tools.sysbench import SysbenchOptions

if TYPE_CHECKING:
    from pgfslab.config.study import RunView
    from pgfslab.host.postgres import Cluster

PROGRESS = regex_progress(
    r"^\[ *([0-9.]+)s \] thds: \d+ tps: ([0-9.]+)",
    lambda m: f"t={float(m.group(1)):.0f} s  {float(m.group(2)):.0f} tps",
)


def describe(spec: Workload) -> str:
    """The workload in a few words, as the paper names it."""
    return f"sysbench {spec.options.what()}"


def how(spec: Workload) -> list[str]:
    """How the runs were driven beyond their length, as the methodology's workload table says it."""
    o = spec.options_as(SysbenchOptions)
    return [f"p{o.percentile} per second" + (", histogram" if o.histogram else "")]


# a row of sbtest (two ints, c of 120 and pad of 60 characters, the tuple header) with its share of the primary key
# and the k index: about 270 bytes at fillfactor 100
BYTES_PER_ROW = 270


def dataset_bytes(dataset: Dataset) -> float:
    """About how large `sysbench prepare` makes the data set (what the plan places against memory before it runs)."""
    fill = dataset.sysbench.fillfactor or dataset.fillfactor or 100
    return dataset.sysbench.tables * dataset.sysbench.table_size * BYTES_PER_ROW * 100 / fill


def binary() -> str:
    found = shutil.which("sysbench")
    if found is None:
        raise LabError("sysbench not found (run `make setup`)")
    return found


def _conn(sockdir: Path, port: int, dbname: str = "postgres") -> list[str]:
    return [
        "--db-driver=pgsql",
        f"--pgsql-host={sockdir}",
        f"--pgsql-port={port}",
        "--pgsql-user=postgres",
        f"--pgsql-db={dbname}",
    ]


def _data(dataset: Dataset) -> list[str]:
    return [f"--tables={dataset.sysbench.tables}", f"--table-size={dataset.sysbench.table_size}"]


def prepare_command(
    sockdir: Path, port: int, dataset: Dataset, threads: int = 1, dbname: str = "postgres"
) -> list[str]:
    # oltp_common's prepare creates and fills the sbtest tables (any oltp_* test name will do)
    return [
        binary(),
        "oltp_read_write",
        *_conn(sockdir, port, dbname),
        *_data(dataset),
        f"--threads={threads}",
        "prepare",
    ]


def fillfactor_sql(dataset: Dataset) -> list[str]:
    """Statements that rewrite every sbtest table with the configured fillfactor (empty if none)."""
    ff = dataset.sysbench.fillfactor
    if not ff:
        return []
    out = []
    for i in range(1, int(dataset.sysbench.tables) + 1):
        out += [f"ALTER TABLE sbtest{i} SET (fillfactor = {int(ff)})", f"VACUUM FULL sbtest{i}"]
    return out


def run_command(
    sockdir: Path | str,
    port: int,
    workload: Workload,
    threads: int,
    duration_s: int,
    run: RunSettings,
    dataset: Dataset,
    dbname: str = "postgres",
) -> list[str]:
    """The sysbench command of one run of `duration_s` with `threads` client threads."""
    o = workload.options_as(SysbenchOptions)
    cmd = [
        binary(),
        str(o.test),
        *_conn(Path(sockdir), port, dbname),
        *_data(dataset),
        f"--threads={threads}",
        f"--time={duration_s}",
        f"--report-interval={run.progress_interval_s}",
        f"--percentile={o.percentile}",
    ]
    if o.rand_type:
        cmd.append(f"--rand-type={o.rand_type}")
    if o.histogram:
        cmd.append("--histogram=on")
    return [*cmd, "run"]


def execute(
    cmd: list[str],
    cwd: Path,
    timeout_s: float,
    progress: Progress | None = None,
    stdout_name: str = "sysbench.stdout",
    stderr_name: str = "sysbench.stderr",
) -> Outcome:
    return _execute(cmd, cwd, stdout_name, stderr_name, timeout_s, progress, PROGRESS, "stdout")


# ------------------------------------------------------------------ a run against the lab's server (run.pg_run)


def client_command(view: RunView, cl: Cluster, rdir: Path) -> list[str]:
    """The run's sysbench command against the running cluster (`rdir` unused: sysbench needs no files)."""
    return run_command(
        cl.sockdir, cl.port, view.workload, view.spec.clients, view.duration_s, view.run, view.dataset,
        view.postgres.database,
    )  # fmt: skip


def run_client(view: RunView, cmd: list[str], rdir: Path) -> Outcome:
    """The run's sysbench command (as the cgroup wraps it) in the run folder."""
    return execute(cmd, rdir, view.timeout_s, Progress(view.label))
