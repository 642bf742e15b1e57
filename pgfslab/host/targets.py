"""File-system targets: where a study's PostgreSQL cluster lives.

Kinds (see kind()):
  image     a sparse image under the work directory, on a loop device, formatted and mounted by the lab;
  device    a user-named block device (`device: /dev/xyz`, `format: true`), formatted by the lab after
            the checks in pgfslab/host/blockdev.py, labelled `pgfslab-<target>`, mounted at the lab's mount point;
  tmpfs     a tmpfs of `size_gb`, mounted by create() and kept mounted (its contents live in RAM) until
            release();
  existing  a user-named directory on a file system the host already has mounted (`path: /abs/dir`): the
            lab uses only a subdirectory it creates there, `pgfs-lab-<study>-<target>`, marked as the lab's;
  dir       a plain directory under the work directory.

Safety rules (pgfslab/host/safety.py): the lab deletes only under the work directory or in directories it
created and marked; it unmounts only its own mount points (<workdir>/mnt/<target>) and detaches only
loop devices backed by its own images. Where mounting is not permitted (not root, no loop devices) an
image or tmpfs target falls back to a plain directory, labelled `fallback` in run.json, the database,
every table and figure — never a silent substitution. A device target never falls back.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import pwd
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.config.targets import MKFS, check_spec, fs_label, kind, zfs_property_problems
from pgfslab.errors import LabError
from pgfslab.host import blockdev, btrfs, mounts, proc, safety, zfs, zfs_commands, zfs_daemon
from pgfslab.host.zfs_properties import property_table, validate_properties

DATA_SUBVOLUME = "data"  # btrfs targets with snapshots keep PGDATA's parent in this subvolume
ZFS_DATASET = "data"  # zfs targets keep PGDATA's parent in the dataset <pool>/data, mounted at <mnt>/data

PSEUDO_FS = {
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "configfs",
    "fusectl",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "pstore",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "nsfs",
    "rpc_pipefs",
    "ramfs",
}


@dataclass
class Mounted:
    """A target ready for a cluster: `path` is where PGDATA's parent is (PGDATA = path / "pgdata")."""

    name: str
    fs: str
    path: Path
    mountpoint: Path
    fallback: bool
    device: str | None = None
    mount_options: str | None = None
    direct_io: bool | None = None
    notes: list[str] = field(default_factory=list)
    kind: str = "image"
    mount_s: float | None = None
    implementation: str | None = None  # zfs: 'zfs-fuse' or 'openzfs'
    zfs: dict[str, Any] | None = None  # zfs: pool, dataset, effective dataset properties

    @property
    def fs_label(self) -> str:
        """The file system as tables and figures name it: 'zfs (zfs-fuse, userspace)' for zfs-fuse."""
        return fs_label(self.fs, self.implementation)

    def describe(self) -> dict[str, Any]:
        d = asdict(self)
        d["fs_label"] = self.fs_label
        d["path"] = str(self.path)
        d["mountpoint"] = str(self.mountpoint)
        return d


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


def image_path(workdir: Path, name: str) -> Path:
    return workdir / "images" / f"{name}.img"


def mountpoint(workdir: Path, name: str) -> Path:
    return workdir / "mnt" / name


def existing_dir(spec: dict[str, Any], study: str, name: str) -> Path:
    """The lab's own subdirectory on a user-named existing file system."""
    return Path(spec["path"]) / f"{safety.LAB_DIR_PREFIX}{study}-{name}"


def _warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


def _loops_backing(image: Path) -> list[str]:
    out = proc.run(["losetup", "-j", str(image)], check=False).stdout
    return [line.split(":", 1)[0] for line in out.splitlines() if line.strip()]


def _is_mounted(path: Path) -> bool:
    return mounts.is_mounted(path)


def _mount_options(path: Path) -> str | None:
    return mounts.options(path)


def release(workdir: Path, name: str) -> list[str]:
    """Unmount the lab's mount point of a target and detach loop devices backed by its image.

    Only touches what the lab created; safe to call any number of times. Returns what it did.
    """
    done: list[str] = []
    mnt = mountpoint(workdir, name)
    if mounts.is_mounted(mnt) or mounts.below(mnt):
        safety.require_unmountable(mnt, workdir)
    done += _release_zfs(workdir, name, mnt)
    for _ in range(3):
        if not mounts.is_mounted(mnt):
            break
        res = proc.run(["umount", str(mnt)], check=False)
        if res.returncode == 0:
            done.append(f"unmounted {mnt}")
        else:
            time.sleep(0.5)
    if mounts.is_mounted(mnt):
        proc.run(["umount", "--lazy", str(mnt)], check=False)
        done.append(f"lazily unmounted {mnt}")
    image = image_path(workdir, name)
    if image.exists():
        for dev in _loops_backing(image):
            proc.run(["losetup", "-d", safety.require_detachable(dev, workdir)], check=False)
            done.append(f"detached {dev}")
    return done


def zfs_pool(workdir: Path, name: str) -> str:
    """The pool of a zfs target: pgfslab-<study>-<target> (the work directory is named after the study)."""
    return zfs.pool_name(workdir.name, name)


def _zfs_files(workdir: Path, name: str) -> tuple[Path, Path, Path]:
    """The zfs-fuse daemon's log and PID record (one per study work directory), and the directory of
    device symlinks `zpool import -d` searches for this target's pool."""
    return workdir / "zfs-fuse.log", workdir / "zfs-fuse.pid", workdir / "zfs-devices" / name


def zfs_service(workdir: Path, specs: list[dict[str, Any]]) -> contextlib.AbstractContextManager[Any]:
    """ZFS usable for the block when any of `specs` is a zfs target (zfs-fuse: the lab's daemon started
    now and stopped on every exit path, or a running one reused); otherwise nothing."""
    if not any(sp.get("fs") == "zfs" for sp in specs):
        return contextlib.nullcontext()
    log, pid_file, _ = _zfs_files(workdir, "")
    return zfs_daemon.service(log, pid_file=pid_file)


def _release_zfs(workdir: Path, name: str, mnt: Path) -> list[str]:
    """Export this target's pool if it is imported (only a pool the lab created: zfs.export_pool refuses
    any other) and unmount what a dead zfs-fuse daemon left under the mount point."""
    done: list[str] = []
    zfs_mounts = [m for m in mounts.below(mnt) if m.fstype in ("zfs", "fuse.zfs")]
    if not zfs_mounts and not (workdir / "zfs-devices" / name).exists():
        return done
    try:
        pool = zfs_pool(workdir, name)
        if proc.which("zpool") and pool in zfs.imported_pools():
            zfs.export_pool(pool)
            done.append(f"exported zfs pool {pool}")
    except LabError as exc:
        done.append(f"zfs pool of {name} not exported: {exc}")
    if not zfs_daemon.running_daemons():  # a dead daemon's mounts answer ENOTCONN: unmount them, deepest first
        for m in sorted(mounts.below(mnt), key=lambda m: len(m.target.parts), reverse=True):
            if m.fstype == "fuse.zfs":
                res = proc.run(["umount", str(m.target)], check=False)
                if res.returncode != 0:
                    proc.run(["umount", "--lazy", str(m.target)], check=False)
                done.append(f"unmounted dead zfs-fuse mount {m.target}")
    devdir = workdir / "zfs-devices" / name
    if devdir.is_dir():
        for link in devdir.iterdir():
            if link.is_symlink():
                link.unlink()
        with contextlib.suppress(OSError):
            devdir.rmdir()
    return done


def _attach(image: Path, direct_io: bool) -> str:
    cmd = ["losetup", "--find", "--show"]
    if direct_io:
        cmd.append("--direct-io=on")
    cmd.append(str(image))
    return proc.run(cmd).stdout.strip()


def _dio_on(dev: str) -> bool | None:
    out = proc.run(["losetup", "--list", "--noheadings", "--output", "DIO", dev], check=False).stdout.strip()
    return {"1": True, "0": False}.get(out)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _mkfs_command(name: str, spec: dict[str, Any], dev: str) -> list[str]:
    return [*MKFS[spec["fs"]], "-L", blockdev.lab_label(name, spec["fs"]), *spec.get("mkfs_options", []), dev]


def create(
    workdir: Path, name: str, spec: dict[str, Any], *, study: str | None = None, data_subvolume: bool = False
) -> dict[str, Any]:
    """Create the target afresh (image: a sparse image, formatted; device: checked, then formatted;
    tmpfs: mounted; existing: the lab's subdirectory emptied). Returns what was done (for provenance).

    `data_subvolume` (btrfs image/device targets; needed for snapshots): PGDATA's parent becomes a
    subvolume `data` on the new file system. `study` names the subdirectory of an existing target
    (default: the work directory's name, which is the study's)."""
    check_spec(name, spec)
    k = kind(spec)
    if data_subvolume and (spec["fs"] != "btrfs" or k not in ("image", "device")):
        raise LabError(
            f"target {name}: a data subvolume (for snapshots) needs a btrfs image or device target, "
            f"not {spec['fs']} ({k})"
        )
    if k == "dir":
        path = workdir / "dirs" / name
        safety.reset_dir(path, workdir)
        return {
            "fs": "dir",
            "kind": k,
            "fallback": False,
            "path": str(path),
            "reason": "configured as a plain directory",
        }
    if k == "existing":
        return _create_existing(workdir, name, spec, study or workdir.name)
    ok, why = mounting_allowed()
    if not ok:
        if k == "device":
            raise LabError(f"target {name}: cannot format and mount device {spec['device']}: {why}")
        path = workdir / "dirs" / name
        safety.reset_dir(path, workdir)
        _warn(f"target {name}: cannot mount ({why}); FALLING BACK to a plain directory {path}")
        return {"fs": spec["fs"], "kind": k, "fallback": True, "path": str(path), "reason": why}
    release(workdir, name)
    if spec["fs"] == "zfs":
        return _create_zfs(workdir, name, spec, study or workdir.name)
    if k == "tmpfs":
        return _create_tmpfs(workdir, name, spec)
    if k == "device":
        record = _create_device(workdir, name, spec)
    else:
        record = _create_image(workdir, name, spec)
    if data_subvolume:
        with _attached_and_mounted(workdir, name, spec) as (_dev, mnt, _s):
            btrfs.create_subvolume(mnt / DATA_SUBVOLUME)
        record["data_subvolume"] = DATA_SUBVOLUME
    return record


def _create_image(workdir: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    image = image_path(workdir, name)
    image.parent.mkdir(parents=True, exist_ok=True)
    image.unlink(missing_ok=True)
    size = int(spec["size_gb"] * 1024**3)
    with open(image, "wb") as fh:
        fh.truncate(size)
    mkfs = _mkfs_command(name, spec, str(image))
    t0 = time.monotonic()
    proc.run(mkfs, timeout=300)
    return {
        "fs": spec["fs"],
        "kind": "image",
        "fallback": False,
        "image": str(image),
        "image_bytes": size,
        "label": blockdev.lab_label(name, spec["fs"]),
        "mkfs_command": mkfs,
        "mkfs_s": round(time.monotonic() - t0, 3),
        "mkfs_version": proc.first_line([MKFS[spec["fs"]][0], "-V"]),
    }


def zfs_properties(name: str, spec: dict[str, Any], implementation: str) -> dict[str, str]:
    """The target's `zfs:` dataset properties as zfs strings, checked for the implementation that runs
    (LabError naming targets.<name>.zfs.<key> for what it cannot do)."""
    props = spec.get("zfs") or {}
    problems = zfs_property_problems(props, implementation)
    if problems:
        raise LabError(
            f"target {name} ({fs_label('zfs', implementation)}): targets.{name}." + f"; targets.{name}.".join(problems)
        )
    return validate_properties(props)


def _create_zfs(workdir: Path, name: str, spec: dict[str, Any], study: str) -> dict[str, Any]:
    """A sparse image on a loop device, a pool pgfslab-<study>-<target> on it (marked as the lab's), the
    dataset <pool>/data with the configured properties; exported again, the loop device detached."""
    pool = zfs.pool_name(study, name)
    image = image_path(workdir, name)
    mnt = mountpoint(workdir, name)
    with zfs_service(workdir, [spec]) as svc:
        impl = svc.implementation
        props = zfs_properties(name, spec, impl)  # before anything is made: a bad property costs nothing
        if pool in zfs.imported_pools():  # an earlier preparation's pool (its image is about to go)
            zfs.destroy_pool(pool)
        image.parent.mkdir(parents=True, exist_ok=True)
        image.unlink(missing_ok=True)
        size = int(spec["size_gb"] * 1024**3)
        with open(image, "wb") as fh:
            fh.truncate(size)
        dev = _attach(image, spec.get("direct_io", True))
        try:
            t0 = time.monotonic()
            made = zfs.create_pool(pool, dev, mnt, props, dataset=ZFS_DATASET)
            create_s = time.monotonic() - t0
            zfs.export_pool(pool)
        finally:
            release(workdir, name)
        return {
            "fs": "zfs",
            "kind": "image",
            "fallback": False,
            "image": str(image),
            "image_bytes": size,
            "implementation": impl,
            "fs_label": fs_label("zfs", impl),
            "pool": pool,
            "dataset": made.dataset,
            "properties": made.properties,
            "requested_properties": props,
            "mkfs_command": ["zpool", "create", "-f", "-o", "cachefile=none", "-m", str(mnt), pool, dev],
            "mkfs_s": round(create_s, 3),
            "mkfs_version": zfs_commands.version(impl),
            "daemon": {"started_pid": svc.started_pid, "reused_pids": svc.reused_pids, "start_s": svc.start_s},
            "notes": made.notes,
        }


def _create_device(workdir: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    dev, fs = spec["device"], spec["fs"]
    before = blockdev.check_device(dev, target=name, fs=fs, purpose="format")
    mkfs = _mkfs_command(name, spec, dev)
    t0 = time.monotonic()
    proc.run(mkfs, timeout=3600)
    mkfs_s = round(time.monotonic() - t0, 3)
    after = blockdev.check_device(dev, target=name, fs=fs, purpose="mount")
    return {
        "fs": fs,
        "kind": "device",
        "fallback": False,
        "device": dev,
        "device_bytes": after.size_bytes,
        "devno": after.devno,
        "label": after.label,
        "uuid": after.uuid,
        "previously": {"fstype": before.fstype, "label": before.label, "lab_owned": before.lab_owned},
        "mkfs_command": mkfs,
        "mkfs_s": mkfs_s,
        "mkfs_version": proc.first_line([MKFS[fs][0], "-V"]),
    }


def _tmpfs_source(name: str) -> str:
    return f"pgfslab-{name}"


def _create_tmpfs(workdir: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    mnt = mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    mnt.mkdir(parents=True, exist_ok=True)
    size = int(spec["size_gb"] * 1024**3)
    opts = ",".join([f"size={size}", "mode=0755", *spec.get("mount_options", [])])
    cmd = ["mount", "-t", "tmpfs", "-o", opts, _tmpfs_source(name), str(mnt)]
    t0 = time.monotonic()
    proc.run(cmd)
    return {
        "fs": "tmpfs",
        "kind": "tmpfs",
        "fallback": False,
        "mountpoint": str(mnt),
        "size_bytes": size,
        "mount_command": cmd,
        "mount_s": round(time.monotonic() - t0, 3),
        "mount_options": mounts.options(mnt),
        "note": "tmpfs lives in RAM: it stays mounted until release(); unmounting or a reboot loses it",
    }


def _create_existing(workdir: Path, name: str, spec: dict[str, Any], study: str) -> dict[str, Any]:
    base = Path(spec["path"])
    if not base.is_dir():
        raise LabError(f"target {name}: path {base} is not an existing directory")
    host = mounts.containing(base)
    if host.fstype in PSEUDO_FS:
        raise LabError(f"target {name}: path {base} is on {host.fstype} ({host.target}), not a file system for data")
    sub = existing_dir(spec, study, name)
    if sub.exists() or sub.is_symlink():
        info = safety.marker(sub) if safety.is_lab_dir(sub) else None
        if info is None or info.get("study") != study or info.get("target") != name:
            raise LabError(
                f"target {name}: {sub} exists but was not created by the lab for study {study} "
                f"target {name}; the lab never deletes what it did not create: move it away first"
            )
        safety.reset_dir(sub, workdir)
    else:
        sub.mkdir(mode=0o755)
        safety.mark(sub, study=study, target=name, created_at=_now())
    return {
        "fs": "existing",
        "kind": "existing",
        "fallback": False,
        "path": str(sub),
        "host_path": str(base),
        "host_mountpoint": str(host.target),
        "host_fs": host.fstype,
        "host_source": host.source,
        "host_mount_options": host.options_text,
        "note": "a file system the host already uses: other activity on it affects the results",
    }


def _unapplied(requested: list[str], effective: str | None) -> list[str]:
    """Requested mount options the kernel does not show (some are defaults it never shows)."""
    eff = (effective or "").split(",")
    return [o for o in requested if o not in eff and not any(e.startswith(o + ":") for e in eff)]


@contextlib.contextmanager
def _attached_and_mounted(workdir: Path, name: str, spec: dict[str, Any]) -> Iterator[tuple[str, Path, float]]:
    """Attach (image) or check (device), mount at the lab's mount point; always released after."""
    k = kind(spec)
    image = image_path(workdir, name)
    if k == "image" and not image.exists():
        raise LabError(f"target {name}: image {image} is missing; re-run its preparation (delete its target.json)")
    mnt = mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    release(workdir, name)  # a killed earlier run may have left our own mount or loop behind
    try:
        if k == "device":
            blockdev.check_device(spec["device"], target=name, fs=spec["fs"], purpose="mount")
            dev = spec["device"]
        else:
            dev = _attach(image, spec.get("direct_io", True))
        mnt.mkdir(parents=True, exist_ok=True)
        opts = ",".join(spec.get("mount_options", []))
        cmd = ["mount", "-t", spec["fs"]] + (["-o", opts] if opts else []) + [dev, str(mnt)]
        t0 = time.monotonic()
        proc.run(cmd)
        yield dev, mnt, time.monotonic() - t0
    finally:
        release(workdir, name)
        if not mounts.is_mounted(mnt):
            with contextlib.suppress(OSError):
                mnt.rmdir()  # only ever removes the empty mount point


@contextlib.contextmanager
def mounted(
    workdir: Path, name: str, spec: dict[str, Any], owner: str, *, study: str | None = None
) -> Iterator[Mounted]:
    """The created target, ready for a cluster, for the duration of the block. Image and device targets
    are mounted now and always released after; tmpfs and existing targets stay as they are."""
    pw = pwd.getpwnam(owner)
    fs, k = spec["fs"], kind(spec)
    dirpath = workdir / "dirs" / name
    image = image_path(workdir, name)
    if k == "dir" or (
        k in ("image", "tmpfs")
        and not image.exists()
        and dirpath.exists()
        and not mounts.is_mounted(mountpoint(workdir, name))
    ):
        fallback = fs != "dir"
        if fallback:
            _warn(f"target {name}: plain-directory FALLBACK at {dirpath} (not a {fs} file system)")
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        host_fs = mounts.containing(dirpath).fstype
        yield Mounted(
            name,
            fs if not fallback else f"{fs}->dir",
            dirpath,
            dirpath,
            fallback,
            mount_options=None,
            notes=[f"host file system: {host_fs or 'unknown'}"],
            kind="dir" if not fallback else f"{k}->dir",
        )
        return
    if k == "existing":
        sub = existing_dir(spec, study or workdir.name, name)
        if not safety.is_lab_dir(sub):
            raise LabError(f"target {name}: {sub} is missing or not the lab's; prepare the target first")
        os.chown(sub, pw.pw_uid, pw.pw_gid)
        host = mounts.containing(sub)
        yield Mounted(
            name,
            host.fstype,
            sub,
            host.target,
            False,
            device=host.source,
            mount_options=host.options_text,
            kind="existing",
            notes=[
                f"existing file system at {host.target}, shared with the host; used bytes count the whole file system"
            ],
        )
        return
    if k == "tmpfs":
        mnt = mountpoint(workdir, name)
        m = mounts.at(mnt)
        if m is None or m.fstype != "tmpfs" or m.source != _tmpfs_source(name):
            raise LabError(
                f"target {name}: no lab tmpfs is mounted at {mnt}; a tmpfs lives in RAM, so its data "
                "is gone after an unmount or a reboot: prepare the target again"
            )
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        yield Mounted(
            name,
            "tmpfs",
            mnt,
            mnt,
            False,
            device=m.source,
            mount_options=m.options_text,
            kind="tmpfs",
            notes=["tmpfs: pages live in RAM (and count against a memory cgroup that writes them)"],
        )
        return
    if fs == "zfs":
        with _zfs_mounted(workdir, name, spec, pw) as m:
            yield m
        return
    with _attached_and_mounted(workdir, name, spec) as (dev, mnt, mount_s):
        os.chown(mnt, pw.pw_uid, pw.pw_gid)
        path = mnt
        if fs == "btrfs" and btrfs.is_subvolume(mnt / DATA_SUBVOLUME):
            path = mnt / DATA_SUBVOLUME
            os.chown(path, pw.pw_uid, pw.pw_gid)
        effective = mounts.options(mnt)
        notes = [
            f"mount option {o} requested but not listed by the kernel (a default it does not show?)"
            for o in _unapplied(list(spec.get("mount_options", [])), effective)
        ]
        for note in notes:
            _warn(f"target {name}: {note}")
        yield Mounted(
            name,
            fs,
            path,
            mnt,
            False,
            device=dev,
            mount_options=effective,
            direct_io=_dio_on(dev) if k == "image" else None,
            notes=notes,
            kind=k,
            mount_s=round(mount_s, 4),
        )


@contextlib.contextmanager
def _zfs_mounted(workdir: Path, name: str, spec: dict[str, Any], pw: Any) -> Iterator[Mounted]:
    """Attach the image, `zpool import -d` the target's pool (its datasets mount), and on every exit path
    export it and detach the loop device (and stop the zfs-fuse daemon if this block started it)."""
    image = image_path(workdir, name)
    if not image.exists():
        raise LabError(f"target {name}: image {image} is missing; re-run its preparation (delete its target.json)")
    mnt = mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    pool = zfs_pool(workdir, name)
    with zfs_service(workdir, [spec]) as svc:
        release(workdir, name)  # a killed earlier run may have left our pool imported or our loop behind
        try:
            dev = _attach(image, spec.get("direct_io", True))
            devdir = zfs.device_dir([dev], _zfs_files(workdir, name)[2])
            t0 = time.monotonic()
            zfs.import_pool(pool, devdir)
            mount_s = time.monotonic() - t0
            ds = f"{pool}/{ZFS_DATASET}"
            path = Path(zfs.get_properties(ds, ["mountpoint"])["mountpoint"])
            os.chown(path, pw.pw_uid, pw.pw_gid)
            props = sorted(
                set(spec.get("zfs") or {}) | {"recordsize", "compression", "atime", "logbias", "primarycache"}
            )
            effective = zfs.get_properties(ds, [p for p in props if p in property_table()])
            notes = list(svc.notes)
            if svc.implementation == "zfs-fuse":
                notes.append(
                    "zfs-fuse: a userspace ZFS (pool version 23) behind FUSE; every I/O crosses into its daemon"
                )
            yield Mounted(
                name,
                "zfs",
                path,
                path,
                False,
                device=dev,
                mount_options=",".join(f"{k}={v}" for k, v in effective.items()),
                direct_io=_dio_on(dev),
                notes=notes,
                kind="image",
                mount_s=round(mount_s, 4),
                implementation=svc.implementation,
                zfs={"pool": pool, "dataset": ds, "properties": effective, "daemon_pid": svc.started_pid},
            )
        finally:
            release(workdir, name)
            if not mounts.below(mnt):
                with contextlib.suppress(OSError):
                    mnt.rmdir()


def _zfs_remount(workdir: Path, name: str, owner: str) -> Mounted:
    """After the zfs power cut (SIGKILL of the zfs-fuse daemon): start the daemon again and import the pool
    from its loop device (still attached), as a machine would after power came back. The caller's
    mounted() block still exports it and detaches the device."""
    svc = zfs_daemon.current_service()
    if svc is None:
        raise LabError(f"target {name}: no zfs-fuse daemon of the lab's to restart after the power cut")
    svc.restart()
    pool = zfs_pool(workdir, name)
    devdir = _zfs_files(workdir, name)[2]
    t0 = time.monotonic()
    zfs.import_pool(pool, devdir)
    mount_s = time.monotonic() - t0
    ds = f"{pool}/{ZFS_DATASET}"
    path = Path(zfs.get_properties(ds, ["mountpoint"])["mountpoint"])
    pw = pwd.getpwnam(owner)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    dev = next((str(p.resolve()) for p in devdir.iterdir() if p.is_symlink()), None)
    return Mounted(
        name,
        "zfs",
        path,
        path,
        False,
        device=dev,
        notes=[f"zfs-fuse restarted (pid {svc.started_pid}) and pool {pool} imported after the power cut"],
        kind="image",
        mount_s=round(mount_s, 4),
        implementation=svc.implementation,
        zfs={"pool": pool, "dataset": ds, "daemon_pid": svc.started_pid},
    )


def used_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def remount(workdir: Path, name: str, spec: dict[str, Any], owner: str) -> Mounted:
    """Unmount and detach an image target (after cut_power), then attach and mount it again: the file
    system replays its journal from what the image holds. The caller's mounted() block still owns the
    release: its exit unmounts and detaches this new mount too."""
    if kind(spec) != "image":
        raise LabError(f"target {name}: only an image target can be remounted after a power cut")
    if spec["fs"] == "zfs":
        return _zfs_remount(workdir, name, owner)
    mnt = mountpoint(workdir, name)
    safety.require_unmountable(mnt, workdir)
    notes = release(workdir, name)
    still = _loops_backing(image_path(workdir, name))
    if mounts.is_mounted(mnt) or still:
        # never mount an image a second time while the old mount lives on (lazily unmounted, its loop
        # device busy): two file systems writing one image would corrupt it
        raise LabError(
            f"target {name}: cannot mount it again after the power cut: "
            f"{'still mounted' if mounts.is_mounted(mnt) else 'its loop device ' + ', '.join(still) + ' is still busy'}"
            f" ({'; '.join(notes) or 'nothing released'}); a process may be stuck in the kernel"
        )
    dev = _attach(image_path(workdir, name), spec.get("direct_io", True))
    opts = ",".join(spec.get("mount_options", []))
    t0 = time.monotonic()
    proc.run(["mount", "-t", spec["fs"]] + (["-o", opts] if opts else []) + [dev, str(mnt)])
    mount_s = time.monotonic() - t0
    pw = pwd.getpwnam(owner)
    os.chown(mnt, pw.pw_uid, pw.pw_gid)
    path = mnt / DATA_SUBVOLUME if spec["fs"] == "btrfs" and btrfs.is_subvolume(mnt / DATA_SUBVOLUME) else mnt
    return Mounted(
        name,
        spec["fs"],
        path,
        mnt,
        False,
        device=dev,
        mount_options=mounts.options(mnt),
        direct_io=_dio_on(dev),
        notes=[f"remounted after a power cut: {'; '.join(notes)}"],
        kind="image",
        mount_s=round(mount_s, 4),
    )
