"""Periodic snapshots during a run: one every `interval_s`, each kept `keep_s` (seed 000: every 5 min,
kept 15 min, so three alive at once), to measure what snapshots cost PostgreSQL.

Native btrfs snapshots (the target's data must live in a subvolume: target_create.create(...,
data_subvolume=True) makes PGDATA's parent one) and ZFS snapshots of a zfs target's data dataset
(`zfs snapshot`/`zfs destroy`, ZfsScheduler). Other file systems are reported as not supported,
with the reason: ext4 and xfs have no snapshots of their own, and LVM thin snapshots need
device-mapper (checked: lvm2 tools and the kernel's device-mapper). A reflink copy of a target's image on
a schedule (`cp --reflink=always`: the host file system then copies each shared extent on its first write,
as a thin snapshot does) would stand in for LVM, but only where the images' own file system clones files
(btrfs, xfs): on the lab machines they live on ext4, which cannot (docs/slow-device.md).

Every create/delete is logged with its epoch time and duration in `snapshots.csv` in the run
directory. All snapshots the scheduler made are deleted when it stops, on every exit path.
"""

from __future__ import annotations

import csv
import math
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import btrfs, mounts, proc
from pgfslab.host.zfs import pools as zfs

CSV_NAME = "snapshots.csv"
CSV_FIELDS = ["ts", "action", "name", "duration_ms"]
PREFIX = "pgfslab-snap"


@dataclass(frozen=True)
class Schedule:
    interval_s: float
    keep_s: float
    offset_s: float = 0.0  # when the first snapshot is taken, after the scheduler starts

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.keep_s <= 0 or self.offset_s < 0:
            raise LabError(f"snapshot schedule needs interval_s > 0, keep_s > 0, offset_s >= 0 (got {self})")

    @property
    def alive_at_once(self) -> int:
        """Snapshots alive in the steady state (expiries are handled before creations at the same instant)."""
        return max(1, math.ceil(self.keep_s / self.interval_s - 1e-9))


def device_mapper() -> tuple[bool, str]:
    """Could LVM thin snapshots work here? (lvm2 tools and the kernel's device-mapper)."""
    have_lvm = proc.which("lvm") is not None
    try:
        dm = "device-mapper" in Path("/proc/misc").read_text() or Path("/dev/mapper/control").exists()
    except OSError:
        dm = False
    if have_lvm and dm:
        return True, "lvm2 and device-mapper are available"
    missing = ([] if have_lvm else ["the lvm2 tools"]) + (
        [] if dm else ["the kernel's device-mapper (no /dev/mapper/control)"]
    )
    return False, "LVM thin snapshots are not usable here: no " + " and no ".join(missing)


def support(path: Path) -> tuple[bool, str]:
    """Can the lab snapshot the data at `path`? (True, how) or (False, why not)."""
    fstype = mounts.containing(path).fstype
    if fstype != "btrfs":
        _, dm = device_mapper()
        return False, (
            f"snapshots are not supported on {fstype}: the lab takes native btrfs snapshots only "
            f"({dm}; LVM snapshots are not implemented, and a reflink copy of the image in their stead needs "
            "a host file system that clones files: docs/slow-device.md)"
        )
    if proc.which("btrfs") is None:
        return False, "btrfs-progs (the btrfs command) is not installed"
    if not btrfs.is_subvolume(path):
        return False, (
            f"{path} is not a btrfs subvolume: create the target with data_subvolume=True "
            "(snapshots configured) so PGDATA's parent is one"
        )
    return True, "btrfs subvolume snapshots (read-only)"


class Scheduler:
    """A thread that snapshots `subvolume` into `snapdir` on a schedule, for the duration of a with-block.

    Expired snapshots are deleted before a new one is made at the same instant, so `keep_s = 3 *
    interval_s` keeps exactly three alive. Errors do not stop the run: they are logged (action `error`)
    and counted in summary().
    """

    def __init__(self, subvolume: Path, snapdir: Path, schedule: Schedule, log: Path, *, prefix: str = PREFIX):
        self.subvolume = subvolume
        self.snapdir = snapdir
        self.schedule = schedule
        self.log_path = log
        self.prefix = prefix
        self._alive: list[tuple[float, Path]] = []  # (expiry on the monotonic clock, path), oldest first
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._fh: Any = None
        self._writer: Any = None
        self.created = 0
        self.deleted = 0
        self.max_alive = 0
        self.errors: list[str] = []
        self.create_ms: list[float] = []
        self.delete_ms: list[float] = []

    # --- the with-block ---
    THREAD_NAME = "pgfs-lab-snapshots"

    def _prepare(self) -> None:
        """What must hold before the first snapshot: a btrfs subvolume, and the folder for them."""
        ok, why = support(self.subvolume)
        if not ok:
            raise LabError(why)
        self.snapdir.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> Scheduler:
        self._prepare()
        self._fh = open(self.log_path, "w", newline="")
        self._writer = csv.writer(self._fh)
        self._writer.writerow(CSV_FIELDS)
        self._fh.flush()
        self._delete_stale()
        self._thread = threading.Thread(target=self._loop, name=self.THREAD_NAME, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        try:
            if self._thread is not None:
                self._thread.join(timeout=120)
        finally:
            with self._lock:
                while self._alive:
                    self._delete(self._alive.pop(0)[1], "delete-at-exit")
            if self._fh is not None:
                self._fh.close()

    # --- the thread ---
    def _loop(self) -> None:
        start = time.monotonic()
        k = 0
        while not self._stop.is_set():
            next_create = start + self.schedule.offset_s + k * self.schedule.interval_s
            with self._lock:
                next_expiry = self._alive[0][0] if self._alive else float("inf")
            wait = min(next_create, next_expiry) - time.monotonic()
            if wait > 0 and self._stop.wait(wait):
                break
            now = time.monotonic()
            with self._lock:
                while self._alive and self._alive[0][0] <= now + 1e-3:
                    self._delete(self._alive.pop(0)[1], "delete")
                if now + 1e-3 >= next_create:
                    k += 1
                    self._create(k, next_create)

    def _create(self, k: int, scheduled_at: float) -> None:
        """Snapshot number k, due at `scheduled_at` (monotonic); it expires keep_s after that, so the
        schedule does not drift by the time each snapshot takes."""
        name = f"{self.prefix}-{k:04d}"
        dest = self.snapdir / name
        t0 = time.time()
        try:
            took = btrfs.snapshot(self.subvolume, dest, readonly=True)
        except LabError as exc:
            self._event(t0, "error", name, 0.0, str(exc))
            return
        self._alive.append((scheduled_at + self.schedule.keep_s, dest))
        self.created += 1
        self.max_alive = max(self.max_alive, len(self._alive))
        self.create_ms.append(took * 1000)
        self._event(t0, "create", name, took * 1000)

    def _delete(self, path: Path, action: str) -> None:
        t0 = time.time()
        if path.parent != self.snapdir or not path.name.startswith(self.prefix + "-"):
            self._event(t0, "error", path.name, 0.0, f"refusing to delete {path}: not one of this scheduler's")
            return
        try:
            took = btrfs.delete_subvolume(path)
        except LabError as exc:
            self._event(t0, "error", path.name, 0.0, str(exc))
            return
        self.deleted += 1
        self.delete_ms.append(took * 1000)
        self._event(t0, action, path.name, took * 1000)

    def _delete_stale(self) -> None:
        """Snapshots an interrupted earlier run left in the lab's snapshot directory."""
        for p in sorted(self.snapdir.glob(f"{self.prefix}-*")):
            if btrfs.is_subvolume(p):
                self._delete(p, "delete-stale")

    def _event(self, ts: float, action: str, name: str, ms: float, error: str | None = None) -> None:
        if error:
            self.errors.append(f"{name}: {error}")
            print(f"WARNING: snapshot {name}: {error}", file=sys.stderr, flush=True)
        self._writer.writerow([f"{ts:.3f}", action, name, f"{ms:.1f}"])
        self._fh.flush()

    def summary(self) -> dict[str, Any]:
        """For run.json."""

        def stats(xs: list[float]) -> dict[str, float] | None:
            return {"n": len(xs), "mean": round(sum(xs) / len(xs), 1), "max": round(max(xs), 1)} if xs else None

        return {
            "method": "btrfs subvolume snapshot -r",
            "interval_s": self.schedule.interval_s,
            "keep_s": self.schedule.keep_s,
            "offset_s": self.schedule.offset_s,
            "subvolume": str(self.subvolume),
            "snapdir": str(self.snapdir),
            "log": self.log_path.name,
            "created": self.created,
            "deleted": self.deleted,
            "max_alive": self.max_alive,
            "create_ms": stats(self.create_ms),
            "delete_ms": stats(self.delete_ms),
            "errors": self.errors,
        }


class ZfsScheduler(Scheduler):
    """The same schedule with ZFS snapshots of `dataset` (<pool>/data): `zfs snapshot dataset@name` and
    `zfs destroy dataset@name`, only on a pool the lab created (pgfslab.host.zfs.pools refuses others)."""

    def __init__(self, dataset: str, mountpoint: Path, schedule: Schedule, log: Path, *, prefix: str = PREFIX):
        super().__init__(mountpoint, mountpoint / ".zfs" / "snapshot", schedule, log, prefix=prefix)
        self.dataset = dataset

    THREAD_NAME = "pgfs-lab-zfs-snapshots"

    def _prepare(self) -> None:
        """Nothing to check: zfs snapshots need no subvolume, and .zfs/snapshot exists by itself."""

    def _create(self, k: int, scheduled_at: float) -> None:
        name = f"{self.prefix}-{k:04d}"
        t0 = time.time()
        try:
            zfs.snapshot(self.dataset, name)
        except LabError as exc:
            self._event(t0, "error", name, 0.0, str(exc))
            return
        took = time.time() - t0
        self._alive.append((scheduled_at + self.schedule.keep_s, self.snapdir / name))
        self.created += 1
        self.max_alive = max(self.max_alive, len(self._alive))
        self.create_ms.append(took * 1000)
        self._event(t0, "create", name, took * 1000)

    def _delete(self, path: Path, action: str) -> None:
        t0 = time.time()
        if not path.name.startswith(self.prefix + "-"):
            self._event(t0, "error", path.name, 0.0, f"refusing to delete {path.name}: not one of this scheduler's")
            return
        try:
            zfs.destroy_snapshot(self.dataset, path.name)
        except LabError as exc:
            self._event(t0, "error", path.name, 0.0, str(exc))
            return
        took = time.time() - t0
        self.deleted += 1
        self.delete_ms.append(took * 1000)
        self._event(t0, action, path.name, took * 1000)

    def _delete_stale(self) -> None:
        for snap in zfs.snapshots(self.dataset):
            if snap["name"].startswith(self.prefix + "-"):
                self._delete(self.snapdir / snap["name"], "delete-stale")

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out.update(method="zfs snapshot", subvolume=None, dataset=self.dataset, snapdir=None)
        return out


def snapshot_dir(mountpoint: Path) -> Path:
    """Where a lab btrfs target keeps its snapshots: next to the data subvolume, not inside it."""
    return mountpoint / ".snapshots"


def scheduled(subvolume: Path, mountpoint: Path, schedule: Schedule, run_dir: Path) -> Scheduler:
    """The scheduler for one run: snapshots under <mountpoint>/.snapshots, log in <run_dir>/snapshots.csv."""
    return Scheduler(subvolume, snapshot_dir(mountpoint), schedule, run_dir / CSV_NAME)
