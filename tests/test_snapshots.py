"""The snapshot scheduler on a real btrfs loop image, with a tiny schedule (1 s, kept 2 s)."""

from __future__ import annotations

import csv
import errno
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import needs_root

from pgfslab.config.model import TargetSpec
from pgfslab.errors import LabError
from pgfslab.host import btrfs, snapshots
from pgfslab.host.targets import create as target_create
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import release as target_release

SPEC_KEYS = {"fs": "btrfs", "size_gb": 0.5, "mkfs_options": [], "mount_options": [], "direct_io": True}
SPEC = TargetSpec.from_dict(SPEC_KEYS)


def test_schedule_arithmetic():
    assert snapshots.Schedule(300, 900).alive_at_once == 3  # seed 000: every 5 min, kept 15 min
    assert snapshots.Schedule(1, 2).alive_at_once == 2
    assert snapshots.Schedule(10, 5).alive_at_once == 1
    with pytest.raises(LabError, match="interval_s > 0"):
        snapshots.Schedule(0, 5)


def test_device_mapper_is_reported():
    ok, why = snapshots.device_mapper()
    if not ok:
        assert why.startswith("LVM thin snapshots are not usable here: no ")


@pytest.fixture
def btrfs_target(tmp_path: Path):
    wd = tmp_path / "work" / "s"
    wd.mkdir(parents=True)
    try:
        target_create.create(wd, "b", SPEC, data_subvolume=True)
        with target_mount.mounted(wd, "b", SPEC, "nobody") as m:
            yield m
    finally:
        target_release.release(wd, "b")


def _events(path: Path) -> list[dict]:
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["ts"] = float(r["ts"])
        r["duration_ms"] = float(r["duration_ms"])
    return rows


def _subvolumes(mnt: Path) -> list[str]:
    out = subprocess.run(
        ["btrfs", "subvolume", "list", "-o", str(mnt)], capture_output=True, text=True, check=True
    ).stdout
    return sorted(line.split(" path ")[-1] for line in out.splitlines() if line.strip())


@needs_root
def test_snapshots_every_second_kept_two(btrfs_target, tmp_path):
    m = btrfs_target
    run = tmp_path / "run"
    run.mkdir()
    sched = snapshots.Schedule(interval_s=1, keep_s=2)
    seen_alive: list[int] = []
    with snapshots.scheduled(m.path, m.mountpoint, sched, run) as s:
        for i in range(9):  # 4.5 s of "workload": a file that changes every half second
            (m.path / "counter").write_text(str(i))
            time.sleep(0.5)
            seen_alive.append(len(list(snapshots.snapshot_dir(m.mountpoint).glob("pgfslab-snap-*"))))
        first = snapshots.snapshot_dir(m.mountpoint) / "pgfslab-snap-0004"
        assert btrfs.is_subvolume(first)
        assert (first / "counter").read_text() in {"5", "6", "7"}  # the state at ~3 s, frozen
        with pytest.raises(OSError) as err:
            (first / "counter").write_text("x")
        assert err.value.errno == errno.EROFS
    ev = _events(run / "snapshots.csv")
    creates = [e for e in ev if e["action"] == "create"]
    assert 4 <= len(creates) <= 6 and [e["name"] for e in creates][:4] == [
        f"pgfslab-snap-{k:04d}" for k in (1, 2, 3, 4)
    ]
    gaps = [b["ts"] - a["ts"] for a, b in zip(creates, creates[1:])]
    assert all(0.8 <= g <= 1.3 for g in gaps), gaps
    by_name: dict[str, dict[str, float]] = defaultdict(dict)
    for e in ev:
        by_name[e["name"]][e["action"]] = e["ts"]
    kept = [v["delete"] - v["create"] for v in by_name.values() if "delete" in v]
    assert len(kept) >= 2 and all(1.8 <= k <= 2.4 for k in kept), kept
    assert {a for v in by_name.values() for a in v} <= {"create", "delete", "delete-at-exit"}
    assert all("delete" in v or "delete-at-exit" in v for v in by_name.values())  # every one removed
    assert max(seen_alive) == 2 and s.max_alive == 2
    summary = s.summary()
    assert summary["created"] == summary["deleted"] == len(creates) and summary["errors"] == []
    assert _subvolumes(m.mountpoint) == ["data"]


@needs_root
def test_three_alive_like_the_seed_and_cleanup_on_error(btrfs_target, tmp_path):
    m = btrfs_target
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(RuntimeError):
        with snapshots.scheduled(m.path, m.mountpoint, snapshots.Schedule(0.5, 1.5), run) as s:
            time.sleep(2.8)
            raise RuntimeError("workload failed")
    assert s.max_alive == 3
    assert _subvolumes(m.mountpoint) == ["data"]
    assert [e["action"] for e in _events(run / "snapshots.csv")].count("delete-at-exit") == 3


@needs_root
def test_stale_snapshots_are_removed_first(btrfs_target, tmp_path):
    m = btrfs_target
    sd = snapshots.snapshot_dir(m.mountpoint)
    sd.mkdir()
    btrfs.snapshot(m.path, sd / "pgfslab-snap-0042")
    with snapshots.scheduled(m.path, m.mountpoint, snapshots.Schedule(60, 60, offset_s=60), tmp_path) as s:
        pass
    ev = _events(tmp_path / "snapshots.csv")
    assert [(e["action"], e["name"]) for e in ev] == [("delete-stale", "pgfslab-snap-0042")]
    assert s.created == 0 and _subvolumes(m.mountpoint) == ["data"]


@needs_root
def test_not_supported_is_clear(tmp_path):
    wd = tmp_path / "work" / "s"
    wd.mkdir(parents=True)
    ext4 = TargetSpec.from_dict({**SPEC_KEYS, "fs": "ext4"})
    try:
        target_create.create(wd, "e", ext4)
        target_create.create(wd, "b", SPEC)  # btrfs, but no data subvolume
        with target_mount.mounted(wd, "e", ext4, "nobody") as m:
            ok, why = snapshots.support(m.path)
            assert not ok and "not supported on ext4" in why and "LVM" in why
            with pytest.raises(LabError, match="not supported on ext4"):
                with snapshots.scheduled(m.path, m.mountpoint, snapshots.Schedule(1, 2), tmp_path):
                    pass
        with target_mount.mounted(wd, "b", SPEC, "nobody") as m:
            assert m.path == m.mountpoint
            (m.path / "plain").mkdir()
            ok, why = snapshots.support(m.path / "plain")
            assert not ok and "not a btrfs subvolume" in why
    finally:
        target_release.release(wd, "e")
        target_release.release(wd, "b")
    assert not (tmp_path / "snapshots.csv").exists()
