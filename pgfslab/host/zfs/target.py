"""zfs targets: the zfs service for a block, the dataset properties checked for the implementation that
runs, the pool created on an image, imported for a block, and imported again after a power cut.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import fs_label, zfs_property_problems
from pgfslab.errors import LabError
from pgfslab.host import loop_devices, mounts, safety
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release
from pgfslab.host.targets.mounted import Mounted
from pgfslab.host.zfs import commands as zfs_commands
from pgfslab.host.zfs import daemon as zfs_daemon
from pgfslab.host.zfs import pools as zfs
from pgfslab.host.zfs.properties import property_table, validate_properties


def zfs_service(workdir: Path, specs: list[TargetSpec]) -> contextlib.AbstractContextManager[Any]:
    """ZFS usable for the block when any of `specs` is a zfs target (zfs-fuse: the lab's daemon started
    now and stopped on every exit path, or a running one reused); otherwise nothing."""
    if not any(sp.fs == "zfs" for sp in specs):
        return contextlib.nullcontext()
    log, pid_file, _ = target_paths.zfs_files(workdir, "")
    return zfs_daemon.service(log, pid_file=pid_file)


def zfs_properties(name: str, spec: TargetSpec, implementation: str) -> dict[str, str]:
    """The target's `zfs:` dataset properties as zfs strings, checked for the implementation that runs
    (LabError naming targets.<name>.zfs.<key> for what it cannot do)."""
    props = dict(spec.zfs or {})
    problems = zfs_property_problems(props, implementation)
    if problems:
        raise LabError(
            f"target {name} ({fs_label('zfs', implementation)}): targets.{name}." + f"; targets.{name}.".join(problems)
        )
    return validate_properties(props)


def create_zfs(workdir: Path, name: str, spec: TargetSpec, study: str) -> dict[str, Any]:
    """A sparse image on a loop device, a pool pgfslab-<study>-<target> on it (marked as the lab's), the
    dataset <pool>/data with the configured properties; exported again, the loop device detached."""
    pool = zfs.pool_name(study, name)
    image = target_paths.image_path(workdir, name)
    mnt = target_paths.mountpoint(workdir, name)
    with zfs_service(workdir, [spec]) as svc:
        impl = svc.implementation
        props = zfs_properties(name, spec, impl)  # before anything is made: a bad property costs nothing
        if pool in zfs.imported_pools():  # an earlier preparation's pool (its image is about to go)
            zfs.destroy_pool(pool)
        image.parent.mkdir(parents=True, exist_ok=True)
        image.unlink(missing_ok=True)
        size = int(spec.size_gb * 1024**3)
        with open(image, "wb") as fh:
            fh.truncate(size)
        dev = loop_devices.attach(image, spec.direct_io)
        try:
            t0 = time.monotonic()
            made = zfs.create_pool(pool, dev, mnt, props, dataset=target_paths.ZFS_DATASET)
            create_s = time.monotonic() - t0
            zfs.export_pool(pool)
        finally:
            target_release.release(workdir, name)
        return {
            "fs": "zfs",
            "kind": "image",
            "fallback": False,
            "image": str(image),
            "image_bytes": size,
            "implementation": impl,
            "fs_label": fs_label("zfs", impl),
            "pool": pool,
            "dataset": made.dataset,
            "properties": made.properties,
            "requested_properties": props,
            "mkfs_command": ["zpool", "create", "-f", "-o", "cachefile=none", "-m", str(mnt), pool, dev],
            "mkfs_s": round(create_s, 3),
            "mkfs_version": zfs_commands.version(impl),
            "daemon": {"started_pid": svc.started_pid, "reused_pids": svc.reused_pids, "start_s": svc.start_s},
            "notes": made.notes,
        }


@contextlib.contextmanager
def zfs_mounted(workdir: Path, name: str, spec: TargetSpec, pw: Any) -> Iterator[Mounted]:
    """Attach the image, `zpool import -d` the target's pool (its datasets mount), and on every exit path
    export it and detach the loop device (and stop the zfs-fuse daemon if this block started it)."""
    image = target_paths.image_path(workdir, name)
    if not image.exists():
        raise LabError(f"target {name}: image {image} is missing; re-run its preparation (delete its target.json)")
    mnt = target_paths.mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    pool = target_paths.zfs_pool(workdir, name)
    with zfs_service(workdir, [spec]) as svc:
        target_release.release(workdir, name)  # a killed earlier run may have left our pool imported or our loop behind
        try:
            dev = loop_devices.attach(image, spec.direct_io)
            devdir = zfs.device_dir([dev], target_paths.zfs_files(workdir, name)[2])
            t0 = time.monotonic()
            zfs.import_pool(pool, devdir)
            mount_s = time.monotonic() - t0
            ds = f"{pool}/{target_paths.ZFS_DATASET}"
            path = Path(zfs.get_properties(ds, ["mountpoint"])["mountpoint"])
            os.chown(path, pw.pw_uid, pw.pw_gid)
            props = sorted(set(spec.zfs or {}) | {"recordsize", "compression", "atime", "logbias", "primarycache"})
            effective = zfs.get_properties(ds, [p for p in props if p in property_table()])
            notes = list(svc.notes)
            if svc.implementation == "zfs-fuse":
                notes.append(
                    "zfs-fuse: a userspace ZFS (pool version 23) behind FUSE; every I/O crosses into its daemon"
                )
            yield Mounted(
                name,
                "zfs",
                path,
                path,
                False,
                device=dev,
                mount_options=",".join(f"{k}={v}" for k, v in effective.items()),
                direct_io=loop_devices.direct_io_on(dev),
                notes=notes,
                kind="image",
                mount_s=round(mount_s, 4),
                implementation=svc.implementation,
                zfs={"pool": pool, "dataset": ds, "properties": effective, "daemon_pid": svc.started_pid},
            )
        finally:
            target_release.release(workdir, name)
            if not mounts.below(mnt):
                with contextlib.suppress(OSError):
                    mnt.rmdir()


def zfs_remount(workdir: Path, name: str, owner: str) -> Mounted:
    """After the zfs power cut (SIGKILL of the zfs-fuse daemon): start the daemon again and import the pool
    from its loop device (still attached), as a machine would after power came back. The caller's
    mounted() block still exports it and detaches the device."""
    svc = zfs_daemon.current_service()
    if svc is None:
        raise LabError(f"target {name}: no zfs-fuse daemon of the lab's to restart after the power cut")
    svc.restart()
    pool = target_paths.zfs_pool(workdir, name)
    devdir = target_paths.zfs_files(workdir, name)[2]
    t0 = time.monotonic()
    zfs.import_pool(pool, devdir)
    mount_s = time.monotonic() - t0
    ds = f"{pool}/{target_paths.ZFS_DATASET}"
    path = Path(zfs.get_properties(ds, ["mountpoint"])["mountpoint"])
    pw = pwd.getpwnam(owner)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    dev = next((str(p.resolve()) for p in devdir.iterdir() if p.is_symlink()), None)
    return Mounted(
        name,
        "zfs",
        path,
        path,
        False,
        device=dev,
        notes=[f"zfs-fuse restarted (pid {svc.started_pid}) and pool {pool} imported after the power cut"],
        kind="image",
        mount_s=round(mount_s, 4),
        implementation=svc.implementation,
        zfs={"pool": pool, "dataset": ds, "daemon_pid": svc.started_pid},
    )
