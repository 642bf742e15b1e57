"""Resource limits for a run: a PostgreSQL cluster and its clients inside a cgroup with a memory limit
and, optionally, block-I/O throttling on the target's device.

cgroup v1 (memory and blkio hierarchies, as on the lab machines) and v2 (memory and io controllers of
the unified hierarchy) are both handled, per controller. Under v1 the lab's cgroups go below the
cgroup this process is already in (`<own>/pgfs-lab/<study>-<target>`), so nothing it starts escapes
limits or accounting set from outside; under v2 they go below the hierarchy's root, because v2 does
not allow processes in a cgroup whose children have controllers enabled.

Processes join with Cgroup.command(cmd): the command is wrapped by pgfslab/host/cgexec.py, which joins
the cgroups and then execs it, so it is charged from its first byte and its children inherit the
cgroup (libcgroup's cgexec is not needed; it is recorded when present). Cgroup.add_tree(pid) moves an
already running process and its descendants instead (their earlier memory charges stay behind).

On exit the final usage (peak memory, limit hits, OOM kills, I/O done) is recorded, processes still
inside are moved back to the cgroup they came from, and the cgroup is removed. Where cgroups cannot be
written (not root, controller not mounted) the block runs unconstrained with a warning, and the
record says so.

Caveat (v1): blkio throttles I/O the cgroup's processes issue themselves (direct I/O, reads, fsync);
buffered writes flushed later by kernel threads are not throttled. v2 with memory+io throttles both.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.config.model import Blkio, Resources
from pgfslab.config.vm_settings import parse_bytes
from pgfslab.errors import LabError
from pgfslab.host import blockdev, mounts, proc

CGEXEC = Path(__file__).with_name("cgexec.py")
LAB = "pgfs-lab"
V1_NAMES = {"memory": "memory", "io": "blkio"}  # our controller name -> the v1 hierarchy's


@dataclass(frozen=True)
class Limits:
    memory_bytes: int | None = None
    device: str | None = None  # the block device that blkio/io limits apply to
    read_bps: int | None = None
    write_bps: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None
    # a target's device profile (pgfslab/config/device_profiles.py): its throttles must apply, or nothing runs
    profile: str | None = None

    @property
    def io_limited(self) -> bool:
        return any(v is not None for v in (self.read_bps, self.write_bps, self.read_iops, self.write_iops))

    def controllers(self) -> list[str]:
        return (["memory"] if self.memory_bytes is not None else []) + (["io"] if self.io_limited else [])


def limits_from_config(resources: Resources, device: str | None, profile: str | None = None) -> Limits:
    """The `resources` config section (a target's, with its device profile's blkio: Study.resources_for) and
    the target's block device -> Limits. With `profile` the throttles are required: a run that cannot have
    them fails instead of measuring the real device under the profile's name."""
    blkio = resources.blkio or Blkio()
    mem = resources.memory_limit_mb

    def b(value: int | str | None) -> int | None:
        return parse_bytes(value) if value is not None else None

    lim = Limits(
        memory_bytes=int(mem) * 2**20 if mem is not None else None,
        device=device,
        read_bps=b(blkio.read_bps),
        write_bps=b(blkio.write_bps),
        read_iops=blkio.read_iops,
        write_iops=blkio.write_iops,
        profile=profile,
    )
    if profile is not None and not lim.io_limited:
        raise LabError(f"device profile {profile}: no blkio throttles in the resources given")
    if lim.io_limited and device is None:
        raise LabError(
            "resources.blkio needs a block device: this target has none (tmpfs, dir, or an existing "
            "directory not on a block device)"
        )
    return lim


def cgroup_name(study: str, target: str) -> str:
    return f"{study}-{target}"


@dataclass(frozen=True)
class Hierarchy:
    controller: str  # memory | io
    version: int  # 1 | 2
    mount: Path  # where the hierarchy is mounted
    own: Path  # the cgroup this process is in (absolute directory)

    @property
    def base(self) -> Path:
        """Where the lab's cgroups go: below our own cgroup (v1), below the root (v2)."""
        return (self.own if self.version == 1 else self.mount) / LAB


def _own_cgroups() -> dict[str, str]:
    """/proc/self/cgroup: hierarchy key ("memory", "blkio", ..., or "" for v2) -> path."""
    out: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        for n in names.split(",") if names else [""]:
            out[n] = path
    return out


def find() -> dict[str, Hierarchy]:
    """Which hierarchy serves each controller here (v1 preferred where a v1 hierarchy has it)."""
    own = _own_cgroups()
    found: dict[str, Hierarchy] = {}
    table = mounts.table()
    for ctl, v1 in V1_NAMES.items():
        for m in table:
            if m.fstype == "cgroup" and v1 in m.options:
                found[ctl] = Hierarchy(ctl, 1, m.target, m.target / own.get(v1, "/").lstrip("/"))
                break
    for m in table:
        if m.fstype != "cgroup2":
            continue
        try:
            available = (m.target / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        for ctl in ("memory", "io"):
            if ctl in available and ctl not in found:
                found[ctl] = Hierarchy(ctl, 2, m.target, m.target / own.get("", "/").lstrip("/"))
    return found


def availability() -> dict[str, Any]:
    """What this machine offers (for run.json and the lab's diagnostics)."""
    h = find()
    return {
        "root": os.geteuid() == 0,
        "controllers": {c: {"version": x.version, "mount": str(x.mount), "base": str(x.base)} for c, x in h.items()},
        "cgexec": proc.which("cgexec"),
    }


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise LabError(f"cannot write {value.strip()!r} to {path}: {exc.strerror}") from None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _kv(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _pids(d: Path) -> list[int]:
    return [int(x) for x in (_read(d / "cgroup.procs") or "").split()]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        cur = todo.pop()
        out.append(cur)
        todo.extend(children.get(cur, []))
    return out


@dataclass
class Cgroup:
    """The lab's cgroup for one run (or a stand-in that constrains nothing, `active` False)."""

    name: str
    dirs: dict[str, Path] = field(default_factory=dict)  # controller -> cgroup directory
    hierarchies: dict[str, Hierarchy] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def _unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def command(self, cmd: Sequence[str]) -> list[str]:
        """`cmd` wrapped so that it runs inside this cgroup (unchanged if the cgroup is not active)."""
        if not self.active:
            return list(cmd)
        return [sys.executable, str(CGEXEC), *(str(d / "cgroup.procs") for d in self._unique_dirs()), "--", *cmd]

    def add_pid(self, pid: int) -> None:
        for d in self._unique_dirs():
            try:
                (d / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                return
            except OSError as exc:
                if exc.errno == errno.ESRCH:
                    return
                raise LabError(f"cannot move pid {pid} into {d}: {exc.strerror}") from None

    def add_tree(self, pid: int) -> list[int]:
        """Move a running process and all its descendants in (parent first, so new children follow)."""
        moved = _descendants(pid)
        for p in moved:
            self.add_pid(p)
        return moved

    def pids(self) -> list[int]:
        return sorted({p for d in self._unique_dirs() for p in _pids(d)})

    def usage(self) -> dict[str, Any]:
        """Memory (peak, current, limit hits, OOM kills, page cache vs anonymous) and I/O done so far."""
        out: dict[str, Any] = {}
        if (d := self.dirs.get("memory")) is not None:
            if self.hierarchies["memory"].version == 1:
                st = _kv(_read(d / "memory.stat"))
                out["memory"] = {
                    "peak_bytes": int(_read(d / "memory.max_usage_in_bytes") or 0),
                    "current_bytes": int(_read(d / "memory.usage_in_bytes") or 0),
                    "limit_hits": int(_read(d / "memory.failcnt") or 0),
                    "oom_kills": _kv(_read(d / "memory.oom_control")).get("oom_kill", 0),
                    "cache_bytes": st.get("total_cache"),
                    "anon_bytes": st.get("total_rss"),
                    "dirty_bytes": st.get("total_dirty"),
                    "writeback_bytes": st.get("total_writeback"),
                }
            else:
                st, ev = _kv(_read(d / "memory.stat")), _kv(_read(d / "memory.events"))
                peak = _read(d / "memory.peak")
                out["memory"] = {
                    "peak_bytes": int(peak) if peak else None,
                    "current_bytes": int(_read(d / "memory.current") or 0),
                    "limit_hits": ev.get("max", 0),
                    "oom_kills": ev.get("oom_kill", 0),
                    "cache_bytes": st.get("file"),
                    "anon_bytes": st.get("anon"),
                    "dirty_bytes": st.get("file_dirty"),
                    "writeback_bytes": st.get("file_writeback"),
                }
        if (d := self.dirs.get("io")) is not None:
            if self.hierarchies["io"].version == 1:
                io: dict[str, int] = {}
                for f, unit in (("blkio.throttle.io_service_bytes", "bytes"), ("blkio.throttle.io_serviced", "ios")):
                    for line in (_read(d / f) or "").splitlines():
                        parts = line.split()
                        if len(parts) == 3 and parts[1] in ("Read", "Write"):
                            k = f"{parts[1].lower()}_{unit}"
                            io[k] = io.get(k, 0) + int(parts[2])
                out["io"] = io
            else:
                io = {}
                for line in (_read(d / "io.stat") or "").splitlines():
                    for kv in line.split()[1:]:
                        k, _, v = kv.partition("=")
                        if k in ("rbytes", "wbytes", "rios", "wios"):
                            io[k] = io.get(k, 0) + int(v)
                out["io"] = io
        return out


def _devno(device: str) -> tuple[str, list[str]]:
    """major:minor to throttle for `device` (a partition's whole disk, with a note)."""
    try:
        st = os.stat(device)
    except OSError as exc:
        raise LabError(f"cannot throttle {device}: {exc.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise LabError(f"cannot throttle {device}: not a block device")
    disk = blockdev.whole_disk(st.st_rdev)
    notes = [] if disk == st.st_rdev else [f"{device} is a partition: the throttle applies to its whole disk"]
    return f"{os.major(disk)}:{os.minor(disk)}", notes


def _configure(h: Hierarchy, d: Path, limits: Limits) -> dict[str, Any]:
    """Write the limits for one controller; returns what the kernel reads back."""
    got: dict[str, Any] = {}
    if h.controller == "memory":
        assert limits.memory_bytes is not None
        f = d / ("memory.limit_in_bytes" if h.version == 1 else "memory.max")
        _write(f, str(limits.memory_bytes))
        got["memory_limit_bytes"] = int((_read(f) or "0").strip())
    else:
        assert limits.device is not None
        dev, notes = _devno(limits.device)
        got["device"], got["devno"], got["notes"] = limits.device, dev, notes
        pairs = {
            "read_bps": limits.read_bps,
            "write_bps": limits.write_bps,
            "read_iops": limits.read_iops,
            "write_iops": limits.write_iops,
        }
        if h.version == 1:
            for k, v in pairs.items():
                if v is not None:
                    f = d / f"blkio.throttle.{k}_device"
                    _write(f, f"{dev} {v}")
                    got[k] = int((_read(f) or f"{dev} 0").split()[-1])
        else:
            v2 = {"read_bps": "rbps", "write_bps": "wbps", "read_iops": "riops", "write_iops": "wiops"}
            _write(d / "io.max", dev + " " + " ".join(f"{v2[k]}={v}" for k, v in pairs.items() if v is not None))
            got["io.max"] = (_read(d / "io.max") or "").strip()
    return got


def _enable_v2(h: Hierarchy) -> None:
    """v2: the controller must be enabled in every ancestor's cgroup.subtree_control down to ours."""
    for parent in (h.mount, h.base):
        current = (_read(parent / "cgroup.subtree_control") or "").split()
        if h.controller not in current:
            _write(parent / "cgroup.subtree_control", f"+{h.controller}")


def _remove(d: Path, origin: Path) -> list[str]:
    """Move processes still in `d` back to `origin`, then remove `d`. Returns what was left behind."""
    problems: list[str] = []
    for _ in range(20):
        left = _pids(d)
        if not left:
            break
        for pid in left:
            with contextlib.suppress(OSError):
                (origin / "cgroup.procs").write_text(str(pid))
        time.sleep(0.05)
    for _ in range(20):
        try:
            d.rmdir()
            return problems
        except FileNotFoundError:
            return problems
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                problems.append(f"cannot remove {d}: {exc.strerror}")
                return problems
            time.sleep(0.1)
    problems.append(f"cannot remove {d}: still busy")
    return problems


@contextlib.contextmanager
def limited(name: str, limits: Limits) -> Iterator[Cgroup]:
    """A cgroup `pgfs-lab/<name>` with `limits` for the duration of the block; removed after."""
    cg = Cgroup(name)
    wanted = limits.controllers()
    cg.record = {
        "name": f"{LAB}/{name}",
        "requested": {k: v for k, v in asdict(limits).items() if v is not None},
        "applied": False,
        "cgexec": proc.which("cgexec"),
        "method": "pgfslab/host/cgexec.py wrapper",
    }
    if not wanted:
        cg.record["reason"] = "no limits configured"
        yield cg
        return
    if limits.io_limited and limits.device is None:
        raise LabError("blkio limits need the target's block device")
    found = find()
    missing = [c for c in wanted if c not in found]
    if os.geteuid() != 0:
        missing = list(wanted)
        why = "not running as root"
    else:
        why = "controller not mounted: " + ", ".join(missing) if missing else ""
    created: list[tuple[Path, Hierarchy]] = []
    try:
        for ctl in wanted:
            if ctl in missing:
                continue
            h = found[ctl]
            d = h.base / name
            try:
                if h.version == 2:
                    h.base.mkdir(exist_ok=True)
                    _enable_v2(h)
                else:
                    h.base.mkdir(exist_ok=True)
                if d.exists() and d not in cg.dirs.values():
                    _remove(d, h.own)  # left by a killed earlier run
                if d not in cg.dirs.values():
                    d.mkdir()
                    created.append((d, h))
            except (OSError, LabError) as exc:
                missing.append(ctl)
                why = f"cannot create {d}: {getattr(exc, 'strerror', None) or exc}"
                continue
            cg.dirs[ctl] = d
            cg.hierarchies[ctl] = h
            cg.record.setdefault("limits", {}).update(_configure(h, d, limits))
        if limits.profile is not None and "io" in missing:
            raise LabError(
                f"cgroup {LAB}/{name}: device profile {limits.profile}: the block-I/O throttles cannot be applied "
                f"({why}); the target's runs would measure the real device under the profile's name"
            )
        if missing:
            msg = f"cgroup {LAB}/{name}: {', '.join(missing)} limits NOT applied ({why}); running unconstrained"
            print(f"WARNING: {msg}", file=sys.stderr, flush=True)
            cg.record["not_applied"] = {"controllers": missing, "reason": why}
        cg.record["applied"] = cg.active
        cg.record["paths"] = {c: str(d) for c, d in cg.dirs.items()}
        cg.record["versions"] = {c: h.version for c, h in cg.hierarchies.items()}
        yield cg
    finally:
        if cg.active:
            cg.record["usage"] = cg.usage()
            left = cg.pids()
            if left:
                cg.record["still_running_at_exit"] = left
        problems: list[str] = []
        for d, h in reversed(created):
            problems += _remove(d, h.own)
            with contextlib.suppress(OSError):
                h.base.rmdir()  # only if no other lab cgroup is in it
        cg.record["removed"] = not problems
        if problems:
            cg.record["remove_problems"] = problems
            print("WARNING: " + "; ".join(problems), file=sys.stderr, flush=True)


def remove_leftovers(name: str) -> list[str]:
    """Remove the lab's cgroup `pgfs-lab/<name>` wherever a killed or interrupted run left it (processes
    still inside are moved back to this process's own cgroup). Returns what was removed."""
    done: list[str] = []
    if os.geteuid() != 0:
        return done
    for h in find().values():
        d = h.base / name
        if d.is_dir():
            problems = _remove(d, h.own)
            done.append(f"removed cgroup {d}" if not problems else "; ".join(problems))
            with contextlib.suppress(OSError):
                h.base.rmdir()
    return done
