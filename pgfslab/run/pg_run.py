"""One pgbench or sysbench run against a target's cluster: a fresh server in the target's cgroup, the
tool's command, the samplers and snapshots beside it, and what the server said before and after.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import psycopg

from pgfslab.config import device_profiles
from pgfslab.config.model import Snapshots
from pgfslab.config.study import RunView
from pgfslab.host import cgroups, disk_daemon, pg_install, postgres, snapshots
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.records.run_record import CgroupRecord, DiskRecord, PgFacts, RunRecord, ServerFacts, StartState
from pgfslab.run import start_state
from pgfslab.run.common import copy_log_since, log_size, one_line, texts
from pgfslab.run.phases import Phases
from pgfslab.run.sampler import Samplers
from pgfslab.runners import process, runner


def pg_run(view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, ph: Phases) -> process.Outcome:
    """One pgbench or sysbench run against the target's cluster (in its cgroup, with its samplers).

    A server that crashes during the run is data: what it left is recorded (record["server"]), its
    orphans and stale postmaster.pid are cleaned up, and the server log is kept on every exit path."""
    pg = view.postgres
    bindir = pg_install.build_for(pg.version, pg.bindir).bindir
    limits = cgroups.limits_from_config(
        view.resources, mnt.device, device_profiles.throttle(view.target.spec.device_profile)
    )
    server = ServerFacts()
    record.server = server  # filled as the run goes: an interrupted run's marker has what was known
    log_at: list[Any] = []
    try:
        with contextlib.ExitStack() as outer:
            outer.callback(ph.lap, "cgroup_remove")
            cg = outer.enter_context(cgroups.limited(cgroups.cgroup_name(view.target.study, view.spec.target), limits))
            ph.lap("cgroup")
            # Kept: a fresh server per run (started after the cache drop, stopped with its shutdown
            # checkpoint): no run inherits another's shared buffers, dirty pages or WAL to checkpoint.
            outer.callback(ph.lap, "server_stop")
            cl = outer.enter_context(
                postgres.running(
                    mnt.path / "pgdata", pg.port, bindir, pg.user, run_settings=pg.settings, wrap=cg.command
                )
            )
            ph.lap("server_start")
            log_at[:] = [cl.log, log_size(cl.log)]
            cl.dbname = pg.database  # the run's data set: its facts and pg_stat_database samples are that database's
            server.start_notes = list(cl.notes)
            record.postgres_settings = pg.settings
            if view.prewarm and view.run.cache is None:  # the unverified warm start from before run.cache
                record.prewarm = _prewarm(cl, "read" if view.prewarm == "read" else "buffer")
                ph.lap("prewarm")
            mode = start_state.cache_mode(view.run.cache, view.run.drop_caches, bool(view.prewarm))
            record.start_state = StartState.model_validate(start_state.reach(cl, mode, record.caches))
            ph.lap("start_state")  # the warm pass and its probes, the checkpoint
            record.postgres_before = PgFacts.model_validate(cl.facts())
            client = runner(view.workload.tool)  # pgbench or sysbench: a client of this server
            cmd = client.client_command(view, cl, rdir)
            record.commands = [cmd]
            ph.lap("facts_before")  # the server's settings and sizes before the run (a first connection)
            with contextlib.ExitStack() as stack:
                stack.callback(ph.lap, "samplers_stop")
                smp = stack.enter_context(Samplers(rdir, view.sampler, cl.conninfo))
                sched = _snapshots(stack, view.snapshots, mnt, rdir)
                ph.lap("samplers_start")
                disk_before = disk_daemon.counters(mnt.name) if mnt.disk else None
                outcome = client.run_client(view, cg.command(cmd), rdir)
                if disk_before is not None:  # the emulated disk's counters over the tool's run (its reads competing)
                    record.disk = DiskRecord(measured=disk_daemon.delta(disk_before, disk_daemon.counters(mnt.name)))
                # pgbench's own start (connections, the vacuum of its tables) is tool_overhead
                ph.lap_tool(None if view.workload.options.transactions_per_client() else view.duration_s)
            record.sampler = {**view.sampler.to_dict(), **smp.record()}
            if sched is not None:
                record.snapshots = sched.summary()
            _facts_after(cl, server, record)
            record.cgroup = CgroupRecord.model_validate({**cg.record, "usage": cg.usage() if cg.active else None})
            ph.lap("facts_after")
        server.cleanup = list(cl.notes)[len(server.start_notes) :]
    finally:
        if log_at:
            copy_log_since(log_at[0], log_at[1], rdir / "postgresql.log")
    signs = postgres.crash_signs(texts(rdir, ["postgresql.log"])[0] if (rdir / "postgresql.log").exists() else "")
    server.log_signs = signs
    server.crashed = not server.alive_after_run or bool(signs)
    return outcome


def _snapshots(
    stack: contextlib.ExitStack[Any], snaps: Snapshots | None, mnt: mounted_target.Mounted, rdir: Path
) -> Any | None:
    """The periodic snapshots of the run's target (ZFS's own, or btrfs subvolume snapshots), started on `stack`."""
    if snaps is None:
        return None
    schedule = snapshots.Schedule(snaps.interval_s, snaps.keep_s, snaps.offset_s)
    if mnt.zfs:
        return stack.enter_context(
            snapshots.ZfsScheduler(mnt.zfs["dataset"], mnt.mountpoint, schedule, rdir / snapshots.CSV_NAME)
        )
    return stack.enter_context(snapshots.scheduled(mnt.path, mnt.mountpoint, schedule, rdir))


def _facts_after(cl: postgres.Cluster, server: ServerFacts, record: RunRecord) -> None:
    """Whether the server outlived the run, and its facts when it did."""
    server.alive_after_run = cl.alive()
    if server.alive_after_run:
        try:
            record.postgres = PgFacts.model_validate(cl.facts())
        except psycopg.Error as exc:  # e.g. in crash recovery after a backend was killed
            server.facts_error = one_line(exc)


def _prewarm(cl: postgres.Cluster, mode: str = "buffer") -> dict[str, Any]:
    """Load every table and index of the run's database into shared_buffers (pg_prewarm's `buffer` mode,
    PostgreSQL's own contrib module), or into the page cache only (`read`): a warm start, outside the measured
    interval."""
    t0 = time.monotonic()
    cl.query("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    blocks = cl.query(
        "SELECT coalesce(sum(pg_prewarm(c.oid, %s)), 0)::bigint FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')",
        (mode,),
    )[0][0]
    return {"blocks": int(blocks), "mode": mode, "wall_s": round(time.monotonic() - t0, 3)}
