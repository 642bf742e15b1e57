"""The zfs-fuse daemon: the one the lab starts for a study (and stops on every exit path, exporting its
pools first), one left by a hard-killed lab process, and the power cut of the durability check (SIGKILL
of the daemon). OpenZFS needs no daemon: `service()` then only says so. The facts about zfs-fuse this
relies on are in pgfslab.host.zfs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import mounts, proc
from pgfslab.host.zfs import commands as zfs_commands
from pgfslab.host.zfs import pools as zfs


def running_daemons() -> list[int]:
    """PIDs of live zfs-fuse processes (zombies excluded)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "stat").read_text()
        except OSError:
            continue
        comm = st[st.find("(") + 1 : st.rfind(")")]
        state = st[st.rfind(")") + 2 : st.rfind(")") + 3]
        if comm == "zfs-fuse" and state not in ("Z", "X"):
            pids.append(int(d.name))
    return sorted(pids)


def _daemon_ready(timeout: float = 5) -> bool:
    r = subprocess.run([zfs_commands.tool("zpool"), "list", "-H"], capture_output=True, text=True, timeout=timeout)
    return r.returncode == 0


@dataclass
class Service:
    """What `service()` yields: the implementation and, for zfs-fuse, the daemon the lab started (if any)."""

    implementation: str
    started_pid: int | None = None  # the daemon this Service started (None: reused one, or openzfs)
    reused_pids: list[int] = field(default_factory=list)
    log_path: Path | None = None
    start_s: float | None = None
    notes: list[str] = field(default_factory=list)
    pid_file: Path | None = None  # JSON {pid, starttime}: lets release_stale() stop it after a hard kill
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)

    @property
    def owns_daemon(self) -> bool:
        return self._proc is not None

    # -- start / stop ------------------------------------------------------------------------------
    def _start(self, log_path: Path, timeout: float) -> None:
        cmd = [zfs_commands.tool("zfs-fuse"), "--no-daemon", "--no-kstat-mount"]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")
        self.log_path = log_path
        t0 = time.monotonic()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started_pid = self._proc.pid
        while True:
            if self._proc.poll() is not None:
                rc = self._proc.returncode
                self._proc = None
                self._log.close()
                raise LabError(f"zfs-fuse exited at start with code {rc}: {_file_tail(log_path)}")
            try:
                ready = _daemon_ready()
            except subprocess.TimeoutExpired:
                ready = False
            if ready:
                break
            if time.monotonic() - t0 > timeout:
                self.stop()
                raise LabError(f"zfs-fuse did not answer `zpool list` within {timeout} s ({log_path})")
            time.sleep(0.05)
        self.start_s = round(time.monotonic() - t0, 3)
        if self.pid_file is not None:
            self.pid_file.parent.mkdir(parents=True, exist_ok=True)
            self.pid_file.write_text(json.dumps({"pid": self._proc.pid, "starttime": proc.start_ticks(self._proc.pid)}))

    def stop(self, timeout: float = 30) -> list[str]:
        """Stop the daemon this Service started (never another one): export the lab's pools it serves,
        SIGTERM, SIGKILL after `timeout`, then unmount what the dead daemon left mounted. Returns notes."""
        notes: list[str] = []
        if self._proc is None:
            return notes
        if self._proc.poll() is None:
            for pool in zfs.lab_pools():
                try:
                    zfs.export_or_destroy(pool, "export", retry_s=2, timeout=20)
                    zfs.OWNED.discard(pool)
                    notes.append(f"exported {pool}")
                except LabError as exc:
                    notes.append(f"could not export {pool} before stopping zfs-fuse: {exc}")
            if not zfs.imported_pools():
                # every pool exported: the daemon holds nothing that is not on its devices, and SIGTERM
                # costs about 4 s (measured with no pool imported), so it is killed at once
                self._proc.kill()
                notes.append("zfs-fuse stopped with SIGKILL after every pool was exported")
            else:
                self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                notes.append(f"zfs-fuse (pid {self._proc.pid}) ignored SIGTERM for {timeout} s: SIGKILL")
                self._proc.kill()
                self._proc.wait(30)
        notes += _unmount_dead_zfs()
        zfs.OWNED.clear()  # whatever this daemon served is gone with it
        if self._proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
            notes.append(
                f"zfs-fuse (pid {self._proc.pid}) ended with code {self._proc.returncode}: {_file_tail(self.log_path)}"
            )
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
        self.notes += notes
        return notes

    def power_cut(self) -> dict[str, Any]:
        """Emulate a power loss of every pool this daemon serves: SIGKILL the daemon (it writes its vdevs
        with O_DIRECT, so what it had not written is lost, what it had written is on the device), then
        unmount the dead FUSE mounts. Processes blocked on the pools get ENOTCONN. Only a daemon this
        Service started. Call `restart()` and `import_pool()` afterwards."""
        if self._proc is None or self._proc.poll() is not None:
            raise LabError("zfs: power_cut needs a zfs-fuse daemon that the lab started and that is running")
        pools = zfs.imported_pools()
        foreign = [p for p in pools if p not in zfs.OWNED and not zfs.is_lab_pool(p)]
        if foreign:
            raise LabError(f"zfs: power_cut would also take down pools the lab did not create: {', '.join(foreign)}")
        t0 = time.time()
        self._proc.kill()
        self._proc.wait(30)
        info = {
            "method": "SIGKILL of the zfs-fuse daemon",
            "pid": self._proc.pid,
            "cut_at": t0,
            "pools": pools,
            "notes": _unmount_dead_zfs(),
        }
        zfs.OWNED.difference_update(pools)
        self._proc = None
        return info

    def restart(self, timeout: float = 10) -> None:
        """Start the daemon again after `stop()` or `power_cut()` (only if this Service started it)."""
        if self.started_pid is None:
            raise LabError("zfs: restart only a zfs-fuse daemon the lab started")
        if self._proc is not None and self._proc.poll() is None:
            return
        if running_daemons():
            raise LabError(f"zfs: another zfs-fuse daemon is running now (pids {running_daemons()}): not starting one")
        if self._log is not None:
            self._log.close()
        self._start(self.log_path or Path("/tmp/pgfslab-zfs-fuse.log"), timeout)


def release_stale(pid_file: str | Path, timeout: float = 30) -> list[str]:
    """After a hard kill of the lab: stop the zfs-fuse daemon recorded in `pid_file` by service(pid_file=...)
    if that very process (same PID and start time, comm zfs-fuse) still runs; export the lab's pools first
    and unmount what it leaves. Any other daemon is left alone."""
    path = Path(pid_file)
    if not path.exists():
        return []
    try:
        rec = json.loads(path.read_text())
        pid, start = int(rec["pid"]), rec["starttime"]
    except (ValueError, KeyError, TypeError):
        raise LabError(f"zfs: unreadable daemon record {path}") from None
    if pid not in running_daemons() or proc.start_ticks(pid) != start:
        path.unlink()
        return [f"zfs-fuse pid {pid} from {path} is gone (or the PID is another process now): nothing to stop"]
    notes = []
    for pool in zfs.lab_pools():
        try:
            zfs.export_or_destroy(pool, "export", retry_s=2)
            notes.append(f"exported {pool}")
        except LabError as exc:
            notes.append(str(exc))
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid in running_daemons() and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid in running_daemons() and proc.start_ticks(pid) == start:
        os.kill(pid, signal.SIGKILL)
        notes.append(f"zfs-fuse pid {pid} ignored SIGTERM: SIGKILL")
        while pid in running_daemons():
            time.sleep(0.1)
    notes += _unmount_dead_zfs()
    path.unlink()
    return notes + [f"stopped zfs-fuse pid {pid}"]


def _file_tail(path: Path | None, n: int = 3) -> str:
    if path is None:
        return "(no log)"
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-n:]) or "(empty log)"


@contextmanager
def service(
    log_path: str | Path | None = None,
    *,
    pid_file: str | Path | None = None,
    start_timeout: float = 10,
    stop_timeout: float = 30,
) -> Iterator[Service]:
    """Make ZFS usable for the block. OpenZFS: nothing to start. zfs-fuse: use a running daemon (left
    running afterwards) or start one (``zfs-fuse --no-daemon --no-kstat-mount``, its PID recorded) and stop
    that one on every exit path, exporting the lab's pools first."""
    global _CURRENT
    impl = zfs_commands.implementation()
    svc = Service(impl, pid_file=Path(pid_file) if pid_file else None)
    if impl == "openzfs":
        yield svc
        return
    live = running_daemons()
    if live and _CURRENT is None and pid_file is not None and Path(pid_file).exists():
        # a daemon an earlier, hard-killed lab process started (its record is ours): stop it rather than
        # leave it running for good, then start this process's own
        svc.notes += release_stale(pid_file)
        live = running_daemons()
    if live:
        if not _daemon_ready():
            raise LabError(f"zfs-fuse is running (pids {live}) but does not answer `zpool list`")
        svc.reused_pids = live
        svc.notes.append(f"reused the running zfs-fuse (pids {live}); it is left running")
        yield svc
        return
    svc._start(Path(log_path) if log_path else Path(f"/tmp/pgfslab-zfs-fuse.{os.getpid()}.log"), start_timeout)
    _CURRENT = svc
    try:
        yield svc
    finally:
        _CURRENT = None
        svc.stop(stop_timeout)


# the daemon this process started and runs now (the durability check's power cut kills and restarts it)
_CURRENT: Service | None = None


def current_service() -> Service | None:
    """The zfs-fuse daemon this process started, while its service() block lasts (None otherwise)."""
    return _CURRENT


def _unmount_dead_zfs() -> list[str]:
    """After the lab's zfs-fuse daemon died: unmount the fuse.zfs mounts it left ("Transport endpoint is not
    connected"), deepest first. Does nothing while any zfs-fuse daemon lives (its mounts may be live, and a
    stat() on a frozen pool would hang)."""
    if running_daemons():
        return []
    notes = []
    for mp in sorted({str(m.target) for m in mounts.table() if m.fstype == "fuse.zfs"}, key=len, reverse=True):
        r = subprocess.run([zfs_commands.tool("umount"), mp], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run([zfs_commands.tool("umount"), "-l", mp], capture_output=True, text=True)
            notes.append(f"lazy unmount of dead mount {mp}: rc {r.returncode}")
        else:
            notes.append(f"unmounted dead mount {mp}")
    return notes
