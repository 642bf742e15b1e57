"""Measure the storage controls themselves (not PostgreSQL): how long each target kind takes to create
and mount, how exactly cgroup throttling holds its limits, what a btrfs snapshot costs.

    sudo .venv/bin/python scripts/measure_controls.py [--repeats 3]

Everything is created in a temporary directory and released at the end. Reads go to sparse images, so
the throttle figures involve no real disk I/O; writes are a few MB. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgfslab.host import blockdev, cgroups, snapshots
from pgfslab.host.targets import create as target_create
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import release as target_release


def timed(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def summary(xs: list[float], scale: float = 1000.0) -> dict[str, float]:
    return {
        "median": round(statistics.median(xs) * scale, 1),
        "min": round(min(xs) * scale, 1),
        "max": round(max(xs) * scale, 1),
        "n": len(xs),
    }


def target_times(wd: Path, repeats: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    kinds = {
        "ext4": {"fs": "ext4"},
        "ext4-data=writeback": {"fs": "ext4", "mount_options": ["data=writeback"]},
        "xfs": {"fs": "xfs"},
        "btrfs": {"fs": "btrfs"},
        "btrfs-nodatacow": {"fs": "btrfs", "mount_options": ["nodatacow"]},
        "tmpfs": {"fs": "tmpfs"},
    }
    for label, extra in kinds.items():
        spec = {"size_gb": 1, "mkfs_options": [], "mount_options": [], "direct_io": True, **extra}
        create, mount = [], []
        for _ in range(repeats):
            create.append(timed(lambda spec=spec: target_create.create(wd, "m", spec)))
            if spec["fs"] != "tmpfs":
                with target_mount.mounted(wd, "m", spec, "nobody") as m:
                    mount.append(m.mount_s)
            target_release.release(wd, "m")
        out[label] = {"create_ms": summary(create), **({"mount_ms": summary(mount)} if mount else {})}
    return out


def device_check_time(tmp: Path, repeats: int) -> dict[str, float]:
    img = tmp / "dev.img"
    with open(img, "wb") as fh:
        fh.truncate(2**30)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(img)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        xs = [timed(lambda: blockdev.check_device(dev, target="m", fs="ext4")) for _ in range(repeats)]
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)
    return summary(xs)


def throttle_accuracy(tmp: Path) -> list[dict]:
    img = tmp / "throttle.img"
    with open(img, "wb") as fh:
        fh.truncate(256 * 2**20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", "--direct-io=on", str(img)], check=True, capture_output=True, text=True
    ).stdout.strip()
    rows = []
    try:
        for kind, value, seconds in (
            ("read_bps", 5_000_000, 2),
            ("read_bps", 20_000_000, 2),
            ("write_bps", 5_000_000, 2),
            ("read_iops", 50, 2),
            ("read_iops", 200, 2),
            ("write_iops", 100, 2),
        ):
            bs = 65536 if kind.endswith("bps") else 4096
            count = int(value * seconds / bs) if kind.endswith("bps") else value * seconds
            if kind.startswith("read"):
                cmd = ["dd", f"if={dev}", "of=/dev/null", f"bs={bs}", f"count={count}", "iflag=direct"]
            else:
                cmd = ["dd", "if=/dev/zero", f"of={dev}", f"bs={bs}", f"count={count}", "oflag=direct"]
            with cgroups.limited(f"measure-{os.getpid()}", cgroups.Limits(device=dev, **{kind: value})) as cg:
                took = timed(lambda cg=cg, cmd=cmd: subprocess.run(cg.command(cmd), check=True, capture_output=True))
            achieved = (count * bs if kind.endswith("bps") else count) / took
            rows.append(
                {
                    "limit": kind,
                    "value": value,
                    "seconds": round(took, 3),
                    "achieved": round(achieved),
                    "achieved_over_limit": round(achieved / value, 3),
                }
            )
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)
    return rows


def snapshot_cost(wd: Path) -> dict:
    spec = {"fs": "btrfs", "size_gb": 2, "mkfs_options": [], "mount_options": [], "direct_io": True}
    target_create.create(wd, "s", spec, data_subvolume=True)
    try:
        with target_mount.mounted(wd, "s", spec, "nobody") as m:
            with open(m.path / "data", "wb") as fh:  # 64 MiB of data to share with the snapshots
                for _ in range(64):
                    fh.write(os.urandom(2**20))
            os.sync()
            run = wd / "run"
            run.mkdir(exist_ok=True)
            with snapshots.scheduled(m.path, m.mountpoint, snapshots.Schedule(0.5, 1.5), run) as s:
                time.sleep(5)
            return s.summary()
    finally:
        target_release.release(wd, "s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pgfs-measure-") as tmp:
        wd = Path(tmp) / "work" / "measure"
        wd.mkdir(parents=True)
        try:
            result = {
                "targets": target_times(wd, args.repeats),
                "device_check_ms": device_check_time(Path(tmp), args.repeats),
                "throttle": throttle_accuracy(Path(tmp)),
                "snapshots": snapshot_cost(wd),
            }
        finally:
            for n in ("m", "s"):
                target_release.release(wd, n)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
