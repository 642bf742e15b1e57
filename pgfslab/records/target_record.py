"""A prepared target's record, target.json (data/raw/<study>/_setup/<target>/): `run.prepare` fills and writes it,
each run reads what its data set cost to load, `ingest` makes it the `targets` row and the paper's set-up table
reads it.

Version 2 is the first written through this model; version 1 (and none) had the same keys, less checked. The
parts shared with run.json (mount, WAL place, PostgreSQL build and facts, host, git, emulated disk, ZFS footprint)
are run_record's. A key the model does not know is left out and reported by `parse`, as for run.json.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pgfslab.records.reading import Record, json_object, upgraded, validated
from pgfslab.records.run_record import (
    Dataset,
    DiskRecord,
    GitFacts,
    HostFacts,
    Json,
    Load,
    MountFacts,
    Part,
    PgFacts,
    PostgresBuild,
    WalPlace,
    ZfsFootprint,
)

SCHEMA_VERSION = 2
KNOWN_VERSIONS = (1, 2)


class Created(Part):
    """How the target's file system was made (pgfslab.host.targets.create.create); a kind's own facts kept."""

    fs: str | None = None
    fs_label: str | None = None
    kind: str | None = None  # image, device, tmpfs, existing, dir, zfs
    fallback: bool = False
    image: str | None = None
    image_bytes: int | None = None
    label: str | None = None
    mkfs_command: list[str] | None = None
    mkfs_s: float | None = None
    mkfs_version: str | None = None


class LoadedCopy(Part):
    """The prepared cluster copied aside (study key run.restore): every run starts from it."""

    path: str | None = None
    bytes: int | None = None
    wall_s: float | None = None


class Rung(BaseModel):
    """A ladder rung's data set, loaded into its own database."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    rung: int
    database: str
    database_bytes: int | None = None
    load: Load | None = None
    load_sysbench: Load | None = None


class TargetRecord(Record):
    """target.json. Only the study and the target are required: a target without PostgreSQL records no
    cluster, an old raw folder less."""

    schema_version: int = SCHEMA_VERSION
    study: str
    target: str
    spec: Json | None = None  # the config's target entry (workflow/schemas/config.schema.yaml)
    dataset: Dataset | None = None
    started_at: str | None = None
    ended_at: str | None = None
    postgres_build: PostgresBuild | None = None
    created: Created | None = None
    mount: MountFacts | None = None
    wal: WalPlace | None = None
    initdb: bool | None = None
    initdb_command: list[str] | None = None
    load: Load | None = None  # without a ladder: the study's data set
    load_sysbench: Load | None = None
    rungs: list[Rung] | None = None  # with a ladder: each rung's
    settled: Json | None = None  # the state every first run starts from (pgfslab.run.start_state)
    loaded_copy: LoadedCopy | None = None  # run.restore: the settled cluster kept aside, every run's start
    postgres: PgFacts | None = None
    fs_used_bytes: int | None = None
    zfs_footprint: ZfsFootprint | None = None
    disk: DiskRecord | None = None
    tools: dict[str, str | None] | None = None
    host: HostFacts | None = None
    host_key: str | None = None
    git: GitFacts | None = None

    def loaded(self, rung: int | None) -> tuple[Load | None, Load | None, str, int | None]:
        """A data set's loads (pgbench's, sysbench's), its database and its size: the study's, or a rung's."""
        if rung is None:
            size = self.postgres.database_bytes if self.postgres else None
            return self.load, self.load_sysbench, "postgres", size
        own = next((r for r in self.rungs or [] if r.rung == rung), None)
        if own is None:  # a record without the rung: the cluster's database, as before rungs were recorded
            return None, None, "postgres", self.postgres.database_bytes if self.postgres else None
        return own.load, own.load_sysbench, own.database, own.database_bytes

    def load_wall_s(self) -> float | None:
        """The bulk load's wall time as the set-up table gives it: pgbench's, else sysbench's."""
        return (self.load.wall_s if self.load else None) or (self.load_sysbench.wall_s if self.load_sysbench else None)


def parse(data: Json, where: str = "target.json") -> tuple[TargetRecord, list[str]]:
    """A record from target.json's mapping (version 1 read as 2: the same keys). Returns it and the keys it did
    not know (left out). A value of the wrong type is refused, naming the file and the key."""
    return validated(TargetRecord, upgraded(data, KNOWN_VERSIONS, where), where)


def read(path: Path) -> tuple[TargetRecord, list[str]]:
    """A target.json file as a record (see `parse`); a file that is not JSON is refused, naming it."""
    return parse(json_object(path, "target record"), str(path))


def json_schema() -> Json:
    """The record's JSON schema (docs/target-record.schema.json)."""
    return TargetRecord.model_json_schema()
