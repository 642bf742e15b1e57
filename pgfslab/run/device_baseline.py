"""Device baseline of a mounted target: short fio jobs and pg_test_fsync, raw outputs kept as files.

Jobs (each one fio run, its stdout -- the ``--output-format=json`` report, with whatever fio prints before
it -- saved as ``<out_dir>/<job>.json``, stderr as ``<job>.stderr`` when not empty):

=================== =====================================================================================
wal_qd1_fdatasync   the WAL commit floor: 8 kB sequential buffered writes, ``fdatasync`` after every
                    write, QD1, psync (what PostgreSQL does with wal_sync_method=fdatasync), into a file
                    written in full first (``overwrite=1``: like a zero-filled or recycled WAL segment, so
                    fdatasync has no allocation or size change to commit -- without it, ext4 gave 1140
                    instead of 6595 commits/s here: every write converted an unwritten extent). Per write:
                    ``write`` section (iops = durable commits/s, clat = the write() call), per fdatasync:
                    the job's ``sync`` section (``sync.lat_ns``: percentiles of the fdatasync calls).
randread_qd1/_qd32  8 kB random reads, direct=1, libaio (io_uring if libaio fails), iodepth 1 and 32
randwrite_qd1/_qd32 8 kB random writes, same
seqwrite_1m         1 MiB sequential writes, direct=1, iodepth 4, end_fsync=1
=================== =====================================================================================

``direct=1`` needs O_DIRECT on the target; when the probe (open with O_DIRECT + one aligned 4 KiB write)
fails, the jobs run buffered and carry ``description=buffered-fallback: <reason>`` (the parser's
``description`` column) -- the manifest says so too. On zfs-fuse, O_DIRECT works (FUSE direct I/O:
no kernel page cache) but zfs-fuse's own ARC (max-arc-size 100 MB in Debian's /etc/zfs/zfsrc) still caches:
the random-I/O file (``size``, default 256 MiB) is larger than that ARC on purpose.

``pg_test_fsync -s <secs> -f <dir>/pgfslab-pg_test_fsync.out``: stdout saved as ``pg_test_fsync.txt``.

zfs-fuse caveat (measured): pg_test_fsync's "write, close, fsync" test (open, write 8 kB, close, open, fsync,
close, ~9000 times/s) makes zfs-fuse allocate about 22 kB per operation (its ZIL blocks) that come back only
over the next minute or so (363 MB allocated after 2 s, 51 MB left 60 s later; all of it at export). On a
2 GiB pool pg_test_fsync -s 2 filled the pool (ALLOC 1.97G of 1.98G while the dataset used 597M), zfs-fuse
got pool-level write errors ("One or more devices are faulted in response to IO failures"), suspended the
pool (failmode=wait), and pg_test_fsync hung in fsync until the daemon was killed; importing that full pool
hung too. So on fuse.zfs the baseline demands ``ZFS_FUSE_PGTF_BYTES_PER_S`` x secs of extra free space.

Everything the baseline writes on the target is removed on every exit path. A ``manifest.json`` in
``out_dir`` records the fio version, the file system, the engine, direct or not, and every job's command.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab.config import device_profiles
from pgfslab.config.model import DeviceBaseline, Resources
from pgfslab.config.study import Study
from pgfslab.errors import LabError

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DATA_PREFIX = "pgfslab-fio-"
PGTF_FILE = "pgfslab-pg_test_fsync.out"
ENGINES = ("libaio", "io_uring")
ZFS_FUSE_PGTF_BYTES_PER_S = 1 << 30  # transient allocation of pg_test_fsync on zfs-fuse, with margin (see above)
# a command -> the command that runs it inside a cgroup (host.cgroups.Cgroup.command: a device profile's throttles)
Wrap = Callable[[list[str]], list[str]]


def _wrapped(cmd: list[str], wrap: Wrap | None) -> list[str]:
    return wrap(cmd) if wrap is not None else cmd


@dataclass
class FioJob:
    name: str
    args: list[str]  # fio arguments after `fio` (all job options after --name: they land in "job options")
    files: list[str]  # data files on the target this job uses
    expect_s: float  # rough duration, for the timeout


@dataclass
class Baseline:
    directory: str
    out_dir: str
    fio_version: str
    fs: dict[str, str]
    ioengine: str
    direct: bool
    direct_note: str
    duration_s: float
    size: str
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pg_test_fsync: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def _tool(name: str) -> str:
    p = shutil.which(name, path=SYSTEM_PATH)
    if p is None:
        raise LabError(f"device baseline: command not found: {name} (apt-get install {name})")
    return p


def fio_version() -> str:
    r = subprocess.run([_tool("fio"), "--version"], capture_output=True, text=True, timeout=30)
    return r.stdout.strip()


def _mount_of(path: Path) -> dict[str, str]:
    p = os.path.realpath(path)
    best = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
        if p == mp or p.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) >= len(best["mountpoint"]):
                best = {"mountpoint": mp, "fstype": r[0], "source": r[1], "options": f[5] + "," + r[2]}
    return best or {"mountpoint": "?", "fstype": "?", "source": "?", "options": ""}


def _size_bytes(size: str) -> int:
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", size)
    if not m:
        raise LabError(f"device baseline: size {size!r} must look like 256M")
    return int(m.group(1)) * 1024 ** " kmg".index((m.group(2) or " ").lower())


def probe_direct(directory: str | Path) -> tuple[bool, str]:
    """Can files in `directory` be opened with O_DIRECT and written with an aligned 4 KiB buffer?"""
    path = Path(directory) / f"{DATA_PREFIX}probe-direct"
    buf = mmap.mmap(-1, 4096)  # page aligned
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError as exc:
        return False, f"open(O_DIRECT) failed: {exc.strerror} (errno {exc.errno})"
    try:
        os.write(fd, buf)
    except OSError as exc:
        return False, f"aligned O_DIRECT write failed: {exc.strerror} (errno {exc.errno})"
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return True, "O_DIRECT open and aligned write work"


def probe_ioengine(directory: str | Path, direct: bool, wrap: Wrap | None = None) -> tuple[str, list[str]]:
    """The first of libaio, io_uring that runs a tiny fio job here; else psync (with notes why)."""
    notes: list[str] = []
    fname = str(Path(directory) / f"{DATA_PREFIX}probe-engine")
    try:
        for eng in ENGINES:
            cmd = [
                _tool("fio"),
                "--name=probe",
                f"--filename={fname}",
                "--size=1M",
                "--rw=randread",
                "--bs=4k",
                f"--direct={int(direct)}",
                f"--ioengine={eng}",
                "--iodepth=4",
                "--io_size=256k",
                "--output-format=json",
            ]
            r = subprocess.run(_wrapped(cmd, wrap), capture_output=True, text=True, timeout=60)
            err = None
            if r.returncode != 0:
                err = (r.stderr or r.stdout).strip().splitlines()[-1:] or [f"exit code {r.returncode}"]
            else:
                try:
                    start = r.stdout.index("{")
                    job = json.loads(r.stdout[start:])["jobs"][0]
                    if job.get("error"):
                        err = [f"job error {job['error']}"]
                except (ValueError, KeyError, IndexError) as exc:
                    err = [f"unreadable output ({exc})"]
            if err is None:
                return eng, notes
            notes.append(f"ioengine {eng} does not work here: {err[0]}")
    finally:
        Path(fname).unlink(missing_ok=True)
    notes.append("falling back to psync: iodepth above 1 is capped at 1 by fio")
    return "psync", notes


def plan(
    directory: str | Path,
    *,
    duration_s: float = 5,
    size: str = "256M",
    wal_size: str = "64M",
    ioengine: str = "libaio",
    direct: bool = True,
    description: str = "",
) -> list[FioJob]:
    """The fio jobs of the baseline (not run)."""
    d = Path(directory)
    rt = max(1, round(duration_s))
    # lat_percentiles: total-latency percentiles too (clat alone misleads where submission is synchronous,
    # e.g. libaio on zfs-fuse, where the I/O completes inside io_submit: slat ~78 us, clat ~1 us)
    common = ["--time_based", f"--runtime={rt}", "--lat_percentiles=1", "--output-format=json"]
    desc = [f"--description={description}"] if description else []
    rand = str(d / f"{DATA_PREFIX}rand.dat")
    wal = str(d / f"{DATA_PREFIX}wal.dat")
    seq = str(d / f"{DATA_PREFIX}seq.dat")
    jobs = [
        FioJob(
            "wal_qd1_fdatasync",
            [
                "--name=wal_qd1_fdatasync",
                f"--filename={wal}",
                f"--size={wal_size}",
                "--rw=write",
                "--bs=8k",
                "--ioengine=psync",
                "--iodepth=1",
                "--direct=0",
                "--fdatasync=1",
                "--overwrite=1",
                *desc,
                *common,
            ],
            [wal],
            rt,
        )
    ]
    for rw in ("randread", "randwrite"):
        for qd in (1, 32):
            name = f"{rw}_qd{qd}"
            jobs.append(
                FioJob(
                    name,
                    [
                        f"--name={name}",
                        f"--filename={rand}",
                        f"--size={size}",
                        f"--rw={rw}",
                        "--bs=8k",
                        f"--ioengine={ioengine}",
                        f"--iodepth={qd}",
                        f"--direct={int(direct)}",
                        *desc,
                        *common,
                    ],
                    [rand],
                    rt,
                )
            )
    jobs.append(
        FioJob(
            "seqwrite_1m",
            [
                "--name=seqwrite_1m",
                f"--filename={seq}",
                f"--size={size}",
                "--rw=write",
                "--bs=1M",
                f"--ioengine={ioengine}",
                "--iodepth=4",
                f"--direct={int(direct)}",
                "--end_fsync=1",
                *desc,
                *common,
            ],
            [seq],
            rt,
        )
    )
    return jobs


def run_fio_job(
    job: FioJob, out_dir: str | Path, *, timeout: float | None = None, wrap: Wrap | None = None
) -> dict[str, Any]:
    """Run one job (inside a cgroup when `wrap` is given); stdout to <out_dir>/<name>.json as fio printed
    it, stderr to <name>.stderr if any."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [_tool("fio"), *job.args]
    t0 = time.monotonic()
    try:
        r = subprocess.run(
            _wrapped(cmd, wrap), capture_output=True, text=True, timeout=timeout or (job.expect_s * 3 + 600)
        )
    except subprocess.TimeoutExpired:
        raise LabError(f"device baseline: fio job {job.name} timed out: {' '.join(cmd)}") from None
    seconds = round(time.monotonic() - t0, 2)
    jpath = out / f"{job.name}.json"
    jpath.write_text(r.stdout)
    spath = None
    if r.stderr.strip():
        spath = out / f"{job.name}.stderr"
        spath.write_text(r.stderr)
    rec = {
        "name": job.name,
        "cmd": cmd,
        "json": str(jpath),
        "stderr": str(spath) if spath else None,
        "rc": r.returncode,
        "seconds": seconds,
    }
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise LabError(
            f"device baseline: fio job {job.name} failed with exit code {r.returncode}: {tail} (output kept in {jpath})"
        )
    return rec


def run_pg_test_fsync(
    directory: str | Path, out_path: str | Path, *, secs: int = 2, binary: str, wrap: Wrap | None = None
) -> dict[str, Any]:
    """`pg_test_fsync -s <secs> -f <directory>/pgfslab-pg_test_fsync.out`; stdout saved to out_path."""
    if not Path(binary).exists():
        raise LabError(f"device baseline: {binary} not found (PostgreSQL 15 server package)")
    target = Path(directory) / PGTF_FILE
    cmd = [binary, "-s", str(int(secs)), "-f", str(target)]
    t0 = time.monotonic()
    try:
        r = subprocess.run(_wrapped(cmd, wrap), capture_output=True, text=True, timeout=secs * 20 + 300)
    except subprocess.TimeoutExpired:
        raise LabError(f"device baseline: pg_test_fsync timed out: {' '.join(cmd)}") from None
    finally:
        target.unlink(missing_ok=True)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(r.stdout)
    if r.stderr.strip():
        out.with_suffix(".stderr").write_text(r.stderr)
    rec = {"cmd": cmd, "text": str(out), "rc": r.returncode, "seconds": round(time.monotonic() - t0, 2)}
    if r.returncode != 0:
        raise LabError(
            f"device baseline: pg_test_fsync failed with exit code {r.returncode}: "
            f"{' | '.join(r.stderr.strip().splitlines()[-2:])} (output kept in {out})"
        )
    return rec


def cleanup(directory: str | Path) -> list[str]:
    """Remove the baseline's data files from the target (only files named pgfslab-fio-* and the
    pg_test_fsync file)."""
    removed = []
    for p in Path(directory).iterdir():
        if (p.name.startswith(DATA_PREFIX) or p.name == PGTF_FILE) and p.is_file():
            p.unlink()
            removed.append(p.name)
    return removed


def run_baseline(
    directory: str | Path,
    out_dir: str | Path,
    *,
    duration_s: float = 5,
    size: str = "256M",
    wal_size: str = "64M",
    pg_test_fsync_secs: int | None = 2,
    ioengine: str | None = None,
    jobs: list[str] | None = None,
    pg_test_fsync: str | None = None,
    wrap: Wrap | None = None,
) -> Baseline:
    """Probe O_DIRECT and the engine, run the fio jobs (all, or those named in `jobs`) and pg_test_fsync
    (None: skip) against `directory` (a mounted target), write the outputs and manifest.json to `out_dir`.
    With `wrap` the engine probe, fio and pg_test_fsync run inside a cgroup (a device profile's throttles)."""
    d = Path(directory)
    if not d.is_dir():
        raise LabError(f"device baseline: {d} is not a directory")
    if not os.access(d, os.W_OK):
        raise LabError(f"device baseline: {d} is not writable")
    need = 2 * _size_bytes(size) + _size_bytes(wal_size) + 64 * 2**20
    why_need = f"size={size}, wal_size={wal_size}"
    if pg_test_fsync_secs and _mount_of(d)["fstype"] == "fuse.zfs":
        need += ZFS_FUSE_PGTF_BYTES_PER_S * pg_test_fsync_secs
        why_need += (
            f", plus {ZFS_FUSE_PGTF_BYTES_PER_S >> 20} MiB per pg_test_fsync second: zfs-fuse frees the "
            "ZIL blocks of its write-close-fsync test slowly and a full pool suspends"
        )
    st = os.statvfs(d)
    if st.f_bavail * st.f_frsize < need:
        raise LabError(
            f"device baseline: {d} has {st.f_bavail * st.f_frsize // 2**20} MiB free, the jobs need "
            f"{need // 2**20} MiB ({why_need})"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    direct, why = probe_direct(d)
    desc = "" if direct else f"buffered-fallback: {why}"
    notes = [] if direct else [f"O_DIRECT does not work on {d} ({why}): direct=0, jobs labelled buffered-fallback"]
    try:
        if ioengine is None:
            ioengine, eng_notes = probe_ioengine(d, direct, wrap)
            notes += eng_notes
        bl = Baseline(
            str(d), str(out), fio_version(), _mount_of(d), ioengine, direct, why, duration_s, size, notes=notes
        )
        if bl.fs.get("fstype") == "fuse.zfs" and ioengine in ENGINES:
            bl.notes.append(
                f"zfs-fuse: {ioengine} I/O completes inside the submission (FUSE direct I/O is synchronous), so "
                "QD32 gives no concurrency over QD1 and the time is in slat, not clat: read total latency (lat)"
            )
        for job in plan(
            d, duration_s=duration_s, size=size, wal_size=wal_size, ioengine=ioengine, direct=direct, description=desc
        ):
            if jobs is None or job.name in jobs:
                bl.jobs.append(run_fio_job(job, out, wrap=wrap))
        if pg_test_fsync_secs:
            if pg_test_fsync is None:
                raise LabError("device baseline: no pg_test_fsync binary given")
            bl.pg_test_fsync = run_pg_test_fsync(
                d, out / "pg_test_fsync.txt", secs=pg_test_fsync_secs, binary=pg_test_fsync, wrap=wrap
            )
    finally:
        cleanup(d)
    (out / "manifest.json").write_text(json.dumps(asdict(bl), indent=1))
    return bl


# ----------------------------------------------------------------------------- the lab's stage

DEFAULTS: dict[str, Any] = {"duration_s": 2, "size": "128M", "wal_size": "32M", "pg_test_fsync_s": 1}
BASELINE_DIR = "device"  # data/raw/<study>/_setup/<target>/device/
WORK_SUBDIR = "pgfslab-device-baseline"  # on the mounted target, removed afterwards


def settings(conf: DeviceBaseline | None) -> dict[str, Any] | None:
    """The study's device-baseline settings with defaults, or None when it has none (`device_baseline`
    absent or `enabled: false`)."""
    if conf is None or conf.enabled is False:
        return None
    return {**DEFAULTS, **{k: v for k, v in conf.to_dict().items() if k != "enabled"}}


def baseline_target(study: Study, target: str) -> Path:
    """Mount a prepared target and measure it without PostgreSQL (PostgreSQL's cluster there is not
    started): the fio jobs and pg_test_fsync in a directory of the lab's on it, raw outputs and
    baseline.json (the record: target, file system as labelled, implementation, timings) under
    data/raw/<study>/_setup/<target>/device/. Returns baseline.json.

    A target with a device profile is measured on it, as its runs are: on the emulated disk under its loop
    device (the disk's model and its daemon's counters over the baseline recorded), or with fio and
    pg_test_fsync in a throttle profile's cgroup (what the cgroup was charged recorded); the record and the
    notes say the device is emulated."""
    from pgfslab.host import cgroups, disk_daemon, postgres
    from pgfslab.host.targets import mount as target_mount
    from pgfslab.host.zfs import target as zfs_target
    from pgfslab.records.baseline_record import BaselineRecord, Measured
    from pgfslab.records.run_record import CgroupRecord, DiskRecord, GitFacts, HostFacts, MountFacts
    from pgfslab.run import provenance
    from pgfslab.run.common import now, say, write_json

    conf = settings(study.device_baseline) or dict(DEFAULTS)
    tv = study.target_view(target)
    spec = tv.spec
    out = tv.setup_dir / BASELINE_DIR
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wd = tv.workdir
    bindir = postgres.bindir(study.postgres.bindir)
    label = f"device baseline {target}"
    record = BaselineRecord(study=study.study, target=target, spec=spec.to_dict(), settings=conf, started_at=now())
    profile = tv.spec.device_profile
    throttle = device_profiles.throttle(profile)
    if profile is not None:
        record.device_profile = device_profiles.describe(profile, tv.spec.device_model)
    t0 = time.monotonic()
    with (
        zfs_target.zfs_service(wd, [spec]),
        target_mount.mounted(wd, target, spec, study.postgres.user, study=study.study) as mnt,
        cgroups.limited(
            cgroups.cgroup_name(study.study, target),  # the runs' own: they wait for the baseline
            # the device's throttles only: the memory limit is the runs' "RAM", not the device's
            cgroups.limits_from_config(Resources(blkio=device_profiles.blkio(throttle)), mnt.device, throttle)
            if throttle is not None
            else cgroups.Limits(),
        ) as cg,
    ):
        record.mount = MountFacts.model_validate(mnt.describe())
        record.fs_label = mnt.fs_label
        disk_before = disk_daemon.counters(target) if mnt.disk else None
        work = mnt.path / WORK_SUBDIR  # on the lab's own mounted target
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        say(
            label,
            f"fio {conf['duration_s']} s per job and pg_test_fsync -s {conf['pg_test_fsync_s']} on {mnt.fs_label}",
        )
        try:
            bl = run_baseline(
                work,
                out,
                duration_s=conf["duration_s"],
                size=conf["size"],
                wal_size=conf["wal_size"],
                pg_test_fsync_secs=conf["pg_test_fsync_s"] or None,
                pg_test_fsync=str(bindir / "pg_test_fsync"),
                wrap=cg.command if cg.active else None,
            )
            if profile is not None:
                bl.notes.append(emulated_note(profile, mnt.device, mnt.disk))
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if cg.active:
                record.cgroup = CgroupRecord.model_validate({**cg.record, "usage": cg.usage()})
        if mnt.disk:
            disk_daemon.require_alive(target)
            record.disk = DiskRecord(
                model=mnt.disk.get("model"),
                daemon=mnt.disk.get("daemon"),
                counters=disk_daemon.delta(disk_before, disk_daemon.counters(target)),
            )
    record.baseline = Measured.model_validate(asdict(bl))
    record.wall_s = round(time.monotonic() - t0, 2)
    record.ended_at = now()
    record.host = HostFacts.model_validate(provenance.host())
    record.git = GitFacts.model_validate(provenance.git())
    write_json(out / "baseline.json", record.to_json())
    say(label, f"done in {record.wall_s:.0f} s")
    return out / "baseline.json"


def emulated_note(profile: str, device: str | None, disk: dict[str, Any] | None = None) -> str:
    """The baseline's note on an emulated device: which profile, on which device, and what it leaves out."""
    if device_profiles.is_disk(profile):
        model = (disk or {}).get("model") or {}
        derived = model.get("derived") or {}
        return (
            f"{device or 'the device'} is on the emulated disk `{profile}` ({model.get('drive') or profile}: one head, "
            f"one queue for reads and writes, seek + rotation + zoned transfer; modelled 8 kB random read "
            f"{derived.get('random_8k_read_ms', '?')} ms, sequential {derived.get('sequential_mb_s', '?')} MB/s); "
            "not emulated: a write cache, command queueing (requests are served in arrival order)"
        )
    b = device_profiles.blkio(profile)
    return (
        f"{device or 'the device'} emulates `{profile}` (blkio throttle: {b.read_iops} read and {b.write_iops} "
        f"write operations/s, {b.read_bps} read and {b.write_bps} write per second; {device_profiles.source(profile)}); "
        "not emulated: seeks, the page cache in front, background write-back (cgroup v1)"
    )
