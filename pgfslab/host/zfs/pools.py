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

The modules: `zfs_commands` (the commands, which implementation), `zfs_properties` (what a dataset may be
given), this one (the lab's pools: create, import, export, destroy, accounting, snapshots) and `zfs_daemon`
(the zfs-fuse daemon the lab starts and stops, its power cut).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host import mounts
from pgfslab.host.zfs import commands as zfs_commands
from pgfslab.host.zfs import properties as zfs_properties

# every pool the lab creates is named pgfslab-<study>-<target> and carries its marker property
# (zfs_properties.OWNER_PROPERTY)
POOL_NAME_RE = re.compile(r"^pgfslab-[a-z0-9][a-z0-9_.-]*-[a-z0-9][a-z0-9_.-]*$")
_NAME_PART_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_SNAP_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")
BUSY_RETRY_S = 10.0


# pools this process created or imported (and has not destroyed or exported): recognised as the lab's even
# when the pool is frozen and `zfs get` cannot read its marker
OWNED: set[str] = set()


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
    r = zfs_commands.zpool("list", "-H", "-o", "name", check=False)
    if r.returncode != 0:
        return []
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]


def is_lab_pool(name: str) -> bool:
    """True if `name` is imported, looks like pgfslab-<study>-<target> and carries the lab's marker
    (set locally at creation, not inherited)."""
    if not POOL_NAME_RE.match(name) or name not in _imported_pools():
        return False
    try:
        r = zfs_commands.zfs(
            "get", "-H", "-o", "value,source", zfs_properties.OWNER_PROPERTY, name, check=False, timeout=15
        )
    except LabError:  # timed out: a frozen pool
        return False
    if r.returncode != 0:
        return False
    value, _, source = r.stdout.strip().partition("\t")
    return value == zfs_properties.OWNER_VALUE and source == "local"


def lab_pools() -> list[str]:
    """Imported pools that are the lab's: marker set, or created/imported by this process."""
    return [p for p in _imported_pools() if p in OWNED or is_lab_pool(p)]


def _require_lab_pool(name: str, action: str) -> None:
    if not POOL_NAME_RE.match(name):
        raise LabError(f"zfs: refusing to {action} pool {name!r}: its name is not pgfslab-<study>-<target>")
    if name not in _imported_pools():
        raise LabError(f"zfs: cannot {action} pool {name!r}: no such pool is imported")
    if name not in OWNED and not is_lab_pool(name):
        raise LabError(
            f"zfs: refusing to {action} pool {name!r}: it does not carry "
            f"{zfs_properties.OWNER_PROPERTY}={zfs_properties.OWNER_VALUE} (the lab did not create it)"
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
    for m in mounts.table():
        if m.source.startswith("/dev/") and os.path.realpath(m.source) == real:
            raise LabError(f"zfs: {device} is mounted on {m.target}: refusing to create a pool on it")


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
    impl = zfs_commands.implementation()
    if not POOL_NAME_RE.match(name):
        raise LabError(f"zfs: pool name {name!r} must look like pgfslab-<study>-<target>")
    if name in _imported_pools():
        raise LabError(f"zfs: a pool named {name!r} is already imported")
    if not _NAME_PART_RE.match(dataset):
        raise LabError(f"zfs: bad dataset name {dataset!r}")
    _check_device(device, allow_non_loop)
    mnt = os.path.abspath(mountpoint)
    props = zfs_properties.validate_properties(properties or {})
    cmd = ["create", "-f", "-o", "cachefile=none"]
    for k, v in (pool_properties or {}).items():
        cmd += ["-o", f"{k}={v}"]
    cmd += [
        "-O",
        f"{zfs_properties.OWNER_PROPERTY}={zfs_properties.OWNER_VALUE}",
        "-O",
        f"{zfs_properties.CREATED_AT_PROPERTY}={int(time.time())}",
        "-m",
        mnt,
        name,
        device,
    ]
    t0 = time.monotonic()
    r = zfs_commands.zpool(*cmd)
    notes = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]  # e.g. 'Defaulting to 4K ...'
    ds = f"{name}/{dataset}"
    try:
        args = ["create"]
        for k, v in props.items():
            args += ["-o", f"{k}={v}"]
        zfs_commands.zfs(*args, ds)
        create_s = time.monotonic() - t0
        effective = get_properties(ds, list(props)) if props else {}
        ds_mnt = get_properties(ds, ["mountpoint"])["mountpoint"]
    except BaseException:
        export_or_destroy(name, "destroy", retry_s=BUSY_RETRY_S)
        raise
    OWNED.add(name)
    return Pool(name, device, mnt, ds, ds_mnt, impl, effective, round(create_s, 3), notes)


def get_properties(dataset: str, names: list[str]) -> dict[str, str]:
    r = zfs_commands.zfs("get", "-H", "-o", "property,value", ",".join(names), dataset)
    out = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition("\t")
        out[k] = v
    return out


def export_or_destroy(name: str, action: str, retry_s: float, timeout: float = 120) -> None:
    """`zpool export|destroy NAME`, retried while busy; LabError naming the processes that use it. Checks no
    ownership: export_pool and destroy_pool do, the daemon's stop only ever passes the lab's pools."""
    deadline = time.monotonic() + retry_s
    mnts = [str(m.target) for m in mounts.table() if m.source == name or m.source.startswith(name + "/")]
    while True:
        r = zfs_commands.zpool(action, name, check=False, timeout=timeout)
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
                f"zfs: cannot {action} pool {name!r}: it is busy ({zfs_commands.tail(r, 2)}); in use by: {who}. "
                "Stop whatever uses its mount points first."
            )
        raise LabError(f"zfs: `zpool {action} {name}` failed: {zfs_commands.tail(r)}")


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


def export_pool(name: str, *, retry_s: float = BUSY_RETRY_S) -> None:
    """Export one of the lab's pools (unmounts its datasets; the pool stays on its device)."""
    _require_lab_pool(name, "export")
    export_or_destroy(name, "export", retry_s)
    OWNED.discard(name)


def destroy_pool(name: str, *, retry_s: float = BUSY_RETRY_S) -> None:
    """Destroy one of the lab's pools. Stopping what uses it is the caller's job; a pool still busy after
    `retry_s` gives a LabError naming the processes that use it."""
    _require_lab_pool(name, "destroy")
    export_or_destroy(name, "destroy", retry_s)
    OWNED.discard(name)


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
    zfs_commands.zpool("import", "-d", str(d), "-o", "cachefile=none", name)
    if not is_lab_pool(name):
        export_or_destroy(name, "export", retry_s=BUSY_RETRY_S)
        raise LabError(
            f"zfs: pool {name!r} does not carry {zfs_properties.OWNER_PROPERTY}={zfs_properties.OWNER_VALUE}: exported it again"
        )
    OWNED.add(name)


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
    table = zfs_properties.property_table()
    names = [n for n in _FOOTPRINT if n in table]
    r = zfs_commands.zfs("get", "-Hp", "-o", "property,value", ",".join(names), dataset)
    raw = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)
    out: dict[str, Any] = {"dataset": dataset, "implementation": zfs_commands.implementation()}
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


def _check_snapshot(dataset: str, name: str) -> None:
    if not _SNAP_NAME_RE.match(name):
        raise LabError(f"zfs: bad snapshot name {name!r}")
    pool = dataset.split("/", 1)[0]
    _require_lab_pool(pool, "snapshot a dataset of")


def snapshot(dataset: str, name: str) -> str:
    """`zfs snapshot <dataset>@<name>`; returns the full snapshot name."""
    _check_snapshot(dataset, name)
    full = f"{dataset}@{name}"
    zfs_commands.zfs("snapshot", full)
    return full


def destroy_snapshot(dataset: str, name: str) -> None:
    _check_snapshot(dataset, name)
    full = f"{dataset}@{name}"
    r = zfs_commands.zfs("destroy", full, check=False)
    if r.returncode != 0:
        raise LabError(f"zfs: cannot destroy snapshot {full}: {zfs_commands.tail(r)}")


def snapshots(dataset: str) -> list[dict[str, Any]]:
    """Snapshots of `dataset`: name, used, referenced (bytes)."""
    r = zfs_commands.zfs("list", "-H", "-t", "snapshot", "-o", "name", "-r", dataset, check=False)
    if r.returncode != 0:
        raise LabError(f"zfs: cannot list snapshots of {dataset}: {zfs_commands.tail(r)}")
    out = []
    for full in (ln.strip() for ln in r.stdout.splitlines()):
        if not full.startswith(dataset + "@"):
            continue
        g = zfs_commands.zfs("get", "-Hp", "-o", "property,value", "used,referenced", full)
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
