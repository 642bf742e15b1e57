"""The device-baseline analysis (pgfslab.analysis.device) on a database ingested from the recorded real
outputs (tests/data/device_baseline/), and the unsafe-settings check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from conftest import DATA

from pgfslab.analysis import device
from pgfslab.ingest.load import ingest_study

RECORDED = DATA / "device_baseline"


def _raw(tmp_path: Path) -> Path:
    raw = tmp_path / "raw" / "dev"
    cfg = {"study": "dev", "targets": {fs: {"fs": fs.split("-")[0]} for fs in ("ext4", "xfs", "btrfs", "zfs-fuse")}}
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
    assert "zfs-fuse (zfs-fuse, userspace)" in table["target"].to_list()


def test_unsafe_settings():
    cfg = {
        "postgres": {"settings": {"full_page_writes": "off"}},
        "targets": {
            "e": {"fs": "ext4"},
            "z": {"fs": "zfs"},
            "b": {"fs": "btrfs", "postgres_settings": {"fsync": "off"}},
        },
        "workloads": {"w": {"postgres_settings": {"synchronous_commit": "off"}}},
    }
    text = " | ".join(device.unsafe_settings(cfg))
    assert "e: full_page_writes=off on ext4 is unsafe" in text
    assert "z: full_page_writes" not in text and "b: full_page_writes" not in text
    assert "b: fsync=off is unsafe" in text
    assert "e (workload w): synchronous_commit=off" in text


def test_target_label():
    assert device.target_label("zfs", "zfs (zfs-fuse, userspace)") == "zfs (zfs-fuse, userspace)"
    assert device.target_label("data", "xfs") == "data (xfs)"
    assert device.target_label("ext4", "ext4") == "ext4"
