"""Shared fixtures. Tests that need root, loop devices or PostgreSQL skip with a reason elsewhere."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"

# `make test` runs the test files side by side (pytest-xdist, `--dist loadfile`: each file on one worker, so a
# file's module-scoped study runs once), then the files marked `machine_wide` (vm.* settings, dropped caches,
# cgroups) in a second, serial invocation (pyproject.toml's markers, the Makefile's `test`).
# A file that starts servers gives them fixed ports of its own below 32768: Linux hands out ports from 32768 up
# (net.ipv4.ip_local_port_range) to whoever binds port 0, as pg_probe.free_port and the Slurm helper do in other
# workers, so a fixed port in that range can be taken a moment before its server starts
# (tests/test_test_ports.py keeps them there).
# this test session's processes, the workers' and what they start (Slurm jobs keep the environment)
SESSION = "PGFS_LAB_TEST_SESSION"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controlling process: its workers inherit the environment
        os.environ.setdefault(SESSION, str(os.getpid()))


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's shared scratch (tests/recorded.py's studies), once every worker is done with it."""
    if not hasattr(config, "workerinput") and os.environ.get(SESSION) == str(os.getpid()):
        shutil.rmtree(Path(tempfile.gettempdir()) / f"pgfs-nbtest-{os.getpid()}", ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """What on this machine, not of this session, makes its real tests fail: a file system over a dead FUSE
    daemon (an emulated disk's, killed with a study) fails every mkfs.btrfs on the machine."""
    from pgfslab.host import mounts

    return [f"unreachable mount (mkfs.btrfs will fail): {d}" for d in mounts.unreachable()]


def machine_can_run_studies() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "needs root (loop devices, mount, runuser)"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        return False, "PostgreSQL server not installed (make setup)"
    if shutil.which("pgbench") is None and not list(Path("/usr/lib/postgresql").glob("*/bin/pgbench")):
        return False, "pgbench not installed"
    return True, ""


@pytest.fixture
def repo() -> Path:
    return REPO


def can_mount() -> tuple[bool, str]:
    """Root with loop devices: what the tests that attach and mount real file systems need."""
    if os.geteuid() != 0:
        return False, "needs root (losetup, mount, cgroups, /proc/sys/vm)"
    if not Path("/dev/loop-control").exists():
        return False, "no /dev/loop-control: loop devices are unavailable"
    return True, ""


_root_skip = pytest.mark.skipif(not can_mount()[0], reason=can_mount()[1] or "root with loop devices")


def needs_root(test):  # type: ignore[no-untyped-def]
    """A test that attaches, mounts or changes the machine: skipped without root and loop devices, and
    `slow` (not in `make test-fast`)."""
    return pytest.mark.slow(_root_skip(test))


class Loops:
    """Loop devices a test attaches over sparse images in its tmp_path; all detached (and anything the test
    mounted from them unmounted) when the test ends, whatever happens."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.devices: list[tuple[str, Path]] = []
        self.mounts: list[Path] = []

    def image(self, name: str, size_mb: int = 512) -> Path:
        img = self.tmp / f"{name}.img"
        with open(img, "wb") as fh:
            fh.truncate(size_mb * 2**20)
        return img

    def attach(self, image: Path, direct_io: bool = True) -> str:
        cmd = ["losetup", "--find", "--show"] + (["--direct-io=on"] if direct_io else []) + [str(image)]
        dev = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
        self.devices.append((dev, image))
        return dev

    def mount(self, dev: str, where: Path, *args: str) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", *args, dev, str(where)], check=True, capture_output=True)
        self.mounts.append(where)
        return where

    def release(self) -> None:
        for m in reversed(self.mounts):
            subprocess.run(["umount", str(m)], capture_output=True)
        for dev, image in self.devices:
            try:  # detach only if it is still ours: another process may have reused the number
                backing = Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()
            except OSError:
                continue
            if Path(backing) == image.resolve():
                subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.fixture
def loops(tmp_path: Path):
    lp = Loops(tmp_path)
    try:
        yield lp
    finally:
        lp.release()


BENCHMARK_CLIENTS = {"pgbench", "sysbench", "fio"}


def _of_this_session(pid: str) -> bool:
    """Was the process started by this test session (a descendant of its controlling process, or carrying
    its marker in the environment, as Slurm jobs do)? Its runs are the tests' own, not a study's."""
    session = os.environ.get(SESSION)
    if not session:
        return False
    try:
        if f"{SESSION}={session}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            return True
        while pid not in ("0", "1"):
            if pid == session:
                return True
            pid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except OSError:
        return False
    return False


def machine_is_quiet() -> tuple[bool, str]:
    """Is no benchmark or lab run going on this machine, besides this test session's own (the files running
    side by side)? Tests that change machine-wide state (vm.* sysctls, the page cache, heavy disk writes)
    would perturb another study's measurements, including the setup between its runs.
    PGFS_LAB_ALLOW_HOST_CHANGES=1 overrides."""
    if os.environ.get("PGFS_LAB_ALLOW_HOST_CHANGES") == "1":
        return True, ""
    busy = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or p.name == str(os.getpid()) or _of_this_session(p.name):
            continue
        try:
            comm = (p / "comm").read_text().strip()
            args = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        lab_run = b"pgfslab" in args and (b"run-one" in args or b"prepare" in args)
        if comm in BENCHMARK_CLIENTS or lab_run:
            busy.append(
                f"{comm if not lab_run else 'pgfslab ' + args[args.index(b'pgfslab') + 1].decode()} (pid {p.name})"
            )
    if busy:
        return False, (
            f"a benchmark or lab run is going on ({', '.join(busy[:3])}): changing machine-wide vm "
            "settings, dropping caches or writing hundreds of MB now would perturb its measurements; "
            "set PGFS_LAB_ALLOW_HOST_CHANGES=1 to run anyway"
        )
    return True, ""


def leftovers(root: Path, study: str | None = None) -> list[str]:
    """What a study under `root` must have released: mounts and loop devices under it, processes
    working in its data/work folder or naming it on their command line (servers, clients, runs), and,
    given the study's name, the lab cgroups of its runs."""
    found: list[str] = []
    root_s = str(root.resolve())
    with open("/proc/self/mounts") as fh:
        found += [f"mount {line.split()[1]}" for line in fh if line.split()[1].startswith(root_s)]
    loops = subprocess.run(
        ["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"], capture_output=True, text=True
    ).stdout
    found += [f"loop {line}" for line in loops.splitlines() if root_s in line]
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmdline = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(p / "cwd")
        except OSError:
            continue
        if cwd.startswith(root_s + "/data/work") or (
            root_s in cmdline
            and any(t in cmdline for t in ("postgres", "pgbench", "sysbench", "run-one", "pgfslab.runners."))
        ):
            found.append(f"process {p.name}: {cmdline}")
    if study:
        found += [f"cgroup {d}" for d in glob.glob(f"/sys/fs/cgroup/*/**/pgfs-lab/{study}-*", recursive=True)]
    return found
