"""fsmicro: file-system micro-benchmarks (seed 003), timed per operation in Python, no fio.

One invocation runs one operation type in a subdirectory it creates under `--dir` (on the target
file system) and removes afterwards, until a duration or a count is reached. It writes

* `<out>/fsmicro_ops.csv`: `op,start_ns,latency_ns`, one row per operation. `op` is the benchmark
  name (seed-style, e.g. `create_empty`, `delete_10k_2MB`), `start_ns` the operation's start in epoch
  nanoseconds (time.perf_counter_ns shifted by one time.time_ns() reading, so it lines up with the
  meminfo sampler), `latency_ns` the timed part (perf_counter_ns difference).
* stdout: the result block of pebble's `bench fs` (cmd/pebble/fsbench.go in cockroachdb/pebble, the
  tool seed 003 ran; it prints with the cockroach workload histogram layout), e.g.

      ____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)
      create_emp   600.0s         386438          644.1      1.6      1.6      2.0      2.5     67.1

      fsbench/create_empty  386438 644.1 ops/sec

  Go format of the row: "%10s %7.1fs %14d %14.1f %8.1f %8.1f %8.1f %8.1f %8.1f" with the name cut to
  10 characters; `--ms-decimals N` (N != 1) switches the five latency columns to pebble's later
  "%5.Nf" (N=5 is the layout of seed 003's delete_small_dir/delete_large_dir tables). A stopped run
  ends with a line `# partial: <reason>`.
* stderr: the resolved parameters, progress every few seconds, errors.

Statistics: exact, over all recorded latencies (no histogram buckets): avg = mean; p50/p95/p99 are
numpy.percentile(..., method="inverted_cdf") (nearest rank: the smallest recorded latency with at
least q % of operations at or below it, always an observed value); pMax = the largest latency.
ops/sec(cum) = ops / elapsed, elapsed = wall time of the measured loop (set-up excluded, untimed
parts of each operation included, as in pebble).

Exit status: 0 done; 2 bad input or refused (nothing created); 1 an operation or the clean-up failed
(results so far written, marked partial); 128+signal when stopped by SIGINT/SIGTERM (results so far
written, marked partial).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import signal
import sys
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from pgfslab.config.model import Workload
from pgfslab.progress import Progress
from pgfslab.tools.fsmicro import FsmicroOptions
from pgfslab.tools.fsmicro_ops import (
    CHUNK,
    CSV_NAME,
    HEADER,
    OPS,
    OWN_NAME,
    PARAMS,
    PERCENTILE_METHOD,
    QUANTILES,
    SUBDIR,
    label,
    needs,
    resolve,
)

# ---------------------------------------------------------------------------------------------------
# operations and their parameters


# ---------------------------------------------------------------------------------------------------
# the benchmarks


def syncfs(fd: int) -> None:
    """syncfs(2) of the file system holding `fd`: write back and commit everything of that file system
    only (os.sync() would flush every file system of the machine). A FUSE file system (zfs-fuse) has
    received every write already; it commits them with its own transaction groups."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"syncfs: {os.strerror(err)}")


class Stop:
    """Set by SIGINT/SIGTERM (or an error): the loop ends after the current operation."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.signum: int | None = None

    def __bool__(self) -> bool:
        return self.reason is not None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.reason is None:
            self.reason, self.signum = "interrupted", signum


Tick = Callable[[str, bool], None]  # Progress.update(text, force): rate-limited unless forced


class Bench:
    """A work directory it owns, the file content, and one timed operation (`step`)."""

    def __init__(self, path: Path, params: Mapping[str, Any]) -> None:
        self.path = path
        self.p = params
        self.dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        block = os.urandom(CHUNK) if params.get("fill") == "random" else b"a" * CHUNK
        self.block = memoryview(block)
        self.exhausted = False
        self.dirpath = str(path)

    # helpers ------------------------------------------------------------------------------------
    def write(self, fd: int, n: int) -> None:
        while n > 0:
            n -= os.write(fd, self.block[: min(n, CHUNK)])

    def make_file(self, name: str, size: int, keep_open: bool = False, sync: bool = True) -> int:
        """Create, write and (unless not `sync`) fsync a file; closed unless keep_open (then its fd is returned)."""
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=self.dfd)
        try:
            if size:
                self.write(fd, size)
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        if keep_open:
            return fd
        os.close(fd)
        return -1

    def make_files(self, prefix: str, n: int, size: int, stop: Stop, tick: Tick, what: str) -> None:
        for i in range(n):
            if stop:
                return
            self.make_file(f"{prefix}{i}", size, sync=self.sync_each)
            tick(f"set-up: {what} {i + 1}/{n} files", False)

    @property
    def sync_each(self) -> bool:
        """Is every pre-created file fsynced as it is made (setup_sync 'each'), or the file system once at
        the end of the set-up ('end')?"""
        return self.p.get("setup_sync", "each") == "each"

    # protocol -----------------------------------------------------------------------------------
    def setup(self, stop: Stop, tick: Tick) -> None:
        self.make_files("pre_temp_", self.p["bg_files"], self.p["bg_size_bytes"], stop, tick, "background")
        if not self.sync_each and not stop:
            tick("set-up: syncfs", True)
            syncfs(self.dfd)
        os.fsync(self.dfd)

    def step(self) -> tuple[int, int]:
        """One operation: (start, latency) in perf_counter nanoseconds."""
        raise NotImplementedError

    def close(self) -> None:
        os.close(self.dfd)


class CreateFsync(Bench):
    def __init__(self, path: Path, params: Mapping[str, Any]) -> None:
        super().__init__(path, params)
        self.n = 0

    def step(self) -> tuple[int, int]:
        name, size = f"temp_{self.n}", self.p["size_bytes"]
        t0 = time.perf_counter_ns()
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=self.dfd)
        try:
            os.fsync(self.dfd)
            if size:
                self.write(fd, size)
                os.fsync(fd)
        finally:
            os.close(fd)
        t1 = time.perf_counter_ns()
        self.n += 1
        return t0, t1 - t0


class DeleteFiles(Bench):
    def __init__(self, path: Path, params: Mapping[str, Any]) -> None:
        super().__init__(path, params)
        self.left = 0

    def setup(self, stop: Stop, tick: Tick) -> None:
        files = self.p["files"]
        for i in range(files):
            if stop:
                return
            self.make_file(f"temp_{i}", self.p["size_bytes"], sync=self.sync_each)
            self.left = i + 1
            tick(f"set-up: {i + 1}/{files} files to delete", False)
        super().setup(stop, tick)

    def step(self) -> tuple[int, int]:
        name = f"temp_{self.left - 1}"
        t0 = time.perf_counter_ns()
        os.unlink(name, dir_fd=self.dfd)
        if self.p["fsync_dir"]:
            os.fsync(self.dfd)
        t1 = time.perf_counter_ns()
        self.left -= 1
        self.exhausted = self.left == 0
        return t0, t1 - t0


class DeleteInDir(Bench):
    def step(self) -> tuple[int, int]:
        fd = self.make_file("newfile", self.p["size_bytes"], keep_open=self.p["unlink_open"])
        try:
            t0 = time.perf_counter_ns()
            os.unlink("newfile", dir_fd=self.dfd)
            if self.p["fsync_dir"]:
                os.fsync(self.dfd)
            t1 = time.perf_counter_ns()
        finally:
            if fd >= 0:
                os.close(fd)  # unlink_open: the blocks are freed here, outside the timer
        return t0, t1 - t0


class _Appending(Bench):
    """Appends size_bytes per iteration to temp_<k>, rolling over at max_file_bytes."""

    def __init__(self, path: Path, params: Mapping[str, Any]) -> None:
        super().__init__(path, params)
        self.k = 0
        self.written = 0
        self.fd = os.open("temp_0", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=self.dfd)

    def append(self) -> None:
        size = self.p["size_bytes"]
        if self.written + size > self.p["max_file_bytes"]:
            os.close(self.fd)
            self.fd = -1
            self.k += 1
            self.written = 0
            self.fd = os.open(f"temp_{self.k}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=self.dfd)
        self.written += size
        self.write(self.fd, size)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        super().close()


class WriteFsync(_Appending):
    def step(self) -> tuple[int, int]:
        self.append()
        t0 = time.perf_counter_ns()
        os.fsync(self.fd)
        t1 = time.perf_counter_ns()
        return t0, t1 - t0


class Statfs(_Appending):
    def step(self) -> tuple[int, int]:
        self.append()
        os.fsync(self.fd)
        t0 = time.perf_counter_ns()
        os.statvfs(self.dirpath)
        t1 = time.perf_counter_ns()
        return t0, t1 - t0


BENCHES: dict[str, type[Bench]] = {
    "create_fsync": CreateFsync,
    "delete": DeleteFiles,
    "delete_small_dir": DeleteInDir,
    "delete_large_dir": DeleteInDir,
    "write_fsync": WriteFsync,
    "statfs": Statfs,
}


# ---------------------------------------------------------------------------------------------------
# measuring, summarising, printing


@dataclass
class Result:
    name: str
    start_ns: array[int]  # epoch ns
    latency_ns: array[int]
    elapsed_s: float
    partial: str | None  # reason the run stopped early, None if it completed


def measure(bench: Bench, params: Mapping[str, Any], stop: Stop, tick: Tick, name: str, progress_ns: int) -> Result:
    """Run `bench.step` until duration/count/exhaustion/stop; keep every (start, latency)."""
    starts, lats = array("q"), array("q")
    count, duration = params["count"], params["duration_s"]
    t_start = time.perf_counter_ns()
    to_epoch = time.time_ns() - time.perf_counter_ns()
    deadline = t_start + int(duration * 1e9) if duration is not None else None
    now = t_start
    next_progress = t_start + progress_ns
    while not stop and not bench.exhausted and (count is None or len(lats) < count):
        try:
            t0, lat = bench.step()
        except OSError as exc:
            stop.reason = (
                "no space left on device"
                if exc.errno == errno.ENOSPC
                else f"error: {exc.strerror or exc} ({type(exc).__name__})"
            )
            break
        starts.append(t0 + to_epoch)
        lats.append(lat)
        now = time.perf_counter_ns()
        if deadline is not None and now >= deadline:
            break
        if now >= next_progress:
            next_progress = now + progress_ns
            el = (now - t_start) / 1e9
            tick(
                f"t={el:.1f}"
                + (f"/{duration:g}" if duration else "")
                + f" s  {len(lats)} ops"
                + f"  {len(lats) / el:.1f} ops/s",
                True,
            )
    return Result(name, starts, lats, (now - t_start) / 1e9, stop.reason)


def summary(lat_ns: np.ndarray) -> dict[str, float]:
    """avg, p50, p95, p99, pMax in milliseconds (zeros when there were no operations)."""
    if lat_ns.size == 0:
        return dict.fromkeys(("avg", "p50", "p95", "p99", "max"), 0.0)
    q = np.percentile(lat_ns, QUANTILES, method=PERCENTILE_METHOD)
    return {
        "avg": float(lat_ns.mean()) / 1e6,
        "p50": float(q[0]) / 1e6,
        "p95": float(q[1]) / 1e6,
        "p99": float(q[2]) / 1e6,
        "max": float(lat_ns.max()) / 1e6,
    }


def format_row(name: str, elapsed_s: float, n: int, ms: Mapping[str, float], ms_decimals: int = 1) -> str:
    """pebble's "%10s %7.1fs %14d %14.1f %8.1f %8.1f %8.1f %8.1f %8.1f" (name cut to 10 characters);
    with ms_decimals N != 1 the latency columns are "%5.Nf" as in pebble's later fsbench."""
    rate = n / elapsed_s if elapsed_s > 0 else 0.0
    fmt = "%8.1f" if ms_decimals == 1 else f"%5.{ms_decimals}f"
    return (
        "%10s %7.1fs %14d %14.1f " % (name[:10], elapsed_s, n, rate)  # noqa: UP031 (Go printf layout, verbatim)
        + " ".join(fmt % ms[k] for k in ("avg", "p50", "p95", "p99", "max"))
    )


def format_block(res: Result, ms_decimals: int = 1) -> str:
    """The stdout text: header, one row, the benchmark line, and `# partial:` if stopped early."""
    lat = np.frombuffer(res.latency_ns, dtype=np.int64)
    n = int(lat.size)
    rate = n / res.elapsed_s if res.elapsed_s > 0 else 0.0
    row = format_row(res.name, res.elapsed_s, n, summary(lat), ms_decimals)
    lines = [HEADER, row, "", f"fsbench/{res.name}  {n} {rate:0.1f} ops/sec"]
    if res.partial:
        lines.append(f"# partial: {res.partial}")
    return "\n".join(lines) + "\n"


def write_csv(res: Result, path: Path) -> None:
    with open(path, "x", buffering=1 << 20) as fh:
        fh.write("op,start_ns,latency_ns\n")
        prefix = res.name + ","
        step = 1 << 16
        for i in range(0, len(res.latency_ns), step):
            fh.write(
                "".join(
                    f"{prefix}{s},{lat}\n" for s, lat in zip(res.start_ns[i : i + step], res.latency_ns[i : i + step])
                )
            )


# ---------------------------------------------------------------------------------------------------
# the work directory: created here, refused otherwise, emptied of our own names only


class Refused(Exception):
    """Bad input or an unsafe request: reported as one line, exit status 2, nothing created."""


def make_workdir(parent: Path, needed_bytes: int, needed_files: int) -> Path:
    if not parent.is_dir():
        raise Refused(f"--dir {parent}: not an existing directory")
    st = os.statvfs(parent)
    free = st.f_bavail * st.f_frsize
    if needed_bytes > 0.95 * free:
        raise Refused(f"--dir {parent}: set-up needs {needed_bytes / 1e9:.2f} GB, {free / 1e9:.2f} GB free")
    if st.f_files and needed_files > st.f_favail:
        raise Refused(f"--dir {parent}: set-up needs {needed_files} inodes, {st.f_favail} free")
    sub = parent / SUBDIR
    try:
        os.mkdir(sub, 0o755)
    except FileExistsError:
        raise Refused(
            f"{sub} already exists and was not created by this run (a run still going, or left "
            "by a killed one?): refusing to use or delete it; inspect and remove it yourself"
        ) from None
    return sub


def remove_workdir(sub: Path, tick: Tick) -> str | None:
    """Unlink the files this runner names (temp_N, pre_temp_N, newfile), then rmdir; error text or None."""
    left = []
    try:
        with os.scandir(sub) as it:
            entries = list(it)
        for i, e in enumerate(entries):
            if OWN_NAME.match(e.name) and e.is_file(follow_symlinks=False):
                os.unlink(e.path)
                tick(f"clean-up: {i + 1}/{len(entries)} files", False)
            else:
                left.append(e.name)
        if left:
            return f"{sub} holds entries this runner did not create ({', '.join(left[:5])}): left in place"
        os.rmdir(sub)
    except OSError as exc:
        return f"{sub}: {exc}"
    return None


# ---------------------------------------------------------------------------------------------------
# command line


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m pgfslab.runners.fsmicro",
        description="File-system micro-benchmarks of seed 003 (pebble `bench fs` style), one op per run.",
        epilog="ops: " + "; ".join(f"{k} ({v.seed})" for k, v in OPS.items()) + ". --list describes them.",
    )
    ap.add_argument("--op", choices=list(OPS))
    ap.add_argument(
        "--dir",
        type=Path,
        help=f"existing directory on the file system under test; the runner creates and removes {SUBDIR}/ in it",
    )
    ap.add_argument("--out", type=Path, help=f"run directory for {CSV_NAME} (created if missing)")
    for key, p in PARAMS.items():
        flag = "--" + key.replace("_", "-")
        if p.type is bool:
            ap.add_argument(flag, action="store_true", default=None, help=p.help)
        elif p.choices:
            ap.add_argument(flag, choices=p.choices, help=p.help)
        else:
            ap.add_argument(flag, type=p.type, metavar="N", help=p.help)
    ap.add_argument(
        "--ms-decimals",
        type=int,
        default=1,
        choices=range(1, 10),
        metavar="N",
        help="decimals of the latency columns: 1 = '%%8.1f' (default), N > 1 = '%%5.Nf'",
    )
    ap.add_argument("--progress-s", type=float, default=5.0, metavar="S", help="progress to stderr every S s")
    ap.add_argument("--list", action="store_true", help="describe every op and exit")
    return ap


def _describe() -> str:
    out = []
    for info in OPS.values():
        out.append(f"{info.name}  [seed 003: {info.seed}]\n  {info.measures}")
        for key in info.params:
            default = info.defaults.get(key, "-")
            out.append(f"    {key:15s} default {default!s:>13s}  {PARAMS[key].help}")
    return "\n".join(out)


def describe(spec: Workload) -> str:
    """The workload in a few words, as the paper names it."""
    return f"fsmicro {spec.options.what()}"


def how(spec: Workload) -> list[str]:
    """What each run worked on, as the methodology's workload table says it."""
    o = spec.options_as(FsmicroOptions)
    return [
        f"{k} {v}"
        for k, v in (("size_bytes", o.size_bytes), ("bg_files", o.bg_files), ("count", o.count), ("files", o.files))
        if v
    ]


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.list:
        print(_describe())
        return 0
    if args.op is None or args.dir is None or args.out is None:
        ap.error("--op, --dir and --out are required")
    spec = {"op": args.op, **{k: getattr(args, k) for k in PARAMS if getattr(args, k) is not None}}
    try:
        params = resolve(spec)
    except ValueError as exc:
        ap.error(str(exc))
    if args.progress_s <= 0:
        ap.error("--progress-s must be > 0")
    name = label(params)
    csv_path = args.out / CSV_NAME
    if csv_path.exists():
        ap.error(f"{csv_path} exists: refusing to overwrite a run's raw log")

    progress = Progress(f"fsmicro {name}", every_s=args.progress_s)
    tick: Tick = progress.update
    stop = Stop()
    old = {s: signal.signal(s, stop.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(args, params, name, csv_path, stop, tick)
    except Refused as exc:
        print(f"fsmicro: refused: {exc}", file=sys.stderr)
        return 2
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _run(args: argparse.Namespace, params: dict[str, Any], name: str, csv_path: Path, stop: Stop, tick: Tick) -> int:
    shown = " ".join(f"{k}={v}" for k, v in params.items() if k != "op" and v is not None)
    print(f"fsmicro: {params['op']} as {name}: {shown}", file=sys.stderr, flush=True)
    sub = make_workdir(args.dir, *needs(params))
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        os.rmdir(sub)
        raise Refused(f"--out {args.out}: {exc}") from None
    res = Result(name, array("q"), array("q"), 0.0, None)
    try:
        bench = BENCHES[params["op"]](sub, params)
        try:
            bench.setup(stop, tick)
            if stop:
                res.partial = stop.reason
            else:
                res = measure(bench, params, stop, tick, name, int(args.progress_s * 1e9))
        finally:
            bench.close()
    except OSError as exc:
        res.partial = stop.reason = f"error in set-up: {exc}"
    finally:
        error = remove_workdir(sub, tick)
    try:
        write_csv(res, csv_path)
    except OSError as exc:
        error = f"{csv_path}: {exc}" + (f"; {error}" if error else "")
    sys.stdout.write(format_block(res, args.ms_decimals))
    sys.stdout.flush()
    if error:
        print(f"fsmicro: {error}", file=sys.stderr)
    if res.partial:
        print(f"fsmicro: partial run ({res.partial}): {len(res.latency_ns)} ops", file=sys.stderr)
    if res.partial == "interrupted" and stop.signum is not None:
        return 128 + stop.signum
    return 1 if (res.partial or error) else 0


if __name__ == "__main__":
    sys.exit(main())
