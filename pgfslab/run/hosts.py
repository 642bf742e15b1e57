"""One host's share of a study run on several machines (the Slurm profile's unit of work).

`make run EXECUTOR=slurm HOSTS=a,b` submits one Slurm job per host key (`rule host_share`, exclusive on
its node). The job runs `pgfslab host-share`, which, on the node:

1. checks that it sees the submit host's working directory (the study's frozen config and the lab's
   Snakefile at the paths the submit host gave): without a shared file system it stops with a message
   that says what to configure;
2. writes `data/raw/<study>/<host>/host.json`: the machine (CPU, memory, kernel, OS), its block devices,
   the Slurm job and node;
3. runs the study's whole plan for that host with a Snakemake of its own on the node (`--config
   host=<key>`, target `raw`: prepare every target, every run in plan order, one at a time, failures
   kept as data, an interrupted run redone), exactly as `make run` does on one machine;
4. writes `share.json` (the output the submit host waits for): the runs' statuses and the times.

Every host runs every target (the statistics compare targets within a host, the host being a block).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.config.checks import validate
from pgfslab.config.study import Study, load_study
from pgfslab.errors import LabError
from pgfslab.run import provenance
from pgfslab.run.common import now, write_json

SLURM_VARS = ("SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_CLUSTER_NAME", "SLURM_JOB_PARTITION", "SLURM_CPUS_ON_NODE")
# what a host's run costs besides its measured seconds (server start, samplers, Snakemake's job start), and
# a target's preparation (mkfs, initdb, bulk load), measured on the 2-core machine (README), with margin
RUN_OVERHEAD_S = 15
PREPARE_S = 120


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def devices(sys_block: Path = Path("/sys/block")) -> list[dict[str, Any]]:
    """The machine's block devices (no loop, RAM or device-mapper devices): name, model, size, rotational,
    scheduler: what a study's targets or their images may sit on."""
    out: list[dict[str, Any]] = []
    if not sys_block.is_dir():
        return out
    for dev in sorted(sys_block.iterdir()):
        if dev.name.startswith(("loop", "ram", "zram", "dm-", "nbd", "sr")):
            continue
        sectors = _read(dev / "size")
        out.append(
            {
                "name": dev.name,
                "model": _read(dev / "device" / "model"),
                "size_bytes": int(sectors) * 512 if sectors and sectors.isdigit() else None,
                "rotational": _read(dev / "queue" / "rotational") == "1",
                "scheduler": _read(dev / "queue" / "scheduler"),
            }
        )
    return out


def describe(host: str) -> dict[str, Any]:
    """host.json: who ran a host's share, on what."""
    env = {k: os.environ[k] for k in SLURM_VARS if k in os.environ}
    return {
        "host_key": host,
        "recorded_at": now(),
        "machine": provenance.host(),
        "devices": devices(),
        "slurm": {"job_id": env.get("SLURM_JOB_ID"), "node": env.get("SLURMD_NODENAME"), "env": env} if env else None,
        "git": provenance.git(),
    }


def runtime_minutes(study: Study) -> int:
    """A generous wall-time limit for one host's share (Slurm's `--time`): measured seconds plus overhead
    per run, a preparation per target, doubled, in minutes."""
    seconds = 0.0
    for r in study.runs:
        seconds += float(study.workloads[r.workload].duration_s or study.run.duration_s) + RUN_OVERHEAD_S
    seconds += PREPARE_S * len(study.targets)
    return int(2 * seconds // 60) + 10


def snakemake_command(frozen: Path, host: str) -> list[str]:
    """The Snakemake a host runs its share with: `make run`'s options, on this host only."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(paths.LAB / "workflow" / "Snakefile"),
        "--cores",
        "1",
        "--scheduler",
        "greedy",
        "--rerun-incomplete",
        "--keep-going",
        # the submit host's Snakemake holds the lock of this working directory; it runs one share per host
        "--nolock",
        "--quiet",
        "rules",
        "--config",
        f"config={frozen}",
        f"host={host}",
        "--",
        "raw",
    ]


def check_shared(frozen: Path) -> None:
    """The node must see the submit host's files: the frozen study config and the lab itself."""
    missing = [p for p in (frozen, paths.LAB / "workflow" / "Snakefile") if not p.exists()]
    if missing:
        raise LabError(
            f"host share on {provenance.host()['hostname']}: {', '.join(map(str, missing))} not found from "
            f"{Path.cwd()}: the compute nodes must share the submit host's working directory and the lab "
            "(same paths; see README, Many machines)"
        )


def run_share(frozen: Path, host: str, out: Path) -> int:
    """A host's whole share of the plan (see the module's doc). Returns Snakemake's exit status."""
    check_shared(frozen)
    study = load_study(frozen).with_host(host)
    validate(study.to_dict(), f"{frozen} with host={host}")
    raw = study.raw_dir
    raw.mkdir(parents=True, exist_ok=True)
    write_json(raw / "host.json", describe(host))
    t0 = time.monotonic()
    started = now()
    proc = subprocess.Popen(snakemake_command(frozen, host))
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:
        # SIGINT/SIGTERM (Ctrl-C, scancel): the node's Snakemake is interrupted the way a terminal does it, and
        # waited for, so its running job releases what it holds (never killed: that would leave mounts)
        proc.send_signal(signal.SIGINT)
        proc.wait()
        raise
    statuses: dict[str, str] = {}
    for r in study.runs:
        rj = raw / r.run_id / "run.json"
        statuses[r.run_id] = json.loads(rj.read_text()).get("status", "?") if rj.exists() else "not run"
    record = {
        "host_key": host,
        "study": study.study,
        "started_at": started,
        "ended_at": now(),
        "wall_s": round(time.monotonic() - t0, 1),
        "snakemake_exit": returncode,
        "runs": statuses,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "node": os.environ.get("SLURMD_NODENAME") or provenance.host()["hostname"],
    }
    if returncode != 0:
        print(f"host share {host}: Snakemake exited {returncode}; runs: {statuses}", file=sys.stderr)
        return returncode
    write_json(out, record)
    return 0
