"""Running external commands: argument lists only (never a shell), errors as LabError."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pgfslab.errors import LabError


def run(
    cmd: Sequence[str], *, check: bool = True, timeout: float | None = 120, **kw
) -> subprocess.CompletedProcess[str]:
    """Run a command, capture its output as text, raise LabError with its stderr on failure."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)
    except FileNotFoundError:
        raise LabError(f"command not found: {cmd[0]} (run `make setup` to install the lab's tools)") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"command timed out after {timeout} s: {' '.join(cmd)}") from None
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        tail = " | ".join(detail[-3:]) if detail else "(no output)"
        raise LabError(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}: {tail}")
    return proc


def which(name: str) -> str | None:
    return shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


def first_line(cmd: Sequence[str]) -> str | None:
    """First line a command prints (for version strings); None if it is missing or fails."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    out = (proc.stdout or proc.stderr).strip().splitlines()
    return out[0].strip() if out else None


def start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat, the process's start time in clock ticks: with the PID it names one process for
    good (a PID reused by another process has another start time). None when there is no such process."""
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(st[st.rfind(")") + 2 :].split()[19])
