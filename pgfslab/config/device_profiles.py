"""Named slow-device presets for a target's data device (`targets.<name>.device_profile`).

`hdd`: an emulated magnetic disk with one head (pgfslab/config/disk_model.py: a named 7,200 rpm drive's
datasheet, seeks, rotation, zoned transfer; served by the lab's daemon, pgfslab/host/disk_daemon.py, under the
target's loop device). Reads and writes share its one queue and its one head, so a checkpoint's writes take
the disk's time from the reads, as on the seed 004 post's disk. `targets.<name>.device_model` overrides the
preset's values key by key. Everything that reaches the loop device pays the model: the PostgreSQL server's
I/O, the kernel's write-back of its dirty pages, the device baseline, fsmicro, the target's preparation.

`hdd-throttle`: the lab's earlier stand-in, kept to compare against (and for machines without FUSE): cgroup
blkio throttles of 150 read and 150 write operations/s and 100 MB/s each way on the target's loop device,
applied to the PostgreSQL server, its clients and the device baseline (pgfslab/host/cgroups.py). It has
separate budgets for reads and writes (reads never wait for writes), no seek model, and under cgroup v1 it
does not throttle write-back by kernel threads (docs/slow-device.md, with measurements).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from pgfslab.config import disk_model
from pgfslab.config.model import Blkio, Node, TargetSpec
from pgfslab.errors import LabError

HDD_THROTTLE_SOURCE = (
    "a 7,200 rpm disk: ~8.5 ms average seek + 4.2 ms half revolution per random I/O, 100-200 random IOPS "
    "with short seeks and queueing (150 taken); ~100 MB/s sequential between outer and inner tracks"
)

# throttle profiles: cgroup blkio limits of the target's data device
THROTTLES: dict[str, tuple[Blkio, str]] = {
    "hdd-throttle": (
        Blkio(read_iops=150, write_iops=150, read_bps="100MB", write_bps="100MB"),
        HDD_THROTTLE_SOURCE,
    ),
}

# emulated-disk profiles: the disk model's preset each stands for
DISKS: dict[str, str] = {"hdd": "constellation-7200"}

NAMES = (*DISKS, *THROTTLES)


def is_disk(name: str | None) -> bool:
    """Is `name` an emulated disk (served by the lab's daemon under the loop device)?"""
    return name in DISKS


def is_throttle(name: str | None) -> bool:
    """Is `name` a blkio throttle (applied to the run's cgroup)?"""
    return name in THROTTLES


def throttle(name: str | None) -> str | None:
    """`name` when it is a throttle profile (what cgroups.limits_from_config must enforce), else None."""
    return name if is_throttle(name) else None


def blkio(name: str) -> Blkio:
    """The throttles of throttle profile `name`."""
    return THROTTLES[name][0]


def source(name: str) -> str:
    """Where the profile's numbers come from, as the paper and the docs state it."""
    if is_disk(name):
        p = disk_model.PRESETS[DISKS[name]]
        return f"{p.model}; {p.source}"
    return THROTTLES[name][1]


Overrides = Mapping[str, Any] | Node | None  # targets.<name>.device_model, as a mapping or as the typed config


def _plain(overrides: Overrides) -> Mapping[str, Any] | None:
    return overrides.to_dict() if isinstance(overrides, Node) else overrides


def drive(name: str, overrides: Overrides = None) -> disk_model.Drive:
    """The emulated disk's datasheet values with the config's overrides."""
    return disk_model.drive_with(disk_model.PRESETS[DISKS[name]].drive, _plain(overrides))


def model(spec: TargetSpec, size: int) -> disk_model.Model:
    """The disk model of a target spec (its `device_profile` an emulated disk) for an image of `size` bytes."""
    if not is_disk(spec.device_profile):
        raise LabError(f"device_profile {spec.device_profile!r} is not an emulated disk")
    return disk_model.model(DISKS[str(spec.device_profile)], _plain(spec.device_model), size)


def fingerprint(name: str, overrides: Overrides = None) -> dict[str, Any]:
    """What a profile stands for (a changed preset re-measures the runs and baselines that use it)."""
    if is_disk(name):
        return {"disk": DISKS[name], **asdict(drive(name, overrides))}
    return blkio(name).to_dict()


def describe(name: str, overrides: Overrides = None, size: int | None = None) -> dict[str, Any]:
    """The profile as run.json and baseline.json record it: its name, kind, values and their source."""
    if is_disk(name):
        out: dict[str, Any] = {"name": name, "kind": "disk", "source": source(name)}
        if size:
            out["model"] = disk_model.model(DISKS[name], _plain(overrides), size).describe()
        else:
            out["parameters"] = asdict(drive(name, overrides))
        return out
    return {"name": name, "kind": "throttle", "blkio": blkio(name).to_dict(), "source": source(name)}
