"""The two stages that touch the machine: preparing a target (mkfs, initdb, bulk load) and
executing one run of the plan. Each owns everything it mounts or starts and releases it on
every exit path; raw outputs are written under data/raw/<study>/ untouched, with provenance.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from pipeline import config as cfgmod
from pipeline import postgres, provenance, targets
from pipeline.errors import LabError
from pipeline.progress import Progress, fmt_s
from pipeline.runners import pgbench
from pipeline.sampler import ProcSampler

SCHEMA_VERSION = 1


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically: a reader sees the old file or the whole new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


def setup_dir(study: str, target: str) -> Path:
    return cfgmod.raw_dir(study) / "_setup" / target


def _port(cfg: dict[str, Any], target: str) -> int:
    return int(cfg["postgres"]["port_base"]) + list(cfg["targets"]).index(target)


def _drop_caches() -> str:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "dropped"
    except OSError as exc:
        return f"not dropped: {exc.strerror}"


def _copy_log_since(log: Path, offset: int, dest: Path) -> None:
    if log.exists():
        with open(log, "rb") as src, open(dest, "wb") as out:
            src.seek(offset)
            shutil.copyfileobj(src, out)


def _log_size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def prepare_target(cfg: dict[str, Any], target: str) -> Path:
    """Create the target's file system, initdb a cluster on it and bulk-load the data set."""
    if target not in cfg["targets"]:
        raise LabError(f"target {target!r} is not in study {cfg['study']!r} (targets: {', '.join(cfg['targets'])})")
    spec = cfg["targets"][target]
    out = setup_dir(cfg["study"], target)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wd = cfgmod.workdir(cfg)
    bindir = postgres.bindir(cfg["postgres"].get("bindir"))
    user = cfg["postgres"]["user"]
    record: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "study": cfg["study"], "target": target,
                              "spec": spec, "started_at": _now()}
    print(f"[prepare {target}] creating {spec['fs']} target", file=sys.stderr, flush=True)
    record["created"] = targets.create(wd, target, spec)
    with targets.mounted(wd, target, spec, user) as mnt:
        record["mount"] = mnt.describe()
        pgdata = mnt.path / "pgdata"
        with postgres.running(pgdata, _port(cfg, target), bindir, user, cfg["postgres"]["settings"], init=True) as cl:
            record["initdb"] = True
            init_cmd = pgbench.init_command(bindir / "pgbench", cl.client_args(), cfg["dataset"]["scale"])
            print(f"[prepare {target}] loading scale {cfg['dataset']['scale']} with pgbench -i", file=sys.stderr, flush=True)
            res = pgbench.execute(init_cmd, out, "pgbench_init.stdout", "pgbench_init.stderr", timeout_s=3600)
            if res.returncode != 0:
                raise LabError(f"target {target}: pgbench -i failed: {res.error} (see {out / 'pgbench_init.stderr'})")
            cl.query("CHECKPOINT")
            record["load"] = {"command": init_cmd, "wall_s": res.wall_s, "scale": cfg["dataset"]["scale"]}
            record["postgres"] = cl.facts()
            record["fs_used_bytes"] = targets.used_bytes(mnt.mountpoint)
            log = cl.log
        _copy_log_since(log, 0, out / "postgresql.log")
    record["ended_at"] = _now()
    record["tools"] = provenance.tools(str(bindir))
    record["host"] = provenance.host()
    record["git"] = provenance.git()
    write_json(out / "target.json", record)
    print(f"[prepare {target}] done: load {record['load']['wall_s']:.1f} s, "
          f"database {record['postgres']['database_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
    return out / "target.json"


def _study_eta(raw: Path, total: int) -> tuple[int, str]:
    walls = []
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(Exception):
            walls.append(float(json.loads(rj.read_text())["wall_s"]))
    done = len(walls)
    if not walls:
        return done, "ETA unknown"
    remaining = (total - done) * (sum(walls) / done)
    return done, f"elapsed {fmt_s(sum(walls))}, ETA {fmt_s(remaining)}"


def run_one(cfg: dict[str, Any], run_id: str) -> Path:
    """Execute one run of the plan. Returns its run.json.

    A workload that fails or times out is data: run.json records status `failed` with the error and
    the partial logs stay. An interrupted run (Ctrl-C, SIGTERM, a lab error) leaves its partial
    logs and a `run.incomplete.json` marker, and writes no run.json, so a re-run redoes it.
    """
    spec, total = cfgmod.find_run(cfg, run_id)
    study = cfg["study"]
    raw = cfgmod.raw_dir(study)
    rdir = raw / run_id
    if rdir.exists() and not any(rdir.iterdir()):
        rdir.rmdir()  # Snakemake makes the output's folder before the job starts
    if rdir.exists():
        aside = raw / "_attempts" / f"{run_id}.{dt.datetime.now():%Y%m%dT%H%M%S}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(rdir, aside)
        print(f"[{run_id}] an earlier attempt was kept in {aside}", file=sys.stderr, flush=True)
    rdir.mkdir(parents=True)
    tspec = cfg["targets"][spec.target]
    wl = cfg["workloads"][spec.workload]
    bindir = postgres.bindir(cfg["postgres"].get("bindir"))
    user = cfg["postgres"]["user"]
    setup = json.loads((setup_dir(study, spec.target) / "target.json").read_text())
    done, eta = _study_eta(raw, total)
    label = f"[run {spec.plan_index + 1}/{total} {run_id}]"
    print(f"{label} starting ({done} runs done; {eta})", file=sys.stderr, flush=True)
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id, "study": study, "plan_index": spec.plan_index, "plan_total": total,
        "target": spec.target, "target_spec": tspec, "fs": tspec["fs"],
        "workload": spec.workload, "workload_spec": wl, "tool": wl["tool"],
        "clients": spec.clients, "repeat": spec.repeat,
        "dataset": cfg["dataset"], "run": cfg["run"], "sampler": cfg["sampler"],
        "postgres_settings_config": cfg["postgres"]["settings"],
        "status": "running", "started_at": _now(),
        "host": provenance.host(), "vm": provenance.vm_settings(),
        "tools": provenance.tools(str(bindir)), "git": provenance.git(),
        "target_setup": {"load_wall_s": setup.get("load", {}).get("wall_s"), "created": setup.get("created")},
    }
    write_json(rdir / "run.incomplete.json", record)
    t0 = time.monotonic()
    wd = cfgmod.workdir(cfg)
    try:
        with targets.mounted(wd, spec.target, tspec, user) as mnt:
            record["mount"] = mnt.describe()
            record["fallback"] = mnt.fallback
            record["caches"] = _drop_caches() if cfg["run"]["drop_caches"] else "kept"
            with postgres.running(mnt.path / "pgdata", _port(cfg, spec.target), bindir, user) as cl:
                log_offset = _log_size(cl.log)
                record["postgres_before"] = cl.facts()
                cmd = pgbench.run_command(bindir / "pgbench", cl.client_args(), wl, spec.clients, cfg["run"])
                timeout = cfg["run"]["duration_s"] * cfg["run"]["timeout_factor"] + 60
                with ProcSampler("/proc/meminfo", rdir / "meminfo.log", cfg["sampler"]["meminfo_hz"]) as smp:
                    outcome = pgbench.execute(cmd, rdir, "pgbench.stdout", "pgbench.stderr", timeout,
                                              Progress(label), cfg["run"]["duration_s"])
                record["sampler"] = {**cfg["sampler"], "meminfo_samples": smp.samples}
                record["commands"] = [cmd]
                record["pgbench"] = {"returncode": outcome.returncode, "wall_s": outcome.wall_s,
                                     "timed_out": outcome.timed_out}
                record["postgres"] = cl.facts()
                record["fs_used_bytes"] = targets.used_bytes(mnt.mountpoint)
                log = cl.log
            _copy_log_since(log, log_offset, rdir / "postgresql.log")
    except BaseException as exc:
        record["status"] = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
        record["error"] = str(exc) or type(exc).__name__
        record["ended_at"] = _now()
        write_json(rdir / "run.incomplete.json", record)
        raise
    record["status"] = "ok" if outcome.error is None else "failed"
    record["error"] = outcome.error
    record["ended_at"] = _now()
    record["wall_s"] = round(time.monotonic() - t0, 3)
    record["files"] = sorted(p.name for p in rdir.iterdir() if p.name != "run.incomplete.json")
    write_json(rdir / "run.json", record)
    (rdir / "run.incomplete.json").unlink()
    tps = _summary_tps(rdir / "pgbench.stdout")
    print(f"{label} {record['status']} in {record['wall_s']:.0f} s" + (f", {tps} tps" if tps else "")
          + (f": {outcome.error}" if outcome.error else ""), file=sys.stderr, flush=True)
    return rdir / "run.json"


def _summary_tps(stdout: Path) -> str | None:
    with contextlib.suppress(OSError):
        for line in stdout.read_text().splitlines():
            if line.startswith("tps = "):
                return line.split()[2]
    return None
