"""A data set's bulk load into a running cluster: pgbench -i and/or sysbench prepare (with the fillfactor's table
rewrite), each timed. The preparation loads every target's data set once (pgfslab.run.prepare); `run.reload` loads
it again before every run (pgfslab.run.reload)."""

from __future__ import annotations

import time
from pathlib import Path

from pgfslab.config.model import Dataset
from pgfslab.config.study import database_for
from pgfslab.errors import LabError
from pgfslab.host import postgres
from pgfslab.records.run_record import Load, Reloaded
from pgfslab.records.target_record import Rung, TargetRecord
from pgfslab.run.common import say
from pgfslab.runners import pgbench, sysbench
from pgfslab.tools import data_sets


def bulk_load(
    target: str,
    cl: postgres.Cluster,
    out: Path,
    bindir: Path,
    tools: set[str],
    dataset: Dataset,
    label: str,
    record: TargetRecord | Rung | Reloaded,
    rung: int | None,
) -> None:
    """Bulk-load one data set (the study's, or a ladder rung's into its own database) with the tools that need it
    (`tools`: the workloads' tools, pgfslab.tools.data_sets), each tool's load timed and recorded in `record`; its
    logs go to `out`, a rung's named after it (pgbench_init.d<k>.stdout, ...)."""
    db = database_for(rung)
    sfx = "" if rung is None else f".d{rung}"
    old, cl.dbname = cl.dbname, db
    try:
        if "pgbench" in data_sets(tools):  # pgbench's tables (the durability check writes them too)
            cmd = pgbench.init_command(bindir / "pgbench", cl.client_args(), dataset, db)
            say(label, f"loading scale {dataset.scale} with pgbench -i")
            res = pgbench.execute(cmd, out, f"pgbench_init{sfx}.stdout", f"pgbench_init{sfx}.stderr", timeout_s=3600)
            if res.returncode != 0:
                raise LabError(
                    f"target {target}: pgbench -i failed: {res.error} (see {out / f'pgbench_init{sfx}.stderr'})"
                )
            record.load = Load(command=cmd, wall_s=res.wall_s, scale=dataset.scale)
        if "sysbench" in data_sets(tools):
            cmd = sysbench.prepare_command(cl.sockdir, cl.port, dataset, dbname=db)
            sb = dataset.sysbench
            say(label, f"loading {sb.tables} sysbench tables of {sb.table_size} rows")
            res = sysbench.execute(
                cmd, out, 3600, stdout_name=f"sysbench_prepare{sfx}.stdout", stderr_name=f"sysbench_prepare{sfx}.stderr"
            )
            if res.returncode != 0:
                raise LabError(
                    f"target {target}: sysbench prepare failed: {res.error} "
                    f"(see {out / f'sysbench_prepare{sfx}.stderr'})"
                )
            t0 = time.monotonic()
            statements = sysbench.fillfactor_sql(dataset)
            for sql in statements:
                cl.query(sql)
            record.load_sysbench = Load.model_validate(
                {
                    "command": cmd,
                    "wall_s": res.wall_s,
                    **sb.to_dict(),
                    "fillfactor_sql": statements,
                    "fillfactor_s": round(time.monotonic() - t0, 3),
                }
            )
    finally:
        cl.dbname = old
