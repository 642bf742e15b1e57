"""ZFS targets: a pool on one of the lab's (loop) devices, a dataset for PGDATA, accounting, snapshots.

Two implementations behind one interface:

* ``openzfs``  -- the kernel has the ``zfs`` module (``/proc/filesystems`` lists ``zfs``, ``/sys/module/zfs``
  exists or ``modprobe -n zfs`` succeeds) and the userland is OpenZFS (``zfs version`` answers).
* ``zfs-fuse`` -- Debian's userspace ZFS (package ``zfs-fuse`` 0.7.0, pool version 23): a daemon
  (``zfs-fuse``) serves every pool through FUSE; mounts have type ``fuse.zfs``.

UNTESTED: the ``openzfs`` branch has never run against a real OpenZFS (these machines have no zfs module).
tests/test_openzfs_unit.py checks, with the commands replaced, the implementation choice, the property
table and ``zfs get -p`` parsing against OpenZFS's own format strings, and the pool commands; creating,
exporting, importing and destroying pools and snapshots on OpenZFS wait for tests/test_zfs.py on a machine
with the module; the durability power cut refuses OpenZFS targets and says why (pgfslab.host.powercut:
the cut here is a SIGKILL of the zfs-fuse daemon).

Facts measured with zfs-fuse 0.7.0 on Debian 12 (kernel 6.18), which this module relies on:

* the daemon listens on ``/var/run/zfs/zfs_socket``; only one daemon per machine. ``zfs-fuse --no-daemon``
  stays in the foreground (``--pidfile`` is ignored then), so the lab keeps the ``Popen`` and its PID.
  ``zpool``/``zfs`` without a daemon fail: "connect: No such file or directory / Please make sure that the
  zfs-fuse daemon is running."
* On start the daemon imports every pool listed in ``/var/lib/zfs/zpool.cache`` (not mounted). The lab
  creates and imports its pools with ``cachefile=none`` so a later daemon never imports them by itself.
* SIGTERM with idle mounts: mounts go at once, the process exits after about 4 s. SIGTERM while a pool is
  in use: seen once exiting with code 1 after ~6 s (a process had its cwd there; mounts gone), once aborting
  after ~16 s (PostgreSQL running: ``fuse_kern_chan_receive: Assertion `se != NULL' failed``) and leaving
  dead mounts ("Transport endpoint is not connected") that need ``umount``. A frozen (suspended) pool:
  SIGTERM is ignored, only SIGKILL ends the daemon.
  So: export the lab's pools first, then SIGTERM, then SIGKILL after a timeout, then unmount leftovers.
* When the daemon is gone, its pools are gone (nothing is exported; with ``cachefile=none`` nothing is
  re-imported); ``zpool import -d <dir>`` brings a pool back. The pool is consistent (copy on write).
* The daemon opens vdevs with O_DIRECT (fd flags 02140002 seen in /proc/PID/fdinfo): what it wrote is on
  the device; what it held in memory is lost when it is killed -- SIGKILL of the daemon is a power cut.
* ``zpool destroy``/``export`` right after ``zpool create`` can answer "pool is busy" for ~0.2 s: retried.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# every pool the lab creates is named pgfslab-<study>-<target> and carries this user property
POOL_NAME_RE = re.compile(r"^pgfslab-[a-z0-9][a-z0-9_.-]*-[a-z0-9][a-z0-9_.-]*$")
OWNER_PROPERTY = "pgfslab:created-by"
OWNER_VALUE = "pgfslab"
CREATED_AT_PROPERTY = "pgfslab:created-at"
_RESERVED = {OWNER_PROPERTY, CREATED_AT_PROPERTY}
_NAME_PART_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_SNAP_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
_USER_PROP_RE = re.compile(r"^[a-z0-9_.+-]+:[a-z0-9_.:+-]+$")

# properties that people ask for but that an implementation may lack, with the reason
_HINTS = {
    "sync": "zfs-fuse (pool version 23) has no 'sync' property: synchronous semantics are fixed "
    "(fsync/O_DSYNC go through the ZIL; logbias=latency|throughput is the only knob)",
    "logicalused": "read-only, and absent before pool version 5000 (zfs-fuse has version 23)",
    "logicalreferenced": "read-only, and absent before pool version 5000 (zfs-fuse has version 23)",
    "redundant_metadata": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "dnodesize": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "special_small_blocks": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
}

BUSY_RETRY_S = 10.0

# pools this process created or imported (and has not destroyed or exported): recognised as the lab's even
# when the pool is frozen and `zfs get` cannot read its marker
_OWNED: set[str] = set()


# ----------------------------------------------------------------------------- commands


def _tool(name: str) -> str:
    path = shutil.which(name, path=SYSTEM_PATH)
    if path is None:
        raise LabError(f"zfs: command not found: {name} (apt-get install zfs-fuse, or zfsutils-linux for OpenZFS)")
    return path


def _run(cmd: list[str], *, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run an argument list (never a shell); LabError with the command's last stderr lines on failure."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise LabError(f"zfs: command not found: {cmd[0]}") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"zfs: command timed out after {timeout} s: {' '.join(cmd)}") from None
    if check and proc.returncode != 0:
        raise LabError(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}: {_tail(proc)}")
    return proc


def _tail(proc: subprocess.CompletedProcess[str], n: int = 3) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def zfs(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _run([_tool("zfs"), *args], check=check, timeout=timeout)


def zpool(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _run([_tool("zpool"), *args], check=check, timeout=timeout)


# ----------------------------------------------------------------------------- implementation


def _kernel_has_zfs(
    proc_filesystems: Path = Path("/proc/filesystems"), sys_module: Path = Path("/sys/module/zfs")
) -> tuple[bool, str]:
    try:
        fs = proc_filesystems.read_text()
    except OSError:
        fs = ""
    if any(line.split()[-1:] == ["zfs"] for line in fs.splitlines()):
        return True, "/proc/filesystems lists zfs"
    if sys_module.exists():
        return True, "/sys/module/zfs exists"
    modprobe = shutil.which("modprobe", path=SYSTEM_PATH)
    if modprobe:
        r = subprocess.run([modprobe, "-n", "zfs"], capture_output=True, text=True)
        if r.returncode == 0:
            return True, "modprobe -n zfs: the module can be loaded"
        return False, f"no zfs kernel module (/proc/filesystems has no zfs; modprobe -n zfs: {_tail(r, 1)})"
    return False, "no zfs kernel module (/proc/filesystems has no zfs, no /sys/module/zfs, no modprobe)"


def implementation() -> str:
    """'openzfs' or 'zfs-fuse'; LabError saying why neither can be used."""
    kernel, why_kernel = _kernel_has_zfs()
    reasons = []
    if kernel:
        zfs_bin = shutil.which("zfs", path=SYSTEM_PATH)
        if zfs_bin and subprocess.run([zfs_bin, "version"], capture_output=True).returncode == 0:
            return "openzfs"
        reasons.append(
            f"{why_kernel} but the OpenZFS userland is missing (`zfs version` fails: apt-get install zfsutils-linux)"
        )
    else:
        reasons.append(why_kernel)
    if shutil.which("zfs-fuse", path=SYSTEM_PATH) is None:
        reasons.append("zfs-fuse is not installed (apt-get install zfs-fuse)")
    elif not os.path.exists("/dev/fuse"):
        reasons.append("zfs-fuse is installed but /dev/fuse does not exist")
    elif not (shutil.which("zfs", path=SYSTEM_PATH) and shutil.which("zpool", path=SYSTEM_PATH)):
        reasons.append("zfs-fuse is installed but zfs/zpool are missing from PATH")
    else:
        return "zfs-fuse"
    raise LabError("no usable ZFS: " + "; ".join(reasons))


# ----------------------------------------------------------------------------- the zfs-fuse daemon


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
    r = subprocess.run([_tool("zpool"), "list", "-H"], capture_output=True, text=True, timeout=timeout)
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
        cmd = [_tool("zfs-fuse"), "--no-daemon", "--no-kstat-mount"]
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
            self.pid_file.write_text(json.dumps({"pid": self._proc.pid, "starttime": _starttime(self._proc.pid)}))

    def stop(self, timeout: float = 30) -> list[str]:
        """Stop the daemon this Service started (never another one): export the lab's pools it serves,
        SIGTERM, SIGKILL after `timeout`, then unmount what the dead daemon left mounted. Returns notes."""
        notes: list[str] = []
        if self._proc is None:
            return notes
        if self._proc.poll() is None:
            for pool in lab_pools():
                try:
                    _export_or_destroy(pool, "export", retry_s=2, timeout=20)
                    _OWNED.discard(pool)
                    notes.append(f"exported {pool}")
                except LabError as exc:
                    notes.append(f"could not export {pool} before stopping zfs-fuse: {exc}")
            if not _imported_pools():
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
        _OWNED.clear()  # whatever this daemon served is gone with it
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
        pools = _imported_pools()
        foreign = [p for p in pools if p not in _OWNED and not is_lab_pool(p)]
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
        _OWNED.difference_update(pools)
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


def _starttime(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks): a PID plus this names one process for good."""
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(st[st.rfind(")") + 2 :].split()[19])


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
    if pid not in running_daemons() or _starttime(pid) != start:
        path.unlink()
        return [f"zfs-fuse pid {pid} from {path} is gone (or the PID is another process now): nothing to stop"]
    notes = []
    for pool in lab_pools():
        try:
            _export_or_destroy(pool, "export", retry_s=2)
            notes.append(f"exported {pool}")
        except LabError as exc:
            notes.append(str(exc))
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid in running_daemons() and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid in running_daemons() and _starttime(pid) == start:
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
    impl = implementation()
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


# ----------------------------------------------------------------------------- mounts


@dataclass(frozen=True)
class MountInfo:
    mountpoint: str
    fstype: str  # with the FUSE subtype: 'fuse.zfs' for zfs-fuse
    source: str
    options: str


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _mounts() -> list[MountInfo]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 6 or len(r) < 2:
            continue
        out.append(MountInfo(_unescape(f[4]), r[0], _unescape(r[1]), f[5]))
    return out


def _is_mountpoint(path: str) -> bool:
    return any(m.mountpoint == path for m in _mounts())


def mount_of(path: str | Path) -> MountInfo:
    """The mount that holds `path` (the last-mounted one with the longest matching mount point)."""
    p = os.path.realpath(path)
    best: MountInfo | None = None
    for m in _mounts():
        mp = m.mountpoint
        if p == mp or p.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) >= len(best.mountpoint):
                best = m
    if best is None:
        raise LabError(f"no mount holds {path}")
    return best


def fs_type(path: str | Path) -> str:
    """The file system type `path` is on, as /proc/self/mountinfo names it ('ext4', 'fuse.zfs', 'zfs', ...)."""
    return mount_of(path).fstype


def _belongs(source: str, pool: str) -> bool:
    return source == pool or source.startswith(pool + "/")


def _unmount_dead_zfs() -> list[str]:
    """After the lab's zfs-fuse daemon died: unmount the fuse.zfs mounts it left ("Transport endpoint is not
    connected"), deepest first. Does nothing while any zfs-fuse daemon lives (its mounts may be live, and a
    stat() on a frozen pool would hang)."""
    if running_daemons():
        return []
    notes = []
    for mp in sorted({m.mountpoint for m in _mounts() if m.fstype == "fuse.zfs"}, key=len, reverse=True):
        r = subprocess.run([_tool("umount"), mp], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run([_tool("umount"), "-l", mp], capture_output=True, text=True)
            notes.append(f"lazy unmount of dead mount {mp}: rc {r.returncode}")
        else:
            notes.append(f"unmounted dead mount {mp}")
    return notes


def users_of(path: str | Path) -> list[tuple[int, str]]:
    """(pid, command) of processes with their cwd, root or an open file under `path` (for busy errors)."""
    base = os.path.realpath(path).rstrip("/") + "/"
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        targets = []
        for link in ("cwd", "root"):
            try:
                targets.append(os.readlink(d / link))
            except OSError:
                pass
        try:
            for fd in (d / "fd").iterdir():
                try:
                    targets.append(os.readlink(fd))
                except OSError:
                    pass
        except OSError:
            pass
        if any((t.rstrip("/") + "/").startswith(base) for t in targets):
            try:
                comm = (d / "comm").read_text().strip()
            except OSError:
                comm = "?"
            found.append((int(d.name), comm))
    return found


# ----------------------------------------------------------------------------- properties


@dataclass(frozen=True)
class PropertySpec:
    name: str
    editable: bool
    inherit: bool
    values: str


_TABLES: dict[str, dict[str, PropertySpec]] = {}


def property_table() -> dict[str, PropertySpec]:
    """Dataset properties of this implementation, read from the table `zfs get` prints with its usage
    (both OpenZFS and zfs-fuse print it; zfs-fuse needs the daemon running)."""
    impl = implementation()
    if impl in _TABLES:
        return _TABLES[impl]
    r = zfs("get", check=False)
    text = (r.stderr or "") + (r.stdout or "")
    table: dict[str, PropertySpec] = {}
    started = False
    for line in text.splitlines():
        if re.match(r"^\s*PROPERTY\s+EDIT\s+INHERIT\s+VALUES", line):
            started = True
            continue
        if not started:
            continue
        m = re.match(r"^\s+(\S+)\s+(YES|NO)\s+(YES|NO)\s+(.*\S)\s*$", line)
        if m:
            table[m.group(1)] = PropertySpec(m.group(1), m.group(2) == "YES", m.group(3) == "YES", m.group(4))
        elif table and not line.strip():
            continue
        elif table and line.strip() and not line.startswith(("\t", " ")):
            break
    if not table:
        raise LabError(f"zfs: cannot read the property table from `zfs get` ({_tail(r)})")
    _TABLES[impl] = table
    return table


def _size_ok(v: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)?[KMGTPEZ]?B?", v, re.IGNORECASE) is not None


def _to_bytes(v: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTPEZ]?)B?", v, re.IGNORECASE)
    if not m:
        raise ValueError(v)
    return int(float(m.group(1)) * 1024 ** "_KMGTPEZ".index((m.group(2) or "_").upper()))


def _value_ok(spec: PropertySpec, value: str) -> bool | None:
    """True/False when the table says enough to decide; None when only zfs can tell."""
    vals = spec.values
    m = re.fullmatch(r"(\d+[KMG]?) to (\d+[KMG]?), power of 2", vals, re.IGNORECASE)
    if m:
        if not _size_ok(value):
            return False
        b = _to_bytes(value)
        return _to_bytes(m.group(1)) <= b <= _to_bytes(m.group(2)) and b & (b - 1) == 0
    alts = [a.strip() for a in vals.split("|")]
    decided = True
    for alt in alts:
        if alt == value:
            return True
        if alt == "<size>" and _size_ok(value):
            return True
        if re.fullmatch(r"[a-z0-9]+-\[\d-\d\]", alt):  # gzip-[1-9] is a regular expression as printed
            if re.fullmatch(alt, value):
                return True
            continue
        if re.fullmatch(r"[a-z0-9_-]+", alt):
            continue
        decided = False  # <path>, <snapshot>, 'share(1M) options', 'sha256[,verify]', ...
    return False if decided else None


def validate_properties(properties: Mapping[str, Any]) -> dict[str, str]:
    """Check dataset properties against this implementation's table; return them as zfs strings
    (True/False -> on/off). LabError naming the property, the implementation and the allowed values."""
    impl = implementation()
    table = property_table()
    out: dict[str, str] = {}
    for name, raw in properties.items():
        value = ("on" if raw else "off") if isinstance(raw, bool) else str(raw)
        if name in _RESERVED:
            raise LabError(f"zfs: property {name!r} is set by the lab itself")
        if ":" in name:
            if not _USER_PROP_RE.match(name):
                raise LabError(f"zfs: bad user property name {name!r} (lowercase 'module:property')")
            out[name] = value
            continue
        spec = table.get(name)
        if spec is None:
            hint = f": {_HINTS[name]}" if name in _HINTS else ""
            settable = ", ".join(sorted(n for n, s in table.items() if s.editable and "@" not in n))
            raise LabError(f"zfs ({impl}): unknown property {name!r}{hint}. Settable properties: {settable}")
        if not spec.editable:
            raise LabError(f"zfs ({impl}): property {name!r} is read-only")
        ok = _value_ok(spec, value)
        if ok is False:
            extra = " (no lz4/zstd: pool version 23)" if impl == "zfs-fuse" and name == "compression" else ""
            raise LabError(f"zfs ({impl}): {name}={value!r} is not allowed; allowed: {spec.values}{extra}")
        out[name] = value
    return out


# ----------------------------------------------------------------------------- pools


def pool_name(study: str, target: str) -> str:
    """pgfslab-<study>-<target>, checked."""
    for part, what in ((study, "study"), (target, "target")):
        if not _NAME_PART_RE.match(part):
            raise LabError(f"zfs: {what} name {part!r} must be lower-case letters, digits, '_', '.' or '-'")
    return f"pgfslab-{study}-{target}"


@dataclass
class Pool:
    name: str
    device: str
    mountpoint: str
    dataset: str  # e.g. pgfslab-s-t/pgdata
    dataset_mountpoint: str
    implementation: str
    properties: dict[str, str]  # the dataset's effective values of the requested properties
    create_s: float
    notes: list[str] = field(default_factory=list)


def _imported_pools() -> list[str]:
    r = zpool("list", "-H", "-o", "name", check=False)
    if r.returncode != 0:
        return []
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]


def is_lab_pool(name: str) -> bool:
    """True if `name` is imported, looks like pgfslab-<study>-<target> and carries the lab's marker
    (set locally at creation, not inherited)."""
    if not POOL_NAME_RE.match(name) or name not in _imported_pools():
        return False
    try:
        r = zfs("get", "-H", "-o", "value,source", OWNER_PROPERTY, name, check=False, timeout=15)
    except LabError:  # timed out: a frozen pool
        return False
    if r.returncode != 0:
        return False
    value, _, source = r.stdout.strip().partition("\t")
    return value == OWNER_VALUE and source == "local"


def lab_pools() -> list[str]:
    """Imported pools that are the lab's: marker set, or created/imported by this process."""
    return [p for p in _imported_pools() if p in _OWNED or is_lab_pool(p)]


def _require_lab_pool(name: str, action: str) -> None:
    if not POOL_NAME_RE.match(name):
        raise LabError(f"zfs: refusing to {action} pool {name!r}: its name is not pgfslab-<study>-<target>")
    if name not in _imported_pools():
        raise LabError(f"zfs: cannot {action} pool {name!r}: no such pool is imported")
    if name not in _OWNED and not is_lab_pool(name):
        raise LabError(
            f"zfs: refusing to {action} pool {name!r}: it does not carry "
            f"{OWNER_PROPERTY}={OWNER_VALUE} (the lab did not create it)"
        )


def _check_device(device: str, allow_non_loop: bool) -> None:
    try:
        st = os.stat(device)
    except OSError as exc:
        raise LabError(f"zfs: device {device}: {exc.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise LabError(f"zfs: {device} is not a block device")
    if not allow_non_loop and not os.path.basename(os.path.realpath(device)).startswith("loop"):
        raise LabError(f"zfs: {device} is not a loop device (pass allow_non_loop=True for a real disk)")
    real = os.path.realpath(device)
    for m in _mounts():
        if m.source.startswith("/dev/") and os.path.realpath(m.source) == real:
            raise LabError(f"zfs: {device} is mounted on {m.mountpoint}: refusing to create a pool on it")


def create_pool(
    name: str,
    device: str,
    mountpoint: str | Path,
    properties: Mapping[str, Any] | None = None,
    *,
    dataset: str = "pgdata",
    pool_properties: Mapping[str, str] | None = None,
    allow_non_loop: bool = False,
) -> Pool:
    """`zpool create -f -o cachefile=none -O pgfslab:created-by=pgfslab -m <mountpoint> <name> <device>`,
    then `zfs create -o k=v ... <name>/<dataset>` with validated properties. If the dataset step fails,
    the new pool is destroyed again before the error is raised."""
    impl = implementation()
    if not POOL_NAME_RE.match(name):
        raise LabError(f"zfs: pool name {name!r} must look like pgfslab-<study>-<target>")
    if name in _imported_pools():
        raise LabError(f"zfs: a pool named {name!r} is already imported")
    if not _NAME_PART_RE.match(dataset):
        raise LabError(f"zfs: bad dataset name {dataset!r}")
    _check_device(device, allow_non_loop)
    mnt = os.path.abspath(mountpoint)
    props = validate_properties(properties or {})
    cmd = ["create", "-f", "-o", "cachefile=none"]
    for k, v in (pool_properties or {}).items():
        cmd += ["-o", f"{k}={v}"]
    cmd += [
        "-O",
        f"{OWNER_PROPERTY}={OWNER_VALUE}",
        "-O",
        f"{CREATED_AT_PROPERTY}={int(time.time())}",
        "-m",
        mnt,
        name,
        device,
    ]
    t0 = time.monotonic()
    r = zpool(*cmd)
    notes = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]  # e.g. 'Defaulting to 4K ...'
    ds = f"{name}/{dataset}"
    try:
        args = ["create"]
        for k, v in props.items():
            args += ["-o", f"{k}={v}"]
        zfs(*args, ds)
        create_s = time.monotonic() - t0
        effective = get_properties(ds, list(props)) if props else {}
        ds_mnt = get_properties(ds, ["mountpoint"])["mountpoint"]
    except BaseException:
        _export_or_destroy(name, "destroy", retry_s=BUSY_RETRY_S)
        raise
    _OWNED.add(name)
    return Pool(name, device, mnt, ds, ds_mnt, impl, effective, round(create_s, 3), notes)


def get_properties(dataset: str, names: list[str]) -> dict[str, str]:
    r = zfs("get", "-H", "-o", "property,value", ",".join(names), dataset)
    out = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition("\t")
        out[k] = v
    return out


def _export_or_destroy(name: str, action: str, retry_s: float, timeout: float = 120) -> None:
    deadline = time.monotonic() + retry_s
    mnts = [m.mountpoint for m in _mounts() if _belongs(m.source, name)]
    while True:
        r = zpool(action, name, check=False, timeout=timeout)
        if r.returncode == 0:
            return
        text = (r.stderr + r.stdout).lower()
        busy = "busy" in text or "could not unmount" in text or "umount failed" in text
        if busy and time.monotonic() < deadline:
            time.sleep(0.2)
            continue
        if busy:
            users = sorted({u for mp in mnts for u in users_of(mp)})
            who = (
                ", ".join(f"{c} (pid {p})" for p, c in users) if users else "no process found with a file or cwd there"
            )
            raise LabError(
                f"zfs: cannot {action} pool {name!r}: it is busy ({_tail(r, 2)}); in use by: {who}. "
                "Stop whatever uses its mount points first."
            )
        raise LabError(f"zfs: `zpool {action} {name}` failed: {_tail(r)}")


def export_pool(name: str, *, retry_s: float = BUSY_RETRY_S) -> None:
    """Export one of the lab's pools (unmounts its datasets; the pool stays on its device)."""
    _require_lab_pool(name, "export")
    _export_or_destroy(name, "export", retry_s)
    _OWNED.discard(name)


def destroy_pool(name: str, *, retry_s: float = BUSY_RETRY_S) -> None:
    """Destroy one of the lab's pools. Stopping what uses it is the caller's job; a pool still busy after
    `retry_s` gives a LabError naming the processes that use it."""
    _require_lab_pool(name, "destroy")
    _export_or_destroy(name, "destroy", retry_s)
    _OWNED.discard(name)


def device_dir(devices: list[str], directory: str | Path) -> Path:
    """A directory holding only symlinks to `devices`, for `zpool import -d` (which needs a directory:
    '-d /dev/loop0' fails with "cannot open '/dev/loop0/': Not a directory"; '-d /dev' works but scans
    every device; a directory with the image file makes zfs open the image directly, not the loop device)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for dev in devices:
        link = d / os.path.basename(dev)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(dev)
    return d


def import_pool(name: str, search_dir: str | Path, *, allow_files: bool = False) -> None:
    """`zpool import -d <search_dir> -o cachefile=none <name>` (mounts its datasets). Only pool names of the
    lab; the pool must carry the lab's marker (otherwise it is exported again and LabError). `search_dir`
    must hold device nodes or symlinks to them (see device_dir) unless allow_files=True."""
    if not POOL_NAME_RE.match(name):
        raise LabError(f"zfs: refusing to import {name!r}: its name is not pgfslab-<study>-<target>")
    d = Path(search_dir)
    if not d.is_dir():
        raise LabError(f"zfs: import search path {d} is not a directory (zpool import -d needs a directory)")
    if not allow_files:
        files = [p.name for p in d.iterdir() if p.is_file() and not p.is_symlink()]
        if files:
            raise LabError(
                f"zfs: {d} holds regular files ({', '.join(files[:3])}): zpool import would open an "
                "image file directly instead of its loop device; use device_dir()"
            )
    if name in _imported_pools():
        raise LabError(f"zfs: pool {name!r} is already imported")
    zpool("import", "-d", str(d), "-o", "cachefile=none", name)
    if not is_lab_pool(name):
        _export_or_destroy(name, "export", retry_s=BUSY_RETRY_S)
        raise LabError(f"zfs: pool {name!r} does not carry {OWNER_PROPERTY}={OWNER_VALUE}: exported it again")
    _OWNED.add(name)


# ----------------------------------------------------------------------------- accounting

_FOOTPRINT = (
    "used",
    "referenced",
    "compressratio",
    "logicalused",
    "logicalreferenced",
    "usedbydataset",
    "usedbysnapshots",
    "available",
)


def footprint(dataset: str) -> dict[str, Any]:
    """Space accounting of a dataset: bytes as int, compressratio as float. Properties the implementation
    lacks (zfs-fuse, pool version 23: logicalused, logicalreferenced) are None and listed in 'unsupported';
    then 'logicalused_est' = round(used * compressratio) (compressratio has two decimals: about 0.5 %)."""
    table = property_table()
    names = [n for n in _FOOTPRINT if n in table]
    r = zfs("get", "-Hp", "-o", "property,value", ",".join(names), dataset)
    raw = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)
    out: dict[str, Any] = {"dataset": dataset, "implementation": implementation()}
    for n in _FOOTPRINT:
        v = raw.get(n)
        if v is None or v == "-":
            out[n] = None
        elif n == "compressratio":
            out[n] = float(v.rstrip("x"))  # zfs-fuse prints '5.81x' even with -p; OpenZFS '5.81'
        else:
            out[n] = int(v)
    out["unsupported"] = [n for n in _FOOTPRINT if n not in table]
    if out["logicalused"] is None and out["used"] is not None and out["compressratio"] is not None:
        out["logicalused_est"] = round(out["used"] * out["compressratio"])
        out["note"] = (
            "logicalused/logicalreferenced do not exist at this pool version; logicalused_est = used x compressratio"
        )
    return out


# ----------------------------------------------------------------------------- snapshots


def _check_snapshot(dataset: str, name: str) -> None:
    if not _SNAP_NAME_RE.match(name):
        raise LabError(f"zfs: bad snapshot name {name!r}")
    pool = dataset.split("/", 1)[0]
    _require_lab_pool(pool, "snapshot a dataset of")


def snapshot(dataset: str, name: str) -> str:
    """`zfs snapshot <dataset>@<name>`; returns the full snapshot name."""
    _check_snapshot(dataset, name)
    full = f"{dataset}@{name}"
    zfs("snapshot", full)
    return full


def destroy_snapshot(dataset: str, name: str) -> None:
    _check_snapshot(dataset, name)
    full = f"{dataset}@{name}"
    r = zfs("destroy", full, check=False)
    if r.returncode != 0:
        raise LabError(f"zfs: cannot destroy snapshot {full}: {_tail(r)}")


def snapshots(dataset: str) -> list[dict[str, Any]]:
    """Snapshots of `dataset`: name, used, referenced (bytes)."""
    r = zfs("list", "-H", "-t", "snapshot", "-o", "name", "-r", dataset, check=False)
    if r.returncode != 0:
        raise LabError(f"zfs: cannot list snapshots of {dataset}: {_tail(r)}")
    out = []
    for full in (ln.strip() for ln in r.stdout.splitlines()):
        if not full.startswith(dataset + "@"):
            continue
        g = zfs("get", "-Hp", "-o", "property,value", "used,referenced", full)
        vals = dict(line.split("\t", 1) for line in g.stdout.splitlines())
        out.append({"name": full.split("@", 1)[1], "used": int(vals["used"]), "referenced": int(vals["referenced"])})
    return out


@contextmanager
def pool_target(
    name: str,
    device: str,
    mountpoint: str | Path,
    properties: Mapping[str, Any] | None = None,
    *,
    keep: bool = False,
    **kw: Any,
) -> Iterator[Pool]:
    """create_pool() for the block; on every exit path the pool is destroyed (keep=True: exported).
    Stopping what uses the pool (PostgreSQL) before the block ends is the caller's job: the inner
    context manager. Needs a running service()."""
    pool = create_pool(name, device, mountpoint, properties, **kw)
    try:
        yield pool
    finally:
        if pool.name in _imported_pools():
            (export_pool if keep else destroy_pool)(pool.name)


def imported_pools() -> list[str]:
    """Names of the pools imported now (every pool, the lab's or not); empty without a daemon."""
    return _imported_pools()


def version(impl: str | None = None) -> str | None:
    """The ZFS userland's version: `zfs version` (OpenZFS), the Debian package's for zfs-fuse."""
    impl = impl or implementation()
    if impl == "openzfs":
        r = subprocess.run([_tool("zfs"), "version"], capture_output=True, text=True)
        return (r.stdout.strip().splitlines() or [None])[0]
    dpkg = shutil.which("dpkg-query", path=SYSTEM_PATH)
    if dpkg:
        r = subprocess.run([dpkg, "-W", "-f", "${Version}", "zfs-fuse"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return f"zfs-fuse {r.stdout.strip()} (pool version 23)"
    return "zfs-fuse (pool version 23)"
