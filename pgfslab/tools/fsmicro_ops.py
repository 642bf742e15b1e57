"""What a file-system micro-benchmark run is: its operations (seed 003), their parameters and defaults, validation,
labels, and the command line of the fsmicro program (pgfslab.runners.fsmicro) that runs one.

Config validation uses this module alone: it imports nothing that touches the machine.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pgfslab.errors import LabError

CSV_NAME = "fsmicro_ops.csv"


SUBDIR = "fsmicro.work"


HEADER = "____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)"


QUANTILES = (50.0, 95.0, 99.0)


PERCENTILE_METHOD: Final = "inverted_cdf"  # Final: numpy takes the name as a Literal


CHUNK = 1 << 20  # bytes written per write(2)


OWN_NAME = re.compile(r"^(?:(?:temp|pre_temp)_\d+|newfile)$")  # every name the runner creates


@dataclass(frozen=True)
class Param:
    type: type
    minimum: float
    help: str
    choices: tuple[str, ...] = ()


PARAMS: dict[str, Param] = {
    "duration_s": Param(float, 0.001, "stop after this many seconds of measured loop"),
    "count": Param(int, 1, "stop after this many operations"),
    "size_bytes": Param(int, 0, "bytes of the file each operation writes (write_fsync: per fsync)"),
    "files": Param(int, 1, "files pre-created (written, fsynced) and then deleted one per operation"),
    "bg_files": Param(int, 0, "background files pre-created in the directory and left alone"),
    "bg_size_bytes": Param(int, 0, "size of each background file"),
    "max_file_bytes": Param(int, 1, "start a new file when the current one would exceed this size"),
    "fsync_dir": Param(bool, 0, "also fsync the parent directory after each unlink (timed)"),
    "unlink_open": Param(
        bool,
        0,
        "unlink the new file while it is still open and close it after the "
        "timer, as pebble's deleteBench did (its blocks are then freed by the "
        "untimed close); default: close first, the timed unlink frees them",
    ),
    "setup_sync": Param(
        str,
        0,
        "how the set-up's files are made durable before the timer starts: 'each' (write and fsync every "
        "pre-created file, as pebble did) or 'end' (write them all, then one syncfs(2) of the file system "
        "and an fsync of the directory: the same durable state for a kernel file system, in far less time "
        "when there are 100k of them)",
        ("each", "end"),
    ),
    "fill": Param(
        str,
        0,
        "file content: 'a' (bytes 'a' as in seed 003, compressible) or 'random' "
        "(a 1 MiB random block repeated: incompressible per 128 KiB extent)",
        ("a", "random"),
    ),
}


COMMON = ("duration_s", "count", "bg_files", "bg_size_bytes", "setup_sync", "fill")


@dataclass(frozen=True)
class OpInfo:
    name: str
    seed: str  # the seed 003 benchmark(s) it reproduces
    measures: str  # what the latency covers; what else each loop iteration does
    params: tuple[str, ...]
    defaults: Mapping[str, Any]


OPS: dict[str, OpInfo] = {
    "create_fsync": OpInfo(
        "create_fsync",
        "create_empty (optype create_emp)",
        "timed: open(O_CREAT|O_EXCL) of a new file + fsync of the parent directory (+ write and fsync "
        "of size_bytes if > 0, like pebble's create_100KB) + close. Files accumulate.",
        COMMON + ("size_bytes",),
        {"duration_s": 600.0, "size_bytes": 0, "bg_files": 0, "bg_size_bytes": 0, "setup_sync": "each", "fill": "a"},
    ),
    "delete": OpInfo(
        "delete",
        "delete_10k_2MB, delete_100k_2MB, delete_200k_2MB; with bg_files: delete_10k_2k_200MB",
        "set-up (untimed): `files` files of size_bytes written and fsynced (setup_sync), then bg_files "
        "background files, then the directory fsynced. timed: unlink of one pre-created file (newest first) "
        "(+ directory fsync if fsync_dir). Runs until all are deleted unless count/duration_s say less.",
        COMMON + ("files", "size_bytes", "fsync_dir"),
        {
            "files": 10_000,
            "size_bytes": 2_000_000,
            "bg_files": 0,
            "bg_size_bytes": 0,
            "fsync_dir": False,
            "setup_sync": "each",
            "fill": "a",
        },
    ),
    "delete_small_dir": OpInfo(
        "delete_small_dir",
        "delete_small_dir_2MB, delete_small_dir_200MB (optype delete_sma)",
        "set-up: bg_files (1k) files of bg_size_bytes (1 MB) written and fsynced. each iteration "
        "creates, writes and fsyncs a file of size_bytes and closes it (untimed, in ops/sec); timed: "
        "its unlink (+ directory fsync if fsync_dir).",
        COMMON + ("size_bytes", "fsync_dir", "unlink_open"),
        {
            "duration_s": 600.0,
            "size_bytes": 2_000_000,
            "bg_files": 1_000,
            "bg_size_bytes": 1_000_000,
            "fsync_dir": False,
            "unlink_open": False,
            "setup_sync": "each",
            "fill": "a",
        },
    ),
    "delete_large_dir": OpInfo(
        "delete_large_dir",
        "delete_large_dir_2MB, delete_large_dir_200MB (optype delete_lar)",
        "as delete_small_dir in a directory pre-filled with 100k files of 1 MB (100 GB at the seed's "
        "defaults: set bg_files/bg_size_bytes for a small target).",
        COMMON + ("size_bytes", "fsync_dir", "unlink_open"),
        {
            "duration_s": 600.0,
            "size_bytes": 2_000_000,
            "bg_files": 100_000,
            "bg_size_bytes": 1_000_000,
            "fsync_dir": False,
            "unlink_open": False,
            "setup_sync": "each",
            "fill": "a",
        },
    ),
    "write_fsync": OpInfo(
        "write_fsync",
        "write_sync_10MB (optype write_sync)",
        "each iteration writes size_bytes to the current file (untimed, in ops/sec); timed: its fsync. "
        "A new file is started when the current one would exceed max_file_bytes; old files are kept "
        "(as in seed 003), so a run needs ops x size_bytes of free space.",
        COMMON + ("size_bytes", "max_file_bytes"),
        {
            "duration_s": 600.0,
            "size_bytes": 10_000_000,
            "max_file_bytes": 2_000_000_000,
            "bg_files": 0,
            "bg_size_bytes": 0,
            "setup_sync": "each",
            "fill": "a",
        },
    ),
    "statfs": OpInfo(
        "statfs",
        "statfs_many_files (optype statfs_man)",
        "each iteration writes size_bytes (100 KB) to a file and fsyncs it, a new file every iteration "
        "at the default max_file_bytes (untimed, in ops/sec); timed: os.statvfs of the directory.",
        COMMON + ("size_bytes", "max_file_bytes"),
        {
            "duration_s": 600.0,
            "size_bytes": 100_000,
            "max_file_bytes": 100_005,
            "bg_files": 0,
            "bg_size_bytes": 0,
            "setup_sync": "each",
            "fill": "a",
        },
    ),
}


IGNORED_SPEC_KEYS = frozenset({"tool", "repeats"})  # study-level keys command() accepts and skips


def resolve(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Validate an op spec ({"op": ..., params...}) and fill in the op's defaults; ValueError if bad.

    duration_s and count: whichever is reached first stops the loop. If neither is given, a timed op
    runs for its default duration and `delete` until all its files are deleted.
    """
    op = spec.get("op")
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; one of: {', '.join(OPS)}")
    info = OPS[op]
    given = {k: v for k, v in spec.items() if k != "op" and k not in IGNORED_SPEC_KEYS and v is not None}
    wrong = sorted(set(given) - set(info.params))
    if wrong:
        flags = ", ".join(f"{k} (--{k.replace('_', '-')})" for k in wrong)
        raise ValueError(f"{op} does not take {flags}; it takes: {', '.join(info.params)}")
    out: dict[str, Any] = {"op": op}
    for key in info.params:
        if key in given:
            out[key] = _check(op, key, given[key])
        elif key in info.defaults and key not in ("duration_s", "count"):
            out[key] = info.defaults[key]
    if "duration_s" in given or "count" in given:
        out["duration_s"] = out.get("duration_s")
        out["count"] = out.get("count")
    else:
        out["duration_s"] = info.defaults.get("duration_s")
        out["count"] = None
    if op == "delete" and out["count"] is not None and out["count"] > out["files"]:
        raise ValueError(f"delete: count {out['count']} > files {out['files']}")
    if op in ("write_fsync", "statfs"):
        if out["size_bytes"] < 1:
            raise ValueError(f"{op}: size_bytes must be >= 1")
        if out["size_bytes"] > out["max_file_bytes"]:
            raise ValueError(f"{op}: size_bytes {out['size_bytes']} > max_file_bytes {out['max_file_bytes']}")
    return out


def _check(op: str, key: str, value: Any) -> Any:
    p = PARAMS[key]
    if p.type is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{op}: {key} must be true or false, not {value!r}")
        return value
    if p.choices:
        if value not in p.choices:
            raise ValueError(f"{op}: {key} must be one of {', '.join(p.choices)}, not {value!r}")
        return value
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and p.type is int:
        ok = float(value).is_integer()
    if not ok or value < p.minimum:
        kind = "an integer" if p.type is int else "a number"
        raise ValueError(f"{op}: {key} must be {kind} >= {p.minimum:g}, not {value!r}")
    return p.type(value)


def label(params: Mapping[str, Any]) -> str:
    """The benchmark name, seed-style (create_empty, delete_10k_2MB, write_sync_10MB, ...)."""
    op, size = params["op"], params.get("size_bytes", 0)
    if op == "create_fsync":
        return "create_empty" if size == 0 else f"create_{_size(size)}"
    if op == "delete":
        if params["bg_files"]:
            return f"delete_{_count(params['files'] + params['bg_files'])}_{_count(params['files'])}_{_size(size)}"
        return f"delete_{_count(params['files'])}_{_size(size)}"
    if op in ("delete_small_dir", "delete_large_dir"):
        return f"{op}_{_size(size)}"
    if op == "write_fsync":
        return f"write_sync_{_size(size)}"
    return "statfs_many_files" if params["max_file_bytes"] < 2 * size else f"statfs_{_size(size)}"


def _size(n: int) -> str:
    for unit, mult in (
        ("GB", 10**9),
        ("MB", 10**6),
        ("KB", 10**3),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ):
        if n and n % mult == 0:
            return f"{n // mult}{unit}"
    return f"{n}B"


def _count(n: int) -> str:
    return f"{n // 1000}k" if n and n % 1000 == 0 else str(n)


def command(op_spec: Mapping[str, Any], workdir: Path, rundir: Path) -> list[str]:
    """The command line for one run (like pgbench.run_command), every parameter explicit.

    It runs the module by its file path, so it works from any current directory (the study runner
    executes commands in the run directory).
    """
    try:
        params = resolve(op_spec)
    except ValueError as exc:
        raise LabError(f"fsmicro: {exc}") from None
    cmd = [sys.executable, "-m", "pgfslab.runners.fsmicro", "--op", params["op"], "--dir", str(workdir)]
    for key in OPS[params["op"]].params:
        value = params.get(key)
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        cmd += [flag] if value is True else [flag, _fmt_arg(value)]
    return [*cmd, "--out", str(rundir)]


def _fmt_arg(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def needs(params: Mapping[str, Any]) -> tuple[int, int]:
    """Bytes and files the set-up and the first operation need (checked before anything is made)."""
    files = params.get("files", 0) if params["op"] == "delete" else 1
    size = params.get("size_bytes", 0)
    return files * size + params["bg_files"] * params["bg_size_bytes"], files + params["bg_files"]
