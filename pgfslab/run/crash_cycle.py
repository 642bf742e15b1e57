"""The durability check's crash cycle on one target: committed transactions logged client-side, a crash (kill -9
of the postmaster or an emulated power loss), the restart, and the verification of every acknowledged commit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgfslab.config import device_profiles
from pgfslab.config.study import RunView
from pgfslab.errors import LabError
from pgfslab.host import cgroups, pg_install, postgres, powercut
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.host.targets import remount as target_remount
from pgfslab.host.zfs import daemon as zfs_daemon
from pgfslab.progress import Progress
from pgfslab.records.run_record import CgroupRecord, MountFacts, PgFacts, RunRecord, ServerFacts
from pgfslab.run.common import copy_log_since, log_size, now, say, write_json
from pgfslab.run.phases import Phases
from pgfslab.run.sampler import Samplers
from pgfslab.runners import durability, process
from pgfslab.tools.durability import DurabilityOptions


def durability_run(
    view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, ph: Phases
) -> process.Outcome:
    """One durability check (pgfslab/runners/durability.py): write, crash, restart, verify.

    Writes durability.json (the parser `durability` reads it). The run fails only when the cycle could
    not be completed (no commit before the crash, no restart); lost transactions are its result."""
    t_start = time.monotonic()
    rec = _cycle_record(view, mnt)
    out = rdir / "durability"
    out.mkdir()
    server = ServerFacts()
    record.server = server  # filled as the cycle goes
    record.postgres_settings = view.postgres.settings
    logs = _Logs(rdir)
    limits = cgroups.limits_from_config(
        view.resources, mnt.device, device_profiles.throttle(view.target.spec.device_profile)
    )
    with cgroups.limited(cgroups.cgroup_name(view.target.study, view.spec.target), limits) as cg:
        try:
            before, effective = _write_and_crash_server(view, cg, mnt, rdir, out, rec, record, logs)
            _restart_and_verify(view, cg, mnt, out, rec, record, logs, before, effective)
            record.cgroup = CgroupRecord.model_validate({**cg.record, "usage": cg.usage() if cg.active else None})
        finally:
            logs.keep()
    rec["verdict"] = durability.verdict(rec)
    write_json(rdir / "durability.json", rec)
    error = _cycle_error(rec)
    server.crash = "caused by the durability check itself (not a failure of the run)"
    say(view.label, rec["verdict"])
    ph.lap("durability_cycle")
    return process.Outcome(
        record.commands[0] if record.commands else [], 0, round(time.monotonic() - t_start, 3), False, error
    )


def _cycle_record(view: RunView, mnt: mounted_target.Mounted) -> dict[str, Any]:
    """durability.json as the cycle starts: what was asked, and the crash this target allows (a power loss
    needs a loop-mounted image; elsewhere every server process is killed, with a note)."""
    spec, wl = view.spec, view.workload.options_as(DurabilityOptions)
    requested = wl.crash_kind()
    rec: dict[str, Any] = {
        "format": durability.FORMAT,
        "run_id": spec.run_id,
        "target": spec.target,
        "workload": spec.workload,
        "clients": spec.clients,
        "crash_requested": requested,
        "crash_after_s": wl.crash_after(),
        "crashes": 0,
    }
    crash = requested
    can_cut, why = powercut.power_cut_possible(mnt)
    if requested == "power-loss" and not can_cut:
        crash = "kill"
        rec["crash_note"] = f"power-loss emulation not possible here ({why}): SIGKILL of every server process only"
        say(view.label, f"WARNING: {rec['crash_note']}")
    rec["crash"] = crash
    rec["tag"] = f"{spec.run_id}@{now()}"
    return rec


class _Logs:
    """Server logs to keep: name in the run folder -> (log on the target, offset), each copied once."""

    def __init__(self, rdir: Path) -> None:
        self.rdir = rdir
        self.pending: dict[str, tuple[Path, int]] = {}

    def add(self, name: str, log: Path) -> None:
        self.pending[name] = (log, log_size(log))

    def keep(self) -> None:
        for name, (log, offset) in list(self.pending.items()):
            with contextlib.suppress(OSError):
                copy_log_since(log, offset, self.rdir / name)
            del self.pending[name]


def _write_and_crash_server(
    view: RunView,
    cg: cgroups.Cgroup,
    mnt: mounted_target.Mounted,
    rdir: Path,
    out: Path,
    rec: dict[str, Any],
    record: RunRecord,
    logs: _Logs,
) -> tuple[dict[str, int], dict[str, str]]:
    """1. The server started, the client committing for crash_after_s, then the crash. Returns the tables'
    sums before and the server's effective durability settings (for the verification)."""
    pg, crash = view.postgres, rec["crash"]
    server = record.server
    assert server is not None  # durability_run's
    bindir = pg_install.build_for(pg.version, pg.bindir).bindir
    with postgres.running(
        mnt.path / "pgdata", pg.port, bindir, pg.user, run_settings=pg.settings, wrap=cg.command
    ) as cl:
        logs.add("postgresql.log", cl.log)
        server.start_notes = list(cl.notes)
        record.postgres_before = PgFacts.model_validate(cl.facts())
        with cl.connect() as conn:
            durability.prepare(conn)
            effective = durability.settings(conn)
            scale = durability.scale_of(conn)
            before = durability.sums(conn)
        if scale < 1:
            raise LabError(f"target {view.spec.target}: no pgbench tables to write (prepare the target again)")
        rec["settings"] = effective
        crash_after = rec["crash_after_s"]
        cmd = durability.client_command(
            cl.conninfo, rec["tag"], view.spec.clients, scale, out.resolve(), crash_after + 120
        )
        record.commands = [cmd]
        with Samplers(rdir, view.sampler):
            # before a power cut, the server log as the server wrote it (page cache included)
            crash_info = _write_and_crash(
                cg.command(cmd),
                cl,
                out,
                crash_after,
                crash,
                view.target.workdir,
                mnt,
                view.label,
                logs.keep if crash == "power-loss" else None,
            )
        rec.update(crash_info)
        rec["crashes"] = 1
    server.cleanup = list(cl.notes)[len(server.start_notes) :]
    return before, effective


def _restart_and_verify(
    view: RunView,
    cg: cgroups.Cgroup,
    mnt: mounted_target.Mounted,
    out: Path,
    rec: dict[str, Any],
    record: RunRecord,
    logs: _Logs,
    before: dict[str, int],
    effective: dict[str, str],
) -> None:
    """2. The restart (after a power cut: the file system mounted again from what the image holds) and the
    verification of every acknowledged commit."""
    pg, crash = view.postgres, rec["crash"]
    vmnt = mnt
    if crash == "power-loss":
        vmnt = target_remount.remount(view.target.workdir, view.spec.target, view.target.spec, pg.user)
        rec["remount"] = {"device": vmnt.device, "mount_s": vmnt.mount_s, "notes": vmnt.notes}
        record.mount_after_crash = MountFacts.model_validate(vmnt.describe())
        logs.add("durability/postgresql.after-crash.log", vmnt.path / "postgresql.log")
    t0 = time.monotonic()
    try:
        with postgres.running(
            vmnt.path / "pgdata",
            pg.port,
            pg_install.build_for(pg.version, pg.bindir).bindir,
            pg.user,
            run_settings=pg.settings,
            wrap=cg.command,
        ) as cl2:
            rec["restart_s"] = round(time.monotonic() - t0, 3)
            rec["restart_notes"] = list(cl2.notes)
            with cl2.connect() as conn:
                rec.update(durability.verify(conn, rec["tag"], out, before, effective, rec["crash_at"], crash))
            record.postgres = PgFacts.model_validate(cl2.facts())
    except LabError as exc:
        rec["restart_error"] = " ".join(str(exc).split())[:600]


def _cycle_error(rec: dict[str, Any]) -> str | None:
    """Why the cycle could not be completed (None when it was: lost transactions are a result, not an error)."""
    if rec.get("power_restored"):
        rec["crash"] = "power-loss-incomplete"
        return f"power-loss emulation incomplete: {rec['power_restored']}"
    if rec.get("restart_error"):
        return f"server did not restart after the crash: {rec['restart_error']}"
    if not rec.get("committed_ids"):
        return f"no transaction committed in the {rec['crash_after_s']:g} s before the crash (see durability/client.stderr)"
    return None


def _write_and_crash(
    cmd: list[str],
    cl: postgres.Cluster,
    out: Path,
    crash_after: float,
    crash: str,
    wd: Path,
    mnt: mounted_target.Mounted,
    label: str,
    before_cut: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Start the durability client, let it commit for `crash_after` seconds, crash the server (and, for
    a power loss, the device first), wait for the client to see it. Returns the crash facts."""
    import subprocess

    info: dict[str, Any] = {}
    progress = Progress(label)
    with open(out / "client.stdout", "w") as so, open(out / "client.stderr", "w") as se:
        p = subprocess.Popen(cmd, stdout=so, stderr=se, start_new_session=True)
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < crash_after:
                if p.poll() is not None:
                    info["client_exited_early"] = p.returncode
                    break
                time.sleep(0.2)
                with contextlib.suppress(OSError, IndexError):
                    progress.update((out / "client.stdout").read_text().splitlines()[-1])
            info["write_s"] = round(time.monotonic() - t0, 3)
            if before_cut is not None:
                before_cut()
            info["crash_at"] = time.time()
            if crash == "power-loss" and mnt.zfs:
                svc = zfs_daemon.current_service()
                assert svc is not None  # power_cut_possible() said so
                info["power_cut"] = svc.power_cut()  # SIGKILL of the zfs-fuse daemon (see powercut.py)
            elif crash == "power-loss":
                info["power_cut"] = powercut.cut_power(wd, str(mnt.device))
            info["postmaster_pid"] = cl.kill(9, all_processes=crash == "power-loss")
            info["killed"] = "every server process (SIGKILL)" if crash == "power-loss" else "postmaster (SIGKILL)"
            if crash == "power-loss":
                # every server process must be gone before the file system is unmounted; one stuck in the
                # kernel on the cut device (seen: ext4 retrying a truncate) needs the device back to finish
                end = time.monotonic() + 15
                while cl.processes() and time.monotonic() < end:
                    time.sleep(0.1)
                stuck = cl.processes()
                if stuck and not mnt.zfs:
                    powercut.restore_power(wd, str(mnt.device))
                    info["power_restored"] = (
                        f"{len(stuck)} server process(es) stuck in the kernel 15 s after the "
                        "cut: device restored so they could finish; writes after the cut "
                        "may have reached the image"
                    )
                    say(label, f"WARNING: {info['power_restored']}")
                    cl.kill(9, all_processes=True)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.stop(p)
                info["client_stuck"] = True
        except BaseException:
            process.stop(p)
            raise
    info["client_returncode"] = p.returncode
    info["client_errors"] = [ln for ln in (out / "client.stderr").read_text(errors="replace").splitlines() if ln][:10]
    return info
