"""Preparing a target once per study: its file system created and mounted, PostgreSQL initdb'd there, the data set
loaded (the bulk load, timed), vacuumed, analysed and checkpointed with autovacuum quiet (the state every
first run starts from, pgfslab.run.start_state), and the prepared state recorded in data/raw/<study>/_setup/<target>/target.json.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import psycopg

from pgfslab.config.model import Dataset
from pgfslab.config.study import PostgresSettings, Study, TargetView, database_for
from pgfslab.errors import LabError
from pgfslab.host import disk_daemon, pg_install, postgres, safety
from pgfslab.host.targets import create as target_create
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.host.targets import room
from pgfslab.host.zfs import pools as zfs
from pgfslab.host.zfs import target as zfs_target
from pgfslab.records.run_record import (
    Dataset as DatasetFacts,
)
from pgfslab.records.run_record import (
    DiskRecord,
    GitFacts,
    HostFacts,
    MountFacts,
    PgFacts,
    PostgresBuild,
    WalPlace,
    ZfsFootprint,
)
from pgfslab.records.target_record import Created, Rung, TargetRecord
from pgfslab.run import provenance, restore, start_state
from pgfslab.run.common import (
    copy_log_since,
    disk_full_message,
    fs_used_bytes,
    now,
    say,
    texts,
    wal_dir,
    wal_record,
    write_json,
)
from pgfslab.run.load import bulk_load
from pgfslab.tools import PG_TOOLS

# a data set to load: its ladder rung (None without a ladder) and what it is
ToLoad = tuple[int | None, Dataset]


def prepare_target(study: Study, target: str) -> Path:
    """Create the target's file system and, when a workload needs PostgreSQL, initdb a cluster on it
    and bulk-load the data (pgbench -i and/or sysbench prepare, each timed: the bulk-load result)."""
    tv = study.target_view(target)
    spec = tv.spec
    out = tv.setup_dir
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wd = tv.workdir
    user = study.postgres.user
    tools = study.tools_for(target)  # the data sets of the workloads that run on it
    dataset = study.dataset_for(target)
    loads: list[ToLoad] = [(rung, study.dataset_for(target, rung)) for rung in study.ladder_rungs()] or [
        (None, dataset)
    ]
    record = TargetRecord(
        study=study.study,
        target=target,
        spec=spec.to_dict(),
        dataset=DatasetFacts.model_validate(dataset.to_dict()),
        started_at=now(),
    )
    label = f"prepare {target}"
    room.require_room(wd, study.targets)  # every image of the study may fill: room for all, before one is made
    say(label, f"creating {spec.fs} target")
    wal = spec.wal_on
    pg = study.postgres_for(target) if tools & PG_TOOLS else None
    # the target's PostgreSQL build (a pinned major is downloaded and unpacked here the first time)
    build = pg_install.build_for(pg.version, pg.bindir) if pg is not None else None
    bindir = build.bindir if build is not None else None
    if build is not None:
        record.postgres_build = PostgresBuild.model_validate(build.record())
        say(label, f"PostgreSQL {build.version} ({build.source}, {build.bindir})")
    with zfs_target.zfs_service(wd, tv.specs()), contextlib.ExitStack() as stack:
        record.created = Created.model_validate(
            target_create.create(
                wd,
                target,
                spec,
                study=study.study,
                data_subvolume=target in study.snapshot_targets() and spec.fs == "btrfs",
            )
        )
        mnt = stack.enter_context(target_mount.mounted(wd, target, spec, user, study=study.study))
        record.mount = MountFacts.model_validate(mnt.describe())
        waldir = None
        if wal and tv.wal is not None and pg is not None:
            wmnt = stack.enter_context(target_mount.mounted(wd, wal, tv.wal, user, study=study.study))
            waldir = wal_dir(wmnt, target)
            if waldir.exists() or waldir.is_symlink():
                safety.reset_dir(waldir, wd)
                waldir.rmdir()
            record.wal = WalPlace.model_validate(wal_record(wal, wmnt, waldir))
            say(label, f"WAL on target {wal} ({wmnt.fs_label}): {waldir}")
        try:
            if pg is not None and build is not None:
                laddered = bool(study.ladder_rungs())
                _prepare_cluster(tv, pg, build, mnt, out, tools, loads, label, record, waldir, laddered)
                if study.run.restore:  # every run starts from this copy (pgfslab.run.restore)
                    record.loaded_copy = restore.keep_loaded(wd, target, mnt.path / "pgdata")
                    say(label, f"loaded cluster kept aside for run.restore ({record.loaded_copy.wall_s:.1f} s)")
            else:
                record.fs_used_bytes = fs_used_bytes(mnt)
        except (LabError, psycopg.Error) as exc:
            server_log = mnt.path / "postgresql.log"
            if server_log.exists() and not (out / "postgresql.log").exists():
                copy_log_since(server_log, 0, out / "postgresql.log")
            full = disk_full_message(target, spec, [str(exc), *texts(out)], mnt.mountpoint)
            if full:
                raise LabError(full) from None
            raise
        if mnt.disk:  # the emulated disk's model, and what the preparation cost it (initdb, the bulk load)
            disk_daemon.require_alive(target)
            record.disk = DiskRecord(
                model=mnt.disk.get("model"), daemon=mnt.disk.get("daemon"), counters=disk_daemon.counters(target)
            )
    record.ended_at = now()
    record.tools = provenance.tools(str(bindir) if bindir else "")
    record.host = HostFacts.model_validate(provenance.host())
    record.host_key = study.host
    record.git = GitFacts.model_validate(provenance.git())
    write_json(out / "target.json", record.to_json())
    loaded = [
        f"{k} {ld.wall_s:.1f} s"
        for k, ld in (("load", record.load), ("load_sysbench", record.load_sysbench))
        if ld and ld.wall_s is not None
    ]
    size = record.postgres.database_bytes if record.postgres else None
    say(
        label,
        "done" + (f": {', '.join(loaded)}" if loaded else "") + (f", database {size / 2**20:.0f} MiB" if size else ""),
    )
    return out / "target.json"


def _prepare_cluster(
    tv: TargetView,
    pg: PostgresSettings,
    build: pg_install.Build,
    mnt: mounted_target.Mounted,
    out: Path,
    tools: set[str],
    loads: list[ToLoad],
    label: str,
    record: TargetRecord,
    waldir: Path | None,
    laddered: bool,
) -> None:
    """initdb (checksums as the study says, explicitly) and the bulk loads on a mounted target: the study's
    data set, or each rung's into its own database."""
    bindir = build.bindir
    with postgres.running(
        mnt.path / "pgdata",
        pg.port,
        bindir,
        pg.user,
        init=True,
        run_settings=pg.settings,
        waldir=waldir,
        initdb_args=postgres.checksums_args(build.major, pg.data_checksums),
    ) as cl:
        record.initdb = True
        record.initdb_command = cl.initdb_command
        if not laddered:
            bulk_load(tv.name, cl, out, bindir, tools, loads[0][1], label, record, None)
        else:
            rungs = []
            for rung, ds in loads:
                assert rung is not None  # a ladder's loads are its rungs'
                rung_rec = Rung(rung=rung, database=database_for(rung))
                cl.query(f"CREATE DATABASE {rung_rec.database}")
                bulk_load(tv.name, cl, out, bindir, tools, ds, f"{label} rung {rung}", rung_rec, rung)
                cl.dbname = rung_rec.database
                rung_rec.database_bytes = cl.query("SELECT pg_database_size(current_database())")[0][0]
                cl.dbname = "postgres"
                rungs.append(rung_rec)
            record.rungs = rungs
        # the defined state every target's first run starts from: vacuumed, analysed, checkpointed, quiet
        record.settled = start_state.settle_after_load(cl, [database_for(rung) for rung, _ in loads])
        record.postgres = PgFacts.model_validate(cl.facts())
        record.fs_used_bytes = fs_used_bytes(mnt)
        if mnt.zfs:
            record.zfs_footprint = ZfsFootprint.model_validate(zfs.footprint(mnt.zfs["dataset"]))
        log = cl.log
    copy_log_since(log, 0, out / "postgresql.log")
