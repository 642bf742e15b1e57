"""The emulated disk for real (root, /dev/fuse, loop devices, fio): the short version of `pgfslab disk-validate`
(random reads at the model's rate, sequential reads at the modelled media rate, reads slowed by a concurrent
write stream as the model predicts), and the daemon's death: a clear error, and everything released."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import needs_root

from pgfslab.config import disk_model
from pgfslab.config.model import TargetSpec
from pgfslab.errors import LabError
from pgfslab.host import disk_daemon, loop_devices, mounts
from pgfslab.run import disk_validation

pytestmark = [
    pytest.mark.machine_wide,  # fio at full speed on the host disk: not beside other measurements
    pytest.mark.skipif(
        disk_daemon.fuse_problem() is not None or disk_daemon.build_problem() is not None or not shutil.which("fio"),
        reason="needs root, /dev/fuse, fio, gcc and libfuse3-dev",
    ),
]


def _leftovers(root: Path) -> list[str]:
    found = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]
    found += [ln for ln in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
              if str(root) in ln]  # fmt: skip
    return found


@needs_root
def test_the_disk_holds_to_its_model_under_fio(tmp_path):
    """A 1 GiB image, 3 s per job (the whole test stays under a minute): 8 kB random reads at QD1 within 10 %
    of the model's rate, 1 MiB sequential reads near the modelled media rate, and random reads
    beside a sequential write stream more than twice as slow as alone, within 25 % of the model's
    simulation of the two streams in one queue."""
    # sequential rates within 20 % here (10 % in `pgfslab disk-validate`): 3 s of 1 MiB requests on a host whose
    # CPUs other tests may hold fall short by the daemon's replies waiting for one (0.83 measured so)
    result = disk_validation.validate(seconds=3, size_gb=1, quick=True, base=tmp_path, seq_tolerance=0.2)
    rows = {r["check"]: r for r in result["rows"]}
    assert len(rows) == 3, rows
    for r in rows.values():
        assert r["ok"], r
    mixed = next(r for r in rows.values() if "beside" in r["check"])
    assert mixed["extra"]["rise"] > 2
    rr = rows["8 kB random reads, QD1"]
    assert rr["extra"]["cpu_share_of_service"] < 0.02  # the daemon's CPU per request against its service time
    assert not _leftovers(tmp_path)
    table = disk_validation.table(result)
    assert "| 8 kB random reads, QD1 | IOPS |" in table


@needs_root
def test_a_dead_daemon_fails_the_device_with_a_clear_error_and_is_cleaned_up(tmp_path):
    wd = tmp_path / "work"
    image = wd / "images" / "t.img"
    image.parent.mkdir(parents=True)
    with open(image, "wb") as fh:
        fh.truncate(64 << 20)
    m = disk_model.model("constellation-7200", None, 64 << 20)
    with pytest.raises(LabError, match="was killed by signal 9.*fails every I/O"):
        with disk_daemon.served(wd, "t", image, m) as disk:
            dev = loop_devices.attach(disk.file, True)
            try:
                assert disk_daemon.counters("t") is not None
                os.kill(disk.pid or 0, signal.SIGKILL)
                disk._proc.wait(10)  # type: ignore[union-attr]
                r = subprocess.run(["dd", f"if={dev}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"],
                                   capture_output=True, text=True)  # fmt: skip
                assert r.returncode != 0  # the loop device fails its I/O
                disk_daemon.require_alive("t")
            finally:
                subprocess.run(["losetup", "-d", dev], capture_output=True)
    assert disk_daemon.current("t") is None
    assert not _leftovers(tmp_path)
    assert not disk_daemon.files(wd, "t").pid_file.exists()


@needs_root
def test_a_daemon_left_by_a_killed_lab_is_stopped_by_the_next_one(tmp_path):
    """The PID record names the daemon: the next block on the target (or `release`) stops it and unmounts
    its mount point before starting its own."""
    wd = tmp_path / "work"
    image = wd / "images" / "t.img"
    image.parent.mkdir(parents=True)
    with open(image, "wb") as fh:
        fh.truncate(64 << 20)
    m = disk_model.model("constellation-7200", None, 64 << 20)
    f = disk_daemon.files(wd, "t")
    f.mountpoint.mkdir(parents=True)
    orphan = disk_daemon.Disk("t", image, m, f)
    orphan.start()
    disk_daemon._CURRENT.pop("t", None)  # as if the process that started it were gone
    try:
        notes = disk_daemon.release_stale(wd, "t")
        assert any("stopped the disk daemon" in n for n in notes), notes
        assert orphan._proc is not None and orphan._proc.wait(10) is not None
        assert not _leftovers(tmp_path)
    finally:
        orphan.stop()


# --- a target on the emulated disk, through the lab's own mount and release -------------------------------


def _target_spec(fs: str = "ext4") -> TargetSpec:
    return TargetSpec.from_dict({"fs": fs, "size_gb": 0.25, "mkfs_options": [], "mount_options": [],
                                 "direct_io": True, "device_profile": "hdd"})  # fmt: skip


@needs_root
@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_a_target_on_the_disk_is_mounted_recorded_and_released(tmp_path, fs):
    """The target's loop device is attached (direct I/O) to the daemon's file, the mount records the model
    and the daemon, a synced write reaches the disk's counters; after the block nothing is left: no loop
    device, no mount, no daemon."""
    from pgfslab.host.targets import create as target_create
    from pgfslab.host.targets import mount as target_mount
    from pgfslab.host.targets import release as target_release

    wd = tmp_path / "work" / "study1"
    wd.mkdir(parents=True)
    s = _target_spec(fs)
    try:
        target_create.create(wd, "t", s)
        with target_mount.mounted(wd, "t", s, "nobody") as m:
            assert m.disk is not None and m.direct_io is True
            assert loop_devices.backed_by(disk_daemon.files(wd, "t").file) == [m.device]
            assert m.disk["model"]["drive"].startswith("Seagate Constellation")
            before = disk_daemon.counters("t")
            with open(m.path / "f", "wb") as fh:
                fh.write(os.urandom(1 << 20))
                fh.flush()
                os.fsync(fh.fileno())
            d = disk_daemon.delta(before, disk_daemon.counters("t"))
            assert d is not None and d["write_bytes"] >= 1 << 20 and d["write_service_ns"] > 0
            pid = m.disk["daemon"]["pid"]
        assert not disk_daemon._is_daemon(pid)
        assert not _leftovers(tmp_path) and disk_daemon.current("t") is None
    finally:
        target_release.release(wd, "t")
    assert not _leftovers(tmp_path)


@needs_root
def test_a_daemon_dying_under_a_mounted_file_system_is_named_and_everything_released(tmp_path):
    """SIGKILL of the daemon while ext4 is mounted on its loop device: the file system's I/O fails, the lab
    names the dead daemon, and leaving the block unmounts, detaches and unmounts the dead FUSE mount."""
    from pgfslab.host.targets import create as target_create
    from pgfslab.host.targets import mount as target_mount
    from pgfslab.host.targets import release as target_release

    wd = tmp_path / "work" / "study1"
    wd.mkdir(parents=True)
    s = _target_spec()
    try:
        target_create.create(wd, "t", s)
        with pytest.raises(LabError, match="emulated disk's daemon of target t .* was killed by signal 9"):
            with target_mount.mounted(wd, "t", s, "nobody") as m:
                disk = disk_daemon.current("t")
                assert disk is not None
                os.kill(disk.pid or 0, signal.SIGKILL)
                disk._proc.wait(10)  # type: ignore[union-attr]
                with pytest.raises(OSError):  # the file system's I/O fails (the open itself, or the write)
                    fd = os.open(m.path / "g", os.O_CREAT | os.O_WRONLY | os.O_DIRECT)
                    try:
                        os.write(fd, memoryview(bytearray(4096)))
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                # mkfs.btrfs of any other image on the machine now fails (it checks every mount first): the
                # lab's error names the unreachable mount
                dead = mounts.unreachable()
                assert any(str(m.path) in d and "Transport endpoint is not connected" in d for d in dead), dead
                other = TargetSpec.from_dict({"fs": "btrfs", "size_gb": 0.25, "mkfs_options": [],
                                              "mount_options": []})  # fmt: skip
                with pytest.raises(LabError, match=f"cannot reach {re.escape(str(m.path))} "):
                    target_create.create(wd, "u", other)
                disk_daemon.require_alive("t")
        assert not _leftovers(tmp_path)
    finally:
        target_release.release(wd, "t")
        target_release.release(wd, "u")
    assert not _leftovers(tmp_path)
