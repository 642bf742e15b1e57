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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgfslab.config import fsmicro_spec, vm_settings
from pgfslab.config import study as cfgmod
from pgfslab.errors import LabError
from pgfslab.host import cgroups, postgres, snapshots, sysctl, targets, zfs
from pgfslab.progress import Progress, fmt_s
from pgfslab.run import provenance
from pgfslab.run.common import (
    PG_TOOLS,
    SCHEMA_VERSION,
    copy_log_since,
    disk_full_message,
    fs_used_bytes,
    log_size,
    now,
    one_line,
    say,
    server_port,
    setup_dir,
    texts,
    wal_dir,
    wal_record,
    write_json,
)
from pgfslab.run.crash_cycle import _durability_run
from pgfslab.run.interrupt import release_after_interrupt
from pgfslab.run.phases import Phases, process_age_s
from pgfslab.run.sampler import Samplers
from pgfslab.runners import pgbench, process, sysbench


def _study_eta(raw: Path, total: int) -> tuple[int, str]:
    walls = []
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(Exception):
            rec = json.loads(rj.read_text())
            if rec.get("status") != "skipped":  # nothing measured: not a run's duration
                walls.append(float(rec["wall_s"]))
    done = len(walls)
    if not walls:
        return done, "ETA unknown"
    remaining = (total - done) * (sum(walls) / done)
    return done, f"elapsed {fmt_s(sum(walls))}, ETA {fmt_s(remaining)}"


def _compsize(path: Path) -> dict[str, Any] | None:
    """btrfs-compsize of a directory: bytes on disk vs uncompressed (what compression saved)."""
    from pgfslab.host import proc

    if proc.which("compsize") is None:
        return None
    res = proc.run(["compsize", "-b", str(path)], check=False, timeout=300)
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["TOTAL"] and len(parts) >= 5:
            return {
                "disk_bytes": int(parts[2]),
                "uncompressed_bytes": int(parts[3]),
                "referenced_bytes": int(parts[4]),
                "command": ["compsize", "-b", str(path)],
            }
    return {"error": (res.stderr or res.stdout).strip()[-300:]}


def _duration(cfg: dict[str, Any], wl: dict[str, Any]) -> int:
    return int(wl.get("duration_s") or cfg["run"]["duration_s"])


def _scripts(cfg: dict[str, Any], wl: dict[str, Any], rdir: Path) -> list[tuple[Path, int]]:
    """Custom pgbench scripts, copied into the run folder (the raw data carries what was run)."""
    out = []
    for item in wl.get("scripts") or []:
        src = Path(item["file"])  # made absolute, relative to the config file, by config.load
        if not src.exists():
            raise LabError(f"pgbench script {src} not found (workloads: scripts are relative to the config file)")
        dest = rdir / f"script_{src.name}"
        shutil.copyfile(src, dest)
        out.append((dest.resolve(), int(item.get("weight", 1))))
    return out


def _timeout(cfg: dict[str, Any], duration: float) -> float:
    # no schema default for timeout_grace_s: a new key with a default would change every existing run's
    # parameters and make Snakemake redo them
    return duration * cfg["run"]["timeout_factor"] + float(cfg["run"].get("timeout_grace_s", 60))


def _pg_run(
    cfg: dict[str, Any],
    spec: cfgmod.RunSpec,
    rdir: Path,
    mnt: targets.Mounted,
    label: str,
    record: dict[str, Any],
    ph: Phases | None = None,
) -> process.Outcome:
    """One pgbench or sysbench run against the target's cluster (in its cgroup, with its samplers).

    A server that crashes during the run is data: what it left is recorded (record["server"]), its
    orphans and stale postmaster.pid are cleaned up, and the server log is kept on every exit path."""
    wl = cfg["workloads"][spec.workload]
    bindir = postgres.bindir(cfg["postgres"].get("bindir"))
    user = cfg["postgres"]["user"]
    settings = cfgmod.pg_settings_for(cfg, spec.target, spec.workload)
    dataset = cfgmod.dataset_for(cfg, spec.target, spec.rung)
    dbname = cfgmod.database_for(spec.rung)
    limits = cgroups.limits_from_config(cfg["resources"], mnt.device)
    duration = _duration(cfg, wl)
    timeout = _timeout(cfg, duration)
    snaps = cfg.get("snapshots") if spec.target in cfgmod.snapshot_targets(cfg) else None
    server: dict[str, Any] = {}
    record["server"] = server
    log_at: list[Any] = []
    ph = ph or Phases()
    try:
        with contextlib.ExitStack() as outer:
            outer.callback(ph.lap, "cgroup_remove")
            cg = outer.enter_context(cgroups.limited(cgroups.cgroup_name(cfg["study"], spec.target), limits))
            ph.lap("cgroup")
            # Kept: a fresh server per run (started after the cache drop, stopped with its shutdown
            # checkpoint): no run inherits another's shared buffers, dirty pages or WAL to checkpoint.
            outer.callback(ph.lap, "server_stop")
            cl = outer.enter_context(
                postgres.running(
                    mnt.path / "pgdata",
                    server_port(cfg, spec.target),
                    bindir,
                    user,
                    run_settings=settings,
                    wrap=cg.command,
                )
            )
            ph.lap("server_start")
            log_at[:] = [cl.log, log_size(cl.log)]
            cl.dbname = dbname  # the run's data set: its facts and pg_stat_database samples are that database's
            server["start_notes"] = list(cl.notes)
            record["postgres_settings"] = settings
            if cfg["run"].get("prewarm"):
                record["prewarm"] = _prewarm(cl)
                ph.lap("prewarm")
            record["postgres_before"] = cl.facts()
            if wl["tool"] == "pgbench":
                cmd = pgbench.run_command(
                    bindir / "pgbench",
                    cl.client_args(),
                    {**wl, "duration_s": duration},
                    spec.clients,
                    cfg["run"],
                    _scripts(cfg, wl, rdir),
                    dbname,
                )
            else:
                cmd = sysbench.run_command(
                    cl.sockdir, cl.port, {**wl, "duration_s": duration}, spec.clients, cfg["run"], dataset, dbname
                )
            record["commands"] = [cmd]
            ph.lap("facts_before")  # the server's settings and sizes before the run (a first connection)
            with contextlib.ExitStack() as stack:
                stack.callback(ph.lap, "samplers_stop")
                smp = stack.enter_context(Samplers(rdir, cfg["sampler"], cl.conninfo))
                sched = None
                if snaps and mnt.zfs:
                    sched = stack.enter_context(
                        snapshots.ZfsScheduler(
                            mnt.zfs["dataset"],
                            mnt.mountpoint,
                            snapshots.Schedule(snaps["interval_s"], snaps["keep_s"], snaps.get("offset_s", 0)),
                            rdir / snapshots.CSV_NAME,
                        )
                    )
                elif snaps:
                    sched = stack.enter_context(
                        snapshots.scheduled(
                            mnt.path,
                            mnt.mountpoint,
                            snapshots.Schedule(snaps["interval_s"], snaps["keep_s"], snaps.get("offset_s", 0)),
                            rdir,
                        )
                    )
                ph.lap("samplers_start")
                if wl["tool"] == "pgbench":
                    outcome = pgbench.execute(
                        cg.command(cmd), rdir, "pgbench.stdout", "pgbench.stderr", timeout, Progress(label), duration
                    )
                else:
                    outcome = sysbench.execute(cg.command(cmd), rdir, timeout, Progress(label))
                # pgbench's own start (connections, the vacuum of its tables) is tool_overhead
                ph.lap_tool(None if wl.get("transactions") else duration)
            record["sampler"] = {**cfg["sampler"], **smp.record()}
            if sched is not None:
                record["snapshots"] = sched.summary()
            server["alive_after_run"] = cl.alive()
            if server["alive_after_run"]:
                try:
                    record["postgres"] = cl.facts()
                except psycopg.Error as exc:  # e.g. in crash recovery after a backend was killed
                    server["facts_error"] = one_line(exc)
            record["cgroup"] = {**cg.record, "usage": cg.usage() if cg.active else None}
            ph.lap("facts_after")
        server["cleanup"] = list(cl.notes)[len(server["start_notes"]) :]
    finally:
        if log_at:
            copy_log_since(log_at[0], log_at[1], rdir / "postgresql.log")
    signs = postgres.crash_signs(texts(rdir, ["postgresql.log"])[0] if (rdir / "postgresql.log").exists() else "")
    server["log_signs"] = signs
    server["crashed"] = not server["alive_after_run"] or bool(signs)
    return outcome


def _prewarm(cl: postgres.Cluster) -> dict[str, Any]:
    """Load every table and index of the run's database into shared_buffers (pg_prewarm, PostgreSQL's own
    contrib module): a warm start, outside the measured interval."""
    t0 = time.monotonic()
    cl.query("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    blocks = cl.query(
        "SELECT coalesce(sum(pg_prewarm(c.oid)), 0)::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')"
    )[0][0]
    return {"blocks": int(blocks), "wall_s": round(time.monotonic() - t0, 3)}


def _run_error(
    cfg: dict[str, Any],
    spec: cfgmod.RunSpec,
    rdir: Path,
    mnt: targets.Mounted,
    record: dict[str, Any],
    outcome: process.Outcome,
) -> str | None:
    """What went wrong in a run, most telling first: a full target, a server crash, the tool's error
    (a timeout, a client that died); None for a good run."""
    parts: list[str] = []
    full = disk_full_message(cfg, spec.target, texts(rdir), mnt.mountpoint)
    if full:
        parts.append(full)
    server = record.get("server") or {}
    if server.get("crashed"):
        if not server.get("alive_after_run"):
            why = "postmaster gone"
        else:
            why = "the server restarted after a crash"
        sign = (server.get("log_signs") or [""])[0]
        parts.append(f"server crashed: {why} (see postgresql.log{': ' + sign if sign else ''})")
    if outcome.error:
        tool = str(record.get("tool"))
        err = outcome.error if outcome.error.startswith(tool + ":") or not parts else f"{tool}: {outcome.error}"
        parts.append(err)
    return "; ".join(parts) or None


def fs_op_spec(cfg: dict[str, Any], wl: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """An fsmicro workload's op spec and its run's timeout. The run lasts the workload's duration (else the
    study's), except a `delete` of pre-created files without a duration or count of its own: it runs until
    every file is deleted, as seed 003's did (its clean-up would delete the rest anyway, untimed). The
    timeout: the duration x timeout_factor + 600 s for the set-up and clean-up, + 10 ms per file made."""
    op = {k: v for k, v in wl.items() if k in cfgmod.TOOL_KEYS["fsmicro"]}
    until_done = op.get("op") == "delete" and "duration_s" not in wl and "count" not in op
    if not until_done:
        op.setdefault("duration_s", _duration(cfg, wl))
    files = int(op.get("files") or 0) + int(op.get("bg_files") or 0)
    timeout = _duration(cfg, wl) * cfg["run"]["timeout_factor"] + 600 + 0.01 * files
    return op, timeout


def _fs_run(
    cfg: dict[str, Any],
    spec: cfgmod.RunSpec,
    rdir: Path,
    mnt: targets.Mounted,
    label: str,
    record: dict[str, Any],
    ph: Phases | None = None,
) -> process.Outcome:
    """One file-system micro-benchmark run in the target's file system (no PostgreSQL)."""
    wl = cfg["workloads"][spec.workload]
    op, timeout = fs_op_spec(cfg, wl)
    cmd = fsmicro_spec.command(op, mnt.path, rdir.resolve())
    record["commands"] = [cmd]
    parse = process.regex_progress(r"(\d+) ops", lambda m: f"{m.group(0)}")
    ph = ph or Phases()
    with Samplers(rdir, cfg["sampler"]) as smp:
        ph.lap("samplers_start")
        outcome = process.execute(cmd, rdir, "fsmicro.stdout", "fsmicro.stderr", timeout, Progress(label), parse)
        # fsmicro's pre-created files and its report: tool_overhead. A delete that runs until every file is
        # gone has no duration: its whole lap counts as measured (the pre-creation is not split out)
        ph.lap_tool(float(op["duration_s"]) if "duration_s" in op else None)
    ph.lap("samplers_stop")
    record["sampler"] = {**cfg["sampler"], **smp.record()}
    return outcome


class PrecisionDecision(Protocol):
    run: bool
    reason: str

    def to_dict(self) -> dict[str, Any]: ...


# Whether an optional round (study key `precision`) runs, and its progress line. The decision reads the rounds
# measured so far with the ingest's parsers and the analysis' statistics, stages above this one, so the command
# passes it in (pgfslab.cli.main gives pgfslab.analysis.precision_gate.gate).
PrecisionGate = Callable[[dict[str, Any], cfgmod.RunSpec], tuple[PrecisionDecision, str]]


def run_one(cfg: dict[str, Any], run_id: str, precision_gate: PrecisionGate | None = None) -> Path:
    """Execute one run of the plan. Returns its run.json.

    A workload that fails or times out is data: run.json records status `failed` with the error and
    the partial logs stay. An interrupted run (Ctrl-C, SIGTERM, a lab error) leaves its partial
    logs and a `run.incomplete.json` marker, and writes no run.json, so a re-run redoes it.
    """
    started = process_age_s()  # the command's start: Python, imports, the config read
    ph = Phases()
    spec, total = cfgmod.find_run(cfg, run_id)
    study = cfg["study"]
    raw = cfgmod.raw_dir_of(cfg)
    rdir = raw / run_id
    if rdir.exists() and not any(rdir.iterdir()):
        rdir.rmdir()  # Snakemake makes the output's folder before the job starts
    if rdir.exists():
        aside = raw / "_attempts" / f"{run_id}.{dt.datetime.now():%Y%m%dT%H%M%S}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(rdir, aside)
        say(run_id, f"an earlier attempt was kept in {aside}")
    rdir.mkdir(parents=True)
    if spec.optional:
        if precision_gate is None:
            raise LabError(f"{run_id}: an optional round of a `precision` study needs its gate (pgfslab run-one)")
        skipped = _precision_gate(precision_gate, cfg, spec, rdir, total)
        if skipped is not None:
            return skipped
    tspec = cfg["targets"][spec.target]
    wl = cfg["workloads"][spec.workload]
    user = cfg["postgres"]["user"]
    setup = json.loads((setup_dir(study, spec.target, cfg.get("host")) / "target.json").read_text())
    done, eta = _study_eta(raw, total)
    label = f"run {spec.plan_index + 1}/{total} {run_id}"
    say(label, f"starting ({done} runs done; {eta})")
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "study": study,
        "plan_index": spec.plan_index,
        "plan_total": total,
        "target": spec.target,
        "target_spec": tspec,
        "fs": tspec["fs"],
        "workload": spec.workload,
        "workload_spec": wl,
        "tool": wl["tool"],
        "clients": spec.clients,
        "repeat": spec.repeat,
        "rung": spec.rung,
        "duration_s": _duration(cfg, wl),
        "dataset": cfgmod.dataset_for(cfg, spec.target, spec.rung),
        "run": cfg["run"],
        "sampler": cfg["sampler"],
        "os": cfgmod.os_for(cfg, spec.workload),
        "resources": cfg["resources"],
        "postgres_settings_config": cfg["postgres"]["settings"],
        "status": "running",
        "started_at": now(),
        "host": provenance.host(),
        "host_key": cfg.get("host"),
        "vm": provenance.vm_settings(),
        "tools": provenance.tools(
            str(postgres.bindir(cfg["postgres"].get("bindir"))) if wl["tool"] in PG_TOOLS else ""
        ),
        "git": provenance.git(),
        "target_setup": _setup_facts(setup, spec.rung),
    }
    write_json(rdir / "run.incomplete.json", record)
    t0 = time.monotonic()
    ph.lap("provenance")  # host, tools' versions, git: what the run.json says about where it ran
    wd = cfgmod.workdir(cfg)
    vm_rec: dict[str, Any] = {}
    wal = tspec.get("wal_on")
    try:
        with contextlib.ExitStack() as stack:
            # each callback is pushed before the context it times, so it runs right after that one's exit
            stack.callback(ph.lap, "sysctl_restore")
            vm_rec = stack.enter_context(
                sysctl.applied(vm_settings.settings_from_config(cfgmod.os_for(cfg, spec.workload)))
            )
            ph.lap("sysctl")
            stack.callback(ph.lap, "zfs_stop")
            stack.enter_context(targets.zfs_service(wd, [tspec] + ([cfg["targets"][wal]] if wal else [])))
            ph.lap("zfs_start")
            stack.callback(ph.lap, "unmount")
            mnt = stack.enter_context(targets.mounted(wd, spec.target, tspec, user, study=study))
            wmnt = (
                stack.enter_context(targets.mounted(wd, wal, cfg["targets"][wal], user, study=study)) if wal else None
            )
            ph.lap("mount")
            record["vm_applied"] = vm_rec
            record["mount"] = mnt.describe()
            record["fallback"] = mnt.fallback
            record["fs_label"] = mnt.fs_label
            if wmnt is not None:
                record["wal"] = wal_record(wal, wmnt, wal_dir(wmnt, spec.target))
            # Kept: every run starts from the same cold page cache (and the sync flushes what the previous
            # run or another study left dirty), so runs of a study are comparable whatever ran before them.
            record["caches"] = sysctl.drop_caches() if cfg["run"]["drop_caches"] else "kept"
            ph.lap("drop_caches")
            if wl["tool"] == "fsmicro":
                outcome = _fs_run(cfg, spec, rdir, mnt, label, record, ph)
            elif wl["tool"] == "durability":
                outcome = _durability_run(cfg, spec, rdir, mnt, label, record)
                ph.lap("durability_cycle")
            else:
                outcome = _pg_run(cfg, spec, rdir, mnt, label, record, ph)
            record[wl["tool"]] = {
                "returncode": outcome.returncode,
                "wall_s": outcome.wall_s,
                "timed_out": outcome.timed_out,
            }
            if wl["tool"] == "fsmicro":
                error = disk_full_message(cfg, spec.target, texts(rdir), mnt.mountpoint) or outcome.error
            else:
                error = _run_error(cfg, spec, rdir, mnt, record, outcome)
            record["fs_used_bytes"] = fs_used_bytes(mnt)
            if mnt.fs == "btrfs" and not mnt.fallback:
                record["compsize"] = _compsize(mnt.path)
            if mnt.zfs:
                record["zfs_footprint"] = zfs.footprint(mnt.zfs["dataset"])
            ph.lap("footprint")  # used bytes, compsize: what the run left on the target
    except BaseException as exc:
        record["status"] = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
        record["error"] = str(exc) or type(exc).__name__
        if isinstance(exc, KeyboardInterrupt):
            record["error"] = f"interrupted ({exc or 'Ctrl-C'})"
        record["ended_at"] = now()
        record["safety_net"] = release_after_interrupt(cfg, spec.target, vm_rec)
        with contextlib.suppress(OSError):
            write_json(rdir / "run.incomplete.json", record)
        if isinstance(exc, (LabError, psycopg.Error)):
            full = disk_full_message(cfg, spec.target, [str(exc), *texts(rdir)])
            if full:
                raise LabError(full) from None
        raise
    record["status"] = "ok" if error is None else "failed"
    record["error"] = error
    # a failed run keeps what its tools wrote before they stopped: the ingest takes what parses
    record["partial"] = error is not None
    record["ended_at"] = now()
    record["wall_s"] = round(time.monotonic() - t0, 3)
    record["files"] = sorted(p.name for p in rdir.iterdir() if p.name != "run.incomplete.json")
    ph.lap("finish")
    # the process's own start before run_one (outside wall_s, which starts at the first mount step)
    record["phases_s"] = {"process_start": started, **ph.record()} if started is not None else ph.record()
    write_json(rdir / "run.json", record)
    (rdir / "run.incomplete.json").unlink()
    tps = _summary_tps(rdir)
    say(
        label,
        f"{record['status']} in {record['wall_s']:.0f} s"
        + (f", {tps}" if tps else "")
        + (f": {error}" if error else ""),
    )
    return rdir / "run.json"


def _setup_facts(setup: dict[str, Any], rung: int | None) -> dict[str, Any]:
    """What the run's data set cost to load, from the target's preparation record (a rung's own load)."""
    loaded = setup if rung is None else next((r for r in setup.get("rungs", []) if r["rung"] == rung), {})
    return {
        "load_wall_s": (loaded.get("load") or {}).get("wall_s"),
        "load_sysbench_wall_s": (loaded.get("load_sysbench") or {}).get("wall_s"),
        "database": loaded.get("database", "postgres"),
        "database_bytes_loaded": loaded.get("database_bytes", (setup.get("postgres") or {}).get("database_bytes")),
        "created": setup.get("created"),
    }


def _precision_gate(
    gate: PrecisionGate, cfg: dict[str, Any], spec: cfgmod.RunSpec, rdir: Path, total: int
) -> Path | None:
    """An optional round (study key `precision`) runs only while its cell is not yet precise and the
    budget lasts; otherwise its run.json says `skipped` and why, and nothing is measured."""
    decision, line = gate(cfg, spec)
    label = f"run {spec.plan_index + 1}/{total} {spec.run_id}"
    say(label, line)
    if decision.run:
        return None
    record = {
        "schema_version": SCHEMA_VERSION,
        "run_id": spec.run_id,
        "study": cfg["study"],
        "plan_index": spec.plan_index,
        "plan_total": total,
        "target": spec.target,
        "fs": cfg["targets"][spec.target]["fs"],
        "workload": spec.workload,
        "tool": cfg["workloads"][spec.workload]["tool"],
        "clients": spec.clients,
        "repeat": spec.repeat,
        "status": "skipped",
        "error": None,
        "skip_reason": decision.reason,
        "precision": decision.to_dict(),
        "started_at": now(),
        "ended_at": now(),
        "wall_s": 0.0,
    }
    write_json(rdir / "run.json", record)
    return rdir / "run.json"


def _summary_tps(rdir: Path) -> str | None:
    """The headline number of a finished run, for the progress line."""
    with contextlib.suppress(OSError):
        for name, prefix, idx in (("pgbench.stdout", "tps = ", 2), ("sysbench.stdout", "transactions:", 2)):
            p = rdir / name
            if p.exists():
                for line in p.read_text().splitlines():
                    if line.strip().startswith(prefix):
                        return line.split()[idx].strip("(") + " tps"
        p = rdir / "fsmicro.stdout"
        if p.exists():
            rows = [ln for ln in p.read_text().splitlines() if ln.startswith("fsbench/")]
            return rows[-1].split(None, 2)[2] if rows else None
    return None
