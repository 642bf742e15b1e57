"""Memory limits and block-I/O throttling in real cgroups (v1 here; v2 where the machine has it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import machine_is_quiet, needs_root

from pgfslab.config.model import Blkio, Resources
from pgfslab.errors import LabError
from pgfslab.host import cgroups

pytestmark = pytest.mark.machine_wide  # changes machine-wide settings: `make test` runs it apart, serially

MiB = 2**20


def name(tag: str) -> str:
    return f"test-{os.getpid()}-{tag}"


def need(*controllers: str) -> None:
    found = cgroups.find()
    missing = [c for c in controllers if c not in found]
    if missing:
        pytest.skip(f"no cgroup {', '.join(missing)} controller mounted here")


def cgroup_of(pid: int, controller: str) -> str:
    key = cgroups.V1_NAMES[controller] if cgroups.find()[controller].version == 1 else ""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if key in (names.split(",") if names else [""]):
            return path
    raise AssertionError(f"pid {pid} has no {controller} cgroup")


def test_limits_from_config():
    lim = cgroups.limits_from_config(
        Resources(memory_limit_mb=64, blkio=Blkio(read_bps="5MB", write_iops=100)), "/dev/loop7"
    )
    assert lim == cgroups.Limits(64 * MiB, "/dev/loop7", 5_000_000, None, None, 100)
    assert lim.controllers() == ["memory", "io"]
    with pytest.raises(LabError, match="needs a block device"):
        cgroups.limits_from_config(Resources(blkio=Blkio(read_bps="5MB")), None)
    assert cgroups.limits_from_config(Resources(), None).controllers() == []


def test_nothing_to_limit_creates_nothing():
    with cgroups.limited(name("none"), cgroups.Limits()) as cg:
        assert not cg.active and cg.command(["true"]) == ["true"]
    assert cg.record["reason"] == "no limits configured"


def test_falls_back_with_a_warning_where_no_controller(monkeypatch, capsys):
    monkeypatch.setattr(cgroups, "find", lambda: {})
    with cgroups.limited(name("fb"), cgroups.Limits(memory_bytes=64 * MiB)) as cg:
        assert not cg.active and cg.command(["true"]) == ["true"]
    assert "limits NOT applied" in capsys.readouterr().err
    assert cg.record["applied"] is False and cg.record["not_applied"]["controllers"] == ["memory"]


@needs_root
def test_anonymous_memory_over_the_limit_is_oom_killed():
    need("memory")
    hog = "b = bytearray(200 * 2**20); b[::4096] = b'x' * (len(b) // 4096); print('survived')"
    with cgroups.limited(name("anon"), cgroups.Limits(memory_bytes=64 * MiB)) as cg:
        d = cg.dirs["memory"]
        assert d.is_dir() and d.parent.name == "pgfs-lab"
        assert cg.record["limits"]["memory_limit_bytes"] == 64 * MiB
        res = subprocess.run(cg.command([sys.executable, "-c", hog]), capture_output=True, text=True, timeout=60)
        usage = cg.usage()["memory"]
    assert res.returncode == -signal.SIGKILL and "survived" not in res.stdout
    assert usage["oom_kills"] >= 1 and usage["limit_hits"] > 0
    assert 48 * MiB <= usage["peak_bytes"] <= 64 * MiB
    assert not d.exists() and cg.record["removed"] is True
    # the same program outside the cgroup is fine: the limit, not the program, killed it
    assert subprocess.run([sys.executable, "-c", hog], capture_output=True, text=True).stdout.strip() == "survived"


@needs_root
def test_page_cache_stays_within_the_limit(tmp_path):
    """Reading a 300 MB sparse file fills 300 MB of page cache without any disk I/O (holes read as zeros):
    inside a 64 MiB cgroup the cache is reclaimed at the limit instead."""
    need("memory")
    f = tmp_path / "sparse"
    with open(f, "wb") as fh:
        fh.truncate(300 * MiB)
    with cgroups.limited(name("cache"), cgroups.Limits(memory_bytes=64 * MiB)) as cg:
        res = subprocess.run(
            cg.command(["dd", f"if={f}", "of=/dev/null", "bs=1M"]), capture_output=True, text=True, timeout=60
        )
        usage = cg.usage()["memory"]
    assert res.returncode == 0, res.stderr
    assert "314572800 bytes" in res.stderr
    assert 32 * MiB <= usage["peak_bytes"] <= 64 * MiB  # charged here (lower bound), limited (upper)
    assert usage["limit_hits"] > 0 and usage["oom_kills"] == 0


@needs_root
def test_writing_a_file_stays_within_the_limit(tmp_path):
    """dd writes 300 MB through the page cache inside a 64 MiB cgroup (real disk writes, so it waits for
    a quiet machine like the other host-perturbing tests)."""
    need("memory")
    ok, why = machine_is_quiet()
    if not ok:
        pytest.skip(why)
    f = tmp_path / "written"
    with cgroups.limited(name("write"), cgroups.Limits(memory_bytes=64 * MiB)) as cg:
        res = subprocess.run(
            cg.command(["dd", "if=/dev/zero", f"of={f}", "bs=1M", "count=300"]),
            capture_output=True,
            text=True,
            timeout=300,
        )
        usage = cg.usage()["memory"]
    assert res.returncode == 0, res.stderr
    assert f.stat().st_size == 300 * MiB
    assert 32 * MiB <= usage["peak_bytes"] <= 64 * MiB and usage["oom_kills"] == 0


def _timed_dd(cmd: list[str]) -> float:
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return time.monotonic() - t0


@needs_root
def test_blkio_throttles_direct_reads_and_writes(loops):
    need("io")
    dev = loops.attach(loops.image("throttled", 64))
    read = ["dd", f"if={dev}", "of=/dev/null", "bs=64k", "count=80", "iflag=direct"]  # 5 MiB, sparse: no disk I/O
    write = ["dd", "if=/dev/zero", f"of={dev}", "bs=64k", "count=80", "oflag=direct"]
    unthrottled = _timed_dd(read)
    # the writes reach the disk (they allocate the image's blocks): their own time, which a throttle can only
    # add to (the throttled write took 1.8 s once, beside the test suite's other studies). Measured on the next
    # 5 MiB, so that the throttled read's blocks stay sparse.
    unthrottled_write = _timed_dd([*write, "seek=80"])
    lim = cgroups.Limits(device=dev, read_bps=5_000_000, write_bps=5_000_000)
    with cgroups.limited(name("io"), lim) as cg:
        d = cg.dirs["io"]
        major, minor = os.major(os.stat(dev).st_rdev), os.minor(os.stat(dev).st_rdev)
        assert cg.record["limits"]["devno"] == f"{major}:{minor}"
        assert cg.record["limits"]["read_bps"] == 5_000_000
        t_read = _timed_dd(cg.command(read))
        t_write = _timed_dd(cg.command(write))
        io = cg.usage()["io"]
    expected = 80 * 65536 / 5_000_000  # 1.05 s
    assert unthrottled < 0.5, f"unthrottled read took {unthrottled:.2f} s: the machine is too busy to tell"
    assert 0.8 <= t_read <= expected * 1.5, t_read
    assert 0.8 <= t_write <= expected * 1.5 + unthrottled_write, (t_write, unthrottled_write)
    assert io["read_bytes"] >= 80 * 65536 and io["write_bytes"] >= 80 * 65536
    assert not d.exists()


@needs_root
def test_blkio_throttles_iops(loops):
    need("io")
    dev = loops.attach(loops.image("iops", 16))
    with cgroups.limited(name("iops"), cgroups.Limits(device=dev, read_iops=50)) as cg:
        t = _timed_dd(cg.command(["dd", f"if={dev}", "of=/dev/null", "bs=4k", "count=100", "iflag=direct"]))
    assert 1.6 <= t <= 3.0, t  # 100 reads at 50/s


@needs_root
def test_processes_left_inside_are_moved_back_and_the_cgroup_removed():
    need("memory")
    sleeper = None
    try:
        with cgroups.limited(name("left"), cgroups.Limits(memory_bytes=256 * MiB)) as cg:
            sleeper = subprocess.Popen(cg.command(["sleep", "30"]))
            deadline = time.monotonic() + 5
            while sleeper.pid not in cg.pids() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert cg.pids() == [sleeper.pid]  # the wrapper exec'd: same pid, now `sleep`
            inside = cgroup_of(sleeper.pid, "memory")
            assert inside.endswith(f"/pgfs-lab/{name('left')}")
            d = cg.dirs["memory"]
        assert cg.record["still_running_at_exit"] == [sleeper.pid]
        assert not d.exists() and cg.record["removed"] is True
        assert cgroup_of(sleeper.pid, "memory") == cgroup_of(os.getpid(), "memory")  # back where it came from
        assert sleeper.poll() is None  # moved, not killed
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()


@needs_root
def test_add_tree_moves_a_running_process_and_its_children():
    need("memory")
    # a parent with a child of its own: add_tree must move both
    code = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\ntime.sleep(30)\n"
    parent = subprocess.Popen([sys.executable, "-c", code])
    moved: list[int] = []
    try:
        time.sleep(0.3)
        with cgroups.limited(name("tree"), cgroups.Limits(memory_bytes=256 * MiB)) as cg:
            moved = cg.add_tree(parent.pid)
            assert len(moved) == 2 and moved[0] == parent.pid
            assert sorted(cg.pids()) == sorted(moved)
    finally:
        for pid in reversed(moved or [parent.pid]):  # only the processes this test started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        parent.wait()


@needs_root
def test_wrapper_errors_are_clear():
    need("memory")
    with cgroups.limited(name("err"), cgroups.Limits(memory_bytes=256 * MiB)) as cg:
        res = subprocess.run(cg.command(["pgfs-lab-no-such-command"]), capture_output=True, text=True)
    assert res.returncode == 127 and "command not found" in res.stderr
    res = subprocess.run(
        [sys.executable, str(cgroups.CGEXEC), "/etc/passwd", "--", "true"], capture_output=True, text=True
    )
    assert res.returncode == 126 and "not a cgroup.procs file" in res.stderr
