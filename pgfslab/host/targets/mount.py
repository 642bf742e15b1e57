"""A created target, ready for a cluster for the duration of a block: image and device targets mounted
with their mount options (those the kernel does not show are noted), tmpfs and existing targets and
plain directories as they are; a fallback directory labelled as one.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pgfslab.config import device_profiles
from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import kind
from pgfslab.errors import LabError
from pgfslab.host import blockdev, btrfs, disk_daemon, loop_devices, mounts, proc, safety
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release
from pgfslab.host.targets.mounted import Mounted
from pgfslab.host.zfs import target as zfs_target


def _warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


def _unapplied(requested: list[str], effective: str | None) -> list[str]:
    """Requested mount options the kernel does not show (some are defaults it never shows)."""
    eff = (effective or "").split(",")
    return [o for o in requested if o not in eff and not any(e.startswith(o + ":") for e in eff)]


def missing_image(workdir: Path, name: str, spec: TargetSpec) -> Path | None:
    """The image a prepared image (or zfs) target lives on when it is no longer there and no plain-directory
    fallback stands in for it (the work directory is a build product a user may clean): None when present."""
    image = target_paths.image_path(workdir, name)
    if kind(spec) != "image" or image.exists() or (workdir / "dirs" / name).exists():
        return None
    return image


@contextlib.contextmanager
def attached_and_mounted(workdir: Path, name: str, spec: TargetSpec) -> Iterator[tuple[str, Path, float]]:
    """Attach (image) or check (device), mount at the lab's mount point; always released after. An image
    target with an emulated disk (`device_profile: hdd`) has its image served by the disk's daemon for the
    block and the loop device attached to the served file (the daemon stopped after the loop is detached)."""
    k = kind(spec)
    image = target_paths.image_path(workdir, name)
    if k == "image" and not image.exists():
        raise LabError(f"target {name}: image {image} is missing; re-run its preparation (delete its target.json)")
    mnt = target_paths.mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    target_release.release(workdir, name)  # a killed earlier run may have left our own mount or loop behind
    with contextlib.ExitStack() as stack:
        # run in reverse: unmount and detach, stop the disk's daemon, remove the empty mount point
        stack.callback(_remove_mountpoint, mnt)
        backing = image
        if k == "image" and device_profiles.is_disk(spec.device_profile):
            model = device_profiles.model(spec, image.stat().st_size)
            backing = stack.enter_context(disk_daemon.served(workdir, name, image, model)).file
        stack.callback(target_release.release, workdir, name)
        if k == "device":
            dev = str(spec.device)
            blockdev.check_device(dev, target=name, fs=spec.fs, purpose="mount")
        else:
            dev = loop_devices.attach(backing, spec.direct_io)
        mnt.mkdir(parents=True, exist_ok=True)
        opts = ",".join(spec.mount_options)
        cmd = ["mount", "-t", spec.fs] + (["-o", opts] if opts else []) + [dev, str(mnt)]
        t0 = time.monotonic()
        proc.run(cmd)
        yield dev, mnt, time.monotonic() - t0


def _remove_mountpoint(mnt: Path) -> None:
    if not mounts.is_mounted(mnt):
        with contextlib.suppress(OSError):
            mnt.rmdir()  # only ever removes the empty mount point


@contextlib.contextmanager
def mounted(workdir: Path, name: str, spec: TargetSpec, owner: str, *, study: str | None = None) -> Iterator[Mounted]:
    """The created target, ready for a cluster, for the duration of the block. Image and device targets
    are mounted now and always released after; tmpfs and existing targets stay as they are."""
    pw = pwd.getpwnam(owner)
    fs, k = spec.fs, kind(spec)
    dirpath = workdir / "dirs" / name
    image = target_paths.image_path(workdir, name)
    if k == "dir" or (
        k in ("image", "tmpfs")
        and not image.exists()
        and dirpath.exists()
        and not mounts.is_mounted(target_paths.mountpoint(workdir, name))
    ):
        fallback = fs != "dir"
        if fallback:
            _warn(f"target {name}: plain-directory FALLBACK at {dirpath} (not a {fs} file system)")
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        host_fs = mounts.containing(dirpath).fstype
        yield Mounted(
            name,
            fs if not fallback else f"{fs}->dir",
            dirpath,
            dirpath,
            fallback,
            mount_options=None,
            notes=[f"host file system: {host_fs or 'unknown'}"],
            kind="dir" if not fallback else f"{k}->dir",
        )
        return
    if k == "existing":
        sub = target_paths.existing_dir(spec, study or workdir.name, name)
        if not safety.is_lab_dir(sub):
            raise LabError(f"target {name}: {sub} is missing or not the lab's; prepare the target first")
        os.chown(sub, pw.pw_uid, pw.pw_gid)
        host = mounts.containing(sub)
        yield Mounted(
            name,
            host.fstype,
            sub,
            host.target,
            False,
            device=host.source,
            mount_options=host.options_text,
            kind="existing",
            notes=[
                f"existing file system at {host.target}, shared with the host; used bytes count the whole file system"
            ],
        )
        return
    if k == "tmpfs":
        mnt = target_paths.mountpoint(workdir, name)
        entry = mounts.at(mnt)
        if entry is None or entry.fstype != "tmpfs" or entry.source != target_paths.tmpfs_source(name):
            raise LabError(
                f"target {name}: no lab tmpfs is mounted at {mnt}; a tmpfs lives in RAM, so its data "
                "is gone after an unmount or a reboot: prepare the target again"
            )
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        yield Mounted(
            name,
            "tmpfs",
            mnt,
            mnt,
            False,
            device=entry.source,
            mount_options=entry.options_text,
            kind="tmpfs",
            notes=["tmpfs: pages live in RAM (and count against a memory cgroup that writes them)"],
        )
        return
    if fs == "zfs":
        with zfs_target.zfs_mounted(workdir, name, spec, pw) as m:
            yield m
        return
    with attached_and_mounted(workdir, name, spec) as (dev, mnt, mount_s):
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        path = mnt
        if fs == "btrfs" and btrfs.is_subvolume(mnt / target_paths.DATA_SUBVOLUME):
            path = mnt / target_paths.DATA_SUBVOLUME
            os.chown(path, pw.pw_uid, pw.pw_gid)
        effective = mounts.options(mnt)
        notes = [
            f"mount option {o} requested but not listed by the kernel (a default it does not show?)"
            for o in _unapplied(list(spec.mount_options), effective)
        ]
        for note in notes:
            _warn(f"target {name}: {note}")
        yield Mounted(
            name,
            fs,
            path,
            mnt,
            False,
            device=dev,
            mount_options=effective,
            direct_io=loop_devices.direct_io_on(dev) if k == "image" else None,
            notes=notes,
            kind=k,
            mount_s=round(mount_s, 4),
            disk=disk.record() if (disk := disk_daemon.current(name)) is not None else None,
        )
