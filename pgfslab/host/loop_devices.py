"""Loop devices for image targets: whether this process may attach and mount, attaching an image (with
direct I/O), whether a device has direct I/O on, which loop devices an image (or an emulated disk's served
file) backs.
"""

from __future__ import annotations

import os
from pathlib import Path

from pgfslab.host import mounts, proc


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


def attach(image: Path, direct_io: bool) -> str:
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    cmd.append(str(image))
    return proc.run(cmd).stdout.strip()


def direct_io_on(dev: str) -> bool | None:
    out = proc.run(["losetup", "--list", "--noheadings", "--output", "DIO", dev], check=False).stdout.strip()
    return {"1": True, "0": False}.get(out)


def backing(image: Path) -> list[str]:
    out = proc.run(["losetup", "-j", str(image)], check=False).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.strip()]


def backed_by(path: Path) -> list[str]:
    """Loop devices whose backing file is `path`, read from sysfs: unlike `losetup -j`, nothing stat()s the
    file, which on a dead FUSE mount (an emulated disk whose daemon died) fails or hangs."""
    # the kernel shows the path it opened, symbolic links resolved (the directory's only: the file itself
    # lies on the FUSE mount, which may be dead)
    want = str(Path(os.path.realpath(path.parent)) / path.name)
    found = []
    for d in sorted(Path("/sys/block").glob("loop*")):
        if mounts.loop_backing_file(f"/dev/{d.name}") == want:
            found.append(f"/dev/{d.name}")
    return found
