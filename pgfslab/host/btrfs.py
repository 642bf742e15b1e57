"""btrfs subvolumes and snapshots (btrfs-progs, argument lists only)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pgfslab.errors import LabError
from pgfslab.host import mounts, proc

SUBVOLUME_ROOT_INODE = 256  # every btrfs subvolume's top directory has this inode number


def is_subvolume(path: Path) -> bool:
    """Is `path` the top directory of a btrfs subvolume (or snapshot)?"""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_ino == SUBVOLUME_ROOT_INODE and mounts.containing(path).fstype == "btrfs"


def create_subvolume(path: Path) -> None:
    if mounts.containing(path.parent).fstype != "btrfs":
        raise LabError(f"cannot create a btrfs subvolume at {path}: {path.parent} is not on btrfs")
    proc.run(["btrfs", "subvolume", "create", str(path)])


def snapshot(source: Path, dest: Path, *, readonly: bool = True) -> float:
    """Snapshot subvolume `source` to `dest`; returns how long it took in seconds."""
    if not is_subvolume(source):
        raise LabError(f"cannot snapshot {source}: it is not a btrfs subvolume")
    cmd = ["btrfs", "subvolume", "snapshot", *(["-r"] if readonly else []), str(source), str(dest)]
    t0 = time.monotonic()
    proc.run(cmd)
    return time.monotonic() - t0


def delete_subvolume(path: Path) -> float:
    """Delete a subvolume (the space is reclaimed later by the btrfs cleaner); returns seconds taken."""
    if not is_subvolume(path):
        raise LabError(f"refusing to delete {path} as a subvolume: it is not a btrfs subvolume")
    t0 = time.monotonic()
    proc.run(["btrfs", "subvolume", "delete", str(path)])
    return time.monotonic() - t0
