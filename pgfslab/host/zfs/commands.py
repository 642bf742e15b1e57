"""The zfs and zpool commands (argument lists, never a shell), and which ZFS this machine has: OpenZFS in
the kernel or zfs-fuse in user space (see pgfslab.host.zfs.pools for what each implies)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pgfslab.errors import LabError

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def tool(name: str) -> str:
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
        raise LabError(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}: {tail(proc)}")
    return proc


def tail(proc: subprocess.CompletedProcess[str], n: int = 3) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def zfs(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _run([tool("zfs"), *args], check=check, timeout=timeout)


def zpool(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _run([tool("zpool"), *args], check=check, timeout=timeout)


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
        return False, f"no zfs kernel module (/proc/filesystems has no zfs; modprobe -n zfs: {tail(r, 1)})"
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


def version(impl: str | None = None) -> str | None:
    """The ZFS userland's version: `zfs version` (OpenZFS), the Debian package's for zfs-fuse."""
    impl = impl or implementation()
    if impl == "openzfs":
        r = subprocess.run([tool("zfs"), "version"], capture_output=True, text=True)
        lines = r.stdout.strip().splitlines()
        return lines[0] if lines else None
    dpkg = shutil.which("dpkg-query", path=SYSTEM_PATH)
    if dpkg:
        r = subprocess.run([dpkg, "-W", "-f", "${Version}", "zfs-fuse"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return f"zfs-fuse {r.stdout.strip()} (pool version 23)"
    return "zfs-fuse (pool version 23)"
