"""A study folder's records as rows: a run's record (pgfslab.records.run_record) -> `runs` and `run_params`, a
target's target.json -> `targets` (what the lab recorded, flattened; the whole record kept as JSON beside the
columns)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pgfslab.config import run_copies
from pgfslab.records.run_record import HostFacts, MountFacts, PgFacts, PostgresBuild, RunRecord
from pgfslab.records.target_record import TargetRecord
from pgfslab.tools.pgbench import PgbenchOptions


def _builtin(rec: RunRecord) -> str | None:
    """A pgbench run's builtin script (None for custom scripts and the other tools)."""
    wl = run_copies.workload(rec)
    return wl.options.builtin if wl is not None and isinstance(wl.options, PgbenchOptions) else None


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, (list, bool)) or value is None else str(value)


def _ts(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def run_row(rec: RunRecord, origin: str = "local") -> dict[str, Any]:
    """The run's row of `runs` (schema.RUNS): its columns from the typed record, the record itself as JSON."""
    mount = rec.mount or MountFacts()
    pg, pg0 = rec.postgres or PgFacts(), rec.postgres_before or PgFacts()
    host = rec.host or HostFacts()
    fallback = bool(rec.fallback if rec.fallback is not None else mount.fallback)
    target = str(rec.target)
    return {
        "run_id": rec.run_id,
        "study": rec.study,
        "host": rec.host_key,
        "origin": origin,
        "status": rec.status,
        "error": rec.error,
        "target": target,
        "target_label": f"{target} (FALLBACK: plain directory)" if fallback else impl_label(target, rec.fs_label),
        "fs_label": rec.fs_label or rec.fs,
        "fs": rec.fs,
        "fallback": fallback,
        "mount_options": mount.mount_options,
        "device": mount.device,
        "direct_io": mount.direct_io,
        # a ladder's rung is part of the cell: `tpcb.d2` (the base workload in base_workload)
        "workload": rec.workload if rec.rung is None else f"{rec.workload}.d{rec.rung}",
        "base_workload": rec.workload,
        "tool": rec.tool,
        "builtin": _builtin(rec),
        "clients": rec.clients,
        "threads": _threads(rec.commands or []),
        "repeat": rec.repeat,
        "plan_index": rec.plan_index,
        "position": rec.position,
        "predecessor": rec.predecessor.target if rec.predecessor else None,
        "host_speed": rec.host_probe.mib_per_s if rec.host_probe else None,
        "burn_in": bool(rec.burn_in),
        "duration_s": rec.duration_s,
        "scale": rec.dataset.scale if rec.dataset else None,
        "rung": rec.rung,
        "dataset_bytes": rec.target_setup.database_bytes_loaded if rec.target_setup else None,
        "started_at": _ts(rec.started_at),
        "ended_at": _ts(rec.ended_at),
        "wall_s": rec.wall_s,
        "pg_version": pg.version,
        **_build_columns(rec),
        "kernel": host.kernel,
        "cpu_model": host.cpu_model,
        "cpus": host.cpus,
        "mem_total_kb": host.mem_total_kb,
        "git_commit": rec.git.commit if rec.git else None,
        "database_bytes_end": pg.database_bytes,
        "fs_used_bytes_end": rec.fs_used_bytes,
        "checkpoints_timed": _delta(pg.bgwriter, pg0.bgwriter, "checkpoints_timed"),
        "checkpoints_req": _delta(pg.bgwriter, pg0.bgwriter, "checkpoints_req"),
        "xact_commit": _delta(pg.database_stats, pg0.database_stats, "xact_commit"),
        "run_json": json.dumps(rec.to_json(), sort_keys=True),
    }


def _delta(after: dict[str, int | float | None], before: dict[str, int | float | None], counter: str) -> int | None:
    """A server counter's change over the run (None unless both ends have it)."""
    a, b = after.get(counter), before.get(counter)
    return int(a - b) if a is not None and b is not None else None


def _build_columns(rec: RunRecord) -> dict[str, Any]:
    """The run's PostgreSQL build: server and client versions, where it came from, its checksums."""
    build = rec.postgres_build or PostgresBuild()
    tools = rec.tools or {}
    facts = rec.postgres or rec.postgres_before
    what = f"{build.wheel} sha256:{build.sha256}" if build.wheel else build.bindir
    return {
        "pg_major": build.major,
        "pg_server_version": build.version or tools.get("postgres"),
        "pg_client_version": tools.get("pgbench"),
        "pg_source": build.source,
        "pg_build": what,
        "data_checksums": facts.data_checksums if facts else None,
    }


def impl_label(target: str, fs_label: str | None) -> str:
    """A target's label in tables and figures: which ZFS ran is part of it, by name only ('zfs-gzip (zfs-fuse)'
    from the fs_label 'zfs (zfs-fuse, userspace)': the rest is said once, in the paper's threats, and a label is
    a table's narrowest column)."""
    if not fs_label or not fs_label.startswith("zfs ("):
        return target
    impl = fs_label.removeprefix("zfs (").removesuffix(")").split(",")[0]
    return f"{target} ({impl})" if "zfs" in target else f"{target} (zfs: {impl})"


def _threads(commands: list[list[str]]) -> int | None:
    for cmd in commands:
        if "-j" in cmd:
            return int(cmd[cmd.index("-j") + 1])
    return None


def run_params(rec: RunRecord) -> list[dict[str, str]]:
    """Every configured parameter of the run, flattened (`run.duration_s`), its value as text."""
    flat: dict[str, str] = {}
    dataset = rec.dataset.model_dump(mode="json", exclude_unset=True) if rec.dataset else None
    parts = {
        "target_spec": rec.target_spec,
        "workload_spec": rec.workload_spec,
        "dataset": dataset,
        "run": rec.run,
        "sampler": rec.sampler,
        "postgres_settings_config": rec.postgres_settings_config,
    }
    for key, part in parts.items():
        _flatten(key, part, flat)
    flat["clients"] = str(rec.clients)
    return [{"run_id": str(rec.run_id), "key": k, "value": v} for k, v in sorted(flat.items())]


def target_row(rec: TargetRecord) -> dict[str, Any]:
    created, mount, spec = rec.created, rec.mount, rec.spec or {}
    return {
        "study": rec.study,
        "host": rec.host_key,
        "target": rec.target,
        "fs": spec.get("fs"),
        "fs_label": (created.fs_label if created else None) or (mount.fs_label if mount else None) or spec.get("fs"),
        # the mount's word where it said it, else the creation's
        "fallback": mount.fallback
        if mount and "fallback" in mount.model_fields_set
        else bool(created and created.fallback),
        "mount_options": mount.mount_options if mount else None,
        "mkfs_command": (" ".join(created.mkfs_command or []) or None) if created else None,
        "image_bytes": created.image_bytes if created else None,
        "direct_io": mount.direct_io if mount else None,
        "scale": rec.load.scale if rec.load else None,
        "load_wall_s": rec.load.wall_s if rec.load else None,
        "database_bytes": rec.postgres.database_bytes if rec.postgres else None,
        "fs_used_bytes": rec.fs_used_bytes,
        "target_json": json.dumps(rec.to_json(), sort_keys=True),
    }
