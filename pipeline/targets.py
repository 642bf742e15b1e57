"""File-system targets: a sparse image on a loop device, formatted and mounted by the lab.

Safety rules (see README, "What the lab touches"):
  * images are created only under the study's work directory, named <target>.img;
  * a loop device is detached only if it is backed by one of those images;
  * only the lab's own mount points (<workdir>/mnt/<target>) are unmounted.
Where mounting is not permitted (not root, no loop devices) a target falls back to a plain
directory on the host file system, labelled `fallback` in run.json, the database, every table
and figure — never a silent substitution.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline import proc
from pipeline.errors import LabError

MKFS: dict[str, list[str]] = {
    # ext4: initialise inode tables and journal now, not lazily in the background during runs.
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
}


@dataclass
class Mounted:
    """A target ready for a cluster: `path` is where PGDATA lives."""

    name: str
    fs: str
    path: Path
    mountpoint: Path
    fallback: bool
    device: str | None = None
    mount_options: str | None = None
    direct_io: bool | None = None
    notes: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        d["mountpoint"] = str(self.mountpoint)
        return d


def mounting_allowed() -> tuple[bool, str]:
    """Can this process attach loop devices and mount? (root, /dev/loop-control, tools present)."""
    if os.geteuid() != 0:
        return False, "not running as root"
    if not Path("/dev/loop-control").exists():
        return False, "no /dev/loop-control (loop devices unavailable)"
    for tool in ("losetup", "mount", "umount"):
        if proc.which(tool) is None:
            return False, f"{tool} not found"
    return True, "root with loop devices"


def image_path(workdir: Path, name: str) -> Path:
    return workdir / "images" / f"{name}.img"


def mountpoint(workdir: Path, name: str) -> Path:
    return workdir / "mnt" / name


def _warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


def _loops_backing(image: Path) -> list[str]:
    out = proc.run(["losetup", "-j", str(image)], check=False).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.strip()]


def _is_mounted(path: Path) -> bool:
    target = str(path.resolve()) if path.exists() else str(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == target for line in fh if len(line.split()) > 1)


def _mount_options(path: Path) -> str | None:
    target = str(path.resolve())
    with open("/proc/self/mounts") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 3 and parts[1] == target:
                return parts[3]
    return None


def release(workdir: Path, name: str) -> list[str]:
    """Unmount the lab's mount point of a target and detach loop devices backed by its image.

    Only touches what the lab created; safe to call any number of times. Returns what it did.
    """
    done: list[str] = []
    mnt = mountpoint(workdir, name)
    for _ in range(3):
        if not _is_mounted(mnt):
            break
        res = proc.run(["umount", str(mnt)], check=False)
        if res.returncode == 0:
            done.append(f"unmounted {mnt}")
        else:
            time.sleep(0.5)
    if _is_mounted(mnt):
        proc.run(["umount", "--lazy", str(mnt)], check=False)
        done.append(f"lazily unmounted {mnt}")
    image = image_path(workdir, name)
    if image.exists():
        for dev in _loops_backing(image):
            proc.run(["losetup", "-d", dev], check=False)
            done.append(f"detached {dev}")
    return done


def _attach(image: Path, direct_io: bool) -> str:
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    cmd.append(str(image))
    return proc.run(cmd).stdout.strip()


def _dio_on(dev: str) -> bool | None:
    out = proc.run(["losetup", "--list", "--noheadings", "--output", "DIO", dev], check=False).stdout.strip()
    return {"1": True, "0": False}.get(out)


def create(workdir: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Create the target afresh: a sparse image, formatted. Returns what was done (for provenance)."""
    if spec["fs"] == "dir":
        path = workdir / "dirs" / name
        _reset_dir(workdir, path)
        return {"fs": "dir", "fallback": False, "path": str(path), "reason": "configured as a plain directory"}
    ok, why = mounting_allowed()
    if not ok:
        path = workdir / "dirs" / name
        _reset_dir(workdir, path)
        _warn(f"target {name}: cannot mount ({why}); FALLING BACK to a plain directory {path}")
        return {"fs": spec["fs"], "fallback": True, "path": str(path), "reason": why}
    release(workdir, name)
    image = image_path(workdir, name)
    image.parent.mkdir(parents=True, exist_ok=True)
    image.unlink(missing_ok=True)
    size = int(spec["size_gb"] * 1024**3)
    with open(image, "wb") as fh:
        fh.truncate(size)
    mkfs = [*MKFS[spec["fs"]], *spec.get("mkfs_options", []), str(image)]
    t0 = time.monotonic()
    proc.run(mkfs, timeout=300)
    return {
        "fs": spec["fs"],
        "fallback": False,
        "image": str(image),
        "image_bytes": size,
        "mkfs_command": mkfs,
        "mkfs_s": round(time.monotonic() - t0, 3),
        "mkfs_version": proc.first_line([MKFS[spec["fs"]][0], "-V"]),
    }


def _reset_dir(workdir: Path, path: Path) -> None:
    import shutil

    if not path.resolve().is_relative_to(workdir.resolve()):
        raise LabError(f"refusing to delete {path}: not under the study's work directory {workdir}")
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


@contextlib.contextmanager
def mounted(workdir: Path, name: str, spec: dict[str, Any], owner: str) -> Iterator[Mounted]:
    """Attach and mount a created target for the duration of the block; always released after."""
    import pwd

    pw = pwd.getpwnam(owner)
    fs = spec["fs"]
    dirpath = workdir / "dirs" / name
    image = image_path(workdir, name)
    if fs == "dir" or (not image.exists() and dirpath.exists()):
        fallback = fs != "dir"
        if fallback:
            _warn(f"target {name}: plain-directory FALLBACK at {dirpath} (not a {fs} file system)")
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        host_fs = proc.run(["findmnt", "-n", "-o", "FSTYPE", "-T", str(dirpath)], check=False).stdout.strip()
        yield Mounted(name, fs if not fallback else f"{fs}->dir", dirpath, dirpath, fallback,
                      mount_options=None, notes=[f"host file system: {host_fs or 'unknown'}"])
        return
    if not image.exists():
        raise LabError(f"target {name}: image {image} is missing; re-run its preparation (delete its target.json)")
    mnt = mountpoint(workdir, name)
    release(workdir, name)  # a killed earlier run may have left our own mount or loop behind
    try:
        dev = _attach(image, spec.get("direct_io", True))
        mnt.mkdir(parents=True, exist_ok=True)
        opts = ",".join(spec.get("mount_options", []))
        cmd = ["mount", "-t", fs] + (["-o", opts] if opts else []) + [dev, str(mnt)]
        proc.run(cmd)
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        yield Mounted(name, fs, mnt, mnt, False, device=dev, mount_options=_mount_options(mnt),
                      direct_io=_dio_on(dev))
    finally:
        release(workdir, name)
        if not _is_mounted(mnt):
            with contextlib.suppress(OSError):
                mnt.rmdir()  # only ever removes the empty mount point


def used_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize
