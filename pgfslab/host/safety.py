"""What the lab may delete, unmount or detach — one place, used by every module that does so.

The rules:
  * a path is deleted only if it lies under the study's work directory, or it is a directory the
    lab created elsewhere (named `pgfs-lab-*` and holding the lab's marker file);
  * a recursive delete never walks into a mounted file system;
  * a mount point is unmounted only if it lies under the study's work directory;
  * a loop device is detached only if it is backed by an image under the work directory.
Every refusal is a LabError that says which rule stopped it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import mounts

MARKER = ".pgfs-lab.json"
LAB_DIR_PREFIX = "pgfs-lab-"


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_workdir(workdir: Path) -> Path:
    """A work directory must be absolute and at least two levels deep (never /, /tmp, /home)."""
    wd = _resolved(workdir)
    if not workdir.is_absolute():
        raise LabError(f"work directory {workdir} must be an absolute path")
    if len(wd.parts) < 3:
        raise LabError(f"refusing work directory {wd}: too close to / (it must be at least two levels deep)")
    return wd


def is_under(path: Path, root: Path) -> bool:
    """Does `path` (symlinks resolved) lie strictly inside `root`?"""
    p, r = _resolved(path), _resolved(root)
    return p != r and p.is_relative_to(r)


def require_under(path: Path, root: Path, action: str) -> Path:
    if not is_under(path, root):
        raise LabError(f"refusing to {action} {path}: it is not under the study's work directory {root}")
    return _resolved(path)


def mark(path: Path, **facts: Any) -> None:
    """Mark a directory as created by the lab (so it may later be emptied or removed)."""
    (path / MARKER).write_text(json.dumps({"created_by": "pgfs-lab", **facts}, indent=2) + "\n")


def marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("created_by") == "pgfs-lab" else None


def is_lab_dir(path: Path) -> bool:
    """A directory the lab created outside its work directory: named pgfs-lab-*, with the marker."""
    return not path.is_symlink() and path.is_dir() and path.name.startswith(LAB_DIR_PREFIX) and marker(path) is not None


def require_deletable(path: Path, workdir: Path) -> Path:
    """May the lab delete `path`? Under the work directory, or a marked lab directory; no mounts below."""
    if path.is_symlink():
        raise LabError(f"refusing to delete {path}: it is a symbolic link")
    if not (is_under(path, check_workdir(workdir)) or is_lab_dir(path)):
        raise LabError(
            f"refusing to delete {path}: it is neither under the study's work directory {workdir} "
            f"nor a directory the lab created (named {LAB_DIR_PREFIX}* with a {MARKER} marker)"
        )
    inside = mounts.below(path)
    if inside:
        raise LabError(
            f"refusing to delete {path}: a file system is mounted at {inside[0].target} "
            "(unmount it first; a recursive delete would erase its contents)"
        )
    return _resolved(path)


def remove_tree(path: Path, workdir: Path) -> bool:
    """Delete a directory tree the lab owns. Returns whether anything was deleted."""
    if not path.exists() and not path.is_symlink():
        return False
    target = require_deletable(path, workdir)
    shutil.rmtree(target)
    return True


def reset_dir(path: Path, workdir: Path) -> None:
    """Make `path` an empty directory (a lab directory keeps its marker)."""
    if path.exists() or path.is_symlink():
        target = require_deletable(path, workdir)
        keep = marker(target)
        for child in target.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        if keep is not None:
            mark(target, **{k: v for k, v in keep.items() if k != "created_by"})
    else:
        path.mkdir(parents=True)


def require_unmountable(mountpoint: Path, workdir: Path) -> Path:
    return require_under(mountpoint, check_workdir(workdir), "unmount")


def loop_backing_file(dev: str) -> Path | None:
    name = Path(dev).name
    try:
        text = Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    except OSError:
        return None
    return Path(text.removesuffix(" (deleted)"))


def require_detachable(dev: str, workdir: Path) -> str:
    """A loop device may be detached only if its backing file is an image under the work directory."""
    backing = loop_backing_file(dev)
    if backing is None:
        raise LabError(f"refusing to detach {dev}: it is not an attached loop device")
    if not is_under(backing, check_workdir(workdir)):
        raise LabError(
            f"refusing to detach {dev}: its backing file {backing} is not under the study's work directory {workdir}"
        )
    return dev
