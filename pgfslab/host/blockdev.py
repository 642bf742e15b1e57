"""User-named block devices: may the lab format or mount this one?

The lab formats a device only if all of these hold, and says which one failed otherwise:
  * it is named by a full /dev path and is a block device;
  * it is not the root device, does not hold the root file system (a partition of it, a slave of
    a device-mapper/md device under it) and does not back it (a loop device's backing file);
  * nothing on it is mounted, used as swap, or held by another driver (holders, partitions),
    and the kernel grants an exclusive open (which also catches mounts in other namespaces);
  * it holds no partition table, and any file-system signature on it is one the lab made for this
    target: the lab labels its file systems `pgfslab-<target>` (see lab_label()).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import mounts, proc

LABEL_PREFIX = "pgfslab-"
LABEL_MAX = {"ext4": 16, "xfs": 12, "btrfs": 255}  # the longest label each mkfs accepts
PARTITION_TABLES = {"dos", "gpt", "PMBR", "mac", "sun", "sgi", "bsd", "atari", "aix", "solaris", "unixware", "minix"}


def lab_label(target: str, fs: str) -> str:
    """The label the lab gives a file system it makes for `target`: `pgfslab-<target>`, or, where the
    file system's label limit is too short for that, `pgfslab-` and a hash of the target's name."""
    limit = LABEL_MAX.get(fs, 16)
    label = LABEL_PREFIX + target
    if len(label) <= limit:
        return label
    return LABEL_PREFIX + hashlib.sha1(target.encode()).hexdigest()[: limit - len(LABEL_PREFIX)]


def _devno(rdev: int) -> str:
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def _sys(rdev: int) -> Path:
    return Path("/sys/dev/block") / _devno(rdev)


def _read_devno(path: Path) -> int | None:
    try:
        major, minor = path.read_text().strip().split(":")
    except (OSError, ValueError):
        return None
    return os.makedev(int(major), int(minor))


def _name(rdev: int) -> str:
    try:
        return _sys(rdev).resolve().name
    except OSError:
        return _devno(rdev)


def _parent(rdev: int) -> int | None:
    """The whole disk a partition belongs to."""
    node = _sys(rdev)
    if not (node / "partition").exists():
        return None
    return _read_devno(node.resolve().parent / "dev")


def whole_disk(rdev: int) -> int:
    """The disk a partition is on (the device itself if it is a whole disk)."""
    return _parent(rdev) or rdev


def _children(rdev: int) -> list[int]:
    """Partitions of a whole disk."""
    node = _sys(rdev).resolve()
    return [
        d for p in sorted(node.iterdir()) if (p / "partition").exists() and (d := _read_devno(p / "dev")) is not None
    ]


def _slaves(rdev: int) -> list[int]:
    d = _sys(rdev) / "slaves"
    return [x for s in sorted(d.iterdir()) if (x := _read_devno(s / "dev")) is not None] if d.exists() else []


def _holders(rdev: int) -> list[str]:
    d = _sys(rdev) / "holders"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def _loop_backing(rdev: int) -> Path | None:
    try:
        text = (_sys(rdev) / "loop" / "backing_file").read_text().strip()
    except OSError:
        return None
    return Path(text.removesuffix(" (deleted)"))


def _root_source_rdevs() -> list[int]:
    found = [os.stat("/").st_dev]
    for m in mounts.table():
        if m.target == Path("/") and (d := m.device_number()) is not None:
            found.append(d)
    return found


def root_devices() -> dict[int, str]:
    """Every block device the root file system lives on or depends on, with why (device number -> reason)."""
    out: dict[int, str] = {}

    def walk(rdev: int, why: str) -> None:
        if rdev in out or not _sys(rdev).exists():
            return
        out[rdev] = why
        if (parent := _parent(rdev)) is not None:
            walk(parent, f"holds the root file system's partition {_name(rdev)}")
        for slave in _slaves(rdev):
            walk(slave, f"backs {_name(rdev)}, which holds the root file system")
        if (backing := _loop_backing(rdev)) is not None:
            with_dev = backing.stat().st_dev if backing.exists() else None
            if with_dev is not None:
                walk(with_dev, f"holds {backing}, the backing file of root device {_name(rdev)}")

    for rdev in _root_source_rdevs():
        walk(rdev, "is the root device (/ is mounted from it)")
    return out


def _signatures(dev: str) -> list[dict[str, Any]]:
    """Every signature wipefs finds (file systems, partition tables, RAID/LVM members), read-only."""
    res = proc.run(["wipefs", "--no-act", "--json", dev], check=False)
    if res.returncode != 0:
        raise LabError(f"cannot probe {dev} with wipefs: {(res.stderr or res.stdout).strip()}")
    text = res.stdout.strip()
    return list(json.loads(text).get("signatures", [])) if text else []


def _blkid(dev: str) -> dict[str, str]:
    """Low-level probe (blkid -p bypasses the cache); exit code 2 means nothing was found."""
    res = proc.run(["blkid", "-p", "-o", "export", dev], check=False)
    if res.returncode not in (0, 2):
        raise LabError(f"cannot probe {dev} with blkid: {(res.stderr or res.stdout).strip()}")
    return dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)


@dataclass
class DeviceFacts:
    """What the lab found on a device it accepted (recorded in target.json)."""

    path: str
    devno: str
    size_bytes: int
    fstype: str | None
    label: str | None
    uuid: str | None
    lab_owned: bool
    signatures: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _block_device(dev: str) -> os.stat_result:
    if not dev.startswith("/dev/") or ".." in Path(dev).parts:
        raise LabError(f"device {dev!r}: only a full /dev path is accepted (e.g. /dev/sdb, /dev/disk/by-id/...)")
    real = os.path.realpath(dev)
    if not real.startswith("/dev/"):
        raise LabError(f"device {dev}: it resolves to {real}, which is outside /dev")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise LabError(f"device {dev}: no such device") from None
    if not stat.S_ISBLK(st.st_mode):
        raise LabError(f"device {dev}: not a block device")
    return st


def _in_use(dev: str, rdev: int) -> str | None:
    family = [rdev, *_children(rdev)]
    for m in mounts.table():
        if m.device_number() in family:
            return f"it is mounted at {m.target}" + ("" if m.device_number() == rdev else f" (partition {m.source})")
    try:
        for line in Path("/proc/swaps").read_text().splitlines()[1:]:
            src = line.split()[0]
            with_st = os.stat(src) if src.startswith("/dev/") else None
            if with_st is not None and stat.S_ISBLK(with_st.st_mode) and with_st.st_rdev in family:
                return f"it is used as swap ({src})"
    except OSError:
        pass
    for d in family:
        if holders := _holders(d):
            return f"it is held by {', '.join(holders)} (device-mapper, md or bcache on top of it)"
    if len(family) > 1:
        return f"it has partitions ({', '.join(_name(c) for c in family[1:])}); name a partition or wipe it yourself"
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            return "the kernel reports it busy (mounted in another namespace, or opened exclusively)"
        raise LabError(f"device {dev}: cannot open it: {exc.strerror}") from None
    os.close(fd)
    return None


def check_device(dev: str, *, target: str, fs: str, purpose: str = "format") -> DeviceFacts:
    """Refuse (LabError saying why) a device the lab must not format (`purpose="format"`) or mount
    (`purpose="mount"`: it must also hold the lab's `fs` for this target). Returns what was found."""
    st = _block_device(dev)
    rdev = st.st_rdev
    size = int((_sys(rdev) / "size").read_text()) * 512
    if size == 0:
        raise LabError(f"refusing device {dev} for target {target}: it has size 0 (an unattached loop device?)")
    why_root = root_devices().get(rdev)
    if why_root is not None:
        raise LabError(f"refusing device {dev} for target {target}: it {why_root}")
    busy = _in_use(dev, rdev)
    if busy:
        raise LabError(f"refusing device {dev} for target {target}: {busy}")
    sigs = _signatures(dev)
    probe = _blkid(dev)
    expected = lab_label(target, fs)
    tables = sorted(
        {s.get("type", "?") for s in sigs if s.get("type") in PARTITION_TABLES}
        | ({probe["PTTYPE"]} if "PTTYPE" in probe else set())
    )
    if tables:
        raise LabError(
            f"refusing device {dev} for target {target}: it holds a partition table ({', '.join(tables)}); "
            "the lab formats only whole devices without one. Wipe it yourself (wipefs -a) if it is "
            "really free."
        )
    foreign = [s for s in sigs if s.get("label") != expected]
    if not foreign and probe.get("TYPE") and probe.get("LABEL") != expected:
        foreign = [{"type": probe["TYPE"], "label": probe.get("LABEL")}]
    if foreign:
        what = ", ".join(
            f"{s.get('type', '?')}" + (f" labelled {s['label']!r}" if s.get("label") else " (no label)")
            for s in foreign
        )
        raise LabError(
            f"refusing device {dev} for target {target}: it holds {what}, which the lab did not make "
            f"(the lab labels its file systems {expected!r}). Wipe it yourself (wipefs -a) if it is "
            "really free."
        )
    owned = bool(sigs) or probe.get("LABEL") == expected
    if purpose == "mount":
        if not owned:
            raise LabError(f"device {dev} for target {target} holds no file system: prepare the target first")
        if probe.get("TYPE") != fs:
            raise LabError(
                f"device {dev} for target {target} holds {probe.get('TYPE')}, not {fs}: prepare the target again"
            )
    return DeviceFacts(dev, _devno(rdev), size, probe.get("TYPE"), probe.get("LABEL"), probe.get("UUID"), owned, sigs)
