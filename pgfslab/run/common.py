"""What every stage that touches the machine shares: JSON writing, where WAL lives, copying the server log, progress
lines, and the disk-full diagnosis.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from pgfslab.config import targets as target_spec
from pgfslab.config.model import TargetSpec
from pgfslab.host import postgres


def wal_dir(wal_mnt: Any, target: str) -> Path:
    """Where a target's WAL lives on its `wal_on` target: wal-<target> beside that target's own PGDATA."""
    return Path(wal_mnt.path) / f"wal-{target}"


def wal_record(wal_target: str, wal_mnt: Any, waldir: Path) -> dict[str, Any]:
    """Where WAL lives (run.json, target.json): the target, its file system, device and directory."""
    return {
        "target": wal_target,
        "fs": wal_mnt.fs,
        "fs_label": wal_mnt.fs_label,
        "device": wal_mnt.device,
        "mountpoint": str(wal_mnt.mountpoint),
        "dir": str(waldir),
        "mount_options": wal_mnt.mount_options,
    }


def fs_used_bytes(mnt: Any) -> int:
    """Bytes the target's file system uses: ZFS's own `used` of the data dataset for zfs (statvfs of a
    dataset shows only its share of the pool), statvfs otherwise."""
    if getattr(mnt, "zfs", None):
        from pgfslab.host.zfs import pools as zfs

        return int(zfs.footprint(mnt.zfs["dataset"])["used"])
    st = os.statvfs(mnt.mountpoint)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically: a reader sees the old file or the whole new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)


def copy_log_since(log: Path, offset: int, dest: Path) -> None:
    if log.exists():
        with open(log, "rb") as src, open(dest, "wb") as out:
            src.seek(offset)
            shutil.copyfileobj(src, out)


def log_size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def say(label: str, text: str) -> None:
    print(f"[{label}] {text}", file=sys.stderr, flush=True)


def _size_text(spec: TargetSpec) -> str:
    k = target_spec.kind(spec)
    if k == "image":
        return f"{spec.fs}, {spec.size_gb:g} GiB image"
    if k == "tmpfs":
        return f"tmpfs, {spec.size_gb:g} GiB"
    if k == "device":
        return f"{spec.fs} on device {spec.device}"
    if k == "existing":
        return f"a directory on the file system at {spec.path}"
    return "a plain directory"


def _advice(target: str, spec: TargetSpec) -> str:
    k = target_spec.kind(spec)
    if k in ("image", "tmpfs"):
        return f"make targets.{target}.size_gb larger (now {spec.size_gb:g}) or the data set smaller"
    if k == "device":
        return "use a larger device or a smaller data set"
    return "free space there or use a smaller data set"


def disk_full_message(target: str, spec: TargetSpec, texts: list[str], path: Path | None = None) -> str | None:
    """One clear sentence when the outputs in `texts` show that the target ran out of space (ENOSPC),
    naming the target and its size; None when they do not."""
    hit = next((ln.strip() for t in texts for ln in t.splitlines() if postgres.ENOSPC.search(ln)), None)
    if hit is None:
        return None
    free = ""
    if path is not None:
        with contextlib.suppress(OSError):
            st = os.statvfs(path)
            free = (
                f" ({st.f_bavail * st.f_frsize / 2**20:.0f} MiB of "
                f"{st.f_blocks * st.f_frsize / 2**20:.0f} MiB free now)"
            )
    if len(hit) > 240:
        hit = hit[:240] + "..."
    return f"target {target} ({_size_text(spec)}) is full{free}: {hit} -- {_advice(target, spec)}"


def texts(folder: Path, names: list[str] | None = None) -> list[str]:
    """The text of a run's or set-up's logs (stdout/stderr of the tools, the server log)."""
    out = []
    files = (
        [folder / n for n in names]
        if names
        else sorted(p for p in folder.iterdir() if p.suffix in (".stderr", ".stdout") or p.name == "postgresql.log")
    )
    for f in files:
        with contextlib.suppress(OSError):
            out.append(f.read_text(errors="replace")[-200_000:])
    return out


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]
