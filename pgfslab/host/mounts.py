"""The mount table (/proc/self/mounts), parsed once per question: what is mounted where, with what."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MOUNTS = Path("/proc/self/mounts")


@dataclass(frozen=True)
class MountEntry:
    source: str
    target: Path
    fstype: str
    options: tuple[str, ...]

    @property
    def options_text(self) -> str:
        return ",".join(self.options)

    def device_number(self) -> int | None:
        """st_rdev of the source if it is a block device node, else None."""
        if not self.source.startswith("/"):
            return None
        try:
            st = os.stat(self.source)
        except OSError:
            return None
        return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def _unescape(field: str) -> str:
    """The kernel escapes space, tab, newline and backslash as \\ooo octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def table(path: Path = MOUNTS) -> list[MountEntry]:
    out: list[MountEntry] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        out.append(MountEntry(_unescape(parts[0]), Path(_unescape(parts[1])), parts[2], tuple(parts[3].split(","))))
    return out


def _resolved(path: Path) -> Path:
    return path.resolve() if path.exists() else path.absolute()


def at(path: Path) -> MountEntry | None:
    """The mount whose mount point is exactly `path` (the last one, if mounts are stacked)."""
    target = _resolved(path)
    found = [m for m in table() if m.target == target]
    return found[-1] if found else None


def is_mounted(path: Path) -> bool:
    return at(path) is not None


def containing(path: Path) -> MountEntry:
    """The mount that holds `path`: the longest mount point it lies under (the last one on ties)."""
    target = _resolved(path)
    best: MountEntry | None = None
    for m in table():
        if target == m.target or target.is_relative_to(m.target):
            if best is None or len(m.target.parts) >= len(best.target.parts):
                best = m
    assert best is not None, "/ is always mounted"
    return best


def below(path: Path) -> list[MountEntry]:
    """Mounts at or below `path` (what a recursive delete of `path` would walk into)."""
    root = _resolved(path)
    return [m for m in table() if m.target == root or m.target.is_relative_to(root)]


def options(path: Path) -> str | None:
    m = at(path)
    return m.options_text if m else None


def loop_backing_file(source: str) -> str | None:
    """The file a loop device (/dev/loopN) serves, as the kernel recorded it; None for anything else."""
    name = Path(source).name
    if not (source.startswith("/dev/") and name.startswith("loop")):
        return None
    try:
        return (Path("/sys/block") / name / "loop" / "backing_file").read_text().strip().removesuffix(" (deleted)")
    except OSError:
        return None


def unreachable() -> list[str]:
    """Mounted file systems whose device, or whose loop device's file, cannot be looked up for another reason
    than not existing: a FUSE daemon that died under them answers ENOTCONN. mkfs.btrfs checks every mount
    before it formats anything and stops at the first of these, for every image on the machine."""
    found = []
    for m in table():
        backing = loop_backing_file(m.source)
        for path in (m.source, backing):
            if path is None or not path.startswith("/"):
                continue
            try:
                os.stat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                via = f" (the file of {m.source})" if path == backing else ""
                found.append(f"{m.target} ({m.fstype} on {m.source}): {path}{via}: {exc.strerror}")
                break
    return found
