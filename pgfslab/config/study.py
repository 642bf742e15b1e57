"""A study: its validated config as one typed object (`Study`), expanded into a run plan, each run's and
each target's view of it, where its data goes, and what Snakemake compares to decide a re-run.

The plan interleaves repeats (never A A A B B B) so that slow drift of the machine cannot masquerade as a
difference between targets, and orders each round by a Williams design (pgfslab.config.order) so that
neither can a target's position in it nor the target that ran before it.

`load`, `resolve` and `validate` give the validated mapping; `Study.from_dict` builds the typed study from
it once (`load_study` does both), at each stage's boundary (the Snakefile, a command, the study database),
which passes on the part a function needs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from pgfslab import paths, yaml_text
from pgfslab.config import device_profiles
from pgfslab.config.checks import validate
from pgfslab.config.model import (
    Dataset,
    OsSettings,
    PostgresConfig,
    Resources,
    RunSettings,
    SamplerSettings,
    Snapshots,
    StudyConfig,
    TargetSpec,
    Workload,
)
from pgfslab.config.order import round_order
from pgfslab.errors import LabError
from pgfslab.tools import TOOLS

REPO = paths.LAB
STAT_HZ = SamplerSettings.stat_hz  # the /proc/stat sampler's default rate (run_fingerprint)


@dataclass(frozen=True)
class RunSpec:
    """One run of the plan: a (target, workload, clients) cell and its repeat number."""

    run_id: str
    plan_index: int
    target: str
    workload: str
    clients: int
    repeat: int
    optional: bool = False  # a round beyond precision.min_repeats: run only while the cell is not yet precise
    rung: int | None = None  # the data-set ladder's rung (1-based), None in a study without a ladder
    position: int = 0  # the target's place in its round's order (0: first), run.order rotates it per round
    burn_in: bool = False  # a burn-in round (run.burn_in_rounds): run and shown, never compared

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PostgresSettings:
    """The PostgreSQL side of one run (or of a target's preparation): binaries, user, port, the settings
    in force (the study's, the target's, the workload's) and the database holding the data set."""

    bindir: str | None
    user: str
    port: int
    settings: dict[str, Any]
    database: str = "postgres"
    version: int | None = None  # the major the study names (None: the default build)
    data_checksums: bool = False  # initdb --data-checksums (else explicitly without)


@dataclass(frozen=True)
class TargetView:
    """One target of a study with what handling it needs: where its images live, the target holding its
    WAL, its study and host."""

    name: str
    spec: TargetSpec
    study: str
    host: str | None
    workdir: Path
    wal: TargetSpec | None  # the spec of target spec.wal_on

    @property
    def setup_dir(self) -> Path:
        """data/raw/<study>[/<host>]/_setup/<target>/: the prepared target's record."""
        return raw_dir(self.study, self.host) / "_setup" / self.name

    def specs(self) -> list[TargetSpec]:
        """The target's spec and its WAL target's."""
        return [self.spec] + ([self.wal] if self.wal else [])


@dataclass(frozen=True)
class RunView:
    """Everything one run of the plan is made of, taken from the study once."""

    spec: RunSpec
    total: int  # runs in the plan
    target: TargetView
    workload: Workload
    dataset: Dataset
    os: OsSettings
    postgres: PostgresSettings
    postgres_config: PostgresConfig  # the study's `postgres` (run.json keeps its settings beside the run's)
    run: RunSettings
    sampler: SamplerSettings
    resources: Resources
    snapshots: Snapshots | None  # the study's snapshots when this run's target is snapshotted
    # how the target's data set is loaded (the preparation's settings, without the workload's): run.reload's
    load_postgres: PostgresSettings | None = None
    load_tools: frozenset[str] = frozenset()

    @property
    def run_id(self) -> str:
        return self.spec.run_id

    @property
    def label(self) -> str:
        return f"run {self.spec.plan_index + 1}/{self.total} {self.spec.run_id}"

    @property
    def raw_dir(self) -> Path:
        return raw_dir(self.target.study, self.target.host)

    @property
    def duration_s(self) -> int:
        return int(self.workload.duration_s or self.run.duration_s)

    @property
    def prewarm(self) -> bool | str:
        """How the run's server starts: True (relations in shared_buffers), "read" (in the page cache only) or
        False (cold); the workload's `prewarm` over run.prewarm."""
        own = self.workload.prewarm
        return own if own is not None else bool(self.run.prewarm)

    @property
    def timeout_s(self) -> float:
        # timeout_grace_s has no schema default: a new key with a default would change every existing run's
        # parameters and make Snakemake redo them
        grace = 60 if self.run.timeout_grace_s is None else float(self.run.timeout_grace_s)
        return self.duration_s * self.run.timeout_factor + grace

    def dataset_record(self) -> dict[str, Any]:
        """The run's data set as run.json records it (with the ladder's rung)."""
        return dataset_record(self.dataset, self.spec.rung)


def dataset_record(dataset: Dataset, rung: int | None) -> dict[str, Any]:
    return dataset.to_dict() if rung is None else {**dataset.to_dict(), "rung": rung}


@dataclass(frozen=True)
class Study(StudyConfig):
    """A validated study config (the fields: pgfslab.config.model.StudyConfig) and what follows from it."""

    @functools.cached_property
    def runs(self) -> list[RunSpec]:
        """The plan, interleaved: repeat r of every cell (and ladder rung) and target before r+1, after the
        burn-in rounds (run.burn_in_rounds, pgbench and sysbench cells only: run ids ...b<k>, repeat k - N,
        so rounds sort in time). The target order within a round follows run.order (pgfslab.config.order: a
        Williams design unless the study asks for `rotate` or `fixed`)."""
        cells = [
            (wl_name, rung, clients, self.repeats_for(wl_name, clients))
            for wl_name, wl in self.workloads.items()
            for rung in self.rungs_for(wl_name)
            for clients in wl.clients
        ]
        max_rep = max(n for *_, n in cells)
        precise = self.precision_cells()
        min_rep = int(self.precision.min_repeats) if precise and self.precision else 0
        burn = int(self.run.burn_in_rounds or 0)
        warmed = {name for name, wl in self.workloads.items() if TOOLS[wl.tool].has_ladder}
        out: list[RunSpec] = []
        for i, rep in enumerate(range(1 - burn, max_rep + 1)):
            for wl_name, rung, clients, n in cells:
                if rep > n or (rep < 1 and wl_name not in warmed):
                    continue
                for pos, target in enumerate(round_order(self.targets_for(wl_name), i, self.run.order)):
                    optional = (wl_name, clients) in precise and rep > min_rep
                    rid = run_id(target, wl_name, clients, rep, rung, burn) + self.host_suffix
                    out.append(RunSpec(rid, len(out), target, wl_name, clients, rep, optional, rung, pos, rep < 1))
        return out

    def find_run(self, run_id: str) -> RunSpec:
        for spec in self.runs:
            if spec.run_id == run_id:
                return spec
        raise LabError(f"run {run_id!r} is not in the plan of study {self.study!r}")

    def with_host(self, host: str | None) -> Study:
        """The same study run for another host key (its own raw folder, images and run ids)."""
        keys = self.keys if host is None or "host" in self.keys else (*self.keys, "host")
        return dataclasses.replace(self, host=host, keys=tuple(k for k in keys if host is not None or k != "host"))

    # --- where things are

    @property
    def work_dir(self) -> Path:
        """Images and mount points of this study (absolute); a host's own under <workdir>/<study>/<host>/."""
        base = Path(self.workdir) / self.study
        return (base / self.host if self.host else base).absolute()

    @property
    def raw_dir(self) -> Path:
        """The raw folder this study's runs write (data/raw/<study>/ or data/raw/<study>/<host>/)."""
        return raw_dir(self.study, self.host)

    @property
    def host_suffix(self) -> str:
        """What a run id ends in: `@<host>` for a study with a host key (run ids stay unique when the raw
        folders of several hosts meet in one database), nothing on a single machine."""
        return f"@{self.host}" if self.host else ""

    def port_of(self, target: str) -> int:
        return int(self.postgres.port_base) + list(self.targets).index(target)

    # --- the views a stage takes

    def target_view(self, name: str) -> TargetView:
        if name not in self.targets:
            raise LabError(f"target {name!r} is not in study {self.study!r} (targets: {', '.join(self.targets)})")
        spec = self.targets[name]
        wal = self.targets[spec.wal_on] if spec.wal_on else None
        return TargetView(name, spec, self.study, self.host, self.work_dir, wal)

    def postgres_for(self, target: str, workload: str | None = None, rung: int | None = None) -> PostgresSettings:
        return PostgresSettings(
            self.bindir_of(target),
            self.postgres.user,
            self.port_of(target),
            self.pg_settings_for(target, workload),
            database_for(rung),
            self.pg_version_of(target),
            bool(self.postgres.data_checksums),
        )

    def resources_for(self, target: str) -> Resources:
        """The limits of a target's runs: the study's `resources`, with the blkio throttles of the target's
        throttle profile (a check refuses a profile beside resources.blkio; an emulated disk is no cgroup's)."""
        profile = device_profiles.throttle(self.targets[target].device_profile)
        if profile is None:
            return self.resources
        return dataclasses.replace(self.resources, blkio=device_profiles.blkio(profile))

    def run_view(self, spec: RunSpec) -> RunView:
        return RunView(
            spec=spec,
            total=len(self.runs),
            target=self.target_view(spec.target),
            workload=self.workloads[spec.workload],
            dataset=self.dataset_for(spec.target, spec.rung),
            os=self.os_for(spec.workload),
            postgres=self.postgres_for(spec.target, spec.workload, spec.rung),
            postgres_config=self.postgres,
            run=self.run,
            sampler=self.sampler,
            resources=self.resources_for(spec.target),
            snapshots=self.snapshots if spec.target in self.snapshot_targets() else None,
            load_postgres=self.postgres_for(spec.target, None, spec.rung),
            load_tools=frozenset(self.tools_for(spec.target)),
        )

    # --- what Snakemake compares (a job re-runs when its text changes)

    @functools.cached_property
    def mapping(self) -> dict[str, Any]:
        """The validated mapping (to_dict), made once: fingerprints are read from it, as Snakemake asks for
        every job's. Not to be changed by a caller."""
        return self.to_dict()

    def run_fingerprint(self, r: RunSpec) -> str:
        """Everything a run's result depends on, as one text: Snakemake re-runs a run when it changes (and
        only then: a copied raw folder with arbitrary file times is never re-measured)."""
        m = self.mapping
        return json.dumps(
            {
                "target": m["targets"][r.target],
                "workload": m["workloads"][r.workload],
                "clients": r.clients,
                "dataset": m["dataset"]
                if r.rung is None
                else dataset_record(self.dataset_for(r.target, r.rung), r.rung),
                # the round's order and its burn-in decide the plan, not what one run measures
                "run": {k: v for k, v in m["run"].items() if k not in ("order", "burn_in_rounds")},
                # the /proc/stat sampler came later: at its default rate it is left out, so raw folders recorded
                # before it keep their fingerprints and are not re-measured for it (their verdicts say CPU time
                # was not sampled)
                "sampler": {k: v for k, v in m["sampler"].items() if not (k == "stat_hz" and v == STAT_HZ)},
                "postgres": m["postgres"],
                "os": m["os"],
                "resources": m["resources"],
                "snapshots": m.get("snapshots"),
                **self._profile_fingerprint(r.target),
                # only an optional round depends on the precision target (whether it runs at all); the key is
                # absent otherwise, so adding `precision` to a study never re-measures its fixed rounds
                **({"precision": m["precision"]} if r.optional else {}),
            },
            sort_keys=True,
        )

    def target_fingerprint(self, target: str) -> str:
        """Everything a prepared target (file system, cluster, loaded data) depends on."""
        m = self.mapping
        wal = self.targets[target].wal_on
        return json.dumps(
            {
                "target": m["targets"][target],
                "dataset": m["dataset"],
                "postgres": m["postgres"],
                "tools": sorted(self.tools_for(target)),
                "snapshots": target in self.snapshot_targets(),
                **({"wal_on": m["targets"][wal]} if wal else {}),
                **({"ladder": m["ladder"]} if self.ladder else {}),
                # the loaded copy run.restore puts back is made by the preparation; absent, as before the key
                **({"restore": True} if self.run.restore else {}),
            },
            sort_keys=True,
        )

    def wal_target_inputs(self, target: str) -> list[str]:
        """The prepared-target record of the target that holds `target`'s WAL (none when WAL stays in PGDATA)."""
        wal = self.targets[target].wal_on
        return [str(self.raw_dir / "_setup" / wal / "target.json")] if wal else []

    def baseline_enabled(self) -> bool:
        return self.device_baseline is not None and self.device_baseline.enabled is not False

    def baseline_fingerprint(self, target: str) -> str:
        """Everything a target's device baseline depends on: its spec and the baseline settings."""
        m = self.mapping
        return json.dumps(
            {
                "target": m["targets"][target],
                "device_baseline": m.get("device_baseline"),
                **self._profile_fingerprint(target),
            },
            sort_keys=True,
        )

    def _profile_fingerprint(self, target: str) -> dict[str, Any]:
        """What a target's device profile stands for (its throttles; an emulated disk's datasheet values with
        the config's overrides), nothing for a target without one, so that no existing run's fingerprint
        changes: a changed preset re-measures the runs and the baseline."""
        spec = self.targets[target]
        if spec.device_profile is None:
            return {}
        return {
            "device_profile": {spec.device_profile: device_profiles.fingerprint(spec.device_profile, spec.device_model)}
        }

    def baseline_inputs(self, target: str) -> list[str]:
        """The device baseline a target's runs wait for (none when the study has no baseline)."""
        setup = self.raw_dir / "_setup" / target
        return [str(setup / "device" / "baseline.json")] if self.baseline_enabled() else []


def run_id(target: str, workload: str, clients: int, repeat: int, rung: int | None = None, burn_in: int = 0) -> str:
    """<target>.<workload>[.d<rung>].c<clients>.r<repeat>; a burn-in round (repeat <= 0 of `burn_in` rounds)
    ends in .b<k>, k = 1..burn_in."""
    last = f"r{repeat}" if repeat >= 1 else f"b{repeat + burn_in}"
    return f"{target}.{workload}{'' if rung is None else f'.d{rung}'}.c{clients}.{last}"


def database_for(rung: int | None) -> str:
    """The database holding a rung's data set (the default `postgres` without a ladder)."""
    return "postgres" if rung is None else f"pgfslab_d{rung}"


# Data paths are relative to the working directory (the repo root under `make`; a temporary
# directory in the integration tests), so a study never writes outside the tree it runs in.


def raw_dir(study: str, host: str | None = None) -> Path:
    """data/raw/<study>/: every raw output of the study, untouched, with provenance; a study run on several
    machines has one such folder per host key, data/raw/<study>/<host>/."""
    base = Path("data") / "raw" / study
    return base / host if host else base


# --- reading a config


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a study config file (YAML)."""
    p = Path(path)
    if not p.exists():
        raise LabError(f"{p}: config file not found")
    try:
        raw = yaml_text.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise LabError(f"{p}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return resolve(raw, str(p), p.parent)


def load_study(path: str | Path) -> Study:
    """Read, validate and build a study config file."""
    return Study.from_dict(load(path))


def resolve(raw: Any, source: str, base: Path) -> dict[str, Any]:
    """Validate a config (as read, or as Snakemake merged it) and make the files it names absolute: custom
    pgbench scripts are named relative to the config file's folder `base`."""
    cfg = validate(raw, source)
    for wl in cfg["workloads"].values():
        for item in wl.get("scripts") or []:
            if not Path(item["file"]).is_absolute():
                item["file"] = str((base / item["file"]).resolve())
    return cfg
