"""A target mounted again after a power cut: the file system replays its journal from what the image holds."""

from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import kind
from pgfslab.errors import LabError
from pgfslab.host import btrfs, disk_daemon, loop_devices, mounts, proc, safety
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release
from pgfslab.host.targets.mounted import Mounted
from pgfslab.host.zfs import target as zfs_target


def remount(workdir: Path, name: str, spec: TargetSpec, owner: str) -> Mounted:
    """Unmount and detach an image target (after cut_power), then attach and mount it again: the file
    system replays its journal from what the image holds. The caller's mounted() block still owns the
    release: its exit unmounts and detaches this new mount too."""
    if kind(spec) != "image":
        raise LabError(f"target {name}: only an image target can be remounted after a power cut")
    if spec.fs == "zfs":
        return zfs_target.zfs_remount(workdir, name, owner)
    mnt = target_paths.mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    notes = target_release.release(workdir, name)
    disk = disk_daemon.current(name)  # an emulated disk stays served: the loop device goes back on it
    still = loop_devices.backing(target_paths.image_path(workdir, name)) + (
        loop_devices.backed_by(disk.file) if disk is not None else []
    )
    if mounts.is_mounted(mnt) or still:
        # never mount an image a second time while the old mount lives on (lazily unmounted, its loop
        # device busy): two file systems writing one image would corrupt it
        raise LabError(
            f"target {name}: cannot mount it again after the power cut: "
            f"{'still mounted' if mounts.is_mounted(mnt) else 'its loop device ' + ', '.join(still) + ' is still busy'}"
            f" ({'; '.join(notes) or 'nothing released'}); a process may be stuck in the kernel"
        )
    dev = loop_devices.attach(disk.file if disk is not None else target_paths.image_path(workdir, name), spec.direct_io)
    opts = ",".join(spec.mount_options)
    t0 = time.monotonic()
    proc.run(["mount", "-t", spec.fs] + (["-o", opts] if opts else []) + [dev, str(mnt)])
    mount_s = time.monotonic() - t0
    pw = pwd.getpwnam(owner)
    os.chown(mnt, pw.pw_uid, pw.pw_gid)
    path = (
        mnt / target_paths.DATA_SUBVOLUME
        if spec.fs == "btrfs" and btrfs.is_subvolume(mnt / target_paths.DATA_SUBVOLUME)
        else mnt
    )
    return Mounted(
        name,
        spec.fs,
        path,
        mnt,
        False,
        device=dev,
        mount_options=mounts.options(mnt),
        direct_io=loop_devices.direct_io_on(dev),
        notes=[f"remounted after a power cut: {'; '.join(notes)}"],
        kind="image",
        disk=disk.record() if disk is not None else None,
        mount_s=round(mount_s, 4),
    )
