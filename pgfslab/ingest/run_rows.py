"""A study folder's records as rows: run.json -> `runs` and `run_params`, a target's target.json ->
`targets` (what the lab recorded, flattened; the whole record kept as JSON beside the columns)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, (list, bool)) or value is None else str(value)


def _ts(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def run_row(rec: dict[str, Any], origin: str = "local") -> dict[str, Any]:
    mount = rec.get("mount") or {}
    pg = rec.get("postgres") or {}
    pg_before = rec.get("postgres_before") or {}
    bgw, bgw0 = pg.get("bgwriter") or {}, pg_before.get("bgwriter") or {}
    dbs, dbs0 = pg.get("database_stats") or {}, pg_before.get("database_stats") or {}

    def delta(a: dict[str, Any], b: dict[str, Any], k: str) -> int | None:
        return a[k] - b[k] if k in a and k in b else None

    fallback = bool(rec.get("fallback", mount.get("fallback", False)))
    target = rec["target"]
    wl = rec.get("workload_spec") or {}
    return {
        "run_id": rec["run_id"],
        "study": rec["study"],
        "host": rec.get("host_key"),
        "origin": origin,
        "status": rec.get("status"),
        "error": rec.get("error"),
        "target": target,
        "target_label": f"{target} (FALLBACK: plain directory)"
        if fallback
        else impl_label(target, rec.get("fs_label")),
        "fs_label": rec.get("fs_label") or rec.get("fs"),
        "fs": rec.get("fs"),
        "fallback": fallback,
        "mount_options": mount.get("mount_options"),
        "device": mount.get("device"),
        "direct_io": mount.get("direct_io"),
        # a ladder's rung is part of the cell: `tpcb.d2` (the base workload in base_workload)
        "workload": rec.get("workload") if rec.get("rung") is None else f"{rec.get('workload')}.d{rec['rung']}",
        "base_workload": rec.get("workload"),
        "tool": rec.get("tool"),
        "builtin": wl.get("builtin"),
        "clients": rec.get("clients"),
        "threads": _threads(rec),
        "repeat": rec.get("repeat"),
        "plan_index": rec.get("plan_index"),
        "position": rec.get("position"),
        "predecessor": (rec.get("predecessor") or {}).get("target"),
        "host_speed": (rec.get("host_probe") or {}).get("mib_per_s"),
        "burn_in": bool(rec.get("burn_in", False)),
        # the run's own length (a workload may set its own); older run.json files have only the study's
        "duration_s": rec.get("duration_s", (rec.get("run") or {}).get("duration_s")),
        "scale": (rec.get("dataset") or {}).get("scale"),
        "rung": rec.get("rung"),
        "dataset_bytes": (rec.get("target_setup") or {}).get("database_bytes_loaded"),
        "started_at": _ts(rec.get("started_at")),
        "ended_at": _ts(rec.get("ended_at")),
        "wall_s": rec.get("wall_s"),
        "pg_version": pg.get("version"),
        **_build_columns(rec),
        "kernel": (rec.get("host") or {}).get("kernel"),
        "cpu_model": (rec.get("host") or {}).get("cpu_model"),
        "cpus": (rec.get("host") or {}).get("cpus"),
        "mem_total_kb": (rec.get("host") or {}).get("mem_total_kb"),
        "git_commit": (rec.get("git") or {}).get("commit"),
        "database_bytes_end": pg.get("database_bytes"),
        "fs_used_bytes_end": rec.get("fs_used_bytes"),
        "checkpoints_timed": delta(bgw, bgw0, "checkpoints_timed"),
        "checkpoints_req": delta(bgw, bgw0, "checkpoints_req"),
        "xact_commit": delta(dbs, dbs0, "xact_commit"),
        "run_json": json.dumps(rec, sort_keys=True),
    }


def _build_columns(rec: dict[str, Any]) -> dict[str, Any]:
    """The run's PostgreSQL build: server and client versions, where it came from, its checksums."""
    build = rec.get("postgres_build") or {}
    checksums = (rec.get("postgres") or rec.get("postgres_before") or {}).get("data_checksums")
    what = f"{build['wheel']} sha256:{build['sha256']}" if build.get("wheel") else build.get("bindir")
    return {
        "pg_major": build.get("major"),
        "pg_server_version": build.get("version") or (rec.get("tools") or {}).get("postgres"),
        "pg_client_version": (rec.get("tools") or {}).get("pgbench"),
        "pg_source": build.get("source"),
        "pg_build": what,
        "data_checksums": checksums,
    }


def impl_label(target: str, fs_label: str | None) -> str:
    """A target's label in tables and figures: which ZFS ran is part of it ('zfs (zfs-fuse, userspace)')."""
    if not fs_label or not fs_label.startswith("zfs ("):
        return target
    impl = fs_label.removeprefix("zfs (").removesuffix(")")
    return f"{target} ({impl})" if "zfs" in target else f"{target} (zfs: {impl})"


def _threads(rec: dict[str, Any]) -> int | None:
    for cmd in rec.get("commands") or []:
        if "-j" in cmd:
            return int(cmd[cmd.index("-j") + 1])
    return None


def run_params(rec: dict[str, Any]) -> list[dict[str, str]]:
    flat: dict[str, str] = {}
    for key in ("target_spec", "workload_spec", "dataset", "run", "sampler", "postgres_settings_config"):
        _flatten(key, rec.get(key), flat)
    flat["clients"] = str(rec.get("clients"))
    return [{"run_id": rec["run_id"], "key": k, "value": v} for k, v in sorted(flat.items())]


def target_row(rec: dict[str, Any]) -> dict[str, Any]:
    created, mount = rec.get("created") or {}, rec.get("mount") or {}
    return {
        "study": rec["study"],
        "host": rec.get("host_key"),
        "target": rec["target"],
        "fs": (rec.get("spec") or {}).get("fs"),
        "fs_label": created.get("fs_label") or mount.get("fs_label") or (rec.get("spec") or {}).get("fs"),
        "fallback": bool(mount.get("fallback", created.get("fallback", False))),
        "mount_options": mount.get("mount_options"),
        "mkfs_command": " ".join(created.get("mkfs_command") or []) or None,
        "image_bytes": created.get("image_bytes"),
        "direct_io": mount.get("direct_io"),
        "scale": (rec.get("load") or {}).get("scale"),
        "load_wall_s": (rec.get("load") or {}).get("wall_s"),
        "database_bytes": (rec.get("postgres") or {}).get("database_bytes"),
        "fs_used_bytes": rec.get("fs_used_bytes"),
        "target_json": json.dumps(rec, sort_keys=True),
    }
