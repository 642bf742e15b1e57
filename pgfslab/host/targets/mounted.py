"""The record of a target ready for a cluster (`Mounted`): what run.json, the database, every table and
figure say about where a run's data lived.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.config.targets import fs_label


@dataclass
class Mounted:
    """A target ready for a cluster: `path` is where PGDATA's parent is (PGDATA = path / "pgdata")."""

    name: str
    fs: str
    path: Path
    mountpoint: Path
    fallback: bool
    device: str | None = None
    mount_options: str | None = None
    direct_io: bool | None = None
    notes: list[str] = field(default_factory=list)
    kind: str = "image"
    mount_s: float | None = None
    implementation: str | None = None  # zfs: 'zfs-fuse' or 'openzfs'
    zfs: dict[str, Any] | None = None  # zfs: pool, dataset, effective dataset properties
    disk: dict[str, Any] | None = None  # an emulated disk under the loop device: its daemon, files and model

    @property
    def fs_label(self) -> str:
        """The file system as tables and figures name it: 'zfs (zfs-fuse, userspace)' for zfs-fuse."""
        return fs_label(self.fs, self.implementation)

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["fs_label"] = self.fs_label
        d["path"] = str(self.path)
        d["mountpoint"] = str(self.mountpoint)
        return d
