"""File-system targets created afresh: where a study's PostgreSQL cluster lives.

Kinds (see kind()):
  image     a sparse image under the work directory, on a loop device, formatted and mounted by the lab;
  device    a user-named block device (`device: /dev/xyz`, `format: true`), formatted by the lab after
            the checks in pgfslab/host/blockdev.py, labelled `pgfslab-<target>`, mounted at the lab's mount point;
  tmpfs     a tmpfs of `size_gb`, mounted by create() and kept mounted (its contents live in RAM) until
            release();
  existing  a user-named directory on a file system the host already has mounted (`path: /abs/dir`): the
            lab uses only a subdirectory it creates there, `pgfs-lab-<study>-<target>`, marked as the lab's;
  dir       a plain directory under the work directory.

Safety rules (pgfslab/host/safety.py): the lab deletes only under the work directory or in directories it
created and marked; it unmounts only its own mount points (<workdir>/mnt/<target>) and detaches only
loop devices backed by its own images. Where mounting is not permitted (not root, no loop devices) an
image or tmpfs target falls back to a plain directory, labelled `fallback` in run.json, the database,
every table and figure — never a silent substitution. A device target never falls back.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import MKFS, check_spec, kind
from pgfslab.errors import LabError
from pgfslab.host import blockdev, btrfs, loop_devices, mounts, proc, safety
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release
from pgfslab.host.zfs import target as zfs_target

PSEUDO_FS = {
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "configfs",
    "fusectl",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "pstore",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "nsfs",
    "rpc_pipefs",
    "ramfs",
}


def _warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _mkfs_command(name: str, spec: TargetSpec, dev: str) -> list[str]:
    return [*MKFS[spec.fs], "-L", blockdev.lab_label(name, spec.fs), *spec.mkfs_options, dev]


def create(
    workdir: Path, name: str, spec: TargetSpec, *, study: str | None = None, data_subvolume: bool = False
) -> dict[str, Any]:
    """Create the target afresh (image: a sparse image, formatted; device: checked, then formatted;
    tmpfs: mounted; existing: the lab's subdirectory emptied). Returns what was done (for provenance).

    `data_subvolume` (btrfs image/device targets; needed for snapshots): PGDATA's parent becomes a
    subvolume `data` on the new file system. `study` names the subdirectory of an existing target
    (default: the work directory's name, which is the study's)."""
    check_spec(name, spec)
    k = kind(spec)
    if data_subvolume and (spec.fs != "btrfs" or k not in ("image", "device")):
        raise LabError(
            f"target {name}: a data subvolume (for snapshots) needs a btrfs image or device target, not {spec.fs} ({k})"
        )
    if k == "dir":
        path = workdir / "dirs" / name
        safety.reset_dir(path, workdir)
        return {
            "fs": "dir",
            "kind": k,
            "fallback": False,
            "path": str(path),
            "reason": "configured as a plain directory",
        }
    if k == "existing":
        return _create_existing(workdir, name, spec, study or workdir.name)
    ok, why = loop_devices.mounting_allowed()
    if not ok:
        if k == "device":
            raise LabError(f"target {name}: cannot format and mount device {spec.device}: {why}")
        path = workdir / "dirs" / name
        safety.reset_dir(path, workdir)
        _warn(f"target {name}: cannot mount ({why}); FALLING BACK to a plain directory {path}")
        return {"fs": spec.fs, "kind": k, "fallback": True, "path": str(path), "reason": why}
    target_release.release(workdir, name)
    if spec.fs == "zfs":
        return zfs_target.create_zfs(workdir, name, spec, study or workdir.name)
    if k == "tmpfs":
        return _create_tmpfs(workdir, name, spec)
    if k == "device":
        record = _create_device(workdir, name, spec)
    else:
        record = _create_image(workdir, name, spec)
    if data_subvolume:
        with target_mount.attached_and_mounted(workdir, name, spec) as (_dev, mnt, _s):
            btrfs.create_subvolume(mnt / target_paths.DATA_SUBVOLUME)
        record["data_subvolume"] = target_paths.DATA_SUBVOLUME
    return record


def _create_image(workdir: Path, name: str, spec: TargetSpec) -> dict[str, Any]:
    image = target_paths.image_path(workdir, name)
    image.parent.mkdir(parents=True, exist_ok=True)
    image.unlink(missing_ok=True)
    size = int(spec.size_gb * 1024**3)
    with open(image, "wb") as fh:
        fh.truncate(size)
    mkfs = _mkfs_command(name, spec, str(image))
    t0 = time.monotonic()
    try:
        proc.run(mkfs, timeout=300)
    except LabError as exc:
        dead = mounts.unreachable() if "Transport endpoint is not connected" in str(exc) else []
        if not dead:
            raise
        raise LabError(
            f"target {name}: {exc}. {mkfs[0]} checks the mounted file systems first and cannot reach "
            f"{'; '.join(dead)} (most often a file system on a loop device whose file is on a FUSE mount whose "
            "daemon is gone, as an emulated disk's is when its study and its daemon are killed together). "
            "`pgfslab release --config <that study>` in the clone that ran it unmounts it; the lab leaves what "
            "another clone created alone"
        ) from None
    return {
        "fs": spec.fs,
        "kind": "image",
        "fallback": False,
        "image": str(image),
        "image_bytes": size,
        "label": blockdev.lab_label(name, spec.fs),
        "mkfs_command": mkfs,
        "mkfs_s": round(time.monotonic() - t0, 3),
        "mkfs_version": proc.first_line([MKFS[spec.fs][0], "-V"]),
    }


def _create_device(workdir: Path, name: str, spec: TargetSpec) -> dict[str, Any]:
    dev, fs = str(spec.device), spec.fs
    before = blockdev.check_device(dev, target=name, fs=fs, purpose="format")
    mkfs = _mkfs_command(name, spec, dev)
    t0 = time.monotonic()
    proc.run(mkfs, timeout=3600)
    mkfs_s = round(time.monotonic() - t0, 3)
    after = blockdev.check_device(dev, target=name, fs=fs, purpose="mount")
    return {
        "fs": fs,
        "kind": "device",
        "fallback": False,
        "device": dev,
        "device_bytes": after.size_bytes,
        "devno": after.devno,
        "label": after.label,
        "uuid": after.uuid,
        "previously": {"fstype": before.fstype, "label": before.label, "lab_owned": before.lab_owned},
        "mkfs_command": mkfs,
        "mkfs_s": mkfs_s,
        "mkfs_version": proc.first_line([MKFS[fs][0], "-V"]),
    }


def _create_tmpfs(workdir: Path, name: str, spec: TargetSpec) -> dict[str, Any]:
    mnt = target_paths.mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    mnt.mkdir(parents=True, exist_ok=True)
    size = int(spec.size_gb * 1024**3)
    opts = ",".join([f"size={size}", "mode=0755", *spec.mount_options])
    cmd = ["mount", "-t", "tmpfs", "-o", opts, target_paths.tmpfs_source(name), str(mnt)]
    t0 = time.monotonic()
    proc.run(cmd)
    return {
        "fs": "tmpfs",
        "kind": "tmpfs",
        "fallback": False,
        "mountpoint": str(mnt),
        "size_bytes": size,
        "mount_command": cmd,
        "mount_s": round(time.monotonic() - t0, 3),
        "mount_options": mounts.options(mnt),
        "note": "tmpfs lives in RAM: it stays mounted until release(); unmounting or a reboot loses it",
    }


def _create_existing(workdir: Path, name: str, spec: TargetSpec, study: str) -> dict[str, Any]:
    base = Path(str(spec.path))
    if not base.is_dir():
        raise LabError(f"target {name}: path {base} is not an existing directory")
    host = mounts.containing(base)
    if host.fstype in PSEUDO_FS:
        raise LabError(f"target {name}: path {base} is on {host.fstype} ({host.target}), not a file system for data")
    sub = target_paths.existing_dir(spec, study, name)
    if sub.exists() or sub.is_symlink():
        info = safety.marker(sub) if safety.is_lab_dir(sub) else None
        if info is None or info.get("study") != study or info.get("target") != name:
            raise LabError(
                f"target {name}: {sub} exists but was not created by the lab for study {study} "
                f"target {name}; the lab never deletes what it did not create: move it away first"
            )
        safety.reset_dir(sub, workdir)
    else:
        sub.mkdir(mode=0o755)
        safety.mark(sub, study=study, target=name, created_at=_now())
    return {
        "fs": "existing",
        "kind": "existing",
        "fallback": False,
        "path": str(sub),
        "host_path": str(base),
        "host_mountpoint": str(host.target),
        "host_fs": host.fstype,
        "host_source": host.source,
        "host_mount_options": host.options_text,
        "note": "a file system the host already uses: other activity on it affects the results",
    }
