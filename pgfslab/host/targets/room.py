"""Room for a study's target images before any is made. An image is sparse: it takes what its file system has
written and grows as that fills, up to the target's `size_gb`. A study whose images together could outgrow the
disk that holds them stops with ENOSPC in the middle of its runs, as a Snakemake error about its own metadata rather
than a sentence; so a target's preparation first checks that the disk has room for every image of the study to
fill, with a reserve for the raw outputs, the database and the notebooks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import kind
from pgfslab.errors import LabError
from pgfslab.host.targets import paths as target_paths

RESERVE_BYTES = 2 * 2**30  # raw logs, DuckDB and the build beside the images
GIB = 2**30


def allocated(path: Path) -> int:
    """Bytes a file takes on disk (0 when it does not exist): a sparse image's written part."""
    try:
        return os.stat(path).st_blocks * 512
    except FileNotFoundError:
        return 0


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding `path` (its nearest existing parent)."""
    p = path
    while not p.exists():
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def growth(workdir: Path, targets: Mapping[str, TargetSpec]) -> int:
    """How much the study's images may still grow: each image target's size less what its image already takes."""
    return sum(
        max(0, int(spec.size_gb * GIB) - allocated(target_paths.image_path(workdir, name)))
        for name, spec in targets.items()
        if kind(spec) == "image"
    )


def require_room(workdir: Path, targets: Mapping[str, TargetSpec], reserve: int = RESERVE_BYTES) -> None:
    """Refuse, naming the numbers, when the disk holding `workdir` cannot take every image of the study full."""
    need, free = growth(workdir, targets), free_bytes(workdir)
    if need + reserve > free:
        sizes = ", ".join(f"{n} {s.size_gb:g}" for n, s in targets.items() if kind(s) == "image")
        raise LabError(
            f"not enough disk for the study's target images in {workdir}: they may grow by {need / GIB:.1f} GiB "
            f"(size_gb: {sizes}), with {reserve / GIB:.0f} GiB kept for the outputs, and the file system has "
            f"{free / GIB:.1f} GiB free. Free space (the images of studies you no longer run are in "
            f"data/work/<study>/images) or give the targets smaller size_gb"
        )
