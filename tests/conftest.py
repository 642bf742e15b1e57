"""Shared fixtures. Tests that need root, loop devices or PostgreSQL skip with a reason elsewhere."""

from __future__ import annotations

import glob
import os
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"

# `make test` runs test files side by side (pytest-xdist, `--dist loadfile`): each file is one unit of work,
# so a file's module-scoped study runs once. The files that change machine-wide state (vm.* settings, whose
# lock is exclusive, and hundreds of MB through the page cache) form one unit: one after another.
# (A scheduler of our own, not `xdist_group` marks: pytest >= 9.2 derives a node's id, so xdist 3.8's
# `--dist loadgroup` no longer sees the group and spreads a file over the workers.)
MACHINE_WIDE = ("test_sysctl.py", "test_faults.py", "test_workloads_real.py", "test_cgroups.py")
# The files that read tests/recorded.py's studies (every recorded study ingested, all its notebooks executed,
# its paper built: the suite's largest set-up) form one unit, so that the set-up runs once, in one worker
# (apart, each built it in its own worker: 190 s and 154 s of set-up, side by side on two cores).
RECORDED = ("test_notebooks.py", "test_paper.py")
# the longest units first, so that the workers end together: a unit of a minute left for the end (it was
# test_warm.py) kept one worker busy a minute after the others. Seconds measured in a fresh clone's `make test`
# (4 workers, 2 cores: 2026-11-26, the summary `units by worker` prints).
LONGEST_FIRST = (
    "recorded",  # 158 (notebooks and paper)
    "test_slurm.py",  # 186
    "test_integration.py",  # 189
    "test_regimes_real.py",  # 146
    "machine-wide",  # 207
    "test_zfs.py",  # 162
    "test_ingest.py",  # 93
    "test_warm.py",  # 96
    "test_captured.py",  # 75
    "test_parsers.py",  # 53
    "test_hosts_paper.py",  # 42
)
# this test session's processes, the workers' and what they start (Slurm jobs keep the environment)
SESSION = "PGFS_LAB_TEST_SESSION"


def _unit_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name in MACHINE_WIDE:
        return "machine-wide"
    return "recorded" if name in RECORDED else name


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controlling process: its workers inherit the environment
        os.environ.setdefault(SESSION, str(os.getpid()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest units first, so that the workers end together (a stable sort: a file's order stays)."""
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_unit_of(item.nodeid.split("::", 1)[0]), len(rank)))


# Where the suite's time goes: each unit's worker and span (first set-up start to last teardown end) and the
# CPU its worker and the children it waited for used (the machine's two cores are busy through the whole
# suite: CPU, not waiting, sets its length), printed at the end of a run with workers, with the tests that
# used the most CPU, so a CI log shows which unit ends last and what it spent.
_SPANS: dict[str, tuple[str, float, float]] = {}
_CPU_BY_UNIT: dict[str, tuple[float, float]] = {}
_CPU_BY_TEST: dict[str, tuple[float, float]] = {}
_CPU_MARK = [(0.0, 0.0)]


def _cpu_s() -> tuple[float, float]:
    """CPU seconds of this process and of the children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_collection_finish(session: pytest.Session) -> None:
    """The CPU of this process's start-up and collection (every worker imports and collects every test file),
    kept apart from its first test's."""
    _CPU_MARK[0] = _cpu_s()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints it
        workeroutput["startup_cpu_s"] = sum(_CPU_MARK[0])


_STARTUP_CPU: dict[str, float] = {}


def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    cpu = getattr(node, "workeroutput", {}).get("startup_cpu_s")
    if cpu is not None:
        _STARTUP_CPU[node.gateway.id] = cpu


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """The CPU used since the previous report (this phase, and for a set-up the gap before it)."""
    outcome = yield
    now = _cpu_s()
    before = _CPU_MARK[0]
    outcome.get_result().user_properties.append(("cpu_s", (now[0] - before[0], now[1] - before[1])))
    _CPU_MARK[0] = now


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set on the controlling process's copy of a worker's report
    if node is None:
        return
    unit = _unit_of(report.nodeid.split("::", 1)[0])
    worker, start, stop = _SPANS.get(unit, (node.gateway.id, report.start, report.stop))
    _SPANS[unit] = (worker, min(start, report.start), max(stop, report.stop))
    own, children = dict(report.user_properties).get("cpu_s", (0.0, 0.0))
    for table, key in ((_CPU_BY_UNIT, unit), (_CPU_BY_TEST, f"{report.when:<8} {report.nodeid}")):
        was = table.get(key, (0.0, 0.0))
        table[key] = (was[0] + own, was[1] + children)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _SPANS:
        return
    t0 = min(start for _, start, _ in _SPANS.values())
    terminalreporter.section("units by worker (seconds from the first test's start; CPU of the worker + its children)")
    for unit, (worker, start, stop) in sorted(_SPANS.items(), key=lambda kv: kv[1][:2]):
        terminalreporter.write_line(
            f"{worker:>4}  {start - t0:6.1f} -> {stop - t0:6.1f}  ({stop - start:6.1f} s, CPU"
            f" {_CPU_BY_UNIT[unit][0]:5.1f} + {_CPU_BY_UNIT[unit][1]:5.1f} s)  {unit}"
        )
    if _STARTUP_CPU:
        each = ", ".join(f"{w} {cpu:.1f}" for w, cpu in sorted(_STARTUP_CPU.items()))
        terminalreporter.write_line(f"start-up and collection, CPU s: {each} ({sum(_STARTUP_CPU.values()):.1f} in all)")
    terminalreporter.write_line("the most CPU (seconds: the worker + the children it waited for):")
    for key, (own, children) in sorted(_CPU_BY_TEST.items(), key=lambda kv: -sum(kv[1]))[:15]:
        terminalreporter.write_line(f"  {own:5.1f} + {children:5.1f}  {key}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """Under `--dist loadfile`: one unit per file, the machine-wide files one unit, in collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit_of(nodeid.split("::", 1)[0])

    return UnitScheduling(config, log)


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
    working in its data/work folder or naming it on their command line (servers, clients, runs), children
    of the warm interpreter working in it, and,
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
        if (
            cwd.startswith(root_s + "/data/work")
            or (
                root_s in cmdline
                and any(t in cmdline for t in ("postgres", "pgbench", "sysbench", "run-one", "pgfslab.runners."))
            )
            # a child of the warm interpreter (a run, a notebook, its kernel) carries the server's command line
            # and works in its client's folder (the server itself works in /)
            or ("pgfslab.warm serve" in cmdline and (cwd == root_s or cwd.startswith(root_s + "/")))
        ):
            found.append(f"process {p.name}: {cmdline}")
    if study:
        found += [f"cgroup {d}" for d in glob.glob(f"/sys/fs/cgroup/*/**/pgfs-lab/{study}-*", recursive=True)]
    return found
