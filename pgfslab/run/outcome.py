"""What a run left: its error, most telling first (a full target, a server crash, the tool's own), and the
target's footprint after it (bytes used, what compression saved).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgfslab.config.study import RunView
from pgfslab.host import mounted_target, proc, zfs
from pgfslab.run.common import disk_full_message, fs_used_bytes, texts
from pgfslab.runners import process


def run_error(
    view: RunView, rdir: Path, mnt: mounted_target.Mounted, record: dict[str, Any], outcome: process.Outcome
) -> str | None:
    """What went wrong in a run, most telling first: a full target, a server crash, the tool's error
    (a timeout, a client that died); None for a good run. An fsmicro run has no server."""
    full = disk_full_message(view.target.name, view.target.spec, texts(rdir), mnt.mountpoint)
    if view.workload.tool == "fsmicro":
        return full or outcome.error
    parts: list[str] = [full] if full else []
    server = record.get("server") or {}
    if server.get("crashed"):
        why = "postmaster gone" if not server.get("alive_after_run") else "the server restarted after a crash"
        sign = (server.get("log_signs") or [""])[0]
        parts.append(f"server crashed: {why} (see postgresql.log{': ' + sign if sign else ''})")
    if outcome.error:
        tool = str(record.get("tool"))
        err = outcome.error if outcome.error.startswith(tool + ":") or not parts else f"{tool}: {outcome.error}"
        parts.append(err)
    return "; ".join(parts) or None


def footprint(mnt: mounted_target.Mounted) -> dict[str, Any]:
    """What the run left on the target: bytes used, btrfs compression, ZFS's own accounting."""
    out: dict[str, Any] = {"fs_used_bytes": fs_used_bytes(mnt)}
    if mnt.fs == "btrfs" and not mnt.fallback:
        out["compsize"] = compsize(mnt.path)
    if mnt.zfs:
        out["zfs_footprint"] = zfs.footprint(mnt.zfs["dataset"])
    return out


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
