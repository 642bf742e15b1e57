"""A target's device baseline record, baseline.json (data/raw/<study>/_setup/<target>/device/): the target measured
without PostgreSQL (fio jobs, pg_test_fsync). `run.device_baseline` fills and writes it, `ingest` makes it the
`device_baselines` row. Version 2 is the first written through this model; version 1 (and none) had the same
keys. The parts shared with run.json are run_record's; the measurement itself (`baseline`: the jobs, their
options and outputs' names) is the runner's record, kept as it wrote it."""

from __future__ import annotations

from pathlib import Path

from pgfslab.records.reading import Record, json_object, upgraded, validated
from pgfslab.records.run_record import CgroupRecord, DiskRecord, GitFacts, HostFacts, Json, MountFacts, Part

SCHEMA_VERSION = 2
KNOWN_VERSIONS = (1, 2)


class Measured(Part):
    """What the baseline runner measured with (pgfslab.run.device_baseline.Baseline); its jobs kept."""

    fio_version: str | None = None
    ioengine: str | None = None
    direct: bool | None = None
    duration_s: float | None = None
    size: str | None = None
    notes: list[str] = []


class BaselineRecord(Record):
    """baseline.json."""

    schema_version: int = SCHEMA_VERSION
    study: str
    target: str
    spec: Json | None = None  # the config's target entry
    settings: Json | None = None  # the study's device_baseline settings, defaults filled in
    started_at: str | None = None
    ended_at: str | None = None
    wall_s: float | None = None
    device_profile: Json | None = None  # pgfslab.config.device_profiles.describe
    mount: MountFacts | None = None
    fs_label: str | None = None
    cgroup: CgroupRecord | None = None
    disk: DiskRecord | None = None
    baseline: Measured | None = None
    host: HostFacts | None = None
    git: GitFacts | None = None


def parse(data: Json, where: str = "baseline.json") -> tuple[BaselineRecord, list[str]]:
    """A record from baseline.json's mapping (version 1 read as 2). Returns it and the keys it did not know."""
    return validated(BaselineRecord, upgraded(data, KNOWN_VERSIONS, where), where)


def read(path: Path) -> tuple[BaselineRecord, list[str]]:
    """A baseline.json file as a record (see `parse`)."""
    return parse(json_object(path, "device baseline record"), str(path))


def json_schema() -> Json:
    """The record's JSON schema (docs/baseline-record.schema.json)."""
    return BaselineRecord.model_json_schema()
