"""A run's copies of its study's parts (run.json's `target_spec`, `workload_spec`, `os`, `resources`) as the
config's typed objects, so the stages after the run read them as the run had them, never by string keys. A copy that
does not build is an error naming the run and the part; a run.json without the copy (a minimal external record)
gives None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pgfslab.config.model import OsSettings, Resources, TargetSpec, Workload
from pgfslab.records.config_node import Node
from pgfslab.records.run_record import RunRecord

N = TypeVar("N", bound=Node)


def _typed(cls: type[N], copy: Mapping[str, Any] | None, rec: RunRecord, part: str) -> N | None:
    return cls.from_dict(copy, f"run {rec.run_id}: run.json's {part}") if copy else None


def target_spec(rec: RunRecord) -> TargetSpec | None:
    return _typed(TargetSpec, rec.target_spec, rec, "target_spec")


def workload(rec: RunRecord) -> Workload | None:
    return _typed(Workload, rec.workload_spec, rec, "workload_spec")


def os_settings(rec: RunRecord) -> OsSettings:
    return _typed(OsSettings, rec.os, rec, "os") or OsSettings()


def resources(rec: RunRecord) -> Resources:
    return _typed(Resources, rec.resources, rec, "resources") or Resources()
