"""Runs that start from the data set as loaded (study key `run.restore`): the prepared target's cluster is copied
aside once, into the study's work directory outside the target's file system (a footprint never counts the copy),
and copied back before every run. No run then inherits what the one before it wrote (pgbench's history rows, the
dead versions of updated rows, a grown WAL), so a target's rounds are exchangeable instead of drifting as its
data set grows.

The copy is a plain `cp -a`, never a reflink: on a file system that overwrites in place (xfs, ext4 with reflink
support) a shared extent would turn the run's first writes into copy-on-write ones and change what is measured.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from pgfslab.errors import LabError
from pgfslab.host import safety
from pgfslab.records.run_record import Restored
from pgfslab.records.target_record import LoadedCopy

LOADED = "loaded"  # <work dir>/loaded/<target>/pgdata: each target's cluster as loaded


def loaded_dir(workdir: Path, target: str) -> Path:
    return workdir / LOADED / target / "pgdata"


def tree_bytes(path: Path) -> int:
    """The bytes of the regular files under `path` (what a copy writes)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
    return total


def _copy(src: Path, dst: Path) -> None:
    """src's contents into the empty directory dst, owners, modes and times kept."""
    done = subprocess.run(
        ["cp", "-a", "--reflink=never", f"{src}/.", str(dst)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise LabError(f"copying {src} to {dst} failed: {done.stderr.strip() or f'cp exited {done.returncode}'}")


def keep_loaded(workdir: Path, target: str, pgdata: Path) -> LoadedCopy:
    """The prepared cluster (its server stopped) copied aside: what every run of the target starts from."""
    if (pgdata / "pg_wal").is_symlink():
        raise LabError(
            f"target {target}: run.restore copies a cluster whose WAL is in PGDATA; {pgdata}/pg_wal is a link"
        )
    dst = loaded_dir(workdir, target)
    safety.remove_tree(dst.parent, workdir)  # an earlier preparation's copy
    dst.mkdir(parents=True)
    t0 = time.monotonic()
    _copy(pgdata, dst)
    return LoadedCopy(path=str(dst), bytes=tree_bytes(dst), wall_s=round(time.monotonic() - t0, 3))


def put_back(workdir: Path, target: str, pgdata: Path, setup_record: Path) -> Restored:
    """The target's cluster replaced by its loaded copy (the server stopped, the target mounted); PGDATA
    itself is kept (a btrfs target's data subvolume is its parent, a snapshot's source). `setup_record`: the
    target's target.json, named when the copy is missing."""
    src = loaded_dir(workdir, target)
    if not (src / "PG_VERSION").exists():
        raise LabError(
            f"target {target}: run.restore needs the copy of its loaded cluster, {src}, which is missing; "
            f"delete {setup_record} (the record of its preparation) and run the study again to prepare it"
        )
    t0 = time.monotonic()
    safety.reset_dir(pgdata, workdir)
    _copy(src, pgdata)
    return Restored(source=str(src), bytes=tree_bytes(src), wall_s=round(time.monotonic() - t0, 3))
