"""The emulated disk checked with fio before any study uses it: against its model and the datasheet.

On a scratch image served by the daemon, with a direct-I/O loop device on it (what a target gets), fio runs
on the raw loop device, one job after the other:

* 8 kB random reads at QD1 over the whole device: the rate the model predicts (with the default span the
  file stands for the whole drive, so the mean seek is the datasheet's average seek);
* 1 MiB sequential reads and writes at QD4 from the start: the modelled media rate of the zones they cover;
* the property the blkio throttle lacked: the same random reads alone and with a concurrent stream of 1 MiB
  sequential writes (QD4) elsewhere on the device. On one head in one FIFO queue each read waits behind the
  writes queued before it: its latency rises several-fold, as the model's own simulation of the two streams
  says. With `throttle`, the same pair on a plain loop device under the `hdd-throttle` blkio limits, whose
  separate read budget leaves the reads where they were;
* the daemon's own CPU time per request (getrusage of the daemon, from its counters), against the modelled
  service time; with `own_cost`, the random reads again with a daemon that does no backing I/O (the
  emulation's own cost: the FUSE round trip and the timed sleep).

`pgfslab disk-validate` runs it and writes `validation.md` and `validation.json` to its output directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.config import device_profiles, disk_model
from pgfslab.config.model import Resources
from pgfslab.errors import LabError
from pgfslab.host import cgroups, disk_daemon, loop_devices, safety

Wrap = Callable[[list[str]], list[str]]
PRESET = device_profiles.DISKS["hdd"]  # the disk `device_profile: hdd` stands for
THROTTLE = "hdd-throttle"  # the blkio throttle profile compared against


@dataclass
class Row:
    """One line of the validation table."""

    check: str
    unit: str
    model: float | None
    measured: float
    ratio: float | None = None
    tolerance: str = ""
    ok: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _fio(dev: str, seconds: float, jobs: list[list[str]], wrap: Wrap | None = None) -> list[dict[str, Any]]:
    """fio on `dev`, each job a list of its options; the jobs of one call run at the same time."""
    cmd = ["fio", "--output-format=json", f"--filename={dev}", "--direct=1", f"--runtime={seconds}", "--time_based"]
    for j in jobs:
        cmd += j
    if wrap is not None:
        cmd = wrap(cmd)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 4 + 60)
    if r.returncode != 0:
        raise LabError(f"fio failed ({' '.join(cmd)}): {r.stderr.strip()[-400:]}")
    out = r.stdout
    return list(json.loads(out[out.index("{") :])["jobs"])


def _lat_ms(job: dict[str, Any], direction: str) -> float:
    return float(job[direction]["clat_ns"]["mean"]) / 1e6


RANDREAD = ["--name=randread", "--rw=randread", "--bs=8k", "--ioengine=psync", "--iodepth=1"]


def simulate_mixed(
    m: disk_model.Model, seconds: float, write_piece: int, pieces: int, write_start: int, read_block: int = 8192
) -> dict[str, float]:
    """The model's own prediction for random reads at QD1 beside a sequential write stream with `pieces`
    requests of `write_piece` bytes outstanding from `write_start`: one FIFO queue, one head, requests
    issued again the moment they complete (fio's). Returns the reads' mean latency (ms) and rate, the writes'
    MB/s."""
    rng = random.Random(42)
    blocks = m.size // read_block
    queue: list[tuple[bool, int, int, float]] = []  # (write, offset, length, arrival)
    woff = write_start
    for _ in range(pieces):
        queue.append((True, woff, write_piece, 0.0))
        woff += write_piece
    queue.append((False, rng.randrange(blocks) * read_block, read_block, 0.0))
    t, head = 0.0, None
    lat, reads, written = [], 0, 0
    end = seconds * 1e9
    while t < end:
        write, off, length, arrival = queue.pop(0)
        start = max(t, arrival)
        parts, head = m.service(write, off, length, start, head, queued=arrival <= t)
        t = start + sum(parts)
        if write:
            written += length
            if woff + write_piece > m.size:
                woff = write_start
            queue.append((True, woff, write_piece, t))
            woff += write_piece
        else:
            lat.append(t - arrival)
            reads += 1
            queue.append((False, rng.randrange(blocks) * read_block, read_block, t))
    return {
        "read_ms": sum(lat) / len(lat) / 1e6 if lat else float("nan"),
        "read_iops": reads / seconds,
        "write_mb_s": written / seconds / 1e6,
    }


@contextlib.contextmanager
def _scratch(base: Path | None) -> Iterator[Path]:
    """A scratch work directory for the image and the mount point (removed after)."""
    root = base or paths.LAB / "data" / "work"
    root.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="disk-validation-", dir=root))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def _loop(path: Path, workdir: Path) -> Iterator[str]:
    dev = loop_devices.attach(path, True)
    try:
        if loop_devices.direct_io_on(dev) is not True:
            raise LabError(f"{dev} over {path}: direct I/O could not be turned on")
        yield dev
    finally:
        subprocess.run(["losetup", "-d", safety.require_detachable(dev, workdir)], capture_output=True)


def _cpu(d: dict[str, int]) -> int:
    return d.get("cpu_user_ns", 0) + d.get("cpu_sys_ns", 0)


def validate(
    *,
    seconds: float = 5,
    size_gb: float = 4,
    overrides: dict[str, Any] | None = None,
    throttle: bool = False,
    own_cost: bool = False,
    base: Path | None = None,
    quick: bool = False,
    seq_tolerance: float = 0.10,
) -> dict[str, Any]:
    """Run the validation (root, FUSE, fio) and return its rows and the model it checked. `quick`: the random
    reads, the sequential reads and the mixed pair only (the test's short version). `seq_tolerance`: how far
    the sequential rates may fall from the model (the host's share of each 1 MiB request, the kernel's copy of
    it through the daemon, grows when other work holds the CPUs)."""
    for tool in ("fio", "losetup"):
        if shutil.which(tool) is None:
            raise LabError(f"disk validation: {tool} not found")
    why = disk_daemon.fuse_problem()
    if why:
        raise LabError(f"disk validation: {why}")
    size = int(size_gb * 2**30)
    m = disk_model.model(PRESET, overrides, size)
    rows: list[Row] = []
    info: dict[str, Any] = {"seconds": seconds, "size_bytes": size, "model": m.describe(), "fio": _fio_version()}
    with _scratch(base) as wd:
        image = wd / "images" / "validation.img"
        image.parent.mkdir(parents=True)
        with open(image, "wb") as fh:
            fh.truncate(size)
        with disk_daemon.served(wd, "validation", image, m) as disk, _loop(disk.file, wd) as dev:
            info["device"] = dev
            info["daemon"] = disk.record()["daemon"]

            def measured(jobs: list[list[str]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
                before = disk.stats()
                out = _fio(dev, seconds, jobs)
                d = disk_daemon.delta(before, disk.stats())
                assert d is not None
                return out, d

            # random reads alone
            (rr,), d = measured([RANDREAD])
            want = 1000 / m.random_service_ms(8192)
            got = float(rr["read"]["iops"])
            service_ms = d["read_service_ns"] / max(d["reads"], 1) / 1e6
            rows.append(
                Row(
                    "8 kB random reads, QD1",
                    "IOPS",
                    want,
                    got,
                    got / want,
                    "within 10 %",
                    abs(got / want - 1) <= 0.10,
                    {
                        "latency_ms": _lat_ms(rr, "read"),
                        "modelled_service_ms": service_ms,
                        "cpu_us_per_request": _cpu(d) / max(d["requests"], 1) / 1e3,
                        "cpu_share_of_service": _cpu(d) / max(d["read_service_ns"], 1),
                    },
                )  # fmt: skip
            )
            alone_ms = _lat_ms(rr, "read")
            # sequential reads and writes from the start of the device
            for rw, direction in (("read", "read"), ("write", "write")):
                if quick and rw == "write":
                    continue
                (job,), d = measured([[f"--name=seq{rw}", f"--rw={rw}", "--bs=1M", "--ioengine=libaio", "--iodepth=4"]])
                done = int(job[direction]["io_bytes"])
                want = m.sequential_mb_s(0, max(done, 1 << 20))
                got = float(job[direction]["bw_bytes"]) / 1e6
                rows.append(
                    Row(
                        f"1 MiB sequential {rw}s, QD4",
                        "MB/s",
                        want,
                        got,
                        got / want,
                        f"within {seq_tolerance:.0%}",
                        abs(got / want - 1) <= seq_tolerance,
                        {
                            "requests": d["requests"],
                            "queued_share": d["queued"] / max(d["requests"], 1),
                            "late": d["late"],
                            "late_ms": d["late_ns"] / 1e6,
                            "bytes_per_request": (d["read_bytes"] + d["write_bytes"]) / max(d["requests"], 1),
                            "cpu_us_per_request": _cpu(d) / max(d["requests"], 1) / 1e3,
                        },
                    )  # fmt: skip
                )
            # random reads beside a sequential write stream in the second half of the device
            half = (size // 2) // (1 << 20) * (1 << 20)
            writer = [
                "--name=seqwrite",
                "--rw=write",
                "--bs=1M",
                "--ioengine=libaio",
                "--iodepth=4",
                f"--offset={half}",
            ]
            jobs, d = measured([RANDREAD, writer])
            rr, ww = jobs
            piece = d["write_bytes"] // max(d["writes"], 1)
            sim = simulate_mixed(m, max(seconds, 5), piece, max(1, round(4 * (1 << 20) / piece)), half)
            got = _lat_ms(rr, "read")
            rows.append(
                Row(
                    "8 kB random reads, QD1, beside 1 MiB sequential writes (QD4)",
                    "read latency ms",
                    sim["read_ms"],
                    got,
                    got / sim["read_ms"],
                    "within 25 % of the model; > 2x alone",
                    got > 2 * alone_ms and abs(got / sim["read_ms"] - 1) <= 0.25,
                    {
                        "alone_ms": alone_ms,
                        "rise": got / alone_ms,
                        "read_iops": float(rr["read"]["iops"]),
                        "model_read_iops": sim["read_iops"],
                        "write_mb_s": float(ww["write"]["bw_bytes"]) / 1e6,
                        "model_write_mb_s": sim["write_mb_s"],
                        "write_bytes_per_request": piece,
                        "reads_after_write": d["reads_after_write"],
                        "queued_reads": d["queued_reads"],
                    },
                )  # fmt: skip
            )
        if own_cost:
            with disk_daemon.served(wd, "validation", image, m, discard=True) as disk, _loop(disk.file, wd) as dev:
                before = disk.stats()
                (rr,), after = _fio(dev, seconds, [RANDREAD]), disk.stats()
                cost = disk_daemon.delta(before, after)
                assert cost is not None
                d = cost
                rows.append(
                    Row(
                        "the daemon's own CPU per request (no backing I/O), 8 kB random reads",
                        "µs",
                        None,
                        _cpu(d) / max(d["requests"], 1) / 1e3,
                        None,
                        "below 1 % of the modelled service",
                        _cpu(d) / max(d["read_service_ns"], 1) < 0.01,
                        {
                            "share_of_service": _cpu(d) / max(d["read_service_ns"], 1),
                            "modelled_service_ms": d["read_service_ns"] / max(d["reads"], 1) / 1e6,
                        },
                    )  # fmt: skip
                )
        if throttle:
            rows += _throttle_rows(image, wd, seconds)
    return {**info, "rows": [asdict(r) for r in rows], "ok": all(r.ok is not False for r in rows)}


def _throttle_rows(image: Path, wd: Path, seconds: float) -> list[Row]:
    """The same random reads, alone and beside the write stream, on a plain direct-I/O loop device of the
    image under the legacy `hdd-throttle` blkio limits (separate read and write budgets)."""
    if "io" not in cgroups.find():
        return []
    out = []
    with _loop(image, wd) as dev:
        limits = cgroups.limits_from_config(Resources(blkio=device_profiles.blkio(THROTTLE)), dev, THROTTLE)
        with cgroups.limited(f"disk-validation-{os.getpid()}", limits) as cg:
            (alone,) = _fio(dev, seconds, [RANDREAD], cg.command)
            half = (image.stat().st_size // 2) // (1 << 20) * (1 << 20)
            writer = [
                "--name=seqwrite",
                "--rw=write",
                "--bs=1M",
                "--ioengine=libaio",
                "--iodepth=4",
                f"--offset={half}",
            ]
            rr, ww = _fio(dev, seconds, [RANDREAD, writer], cg.command)
        a, b = _lat_ms(alone, "read"), _lat_ms(rr, "read")
        out.append(
            Row(
                "hdd-throttle (blkio): the same reads beside the write stream",
                "read latency ms",
                None,
                b,
                None,
                "for contrast",
                None,
                {
                    "alone_ms": a,
                    "rise": b / a,
                    "read_iops_alone": float(alone["read"]["iops"]),
                    "read_iops": float(rr["read"]["iops"]),
                    "write_mb_s": float(ww["write"]["bw_bytes"]) / 1e6,
                },
            )  # fmt: skip
        )
    return out


def _fio_version() -> str:
    r = subprocess.run(["fio", "--version"], capture_output=True, text=True)
    return r.stdout.strip()


def table(result: dict[str, Any]) -> str:
    """The validation as a Markdown table, with the model's parameters and the daemon it ran."""
    lines = [
        "| check | unit | model | measured | measured / model | tolerance | ok | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        notes = ", ".join(f"{k} {_fmt(v)}" for k, v in r["extra"].items())
        lines.append(
            f"| {r['check']} | {r['unit']} | {_fmt(r['model'])} | {_fmt(r['measured'])} | {_fmt(r['ratio'])} "
            f"| {r['tolerance']} | {'' if r['ok'] is None else ('yes' if r['ok'] else 'NO')} | {notes} |"
        )
    m = result["model"]
    d = m["derived"]
    head = (
        f"Emulated disk `{m['preset']}`: {m['drive']} ({m['source']}). File {result['size_bytes'] / 2**30:.1f} GiB, "
        f"span {d['span']:.4g} of the stroke; revolution {d['revolution_ms']} ms; modelled 8 kB random read "
        f"{d['random_8k_read_ms']} ms; sequential {d['sequential_mb_s']} MB/s over the file. fio {result['fio']}, "
        f"{result['seconds']} s per job, on {result.get('device')}.\n\n"
    )
    return head + "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


def write(result: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "validation.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    md = out / "validation.md"
    md.write_text(table(result))
    return md
