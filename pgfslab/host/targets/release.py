"""Undo what the lab made for a target: unmount its mount point, export its zfs pool, detach the loop
devices of its image (or of its emulated disk's served file, and stop a disk daemon a killed lab process
left). Only what the lab created (pgfslab/host/safety.py); safe to repeat.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from pgfslab.errors import LabError
from pgfslab.host import disk_daemon, loop_devices, mounts, proc, safety
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.zfs import daemon as zfs_daemon
from pgfslab.host.zfs import pools as zfs


def release(workdir: Path, name: str) -> list[str]:
    """Unmount the lab's mount point of a target and detach loop devices backed by its image.

    Only touches what the lab created; safe to call any number of times. Returns what it did.
    """
    done: list[str] = []
    mnt = target_paths.mountpoint(workdir, name)
    if mounts.is_mounted(mnt) or mounts.below(mnt):
        safety.require_unmountable(mnt, workdir)
    done += _release_zfs(workdir, name, mnt)
    for _ in range(3):
        if not mounts.is_mounted(mnt):
            break
        res = proc.run(["umount", str(mnt)], check=False)
        if res.returncode == 0:
            done.append(f"unmounted {mnt}")
        else:
            time.sleep(0.5)
    if mounts.is_mounted(mnt):
        proc.run(["umount", "--lazy", str(mnt)], check=False)
        done.append(f"lazily unmounted {mnt}")
    image = target_paths.image_path(workdir, name)
    if image.exists():
        for dev in loop_devices.backing(image):
            proc.run(["losetup", "-d", safety.require_detachable(dev, workdir)], check=False)
            done.append(f"detached {dev}")
    done += _release_disk(workdir, name)
    return done


def _release_disk(workdir: Path, name: str) -> list[str]:
    """The target's emulated disk: detach the loop devices on its served file, then stop a daemon a killed
    lab process left and unmount its mount point (the daemon of this process's own block is left running:
    that block stops it)."""
    done: list[str] = []
    f = disk_daemon.files(workdir, name)
    for dev in loop_devices.backed_by(f.file):
        proc.run(["losetup", "-d", safety.require_detachable(dev, workdir)], check=False)
        done.append(f"detached {dev}")
    if f.pid_file.exists() or mounts.is_mounted(f.mountpoint):
        done += disk_daemon.release_stale(workdir, name)
    return done


def _release_zfs(workdir: Path, name: str, mnt: Path) -> list[str]:
    """Export this target's pool if it is imported (only a pool the lab created: zfs.export_pool refuses
    any other) and unmount what a dead zfs-fuse daemon left under the mount point."""
    done: list[str] = []
    zfs_mounts = [m for m in mounts.below(mnt) if m.fstype in ("zfs", "fuse.zfs")]
    if not zfs_mounts and not (workdir / "zfs-devices" / name).exists():
        return done
    try:
        pool = target_paths.zfs_pool(workdir, name)
        if proc.which("zpool") and pool in zfs.imported_pools():
            zfs.export_pool(pool)
            done.append(f"exported zfs pool {pool}")
    except LabError as exc:
        done.append(f"zfs pool of {name} not exported: {exc}")
    if not zfs_daemon.running_daemons():  # a dead daemon's mounts answer ENOTCONN: unmount them, deepest first
        for m in sorted(mounts.below(mnt), key=lambda m: len(m.target.parts), reverse=True):
            if m.fstype == "fuse.zfs":
                res = proc.run(["umount", str(m.target)], check=False)
                if res.returncode != 0:
                    proc.run(["umount", "--lazy", str(m.target)], check=False)
                done.append(f"unmounted dead zfs-fuse mount {m.target}")
    devdir = workdir / "zfs-devices" / name
    if devdir.is_dir():
        for link in devdir.iterdir():
            if link.is_symlink():
                link.unlink()
        with contextlib.suppress(OSError):
            devdir.rmdir()
    return done
