"""One file-system micro-benchmark run (pgfslab/runners/fsmicro.py) in a target's file system: no PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgfslab.config.model import RunSettings, Workload
from pgfslab.config.study import RunView
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.progress import Progress
from pgfslab.records.run_record import RunRecord
from pgfslab.run.phases import Phases
from pgfslab.run.sampler import Samplers
from pgfslab.runners import process
from pgfslab.tools import fsmicro_ops

# the slowest set-up writes allowed for before a run counts as hung: zfs-fuse's writes go through a userspace
# daemon, a few tens of MB/s on a busy 2-vCPU VM
SETUP_BYTES_PER_S = 10e6


def fs_op_spec(wl: Workload, run: RunSettings) -> tuple[dict[str, Any], float]:
    """An fsmicro workload's op spec and its run's timeout. The run lasts the workload's duration (else the
    study's), except a `delete` of pre-created files without a duration or count of its own: it runs until
    every file is deleted, as seed 003's did (its clean-up would delete the rest anyway, untimed). The
    timeout: the duration x timeout_factor + 600 s for the set-up and clean-up, + 10 ms per file made and a
    second per `SETUP_BYTES_PER_S` written by the set-up (fs-delete's 10k files of 2 MB are 20 GB)."""
    op = wl.options.to_dict()
    duration = int(wl.duration_s or run.duration_s)
    until_done = op.get("op") == "delete" and wl.duration_s is None and "count" not in op
    if not until_done:
        op.setdefault("duration_s", duration)
    full = fsmicro_ops.resolve({**op, "duration_s": duration})  # the op's defaults: a delete's files are 2 MB
    files = int(full.get("files") or 0) + int(full.get("bg_files") or 0)
    made = int(full.get("files") or 0) * int(full.get("size_bytes") or 0) + int(full.get("bg_files") or 0) * int(
        full.get("bg_size_bytes") or 0
    )
    timeout = duration * run.timeout_factor + 600 + 0.01 * files + made / SETUP_BYTES_PER_S
    return op, timeout


def fs_run(view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, ph: Phases) -> process.Outcome:
    """One file-system micro-benchmark run in the target's file system (no PostgreSQL)."""
    op, timeout = fs_op_spec(view.workload, view.run)
    cmd = fsmicro_ops.command(op, mnt.path, rdir.resolve())
    record.commands = [cmd]
    parse = process.regex_progress(r"(\d+) ops", lambda m: f"{m.group(0)}")
    with Samplers(rdir, view.sampler) as smp:
        ph.lap("samplers_start")
        outcome = process.execute(cmd, rdir, "fsmicro.stdout", "fsmicro.stderr", timeout, Progress(view.label), parse)
        # fsmicro's pre-created files and its report: tool_overhead. A delete that runs until every file is
        # gone has no duration: its whole lap counts as measured (the pre-creation is not split out)
        ph.lap_tool(float(op["duration_s"]) if "duration_s" in op else None)
    ph.lap("samplers_stop")
    record.sampler = {**view.sampler.to_dict(), **smp.record()}
    return outcome
