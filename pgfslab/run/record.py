"""A run's record, run.json (the typed `RunRecord`): what it was (the run's view of the study), where it ran
(provenance), and, for a round the precision target skipped, why nothing was measured. Also the progress
line's facts.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pgfslab.config.study import RunView
from pgfslab.errors import LabError
from pgfslab.host import pg_install
from pgfslab.progress import fmt_s
from pgfslab.records import run_record, target_record
from pgfslab.records.run_record import (
    Dataset,
    GitFacts,
    HostFacts,
    PostgresBuild,
    Predecessor,
    RunRecord,
    TargetSetup,
)
from pgfslab.run import provenance
from pgfslab.run.common import now
from pgfslab.tools import PG_TOOLS


def started(view: RunView) -> RunRecord:
    """The record of a run about to start (status `running`): the run's parts of the study and its provenance."""
    spec, wl, tspec = view.spec, view.workload, view.target.spec
    build = pg_install.build_for(view.postgres.version, view.postgres.bindir) if wl.tool in PG_TOOLS else None
    setup, _ = target_record.read(view.target.setup_dir / "target.json")
    record = RunRecord(
        run_id=spec.run_id,
        study=view.target.study,
        plan_index=spec.plan_index,
        plan_total=view.total,
        target=spec.target,
        target_spec=tspec.to_dict(),
        fs=tspec.fs,
        workload=spec.workload,
        workload_spec=wl.to_dict(),
        tool=wl.tool,
        clients=spec.clients,
        repeat=spec.repeat,
        position=spec.position,
        burn_in=spec.burn_in,
        rung=spec.rung,
        duration_s=view.duration_s,
        dataset=Dataset.model_validate(view.dataset_record()),
        run=view.run.to_dict(),
        sampler=view.sampler.to_dict(),
        os=view.os.to_dict(),
        resources=view.resources.to_dict(),
        postgres_settings_config=view.postgres_config.settings,
        status="running",
        started_at=now(),
        host=HostFacts.model_validate(provenance.host()),
        host_key=view.target.host,
        vm=provenance.vm_settings(),
        tools=provenance.tools(str(build.bindir) if build else ""),
        git=GitFacts.model_validate(provenance.git()),
        target_setup=setup_facts(setup, spec.rung),
    )
    if build:
        record.postgres_build = PostgresBuild.model_validate(build.record())
    return record


def setup_facts(setup: target_record.TargetRecord, rung: int | None) -> TargetSetup:
    """What the run's data set cost to load, from the target's preparation record (a rung's own load)."""
    load, load_sysbench, database, size = setup.loaded(rung)
    return TargetSetup(
        load_wall_s=load.wall_s if load else None,
        load_sysbench_wall_s=load_sysbench.wall_s if load_sysbench else None,
        database=database,
        database_bytes_loaded=size,
        created=setup.created.model_dump(mode="json", exclude_unset=True) if setup.created else None,
    )


def skipped(view: RunView, reason: str, precision: dict[str, Any]) -> RunRecord:
    """The record of an optional round the precision target did not need: nothing measured."""
    spec = view.spec
    return RunRecord(
        run_id=spec.run_id,
        study=view.target.study,
        plan_index=spec.plan_index,
        plan_total=view.total,
        target=spec.target,
        fs=view.target.spec.fs,
        workload=spec.workload,
        tool=view.workload.tool,
        clients=spec.clients,
        repeat=spec.repeat,
        status="skipped",
        error=None,
        skip_reason=reason,
        precision=precision,
        started_at=now(),
        ended_at=now(),
        wall_s=0.0,
    )


def _records(raw: Path) -> list[RunRecord]:
    """The readable run records of a study's raw folder (one being written, or broken, is left out)."""
    out = []
    for rj in raw.glob("*/run.json"):
        with contextlib.suppress(LabError):
            out.append(run_record.read(rj)[0])
    return out


def study_eta(raw: Path, total: int) -> tuple[int, str]:
    """Runs done so far and the time they took, with the time the rest will take at their pace."""
    # a skipped round measured nothing: not a run's duration
    walls = [r.wall_s for r in _records(raw) if r.status != "skipped" and r.wall_s is not None]
    done = len(walls)
    if not walls:
        return done, "ETA unknown"
    remaining = (total - done) * (sum(walls) / done)
    return done, f"elapsed {fmt_s(sum(walls))}, ETA {fmt_s(remaining)}"


def predecessor(raw: Path, run_id: str) -> Predecessor | None:
    """The run that ran last before this one in the study's raw folder (by its end time; a round the
    precision target skipped measured nothing and ran nothing): its run id and target, or None for the
    first. Whatever a run leaves behind reaches the next one: the plan balances it (pgfslab.config.order),
    and the exchangeability section checks it from this record."""
    ran = [r for r in _records(raw) if r.run_id != run_id and r.status != "skipped" and r.ended_at]
    last = max(ran, key=lambda r: str(r.ended_at), default=None)
    return Predecessor(run_id=last.run_id, target=last.target) if last else None


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
