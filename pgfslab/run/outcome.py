"""What a run left: its error, most telling first (a full target, a server crash, the tool's own), and the
target's footprint after it (bytes used, what compression saved).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pgfslab.config.study import RunView
from pgfslab.host import proc
from pgfslab.host.targets import mounted as mounted_target
from pgfslab.host.zfs import pools as zfs
from pgfslab.records.run_record import RunRecord
from pgfslab.run.common import disk_full_message, fs_used_bytes, texts
from pgfslab.runners import process
from pgfslab.tools import tool as registered_tool


def run_error(
    view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: RunRecord, outcome: process.Outcome
) -> str | None:
    """What went wrong in a run, most telling first: a full target, a server crash, the tool's error
    (a timeout, a client that died); None for a good run. A tool without a server (fsmicro) has no crash."""
    full = disk_full_message(view.target.name, view.target.spec, texts(rdir), mnt.mountpoint)
    if not registered_tool(view.workload.tool).uses_postgres:
        return full or outcome.error
    parts: list[str] = [full] if full else []
    server = record.server
    if server is not None and server.crashed:
        why = "postmaster gone" if not server.alive_after_run else "the server restarted after a crash"
        sign = (server.log_signs or [""])[0]
        parts.append(f"server crashed: {why} (see postgresql.log{': ' + sign if sign else ''})")
    if outcome.error:
        tool = str(record.tool)
        err = outcome.error if outcome.error.startswith(tool + ":") or not parts else f"{tool}: {outcome.error}"
        parts.append(err)
    return "; ".join(parts) or None


class Footprint(NamedTuple):
    """What the run left on the target: bytes used, btrfs compression, ZFS's own accounting."""

    fs_used_bytes: int
    compsize: dict[str, Any] | None
    zfs_footprint: dict[str, Any] | None


def footprint(mnt: mounted_target.Mounted) -> Footprint:
    """The target's footprint after the run (compsize for btrfs, ZFS's accounting for zfs)."""
    return Footprint(
        fs_used_bytes(mnt),
        compsize(mnt.path) if mnt.fs == "btrfs" and not mnt.fallback else None,
        zfs.footprint(mnt.zfs["dataset"]) if mnt.zfs else None,
    )


def compsize(path: Path) -> dict[str, Any] | None:
    """btrfs-compsize of a directory: bytes on disk vs uncompressed (what compression saved)."""
    if proc.which("compsize") is None:
        return None
    res = proc.run(["compsize", "-b", str(path)], check=False, timeout=300)
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["TOTAL"] and len(parts) >= 5:
            return {
                "disk_bytes": int(parts[2]),
                "uncompressed_bytes": int(parts[3]),
                "referenced_bytes": int(parts[4]),
                "command": ["compsize", "-b", str(path)],
            }
    return {"error": (res.stderr or res.stdout).strip()[-300:]}
