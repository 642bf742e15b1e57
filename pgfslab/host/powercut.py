"""Power-loss emulation for the durability check: a target's loop device is cut (its size limit set so every
write fails, as if the disk vanished), then given back; what a cut can and cannot emulate per target kind.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import safety
from pgfslab.host.targets.mounted import Mounted
from pgfslab.host.zfs import daemon as zfs_daemon

# # A loop device's size can be changed while it is in use (LOOP_SET_STATUS64 with a new lo_sizelimit:
# the kernel freezes the device's queue, lets the requests in flight complete, and resizes it). Shrunk
# to one sector, every later read or write of the file system fails with an I/O error ("attempt to
# access beyond end of device"), so the image file holds exactly the writes the device had completed
# at that instant: what a power cut would leave on a disk without a volatile write cache. Writes still
# in the page cache (written by PostgreSQL but not yet fsynced and written back) never reach it. The
# file system is then unmounted (its writes fail, nothing more reaches the image), the loop device
# detached, and the image attached and mounted again, replaying the file system's journal.

_LOOP_SET_STATUS64 = 0x4C04
_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64 = "=5Q4I64s64s32s2Q"  # struct loop_info64 (linux/loop.h)


def power_cut_possible(mnt: Mounted) -> tuple[bool, str]:
    """Can the power-loss emulation cut this target's device? (a loop-mounted image of the lab)"""
    if mnt.fallback:
        return False, "a FALLBACK plain directory has no device to cut"
    if mnt.fs == "zfs":
        # the loop cut hangs zfs-fuse (measured: the pool suspends and every fsync in flight waits in the
        # kernel until the daemon is killed), so the cut is a SIGKILL of the daemon itself: it writes its
        # devices with O_DIRECT, so what it had written is on the image and what it held in memory (the open
        # transaction group, unwritten ZIL) is lost
        svc = zfs_daemon.current_service()
        if mnt.implementation != "zfs-fuse" or svc is None or not svc.owns_daemon:
            return False, (
                f"a zfs target ({mnt.fs_label}) is cut by killing the zfs-fuse daemon the lab started, and "
                "there is none here (OpenZFS in the kernel, or a daemon the lab did not start); its loop "
                "device cannot be cut instead: zfs-fuse suspends the pool and every fsync in flight hangs"
            )
        return True, "SIGKILL of the zfs-fuse daemon the lab started (it writes its devices with O_DIRECT)"
    if mnt.kind != "image" or not (mnt.device or "").startswith("/dev/loop"):
        return False, (
            f"a {mnt.kind} target has no loop device of the lab's to cut (only loop-mounted images "
            "can lose their unsynced writes here; no device-mapper for dm-flakey)"
        )
    return True, "loop device of a lab image"


def _set_sizelimit(dev: str, limit: int) -> None:
    fd = os.open(dev, os.O_RDONLY)
    try:
        buf = bytearray(struct.calcsize(_LOOP_INFO64))
        fcntl.ioctl(fd, _LOOP_GET_STATUS64, buf)
        fields = list(struct.unpack(_LOOP_INFO64, buf))
        fields[4] = limit  # lo_sizelimit (0: the whole backing file)
        fcntl.ioctl(fd, _LOOP_SET_STATUS64, struct.pack(_LOOP_INFO64, *fields))
    except OSError as exc:
        raise LabError(f"cannot resize {dev} (power-loss emulation): {exc.strerror}") from None
    finally:
        os.close(fd)


def restore_power(workdir: Path, dev: str) -> None:
    """Undo cut_power (the device has its whole image again). Needed when a process is stuck in the
    kernel after the cut (seen: ext4 retrying a truncate forever on a cut device): with the device back it
    finishes, at the price of writes after the cut reaching the image."""
    safety.require_detachable(dev, workdir)
    _set_sizelimit(dev, 0)


def cut_power(workdir: Path, dev: str) -> dict[str, Any]:
    """Emulate a power loss of `dev` (a loop device backed by one of the lab's images): from now on no
    read or write reaches the image. Only the lab's own loop devices; undone by detaching the device."""

    safety.require_detachable(dev, workdir)
    t0 = time.time()
    _set_sizelimit(dev, 512)  # one sector
    sectors = (Path("/sys/block") / Path(dev).name / "size").read_text().strip()
    return {
        "device": dev,
        "method": "loop device shrunk to one sector (LOOP_SET_STATUS64 lo_sizelimit=512)",
        "cut_at": t0,
        "cut_s": round(time.time() - t0, 4),
        "sectors_after": int(sectors),
    }
