"""The device-baseline analysis (pgfslab.analysis.device) on a database ingested from the recorded real
outputs (tests/data/device_baseline/), and the unsafe-settings check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import yaml
from conftest import DATA

from pgfslab.analysis import device
from pgfslab.config.study import Study
from pgfslab.ingest.study import ingest_study

RECORDED = DATA / "device_baseline"


def _raw(tmp_path: Path) -> Path:
    raw = tmp_path / "raw" / "dev"
    cfg = {
        "study": "dev",
        "targets": {fs: {"fs": fs.split("-")[0]} for fs in ("ext4", "xfs", "btrfs", "zfs-fuse")},
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like"}},
    }
    raw.mkdir(parents=True)
    (raw / "study.yaml").write_text(yaml.safe_dump(cfg))
    for fs in cfg["targets"]:
        out = raw / "_setup" / fs / "device"
        shutil.copytree(RECORDED / fs, out)
        label = "zfs (zfs-fuse, userspace)" if fs == "zfs-fuse" else fs
        rec = {"study": "dev", "target": fs, "spec": cfg["targets"][fs], "fs_label": label, "baseline": {"notes": []}}
        (out / "baseline.json").write_text(json.dumps(rec))
    return raw


def test_device_table_from_recorded_outputs(tmp_path):
    raw = _raw(tmp_path)
    db = tmp_path / "dev.duckdb"
    ingest_study(raw, db, progress=False, external=None)
    t = {r["target"]: r for r in device.device_table(str(db), "dev").iter_rows(named=True)}
    # read by eye from the recorded files (see tests/test_device_parsers.py)
    assert round(t["ext4"]["wal_fdatasync_ops"]) == 6595
    assert round(t["zfs-fuse"]["wal_fdatasync_ops"]) == 2606
    assert t["ext4"]["fdatasync_p50_us"] == 117.248
    assert round(t["ext4"]["ceiling_commits_s"]) == round(1e6 / 117.248)
    assert round(t["xfs"]["randread_qd32_iops"]) == 118109
    assert round(t["btrfs"]["pg_test_fsync_fdatasync_ops"]) == 1646
    assert t["zfs-fuse"]["fs_label"] == "zfs (zfs-fuse, userspace)"
    table, _ = device.section_tables(str(db), "dev")
    assert "zfs-fuse (zfs-fuse)" in table["target"].to_list()


def test_unsafe_settings():
    cfg = {
        "study": "s",
        "postgres": {"settings": {"full_page_writes": "off"}},
        "targets": {
            "e": {"fs": "ext4"},
            "z": {"fs": "zfs"},
            "b": {"fs": "btrfs", "postgres_settings": {"fsync": "off"}},
        },
        "workloads": {"w": {"tool": "pgbench", "postgres_settings": {"synchronous_commit": "off"}}},
    }
    text = " | ".join(device.unsafe_settings(Study.from_dict(cfg)))
    assert "e: full_page_writes=off on ext4 is unsafe" in text
    assert "z: full_page_writes" not in text and "b: full_page_writes" not in text
    assert "b: fsync=off is unsafe" in text
    assert "e (workload w): synchronous_commit=off" in text


def test_target_label():
    assert device.target_label("zfs", "zfs (zfs-fuse, userspace)") == "zfs (zfs-fuse)"
    assert device.target_label("data", "xfs") == "data (xfs)"
    assert device.target_label("ext4", "ext4") == "ext4"


def test_a_target_with_wal_on_another_takes_that_targets_ceiling() -> None:
    """A commit waits for the WAL's fdatasync: zfs-walext4 (tables on zfs, WAL on ext4) gets ext4's ceiling."""
    dev = pl.DataFrame(
        {
            "target": ["ext4", "zfs", "zfs-walext4", "btrfs-walx"],
            "fs_label": ["ext4", "zfs (zfs-fuse, userspace)", "zfs (zfs-fuse, userspace)", "btrfs"],
            "ceiling_commits_s": [10000.0, 4000.0, 4200.0, 1300.0],
            "wal_fdatasync_ops": [6000.0, 2700.0, 2800.0, 900.0],
        }
    )
    out = device.with_wal_ceiling(dev, {"zfs-walext4": "ext4", "btrfs-walx": "gone"})
    rows = {r["target"]: r for r in out.iter_rows(named=True)}
    assert (rows["zfs-walext4"]["ceiling_commits_s"], rows["zfs-walext4"]["ceiling_of"]) == (10000.0, "ext4")
    assert rows["zfs-walext4"]["wal_fdatasync_ops"] == 6000.0 and rows["zfs-walext4"]["fs_label"].startswith("zfs")
    assert (rows["zfs"]["ceiling_commits_s"], rows["zfs"]["ceiling_of"]) == (4000.0, "zfs")
    # the WAL target was not measured: no ceiling rather than the wrong one
    assert (rows["btrfs-walx"]["ceiling_commits_s"], rows["btrfs-walx"]["ceiling_of"]) == (None, None)
    study = Study.from_dict(
        {
            "study": "s",
            "targets": {"a": {"fs": "ext4"}, "b": {"fs": "zfs", "wal_on": "a"}},
            "workloads": {"w": {"tool": "pgbench"}},
        }
    )
    assert device.wal_targets(study) == {"b": "a"}
