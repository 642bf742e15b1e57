"""Where a target's pieces live: its image, its mount point and its subdirectories under the study's work
directory, the lab's subdirectory on an existing file system, the names of its tmpfs and zfs pool.
"""

from __future__ import annotations

from pathlib import Path

from pgfslab.config.model import TargetSpec
from pgfslab.host import safety
from pgfslab.host.zfs import pools as zfs

DATA_SUBVOLUME = "data"  # btrfs targets with snapshots keep PGDATA's parent in this subvolume
ZFS_DATASET = "data"  # zfs targets keep PGDATA's parent in the dataset <pool>/data, mounted at <mnt>/data


def image_path(workdir: Path, name: str) -> Path:
    return workdir / "images" / f"{name}.img"


def mountpoint(workdir: Path, name: str) -> Path:
    return workdir / "mnt" / name


def existing_dir(spec: TargetSpec, study: str, name: str) -> Path:
    """The lab's own subdirectory on a user-named existing file system."""
    return Path(str(spec.path)) / f"{safety.LAB_DIR_PREFIX}{study}-{name}"


def tmpfs_source(name: str) -> str:
    return f"pgfslab-{name}"


def zfs_pool(workdir: Path, name: str) -> str:
    """The pool of a zfs target: pgfslab-<study>-<target> (the work directory is named after the study)."""
    return zfs.pool_name(workdir.name, name)


def zfs_files(workdir: Path, name: str) -> tuple[Path, Path, Path]:
    """The zfs-fuse daemon's log and PID record (one per study work directory), and the directory of
    device symlinks `zpool import -d` searches for this target's pool."""
    return workdir / "zfs-fuse.log", workdir / "zfs-fuse.pid", workdir / "zfs-devices" / name
