"""The emulated disk's daemon (pgfslab/host/native/pgfslab_disk.c, the model in pgfslab/config/disk_model.py):
built from its source on first use, started for a block of the lab's work on a target (it serves the target's
image as <workdir>/disks/<target>/disk, which the loop device is attached to), watched, and stopped on every
exit path; one left behind by a hard-killed lab process is found by its PID record and stopped.

If the daemon dies while the loop device is attached, every I/O of the loop device fails (the FUSE connection
is gone): the file system on it reports I/O errors, the run fails, and `require_alive` says why. Nothing but the
lab's own image, mount point and loop device is touched by any of this.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.config.disk_model import Model
from pgfslab.errors import LabError
from pgfslab.host import mounts, proc, safety

SOURCE = Path(__file__).with_name("native") / "pgfslab_disk.c"
COMM = "pgfslab-disk"
FSTYPE = "fuse.pgfslab-disk"


# --- the binary ---------------------------------------------------------------------------------------------


def _digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]


def binary_path() -> Path:
    """Where the daemon built from the current source lives (its name carries the source's hash, so an
    edited source is built again and a running daemon's binary is never overwritten)."""
    return paths.LAB / ".cache" / "bin" / f"{COMM}-{_digest()}"


def build_problem() -> str | None:
    """Why the daemon cannot be built here (None: it can)."""
    for tool in ("cc", "pkg-config"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    r = subprocess.run(["pkg-config", "--exists", "fuse3"], capture_output=True)
    if r.returncode != 0:
        return "libfuse3-dev is not installed"
    return None


def binary() -> Path:
    """The daemon, compiled from SOURCE when this source has not been built yet (gcc, libfuse3-dev)."""
    out = binary_path()
    if out.exists():
        return out
    why = build_problem()
    if why:
        raise LabError(f"the emulated disk's daemon cannot be built: {why} (scripts/setup.sh installs what it needs)")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True, check=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{COMM}-", dir=out.parent)
    os.close(fd)
    cmd = ["cc", "-O2", "-Wall", "-o", tmp, str(SOURCE), *flags.stdout.split(), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        raise LabError(f"building the emulated disk's daemon failed: {' '.join(cmd)}: {r.stderr.strip()[-800:]}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)  # atomic: a concurrent build of the same source gives the same file
    for old in out.parent.glob(f"{COMM}-*"):  # builds of earlier sources (a running one keeps its file open)
        if old != out and not old.name.startswith("."):
            old.unlink(missing_ok=True)
    return out


def fuse_problem() -> str | None:
    """Why a FUSE daemon cannot serve a disk here (None: it can)."""
    if os.geteuid() != 0:
        return "not running as root"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse"
    return None


# --- files of one target's disk -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Files:
    """Where a target's disk lives: the FUSE mount point (serving `file`), the daemon's log, its PID record
    and its per-second counters."""

    mountpoint: Path
    log: Path
    pid_file: Path
    series: Path

    @property
    def file(self) -> Path:
        return self.mountpoint / "disk"

    @property
    def stats(self) -> Path:
        return self.mountpoint / "stats"


def files(workdir: Path, name: str) -> Files:
    base = workdir / "disks"
    return Files(base / name, base / f"{name}.log", base / f"{name}.pid", base / f"{name}.series.csv")


def _is_daemon(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    comm = st[st.find("(") + 1 : st.rfind(")")]
    state = st[st.rfind(")") + 2 : st.rfind(")") + 3]
    return comm.startswith(COMM[:15]) and state not in ("Z", "X")


def read_stats(path: Path) -> dict[str, int]:
    """The daemon's counters ("name value" lines of its stats file)."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            out[k] = int(v)
    return out


def _file_tail(path: Path, n: int = 4) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-n:]) or "(empty log)"


def _unmount_fuse(mnt: Path) -> list[str]:
    """Unmount the disk's FUSE mount point if something is still mounted there (a dead daemon's mount answers
    ENOTCONN; a lazy unmount takes it out of the tree whatever holds it)."""
    notes = []
    if mounts.is_mounted(mnt):
        r = subprocess.run(["umount", str(mnt)], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", "--lazy", str(mnt)], capture_output=True, text=True)
            notes.append(f"lazily unmounted {mnt}")
        else:
            notes.append(f"unmounted {mnt}")
    return notes


# --- the daemon ---------------------------------------------------------------------------------------------


@dataclass
class Disk:
    """One running daemon serving one target's image."""

    name: str
    image: Path
    model: Model
    files: Files
    binary: Path | None = None
    pid: int | None = None
    start_s: float | None = None
    started_at: float | None = None
    notes: list[str] = field(default_factory=list)
    exit_code: int | None = None
    discard: bool = False  # no backing I/O: the emulation's own cost alone (the validation's measurement only)
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def file(self) -> Path:
        return self.files.file

    def command(self) -> list[str]:
        assert self.binary is not None
        return [
            str(self.binary),
            f"--backing={self.image}",
            f"--mountpoint={self.files.mountpoint}",
            f"--series={self.files.series}",
            f"--fsname=pgfslab-disk-{self.name}",
            *self.model.daemon_args(),
            *(["--discard"] if self.discard else []),
        ]

    def start(self, timeout: float = 10) -> None:
        """Start the daemon and wait until it serves the file (its "ready" line)."""
        why = fuse_problem()
        if why:
            raise LabError(f"target {self.name}: the emulated disk needs FUSE: {why}")
        self.binary = binary()
        mnt = self.files.mountpoint
        mnt.mkdir(parents=True, exist_ok=True)
        self.files.series.unlink(missing_ok=True)
        t0 = time.monotonic()
        with open(self.files.log, "ab") as log:
            self._proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True
            )
        self.pid = self._proc.pid
        self.started_at = time.time()
        self.files.pid_file.write_text(json.dumps({"pid": self.pid, "starttime": proc.start_ticks(self.pid)}))
        assert self._proc.stdout is not None
        line = b""
        while time.monotonic() - t0 < timeout:
            ready, _, _ = select.select([self._proc.stdout], [], [], 0.1)
            if ready:
                line = self._proc.stdout.readline()
                break
            if self._proc.poll() is not None:
                break
        if not line.startswith(b"ready"):
            code = self._proc.poll()
            self.stop()
            raise LabError(
                f"target {self.name}: the emulated disk's daemon did not start"
                + (f" (exit code {code})" if code is not None else f" within {timeout} s")
                + f": {_file_tail(self.files.log)}"
            )
        if not self.file.exists():
            self.stop()
            raise LabError(f"target {self.name}: the emulated disk's daemon started but {self.file} is not served")
        self.start_s = round(time.monotonic() - t0, 3)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def death(self) -> str | None:
        """Why the daemon is gone (None while it runs or after a stop() of the lab's)."""
        if self._proc is None or self._proc.poll() is None:
            return None
        code = self._proc.returncode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return (
            f"the emulated disk's daemon of target {self.name} (pid {self.pid}) {how}: its loop device fails "
            f"every I/O from then on (log {self.files.log}: {_file_tail(self.files.log)})"
        )

    def stats(self) -> dict[str, int]:
        """The daemon's counters now (LabError if it is gone)."""
        why = self.death()
        if why:
            raise LabError(why)
        return read_stats(self.files.stats)

    def record(self) -> dict[str, Any]:
        """What target.json and run.json say about this disk."""
        return {
            "daemon": {
                "pid": self.pid,
                "binary": str(self.binary),
                "source_sha256_12": _digest(),
                "start_s": self.start_s,
                "log": str(self.files.log),
            },
            "file": str(self.file),
            "stats": str(self.files.stats),
            "series": str(self.files.series),
            "model": self.model.describe(),
        }

    def stop(self, timeout: float = 20) -> list[str]:
        """Stop the daemon (SIGTERM; SIGKILL after `timeout`) and make sure its mount point is unmounted.
        Call after the loop device is detached: the daemon unmounts lazily, so a device still attached would
        only fail its I/O from then on."""
        notes: list[str] = []
        child = self._proc
        if child is not None:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout)
                except subprocess.TimeoutExpired:
                    notes.append(f"{COMM} (pid {child.pid}) ignored SIGTERM for {timeout} s: SIGKILL")
                    child.kill()
                    child.wait(30)
            elif child.returncode != 0:
                notes.append(self.death() or "")
            self.exit_code = child.returncode
            if child.stdout is not None:
                child.stdout.close()
            self._proc = None
        notes += _unmount_fuse(self.files.mountpoint)
        self.files.pid_file.unlink(missing_ok=True)
        self.notes += [n for n in notes if n]
        return notes


# the disks this process serves now, by target name (release() must not stop them)
_CURRENT: dict[str, Disk] = {}


def current(name: str) -> Disk | None:
    """The daemon this process runs for target `name` (None if none)."""
    return _CURRENT.get(name)


def release_stale(workdir: Path, name: str, timeout: float = 20) -> list[str]:
    """A disk daemon that a hard-killed lab process left for this target: stop it (only that very process:
    same PID, start time and name) and unmount what it leaves. A daemon this process runs is left alone."""
    f = files(workdir, name)
    notes: list[str] = []
    live = _CURRENT.get(name)
    if live is not None and live.alive():
        return notes
    if f.pid_file.exists():
        try:
            rec = json.loads(f.pid_file.read_text())
            pid, start = int(rec["pid"]), rec["starttime"]
        except (ValueError, KeyError, TypeError):
            raise LabError(f"unreadable disk daemon record {f.pid_file}") from None
        if _is_daemon(pid) and proc.start_ticks(pid) == start:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _is_daemon(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _is_daemon(pid) and proc.start_ticks(pid) == start:
                os.kill(pid, signal.SIGKILL)
                notes.append(f"{COMM} pid {pid} ignored SIGTERM: SIGKILL")
                while _is_daemon(pid):
                    time.sleep(0.05)
            notes.append(f"stopped the disk daemon pid {pid} a killed lab process left")
        f.pid_file.unlink()
    if mounts.is_mounted(f.mountpoint):
        safety.require_unmountable(f.mountpoint, workdir)
        notes += _unmount_fuse(f.mountpoint)
    return notes


@contextlib.contextmanager
def served(workdir: Path, name: str, image: Path, model: Model, *, discard: bool = False) -> Iterator[Disk]:
    """The target's image served as an emulated disk for the block; the daemon is stopped on every exit path
    (detach the loop device from it first)."""
    f = files(workdir, name)
    safety.require_unmountable(f.mountpoint, workdir)
    f.mountpoint.parent.mkdir(parents=True, exist_ok=True)
    notes = release_stale(workdir, name)
    disk = Disk(name, image, model, f, notes=notes, discard=discard)
    try:
        disk.start()
        _CURRENT[name] = disk
        yield disk
    finally:
        _CURRENT.pop(name, None)
        disk.stop()
        with contextlib.suppress(OSError):
            f.mountpoint.rmdir()  # only ever removes the empty mount point


def stop_current(name: str) -> list[str]:
    """Stop this process's daemon for target `name` if its block did not (an interrupted cleanup): after the
    loop devices on its file are detached."""
    disk = _CURRENT.pop(name, None)
    if disk is None:
        return []
    return [*disk.stop(), f"stopped the disk daemon pid {disk.pid} of target {name}"]


def require_alive(name: str) -> None:
    """LabError if this process's disk daemon for target `name` died."""
    disk = _CURRENT.get(name)
    why = disk.death() if disk is not None else None
    if why:
        raise LabError(why)


def counters(name: str) -> dict[str, int] | None:
    """The counters of target `name`'s disk now (None: the target has no disk served by this process)."""
    disk = _CURRENT.get(name)
    return disk.stats() if disk is not None else None


def delta(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    """Counters' increments between two readings (write_cache and other settings as they are)."""
    if before is None or after is None:
        return None
    return {k: (v - before.get(k, 0)) if k != "write_cache" else v for k, v in after.items()}
