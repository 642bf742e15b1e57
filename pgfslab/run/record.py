"""A run's record, run.json: what it was (the run's view of the study), where it ran (provenance), and, for a
round the precision target skipped, why nothing was measured. Also the progress line's facts.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from pgfslab.config.study import RunView
from pgfslab.host import pg_install
from pgfslab.progress import fmt_s
from pgfslab.run import provenance
from pgfslab.run.common import PG_TOOLS, SCHEMA_VERSION, now


def started(view: RunView) -> dict[str, Any]:
    """The record of a run about to start (status `running`): the run's parts of the study and its provenance."""
    spec, wl, tspec = view.spec, view.workload, view.target.spec
    build = pg_install.build_for(view.postgres.version, view.postgres.bindir) if wl.tool in PG_TOOLS else None
    setup = json.loads((view.target.setup_dir / "target.json").read_text())
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": spec.run_id,
        "study": view.target.study,
        "plan_index": spec.plan_index,
        "plan_total": view.total,
        "target": spec.target,
        "target_spec": tspec.to_dict(),
        "fs": tspec.fs,
        "workload": spec.workload,
        "workload_spec": wl.to_dict(),
        "tool": wl.tool,
        "clients": spec.clients,
        "repeat": spec.repeat,
        "position": spec.position,  # the target's place in its round (run.order decides it)
        "burn_in": spec.burn_in,  # a burn-in round: shown, never compared
        "rung": spec.rung,
        "duration_s": view.duration_s,
        "dataset": view.dataset_record(),
        "run": view.run.to_dict(),
        "sampler": view.sampler.to_dict(),
        "os": view.os.to_dict(),
        "resources": view.resources.to_dict(),
        "postgres_settings_config": view.postgres_config.settings,
        "status": "running",
        "started_at": now(),
        "host": provenance.host(),
        "host_key": view.target.host,
        "vm": provenance.vm_settings(),
        "tools": provenance.tools(str(build.bindir) if build else ""),
        **({"postgres_build": build.record()} if build else {}),
        "git": provenance.git(),
        "target_setup": setup_facts(setup, spec.rung),
    }


def setup_facts(setup: dict[str, Any], rung: int | None) -> dict[str, Any]:
    """What the run's data set cost to load, from the target's preparation record (a rung's own load)."""
    loaded = setup if rung is None else next((r for r in setup.get("rungs", []) if r["rung"] == rung), {})
    return {
        "load_wall_s": (loaded.get("load") or {}).get("wall_s"),
        "load_sysbench_wall_s": (loaded.get("load_sysbench") or {}).get("wall_s"),
        "database": loaded.get("database", "postgres"),
        "database_bytes_loaded": loaded.get("database_bytes", (setup.get("postgres") or {}).get("database_bytes")),
        "created": setup.get("created"),
    }


def skipped(view: RunView, reason: str, precision: dict[str, Any]) -> dict[str, Any]:
    """The record of an optional round the precision target did not need: nothing measured."""
    spec = view.spec
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": spec.run_id,
        "study": view.target.study,
        "plan_index": spec.plan_index,
        "plan_total": view.total,
        "target": spec.target,
        "fs": view.target.spec.fs,
        "workload": spec.workload,
        "tool": view.workload.tool,
        "clients": spec.clients,
        "repeat": spec.repeat,
        "status": "skipped",
        "error": None,
        "skip_reason": reason,
        "precision": precision,
        "started_at": now(),
        "ended_at": now(),
        "wall_s": 0.0,
    }


def study_eta(raw: Path, total: int) -> tuple[int, str]:
    """Runs done so far and the time they took, with the time the rest will take at their pace."""
    walls = []
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(Exception):
            rec = json.loads(rj.read_text())
            if rec.get("status") != "skipped":  # nothing measured: not a run's duration
                walls.append(float(rec["wall_s"]))
    done = len(walls)
    if not walls:
        return done, "ETA unknown"
    remaining = (total - done) * (sum(walls) / done)
    return done, f"elapsed {fmt_s(sum(walls))}, ETA {fmt_s(remaining)}"


def predecessor(raw: Path, run_id: str) -> dict[str, Any] | None:
    """The run that ran last before this one in the study's raw folder (by its end time; a round the
    precision target skipped measured nothing and ran nothing): its run id and target, or None for the
    first. Whatever a run leaves behind reaches the next one: the plan balances it (pgfslab.config.order),
    and the exchangeability section checks it from this record."""
    last: tuple[str, dict[str, Any]] | None = None
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(OSError, ValueError):
            rec = json.loads(rj.read_text())
            if rec.get("run_id") == run_id or rec.get("status") == "skipped" or not rec.get("ended_at"):
                continue
            if last is None or str(rec["ended_at"]) > last[0]:
                last = (str(rec["ended_at"]), {"run_id": rec.get("run_id"), "target": rec.get("target")})
    return last[1] if last else None


def summary_tps(rdir: Path) -> str | None:
    """The headline number of a finished run, for the progress line."""
    with contextlib.suppress(OSError):
        for name, prefix, idx in (("pgbench.stdout", "tps = ", 2), ("sysbench.stdout", "transactions:", 2)):
            p = rdir / name
            if p.exists():
                for line in p.read_text().splitlines():
                    if line.strip().startswith(prefix):
                        return line.split()[idx].strip("(") + " tps"
        p = rdir / "fsmicro.stdout"
        if p.exists():
            rows = [ln for ln in p.read_text().splitlines() if ln.startswith("fsbench/")]
            return rows[-1].split(None, 2)[2] if rows else None
    return None
