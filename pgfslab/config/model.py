"""The validated study config as typed, frozen objects: one dataclass per object of
workflow/schemas/config.schema.yaml, one field per property (tests/test_study_model.py holds them to the
schema, both ways).

Built once from a validated mapping (`Study.from_dict`, after pgfslab.config.validate has filled the
schema's defaults); `to_dict()` gives that mapping back, key for key and in its own order, so the frozen
data/raw/<study>/study.yaml, run.json's copies of the spec and every fingerprint stay as they were.
A property the config did not give is None (the schema allows no null, so None always means absent). How an
object is built and given back is pgfslab.records.config_node's; a workload's keys of its tool are that tool's
options (pgfslab.tools).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from pgfslab.errors import LabError
from pgfslab.records.config_node import Node, build, config_fields, plain
from pgfslab.tools import TOOLS, ToolOptions

PgSettings = dict[str, str | int | float | bool]
Bytes = int | str  # a byte count, or a text with a unit (32MB, 1GiB)
OptionsT = TypeVar("OptionsT", bound=ToolOptions)


# --- the schema's objects, in its order; a field without a default is one the schema requires or fills


@dataclass(frozen=True)
class SeekTimes(Node):
    """targets.<name>.device_model.seek_*_ms: a datasheet's seek times in ms (what is not given: the preset's)."""

    track: float | None = None
    average: float | None = None
    full: float | None = None


@dataclass(frozen=True)
class DeviceModel(Node):
    """targets.<name>.device_model: the emulated disk's values over its preset's (pgfslab/config/disk_model.py)."""

    rpm: float | None = None
    capacity_gb: float | None = None
    cylinders: int | None = None
    rate_outer_mb_s: float | None = None
    rate_inner_mb_s: float | None = None
    overhead_ms: float | None = None
    seek_read_ms: SeekTimes | None = None
    seek_write_ms: SeekTimes | None = None
    span: float | str | None = None
    write_cache: bool | None = None


@dataclass(frozen=True)
class TargetSpec(Node):
    """targets.<name>: where one cluster lives."""

    fs: str
    size_gb: float = 4
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()
    direct_io: bool = True
    device: str | None = None
    format: bool | None = None
    dataset: dict[str, Any] | None = None  # overrides of the study's dataset (its keys, checked at validation)
    postgres_settings: PgSettings | None = None
    postgres_version: int | None = None
    postgres_bindir: str | None = None
    zfs: dict[str, str | int | bool] | None = None
    wal_on: str | None = None
    path: str | None = None
    device_profile: str | None = None  # a slow-device preset (pgfslab/config/device_profiles.py)
    device_model: DeviceModel | None = None  # the emulated disk's values over its preset's, key by key
    aa_twin_of: str | None = None  # the A/A control: this target is the named baseline's twin


@dataclass(frozen=True)
class PostgresConfig(Node):
    """postgres: the binaries, the OS user, the ports and the settings of every cluster."""

    user: str = "postgres"
    port_base: int = 55400
    settings: PgSettings = field(default_factory=dict)
    bindir: str | None = None
    version: int | None = None
    versions: tuple[int, ...] | None = None
    data_checksums: bool | None = None


@dataclass(frozen=True)
class SysbenchData(Node):
    tables: int = 4
    table_size: int = 100000
    fillfactor: int | None = None


@dataclass(frozen=True)
class Dataset(Node):
    """dataset: what each cluster is loaded with (a target may override it, a ladder's rung sets its size)."""

    scale: int = 20
    sysbench: SysbenchData = field(default_factory=SysbenchData)
    fillfactor: int | None = None
    partitions: int | None = None


@dataclass(frozen=True)
class WorkloadOs(Node):
    vm_dirty_background_bytes: Bytes | None = None
    vm_dirty_bytes: Bytes | None = None


@dataclass(frozen=True)
class ContextCells(Node):
    """workloads.<name>.context: cells kept as context for the verdicts (they cannot decide), and why."""

    why: str
    clients: tuple[int, ...] | None = None  # None: every client count of the workload


@dataclass(frozen=True)
class Workload(Node):
    """workloads.<name>: one tool's cells (a cell per client count). The config gives a workload's keys flat;
    the keys of its tool are its `options`, typed by the tool (pgfslab.tools.<tool>)."""

    tool: str
    clients: tuple[int, ...] = (1,)
    repeats: int | dict[str, int] | None = None
    duration_s: int | None = None
    postgres_settings: PgSettings | None = None
    os: WorkloadOs | None = None
    targets: tuple[str, ...] | None = None  # the targets it runs on (None: every target)
    rungs: tuple[int, ...] | None = None  # the ladder's rungs it runs at (None: every rung)
    prewarm: bool | str | None = None  # over run.prewarm: True (shared_buffers), "read" (page cache), False
    context: ContextCells | None = None  # cells that are context for the verdicts, never a claim's primary one
    options: ToolOptions = field(default_factory=ToolOptions, metadata={"key": False})
    # keys of other tools the mapping gave: the schema fills its defaults (log, percentile, ...) into every
    # workload whatever its tool, and they stay so the mapping reads back as it was; any other is refused by
    # the checks (pgfslab.config.checks), which is why it is kept rather than refused here
    other_tools_keys: dict[str, Any] = field(default_factory=dict, metadata={"key": False})

    @classmethod
    def from_dict(cls, data: typing.Mapping[str, Any], where: str = "") -> Self:
        name = data.get("tool")
        if name not in TOOLS:
            raise LabError(f"{where or 'workload'}: tool {name!r} is not one of {', '.join(TOOLS)}")
        tool = TOOLS[str(name)]
        own = {f.name for f in config_fields(tool.options)}
        common = {f.name for f in config_fields(cls)}
        unknown = sorted(set(data) - common - {k for t in TOOLS.values() for k in t.keys})
        if unknown:
            raise LabError(f"{where or 'workload'}: unknown key(s) {', '.join(unknown)}")
        wl = build(cls, {k: v for k, v in data.items() if k in common}, where)
        return dataclasses.replace(
            wl,
            options=tool.options.from_dict({k: v for k, v in data.items() if k in own}, where),
            other_tools_keys={k: v for k, v in data.items() if k not in own and k not in common},
            keys=tuple(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """The flat mapping it was built from: the common keys, its tool's and the others', in their order."""
        given = {**plain(self.other_tools_keys), **self.options.to_dict(), **super().to_dict()}
        return {k: given[k] for k in self.keys if k in given} | given

    def __post_init__(self) -> None:
        if self.tool not in TOOLS:
            raise LabError(f"workload: tool {self.tool!r} is not one of {', '.join(TOOLS)}")
        if type(self.options) is ToolOptions:  # not given: its tool's defaults
            object.__setattr__(self, "options", TOOLS[self.tool].options())
        elif not isinstance(self.options, TOOLS[self.tool].options):
            raise LabError(f"workload: {type(self.options).__name__} are not the options of tool {self.tool}")

    def options_as(self, kind: type[OptionsT]) -> OptionsT:
        """Its options as its tool's class (the runner of that tool asks; another tool's workload is an error)."""
        if not isinstance(self.options, kind):
            raise LabError(f"a {self.tool} workload has no {kind.__name__}")
        return self.options

    def context_why(self, clients: int) -> str | None:
        """Why the cell at `clients` is context for the verdicts (None: it may be a claim's primary cell)."""
        c = self.context
        return c.why if c is not None and (c.clients is None or clients in c.clients) else None


@dataclass(frozen=True)
class StealRetry(Node):
    """run.steal_retry: a run the host took too much CPU time from is measured again."""

    above: float
    attempts: int


@dataclass(frozen=True)
class RunSettings(Node):
    """run: how long and how often."""

    duration_s: int = 20
    progress_interval_s: int = 1
    aggregate_interval_s: int = 1
    drop_caches: bool = True
    timeout_factor: float = 3
    repeats: int = 5
    prewarm: bool | None = None
    # no schema default: a new key with a default would change every run's parameters and make Snakemake redo them
    timeout_grace_s: float | None = None
    # none of these three has a schema default either: an absent key keeps every existing run's fingerprint
    cache: str | None = None  # cold | warm; None: drop_caches and prewarm decide (the lab before the key)
    order: str | None = None  # williams | rotate | fixed target order within a round; None: williams
    burn_in_rounds: int | None = None  # rounds run and shown, never compared; None: 0
    restore: bool | None = None  # every run from the data set as loaded (pgfslab.run.restore); None: false
    reload: bool | None = None  # every run from a load of its own (pgfslab.run.reload); None: false
    steal_retry: StealRetry | None = None  # measure a run again where the host took more CPU (cpu_ticks); None: never


@dataclass(frozen=True)
class OsSettings(Node):
    """os: machine-wide settings applied around every run (a workload may override the vm_ ones)."""

    vm_dirty_background_bytes: Bytes | None = None
    vm_dirty_bytes: Bytes | None = None
    vm: dict[str, Bytes] | None = None
    drop_caches: bool | None = None


@dataclass(frozen=True)
class Blkio(Node):
    read_bps: Bytes | None = None
    write_bps: Bytes | None = None
    read_iops: int | None = None
    write_iops: int | None = None


@dataclass(frozen=True)
class Resources(Node):
    memory_limit_mb: int | None = None
    blkio: Blkio | None = None


@dataclass(frozen=True)
class Snapshots(Node):
    interval_s: float
    keep_s: float
    targets: tuple[str, ...]
    offset_s: float = 0


@dataclass(frozen=True)
class DeviceBaseline(Node):
    enabled: bool | None = None
    duration_s: int | None = None
    size: str | None = None
    wal_size: str | None = None
    pg_test_fsync_s: int | None = None


@dataclass(frozen=True)
class Ladder(Node):
    scales: tuple[int, ...] | None = None
    table_sizes: tuple[int, ...] | None = None
    memory_limit_mb: int | None = None

    @property
    def rungs(self) -> list[int]:
        """The rungs, 1-based."""
        return list(range(1, len(self.scales or self.table_sizes or ()) + 1))


@dataclass(frozen=True)
class Precision(Node):
    half_width: float
    confidence: float = 0.95
    min_repeats: int = 6
    max_repeats: int = 15
    budget_min: float | None = None
    cells: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SamplerSettings(Node):
    meminfo_hz: float = 1
    diskstats_hz: float = 1
    vmstat_hz: float = 1
    stat_hz: float = 1
    pgstat_hz: float = 1


@dataclass(frozen=True)
class AnalysisSettings(Node):
    moving_average_s: int = 15
    trim_s: float = 2
    alpha: float = 0.05
    # the verdicts' comparison: runs (independent samples), rounds (paired by round, signed-rank) or rounds-t (paired
    # by round, Student's t)
    primary: str = "runs"


@dataclass(frozen=True)
class StudyConfig(Node):
    """The whole study config (the top level of the schema). pgfslab.config.study.Study adds what is
    derived from it: the plan, each run's view, the fingerprints."""

    study: str
    targets: dict[str, TargetSpec]
    workloads: dict[str, Workload]
    title: str = "pgfs-lab study"
    authors: tuple[str, ...] = ("pgfs-lab",)
    seeds: tuple[str, ...] = ()
    workdir: str = "data/work"
    postgres: PostgresConfig = field(default_factory=PostgresConfig)
    dataset: Dataset = field(default_factory=Dataset)
    run: RunSettings = field(default_factory=RunSettings)
    os: OsSettings = field(default_factory=OsSettings)
    resources: Resources = field(default_factory=Resources)
    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)
    host: str | None = None
    snapshots: Snapshots | None = None
    device_baseline: DeviceBaseline | None = None
    ladder: Ladder | None = None
    precision: Precision | None = None

    # --- what the study says about one of its parts (pure: derived from the fields alone)

    def tools(self) -> set[str]:
        return {wl.tool for wl in self.workloads.values()}

    def tools_for(self, target: str) -> set[str]:
        """The tools of the workloads that run on `target` (a workload's `targets`, else every target): the data
        sets its preparation loads."""
        return {wl.tool for wl in self.workloads.values() if wl.targets is None or target in wl.targets}

    def dataset_for(self, target: str, rung: int | None = None) -> Dataset:
        """The study's dataset with the target's overrides (e.g. a different fillfactor) merged in, at a
        ladder's rung when given (its pgbench scale and sysbench table size)."""
        out = merge(self.dataset.to_dict(), self.targets[target].dataset or {})
        if rung is not None and self.ladder is not None:
            if self.ladder.scales:
                out["scale"] = int(self.ladder.scales[rung - 1])
            if self.ladder.table_sizes:
                out["sysbench"] = {**(out.get("sysbench") or {}), "table_size": int(self.ladder.table_sizes[rung - 1])}
        return Dataset.from_dict(out, f"targets.{target}.dataset")

    def os_for(self, workload: str) -> OsSettings:
        """OS settings of a workload's runs: the study's `os` with the workload's overrides."""
        over = self.workloads[workload].os
        return OsSettings.from_dict(merge(self.os.to_dict(), over.to_dict() if over else {}))

    def pg_settings_for(self, target: str, workload: str | None = None) -> dict[str, Any]:
        """PostgreSQL settings of a run: the study's, then the target's, then the workload's."""
        out = dict(self.postgres.settings)
        out.update(self.targets[target].postgres_settings or {})
        if workload is not None:
            out.update(self.workloads[workload].postgres_settings or {})
        return out

    def pg_version_of(self, target: str) -> int | None:
        """The PostgreSQL major a target's cluster runs: its own, else the study's (None: the default build)."""
        own = self.targets[target].postgres_version
        return own if own is not None else self.postgres.version

    def bindir_of(self, target: str) -> str | None:
        """A target's PostgreSQL binaries when the config names them: its own `postgres_bindir`, else the
        study's bindir unless the target names a major of its own (then that major's build)."""
        spec = self.targets[target]
        if spec.postgres_bindir is not None:
            return spec.postgres_bindir
        return None if spec.postgres_version is not None else self.postgres.bindir

    def precision_cells(self) -> set[tuple[str, int]]:
        """The (workload, clients) cells whose repeats the precision target decides (empty without `precision`)."""
        if self.precision is None:
            return set()
        cells = {
            (name, c) for name, wl in self.workloads.items() if TOOLS[wl.tool].compared_over_runs for c in wl.clients
        }
        if not self.precision.cells:
            return cells
        out: set[tuple[str, int]] = set()
        for item in self.precision.cells:
            name, _, clients = item.partition("/c=")
            out |= {(w, c) for w, c in cells if w == name and (not clients or c == int(clients))}
        return out

    def repeats_for(self, workload: str, clients: int) -> int:
        if self.precision is not None and (workload, clients) in self.precision_cells():
            return int(self.precision.max_repeats)
        reps = self.workloads[workload].repeats
        if reps is None:
            return int(self.run.repeats)
        if isinstance(reps, dict):
            return int(reps.get(str(clients), self.run.repeats))
        return int(reps)

    def ladder_rungs(self) -> list[int]:
        """The ladder's rungs, 1-based (empty without a ladder)."""
        return self.ladder.rungs if self.ladder is not None else []

    def rungs_for(self, workload: str) -> list[int | None]:
        """The rungs a workload's cells run at: every rung (or the workload's `rungs`) for pgbench and sysbench
        in a ladder study."""
        wl = self.workloads[workload]
        if TOOLS[wl.tool].has_ladder and self.ladder_rungs():
            return [r for r in self.ladder_rungs() if wl.rungs is None or r in wl.rungs]
        return [None]

    def targets_for(self, workload: str) -> list[str]:
        """The targets a workload runs on: its `targets`, else every target (in the config's order)."""
        only = self.workloads[workload].targets
        return [t for t in self.targets if only is None or t in only]

    def snapshot_targets(self) -> list[str]:
        """Targets that get periodic snapshots (and so a btrfs data subvolume at creation)."""
        return list(self.snapshots.targets) if self.snapshots is not None else []


def merge(base: dict[str, Any], over: typing.Mapping[str, Any]) -> dict[str, Any]:
    """`over` merged into `base`, mappings key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
