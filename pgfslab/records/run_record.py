"""A run's record, run.json, as one typed model: `run` fills and writes it, `ingest` and the analysis read it.

Version 3 keeps how the workload's tool ended under one key, `outcome`, whatever the tool (version 2 kept it
under the tool's name, one field per tool). Version 2 was the first written through this model (every key the
lab writes is a field here: a typo or a value of the wrong type fails at the run, not at the analysis); version 1
(and records with no version: minimal run.json files of hand-made or external raw folders) had the same keys,
less checked. `read` brings each up to the current version, a reader per version (`_from_v1`, `_from_v2`). A key
the model does not know is kept out of the record and reported by `read`, so the ingest can say so instead of
dropping it silently.

Parts that copy the study (target_spec, workload_spec, run, sampler, os, resources) keep the config's own
mapping: their schema is workflow/schemas/config.schema.yaml. Parts that are facts a tool or the kernel
reported (PostgreSQL's settings, cgroup paths) keep what was reported, under a typed envelope. The JSON
schema of the whole record is docs/run-record.schema.json (tests check it is current).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pgfslab.errors import LabError
from pgfslab.records.reading import Record, json_object, validated

SCHEMA_VERSION = 3
KNOWN_VERSIONS = (1, 2, 3)
# where versions 1 and 2 kept the tool's outcome: under the tool's name, for the tools there were then
V2_OUTCOME_KEYS = ("pgbench", "sysbench", "fsmicro", "durability")

Json = dict[str, Any]  # a mapping kept as it was reported (see the module's docstring for which)
Scalar = str | int | float | bool
Status = Literal["running", "ok", "failed", "skipped", "interrupted", "error"]


class Part(BaseModel):
    """A part of the record: its fields typed; facts the machine reported beyond them are kept."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)


class HostFacts(Part):
    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    mem_total_kb: int | None = None


class GitFacts(Part):
    commit: str | None = None
    dirty: bool | None = None


class PostgresBuild(Part):
    """The PostgreSQL build the run used (pgfslab.host.pg_install)."""

    bindir: str | None = None
    major: int | None = None
    version: str | None = None
    source: str | None = None
    wheel: str | None = None
    sha256: str | None = None
    origin: str | None = None


class PgFacts(Part):
    """The server's facts before or after the run (pgfslab.host.postgres.Cluster.facts)."""

    version: str | None = None
    server_version_num: int | None = None
    data_checksums: bool | None = None
    settings: dict[str, Json] = {}
    database_bytes: int | None = None
    all_databases_bytes: int | None = None
    bgwriter: dict[str, int | float | None] = {}
    database_stats: dict[str, int | float | None] = {}
    relations: list[Json] = []


class MountFacts(Part):
    """A target as mounted for the run (pgfslab.host.targets.mounted.Mounted.describe)."""

    name: str | None = None
    fs: str | None = None
    fs_label: str | None = None
    path: str | None = None
    mountpoint: str | None = None
    fallback: bool = False
    device: str | None = None
    mount_options: str | None = None
    direct_io: bool | None = None
    kind: str | None = None
    notes: list[str] = []
    mount_s: float | None = None
    implementation: str | None = None
    zfs: Json | None = None
    disk: Json | None = None  # the emulated disk under the target's loop device


class Dataset(Part):
    """The run's data set (the study's `dataset`, with the ladder's rung): sysbench's part is the config's."""

    scale: int | None = None
    rung: int | None = None
    fillfactor: int | None = None
    sysbench: Json | None = None


class TargetSetup(Part):
    """What the run's data set cost to load, from the target's preparation record."""

    load_wall_s: float | None = None
    load_sysbench_wall_s: float | None = None
    database: str | None = None
    database_bytes_loaded: int | None = None
    created: Json | None = None


class Predecessor(Part):
    """The run that ran last before this one in the study's raw folder."""

    run_id: str | None = None
    target: str | None = None


class StealAttempt(Part):
    """An attempt of the run measured again because the host took more CPU time than `run.steal_retry` allows."""

    host_steal: float | None = None  # steal over the CPU time wanted during the attempt's tool run
    started_at: str | None = None
    kept: str | None = None  # its folder, relative to the study's raw folder (_attempts/...)


class Load(Part):
    """One tool's bulk load of a data set, timed (pgbench -i; sysbench prepare with its tables' keys)."""

    command: list[str] | None = None
    wall_s: float | None = None
    scale: int | None = None
    fillfactor_sql: list[str] | None = None
    fillfactor_s: float | None = None


class Reloaded(Part):
    """The run's data set loaded again just before it (study key run.reload; pgfslab.run.reload): the run's
    own load, as the preparation made it (the database dropped and created, bulk-loaded, settled)."""

    database: str | None = None
    load: Load | None = None
    load_sysbench: Load | None = None
    settled: Json | None = None  # vacuum analyze, checkpoint, autovacuum quiet (pgfslab.run.start_state)
    database_bytes: int | None = None  # the database as loaded, before the run
    wall_s: float | None = None  # the whole reload: drop, create, load, settle


class Restored(Part):
    """The target's cluster put back as loaded before the run (study key run.restore; pgfslab.run.restore)."""

    source: str | None = None  # the copy of the loaded cluster
    bytes: int | None = None
    wall_s: float | None = None


class HostProbe(Part):
    """The host's speed just before the run (pgfslab.host.cpu_probe)."""

    work: str | None = None
    wall_s: float | None = None
    mib_per_s: float | None = None


class ServerFacts(Part):
    """The server's life over the run: filled as it goes (a crash during the run is data)."""

    start_notes: list[str] = []
    cleanup: list[str] = []
    log_signs: list[str] = []
    alive_after_run: bool | None = None
    crashed: bool | None = None
    crash: str | None = None
    facts_error: str | None = None


class ToolOutcome(Part):
    """How the workload's tool ended."""

    returncode: int | None = None
    wall_s: float | None = None
    timed_out: bool = False


class WalPlace(Part):
    """Where WAL lived when a target keeps it on another (`wal_on`)."""

    target: str | None = None
    fs: str | None = None
    fs_label: str | None = None
    device: str | None = None
    mountpoint: str | None = None
    dir: str | None = None
    mount_options: str | None = None


class DiskRecord(Part):
    """The emulated disk's model and its daemon's counters over the run and over the tool's measured window."""

    profile: str | None = None
    model: Json | None = None
    daemon: Json | None = None
    counters: Json | None = None
    measured: Json | None = None  # the tool's window, before the record is complete (then in counters)
    series: str | None = None


class CgroupRecord(Part):
    """The run's cgroup: the limits asked for and applied, and what it used (pgfslab.host.cgroups)."""

    name: str | None = None
    applied: bool | None = None
    reason: str | None = None
    limits: Json | None = None
    usage: Json | None = None


class StartState(Part):
    """The state the run started from, reached and verified (pgfslab.run.start_state)."""

    cache: str | None = None
    caches_dropped: bool | None = None
    server_restarted: bool | None = None
    hit_ratio: float | None = None
    steady: bool | None = None  # a warm start's hit ratio settled within the passes allowed
    checkpoint: Json | None = None
    autovacuum_workers: int | None = None
    autovacuum_quiet: bool | None = None


class Compsize(Part):
    """btrfs compsize of the target after the run (or why it could not say)."""

    disk_bytes: int | None = None
    uncompressed_bytes: int | None = None
    referenced_bytes: int | None = None
    command: list[str] | None = None
    error: str | None = None


class ZfsFootprint(Part):
    """ZFS's own accounting of the target's dataset after the run (pgfslab.host.zfs.pools.footprint)."""

    dataset: str | None = None
    implementation: str | None = None
    used: int | None = None
    referenced: int | None = None
    compressratio: float | None = None
    logicalused: int | None = None
    logicalused_est: int | None = None


class RunRecord(Record):
    """run.json. Every key is optional: a skipped round records little, an external raw folder less; the
    ingest names the keys it cannot do without (`require`)."""

    schema_version: int = SCHEMA_VERSION
    # what the run was: its place in the plan and the study's parts it used
    run_id: str | None = None
    study: str | None = None
    plan_index: int | None = None
    plan_total: int | None = None
    target: str | None = None
    target_spec: Json | None = None
    fs: str | None = None
    fs_label: str | None = None
    workload: str | None = None
    workload_spec: Json | None = None
    tool: str | None = None
    clients: int | None = None
    repeat: int | None = None
    position: int | None = None  # the target's place in its round (run.order decides it)
    burn_in: bool | None = None  # a burn-in round: shown, never compared
    rung: int | None = None
    duration_s: int | float | None = None  # the run's own length (a workload may set its own)
    dataset: Dataset | None = None
    run: Json | None = None
    sampler: Json | None = None
    os: Json | None = None
    resources: Json | None = None
    postgres_settings_config: dict[str, Scalar] | None = None
    # how it went
    status: Status | None = None
    error: str | None = None
    partial: bool | None = None
    skip_reason: str | None = None
    precision: Json | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_s: float | None = None
    phases_s: dict[str, float | None] | None = None
    files: list[str] | None = None
    commands: list[list[str]] | None = None
    # where it ran
    host: HostFacts | None = None
    host_key: str | None = None
    vm: dict[str, str] | None = None
    vm_applied: Json | None = None
    tools: dict[str, str | None] | None = None
    postgres_build: PostgresBuild | None = None
    git: GitFacts | None = None
    target_setup: TargetSetup | None = None
    predecessor: Predecessor | None = None
    host_probe: HostProbe | None = None
    host_steal: float | None = None  # steal over the CPU time wanted during the tool's run (pgfslab.host.cpu_ticks)
    steal_attempts: list[StealAttempt] | None = None  # earlier attempts set aside by run.steal_retry
    # the machine around it
    mount: MountFacts | None = None
    mount_after_crash: MountFacts | None = None
    fallback: bool | None = None
    wal: WalPlace | None = None
    restored: Restored | None = None  # run.restore: the cluster as loaded, copied back before the run
    reloaded: Reloaded | None = None  # run.reload: the run's own load of its data set, just before it
    caches: str | None = None
    cgroup: CgroupRecord | None = None
    disk: DiskRecord | None = None
    safety_net: list[str] | None = None
    # the server and the tool
    server: ServerFacts | None = None
    postgres_settings: dict[str, Scalar] | None = None
    prewarm: Json | None = None
    start_state: StartState | None = None
    postgres_before: PgFacts | None = None
    postgres: PgFacts | None = None
    snapshots: Json | None = None
    outcome: ToolOutcome | None = None  # how the workload's tool (`tool`) ended
    # what it left on the target
    fs_used_bytes: int | None = None
    compsize: Compsize | None = None
    zfs_footprint: ZfsFootprint | None = None

    def require(self, *names: str, where: str = "run.json") -> None:
        """Refuse a record without the keys a stage cannot do without, naming them and the file."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise LabError(f"{where}: no {', '.join(missing)} (a run's record needs them)")


def _from_v1(data: Json) -> Json:
    """Version 1 (or none) -> 2: the same keys; the run's length was the study's when not given."""
    out = dict(data)
    if out.get("duration_s") is None and isinstance(out.get("run"), dict) and "duration_s" in out["run"]:
        out["duration_s"] = out["run"]["duration_s"]
    out["schema_version"] = 2
    return out


def _from_v2(data: Json) -> Json:
    """Version 2 -> 3: the tool's outcome, kept under the tool's name, moves to `outcome` (a key named after
    another tool than the run's is left where it was, and so reported as not understood)."""
    out = dict(data)
    tool = out.get("tool")
    if tool in V2_OUTCOME_KEYS and tool in out:
        out["outcome"] = out.pop(tool)
    out["schema_version"] = 3
    return out


UPGRADES = {1: _from_v1, 2: _from_v2}  # each version's reader, to the next one


def parse(data: Json, where: str = "run.json") -> tuple[RunRecord, list[str]]:
    """A record from run.json's mapping, brought to the current version. Returns it and the keys it did not
    know (left out of the record). A value of the wrong type is refused, naming the file and the key."""
    version = data.get("schema_version", 1)
    if version not in KNOWN_VERSIONS:
        raise LabError(f"{where}: schema_version {version!r} is not one this lab reads ({KNOWN_VERSIONS})")
    while version in UPGRADES:
        data = UPGRADES[version](data)
        version = data["schema_version"]
    return validated(RunRecord, data, where)


def read(path: Path) -> tuple[RunRecord, list[str]]:
    """A run.json file as a record (see `parse`); a file that is not JSON is refused, naming it."""
    return parse(json_object(path, "run record"), str(path))


def json_schema() -> Json:
    """The record's JSON schema (docs/run-record.schema.json)."""
    return RunRecord.model_json_schema()
