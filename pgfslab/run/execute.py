"""Executing one run of the plan: its folder, the machine set up around it (OS settings, mounts, the cache
drop), the tool, and run.json. Everything mounted or started is released on every exit path; raw outputs
are written under data/raw/<study>/ untouched, with provenance.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgfslab import tools
from pgfslab.config import vm_settings
from pgfslab.config.model import StealRetry
from pgfslab.config.study import RunSpec, RunView, Study
from pgfslab.errors import LabError
from pgfslab.host import cpu_probe, cpu_ticks, disk_daemon, sysctl
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.host.zfs import target as zfs_target
from pgfslab.records.run_record import (
    Compsize,
    DiskRecord,
    HostProbe,
    MountFacts,
    Predecessor,
    RunRecord,
    StealAttempt,
    ToolOutcome,
    WalPlace,
    ZfsFootprint,
)
from pgfslab.run import record as run_record
from pgfslab.run import reload, restore
from pgfslab.run.common import disk_full_message, now, say, texts, wal_dir, wal_record, write_json
from pgfslab.run.interrupt import release_after_interrupt
from pgfslab.run.outcome import footprint, run_error
from pgfslab.run.phases import Phases, process_age_s
from pgfslab.runners import process


class PrecisionDecision(Protocol):
    run: bool
    reason: str

    def to_dict(self) -> dict[str, Any]: ...


# Whether an optional round (study key `precision`) runs, and its progress line. The decision reads the rounds
# measured so far with the ingest's parsers and the analysis' statistics, stages above this one, so the command
# passes it in (pgfslab.cli.main gives pgfslab.analysis.precision_gate.gate).
PrecisionGate = Callable[[Study, RunSpec], tuple[PrecisionDecision, str]]


def run_one(study: Study, run_id: str, precision_gate: PrecisionGate | None = None) -> Path:
    """Execute one run of the plan. Returns its run.json.

    A workload that fails or times out is data: run.json records status `failed` with the error and
    the partial logs stay. An interrupted run (Ctrl-C, SIGTERM, a lab error) leaves its partial
    logs and a `run.incomplete.json` marker, and writes no run.json, so a re-run redoes it.
    """
    started = process_age_s()  # the command's start: Python, imports, the config read
    ph = Phases()
    view = study.run_view(study.find_run(run_id))
    if not view.spec.optional:
        require_images(view)
    rdir = fresh_run_dir(view.raw_dir, run_id)
    if view.spec.optional:
        if precision_gate is None:
            raise LabError(f"{run_id}: an optional round of a `precision` study needs its gate (pgfslab run-one)")
        skipped = skip_if_precise(precision_gate, study, view, rdir)
        if skipped is not None:
            return skipped
        require_images(view)  # after the gate, which reads the rounds so far: a skipped round measures nothing
    retry = view.run.steal_retry
    earlier: list[StealAttempt] = []  # attempts set aside because the host took too much CPU time (run.steal_retry)
    while True:
        record = run_record.started(view)
        # an attempt measured again follows the one set aside, on the same target
        record.predecessor = (
            Predecessor(run_id=run_id, target=view.spec.target)
            if earlier
            else run_record.predecessor(view.raw_dir, run_id)
        )
        done, eta = run_record.study_eta(view.raw_dir, view.total)
        say(view.label, f"starting ({done} runs done; {eta})" + (f", attempt {len(earlier) + 1}" if earlier else ""))
        write_json(rdir / "run.incomplete.json", record.to_json())
        t0 = time.monotonic()
        ph.lap("provenance")  # host, tools' versions, git: what the run.json says about where it ran
        vm_held: list[dict[str, Any]] = []  # the vm settings applied, until restored (for the safety net)
        try:
            error = measure(view, rdir, record, ph, vm_held)
        except BaseException as exc:
            _record_interruption(view, rdir, record, exc, vm_held[0] if vm_held else {})
            raise
        if vm_held:  # the settings as restored once the run's machine was released
            record.vm_applied = vm_held[0]
        again = _measure_again(retry, record, error, len(earlier) + 1)
        record.steal_attempts = list(earlier) or None
        _finish(view, rdir, record, error, time.monotonic() - t0, started, ph)
        if not again:
            return rdir / "run.json"
        say(view.label, again)
        aside = set_aside(view.raw_dir, run_id)
        earlier.append(
            StealAttempt(
                host_steal=record.host_steal,
                started_at=record.started_at,
                kept=str(aside.relative_to(view.raw_dir)),
            )
        )
        rdir.mkdir(parents=True)
        ph, started = Phases(), None  # the next attempt's phases are its own; the process started once


def _measure_again(retry: StealRetry | None, record: RunRecord, error: str | None, attempt: int) -> str | None:
    """Why the run is measured again (run.steal_retry: the host took more of the CPU time the machine wanted than
    the study allows, and attempts remain), or None: the attempt is kept. A failed run is kept as it failed."""
    if retry is None or error is not None or record.host_steal is None or attempt >= retry.attempts:
        return None
    if record.host_steal <= retry.above:
        return None
    return (
        f"the host took {100 * record.host_steal:.1f} % of the CPU time the run wanted (run.steal_retry: above "
        f"{100 * retry.above:g} %): measured again, attempt {attempt + 1} of {retry.attempts}"
    )


def require_images(view: RunView) -> None:
    """The run's target (and its WAL target) still have their images, checked before the raw folder is
    touched: a study run again after its work directory was cleaned would otherwise set every earlier run
    aside and fail each one on a missing image."""
    tv = view.target
    pairs = [(tv.name, tv.spec)] + ([(tv.spec.wal_on, tv.wal)] if tv.spec.wal_on and tv.wal is not None else [])
    for name, spec in pairs:
        gone = target_mount.missing_image(tv.workdir, name, spec)
        if gone is not None:
            setup = view.raw_dir / "_setup" / name / "target.json"
            raise LabError(
                f"target {name}: its image {gone} is gone (was the study's work directory cleaned?); to prepare "
                f"it again, delete {setup} (the record of its preparation) and run the study again"
            )


def fresh_run_dir(raw: Path, run_id: str) -> Path:
    """An empty folder for the run; an earlier attempt's is kept aside in _attempts/."""
    rdir = raw / run_id
    if rdir.exists() and not any(rdir.iterdir()):
        rdir.rmdir()  # Snakemake makes the output's folder before the job starts
    if rdir.exists():
        set_aside(raw, run_id)
    rdir.mkdir(parents=True)
    return rdir


def set_aside(raw: Path, run_id: str) -> Path:
    """The run's folder moved whole into _attempts/ (never ingested), under its id and the time; returns where."""
    stamp = dt.datetime.now()
    aside = raw / "_attempts" / f"{run_id}.{stamp:%Y%m%dT%H%M%S}"
    while aside.exists():  # two attempts within a second (a run that failed at once)
        stamp += dt.timedelta(seconds=1)
        aside = raw / "_attempts" / f"{run_id}.{stamp:%Y%m%dT%H%M%S}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    os.replace(raw / run_id, aside)
    say(run_id, f"an earlier attempt was kept in {aside}")
    return aside


def skip_if_precise(gate: PrecisionGate, study: Study, view: RunView, rdir: Path) -> Path | None:
    """An optional round (study key `precision`) runs only while its cell is not yet precise and the
    budget lasts; otherwise its run.json says `skipped` and why, and nothing is measured."""
    decision, line = gate(study, view.spec)
    say(view.label, line)
    if decision.run:
        return None
    write_json(rdir / "run.json", run_record.skipped(view, decision.reason, decision.to_dict()).to_json())
    return rdir / "run.json"


def measure(view: RunView, rdir: Path, record: RunRecord, ph: Phases, vm_held: list[dict[str, Any]]) -> str | None:
    """The run on the machine: set up, the tool, what it left. Returns the run's error (None: a good run)."""
    with contextlib.ExitStack() as stack:
        mnt = set_up(stack, view, record, ph, vm_held, rdir)
        at_mount = disk_daemon.counters(mnt.name) if mnt.disk else None
        ticks = cpu_ticks.read()
        try:
            outcome = run_tool(view, rdir, mnt, record, ph)
        except Exception as exc:
            died = disk_death(mnt)
            if died:  # the run failed because its device did: say so, not what the file system reported
                raise LabError(died) from exc
            raise
        record.host_steal = cpu_ticks.steal_share(ticks, cpu_ticks.read())
        disk_daemon.require_alive(mnt.name)
        if mnt.disk:
            record.disk = disk_run_record(mnt, rdir, at_mount, record.disk)
        record.outcome = ToolOutcome(returncode=outcome.returncode, wall_s=outcome.wall_s, timed_out=outcome.timed_out)
        error = run_error(view, rdir, mnt, record, outcome)
        left = footprint(mnt)
        record.fs_used_bytes = left.fs_used_bytes
        if left.compsize is not None:
            record.compsize = Compsize.model_validate(left.compsize)
        if left.zfs_footprint is not None:
            record.zfs_footprint = ZfsFootprint.model_validate(left.zfs_footprint)
        ph.lap("footprint")  # used bytes, compsize: what the run left on the target
    return error


def disk_death(mnt: mounted_target.Mounted) -> str | None:
    """Why the target's emulated disk is gone (None: it has none, or it runs)."""
    disk = disk_daemon.current(mnt.name) if mnt.disk else None
    return disk.death() if disk is not None else None


def disk_run_record(
    mnt: mounted_target.Mounted, rdir: Path, at_mount: dict[str, int] | None, measured: DiskRecord | None
) -> DiskRecord:
    """run.json's `disk`: the emulated disk's model and its daemon's counters over the run (from the mount to
    the end of the tool: server start and stop, the cache drop's sync) and over the tool's measured window
    (pg_run's), with its per-second series kept as disk_series.csv."""
    assert mnt.disk is not None
    series = Path(mnt.disk["series"])
    if series.exists():
        shutil.copyfile(series, rdir / "disk_series.csv")
    return DiskRecord(
        profile=(mnt.disk.get("model") or {}).get("preset"),
        model=mnt.disk.get("model"),
        daemon=mnt.disk.get("daemon"),
        counters={
            "run": disk_daemon.delta(at_mount, disk_daemon.counters(mnt.name)),
            **({"measured": measured.measured} if measured else {}),
        },
        series="disk_series.csv" if series.exists() else None,
    )


def set_up(
    stack: contextlib.ExitStack[Any],
    view: RunView,
    record: RunRecord,
    ph: Phases,
    vm_held: list[dict[str, Any]],
    rdir: Path,
) -> mounted_target.Mounted:
    """The machine around the run, each part released by `stack`: the OS settings, the zfs service, the
    target's mount (and its WAL target's), the data set as loaded or loaded anew (run.restore, run.reload), a
    cold page cache. Returns the target's mount."""
    tv = view.target
    user = view.postgres.user
    # each callback is pushed before the context it times, so it runs right after that one's exit
    stack.callback(ph.lap, "sysctl_restore")
    vm_rec = stack.enter_context(sysctl.applied(vm_settings.settings_from_config(view.os)))
    vm_held.append(vm_rec)
    ph.lap("sysctl")
    stack.callback(ph.lap, "zfs_stop")
    stack.enter_context(zfs_target.zfs_service(tv.workdir, tv.specs()))
    ph.lap("zfs_start")
    stack.callback(ph.lap, "unmount")
    mnt = stack.enter_context(target_mount.mounted(tv.workdir, tv.name, tv.spec, user, study=tv.study))
    wal = tv.spec.wal_on
    wmnt = (
        stack.enter_context(target_mount.mounted(tv.workdir, wal, tv.wal, user, study=tv.study))
        if wal and tv.wal is not None
        else None
    )
    ph.lap("mount")
    record.vm_applied = vm_rec
    record.mount = MountFacts.model_validate(mnt.describe())
    record.fallback = mnt.fallback
    record.fs_label = mnt.fs_label
    if wal and wmnt is not None:
        record.wal = WalPlace.model_validate(wal_record(wal, wmnt, wal_dir(wmnt, tv.name)))
    if view.run.restore and (mnt.path / "pgdata").exists():
        # before the cache drop, whose sync writes the copy out and empties the cache it filled
        setup = view.raw_dir / "_setup" / tv.name / "target.json"
        record.restored = restore.put_back(tv.workdir, tv.name, mnt.path / "pgdata", setup)
        ph.lap("restore")
    if view.run.reload and (mnt.path / "pgdata").exists():
        # the run's own load, before the cache drop (its sync writes the load out; the run's cache state follows)
        record.reloaded = reload.load_again(view, mnt.path / "pgdata", rdir)
        ph.lap("reload")
    # Kept: every run starts from the same cold page cache (and the sync flushes what the previous
    # run or another study left dirty), so runs of a study are comparable whatever ran before them.
    record.caches = sysctl.drop_caches() if view.run.drop_caches else "kept"
    ph.lap("drop_caches")
    record.host_probe = HostProbe.model_validate(
        cpu_probe.measure()
    )  # the host's speed just before the run (a covariate)
    ph.lap("host_probe")
    return mnt


class LifeCycle(Protocol):
    """What a run does on its mounted target with the workload's tool (a registered tool's `life_cycle`)."""

    def __call__(
        self, view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, ph: Phases
    ) -> process.Outcome: ...


def life_cycle(tool: str) -> LifeCycle:
    """The life cycle the tool's registration names (`module:function`), imported when first asked for."""
    module, _, name = tools.tool(tool).life_cycle.partition(":")
    found: LifeCycle = getattr(importlib.import_module(module), name)
    return found


def run_tool(view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, ph: Phases) -> process.Outcome:
    """The workload's tool on the mounted target, by the life cycle its registration names: a server's client
    (pgbench, sysbench), or a cycle of the tool's own (fsmicro without a server, the durability check's crash)."""
    return life_cycle(view.workload.tool)(view, rdir, mnt, record, ph)


def _record_interruption(
    view: RunView, rdir: Path, record: RunRecord, exc: BaseException, vm_rec: dict[str, Any]
) -> None:
    """An interrupted run: its marker says why, the safety net releases what the unwinding could not, and a
    lab error that is a full target says so."""
    record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
    record.error = str(exc) or type(exc).__name__
    if isinstance(exc, KeyboardInterrupt):
        record.error = f"interrupted ({exc or 'Ctrl-C'})"
    record.ended_at = now()
    if vm_rec:
        record.vm_applied = vm_rec  # as the unwinding left it (restored or not)
    record.safety_net = release_after_interrupt(view.target, vm_rec)
    with contextlib.suppress(OSError):
        write_json(rdir / "run.incomplete.json", record.to_json())
    if isinstance(exc, (LabError, psycopg.Error)):
        full = disk_full_message(view.target.name, view.target.spec, [str(exc), *texts(rdir)])
        if full:
            raise LabError(full) from None


def _finish(
    view: RunView,
    rdir: Path,
    record: RunRecord,
    error: str | None,
    wall_s: float,
    started: float | None,
    ph: Phases,
) -> None:
    """run.json of a completed run (ok or failed), the marker removed, the progress line."""
    record.status = "ok" if error is None else "failed"
    record.error = error
    # a failed run keeps what its tools wrote before they stopped: the ingest takes what parses
    record.partial = error is not None
    record.ended_at = now()
    record.wall_s = round(wall_s, 3)
    record.files = sorted(p.name for p in rdir.iterdir() if p.name != "run.incomplete.json")
    ph.lap("finish")
    # the process's own start before run_one (outside wall_s, which starts at the first mount step)
    phases: dict[str, float | None] = {"process_start": started} if started is not None else {}
    record.phases_s = {**phases, **ph.record()}
    write_json(rdir / "run.json", record.to_json())
    (rdir / "run.incomplete.json").unlink()
    tps = run_record.summary_tps(rdir)
    say(
        view.label,
        f"{record.status} in {wall_s:.0f} s" + (f", {tps}" if tps else "") + (f": {error}" if error else ""),
    )
