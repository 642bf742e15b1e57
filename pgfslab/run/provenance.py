"""Facts about the machine, the tools and the code, recorded in every run.json."""

from __future__ import annotations

import os
import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.host import proc

REPO = paths.LAB


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _meminfo_kb(key: str) -> int | None:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None


@cache
def host() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "os": _os_release(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "mem_total_kb": _meminfo_kb("MemTotal"),
    }


def vm_settings() -> dict[str, str]:
    keys = [
        "dirty_background_bytes",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_ratio",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
        "swappiness",
    ]
    out = {}
    for k in keys:
        try:
            out[k] = Path(f"/proc/sys/vm/{k}").read_text().strip()
        except OSError:
            pass
    return out


@cache
def tools(pg_bindir: str) -> dict[str, str | None]:
    b = Path(pg_bindir)
    versions: dict[str, str | None] = {
        "postgres": proc.first_line([str(b / "postgres"), "--version"]),
        "pgbench": proc.first_line([str(b / "pgbench"), "--version"]),
        "sysbench": proc.first_line(["sysbench", "--version"]),
        "mkfs.ext4": proc.first_line(["mkfs.ext4", "-V"]),
        "mkfs.xfs": proc.first_line(["mkfs.xfs", "-V"]),
        "mkfs.btrfs": proc.first_line(["mkfs.btrfs", "--version"]),
        "python": platform.python_version(),
    }
    for pkg in ("polars", "duckdb", "psycopg", "snakemake", "papermill", "altair", "scipy"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return versions


@cache
def git() -> dict[str, Any]:
    def g(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    status = g("status", "--porcelain", "--untracked-files=no")
    return {"commit": g("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}
