"""The study's record and config, its runs and targets, in the config's order."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.analysis.queries.connection import MissingData, frame, require, target_condition
from pgfslab.config.checks import validate
from pgfslab.config.study import Study
from pgfslab.records import run_record, target_record
from pgfslab.records.run_record import RunRecord
from pgfslab.records.target_record import TargetRecord
from pgfslab.yaml_text import safe_load


def study_info(db: str | Path) -> dict[str, object]:
    """The study's record (one row of table `study`)."""
    return require(frame(db, "SELECT * FROM study"), "study record").row(0, named=True)


@functools.lru_cache(maxsize=4)
def _parsed_config(text: str) -> dict[str, Any]:
    return safe_load(text)


def study_config(db: str | Path) -> dict[str, Any]:
    """The study's resolved config (study.yaml as ingested) as plain data, the caller's own copy (what a
    notebook is given)."""
    return copy.deepcopy(_parsed_config(str(study_info(db)["config_yaml"])))


@functools.lru_cache(maxsize=4)
def _study_of(text: str, where: str) -> Study:
    return Study.from_dict(validate(safe_load(text), where))


def study_of(db: str | Path) -> Study:
    """The study's resolved config (study.yaml as ingested, validated when ingested) as the typed Study."""
    return _study_of(str(study_info(db)["config_yaml"]), f"{db}: study.config_yaml")


def runs(db: str | Path, study: str, *, only_ok: bool = False, targets: Sequence[str] | None = None) -> pl.DataFrame:
    cond = "AND status = 'ok'" if only_ok else ""
    tc, tp = target_condition(targets, "runs")
    return frame(
        db, f"SELECT * EXCLUDE (run_json) FROM runs WHERE study = ? {cond} {tc} ORDER BY plan_index", [study, *tp]
    )


def targets(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    tc, tp = target_condition(targets, "targets")
    return frame(db, f"SELECT * EXCLUDE (target_json) FROM targets WHERE study = ? {tc} ORDER BY target", [study, *tp])


def target_names(db: str | Path, study: str, targets: Sequence[str] | None = None) -> list[str]:
    """Every target of the study (the colour scale's domain), in the config's order."""
    names = list(study_of(db).targets)
    if not names:
        names = runs(db, study)["target"].unique(maintain_order=True).to_list()
    return [t for t in names if not targets or t in targets]


def in_config_order(
    df: pl.DataFrame, db: str | Path, study: str, by: Sequence[str] = (), col: str = "target"
) -> pl.DataFrame:
    """`df` sorted by `by` columns, then by `col` in the order the config lists the targets (labels
    such as `x (FALLBACK: ...)` sort with their target)."""
    rank = {t: i for i, t in enumerate(target_names(db, study))}
    key = (
        pl.col(col)
        .cast(pl.Utf8)
        .str.replace(r" \(FALLBACK.*$", "")
        .replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
    )
    return df.sort([*by, key, col]) if by else df.sort([key, col])


def baseline_target(db: str | Path, study: str, targets: Sequence[str] | None = None) -> str:
    """The comparison baseline: the first target of the config (among `targets`) that ran; a target that ran no
    cell (one that only holds the others' WAL, `wal_on`) is no baseline."""
    names = target_names(db, study, targets)
    if not names:
        raise MissingData("no targets in this study database")
    ran = set(frame(db, "SELECT DISTINCT target FROM runs WHERE study = ?", [study])["target"].to_list())
    return next((t for t in names if t in ran), names[0])


def run_records(
    db: str | Path, study: str, *, targets: Sequence[str] | None = None, only_ok: bool = True
) -> dict[str, RunRecord]:
    """run_id -> the run's record (run.json as ingested), in plan order."""
    cond = "AND status = 'ok'" if only_ok else ""
    tc, tp = target_condition(targets, "r")
    df = frame(db, f"SELECT run_id, run_json FROM runs r WHERE study = ? {cond} {tc} ORDER BY plan_index", [study, *tp])
    return {r: run_record.parse(json.loads(j), f"{db}: runs.run_json of {r}")[0] for r, j in df.iter_rows()}


def target_records(db: str | Path, study: str) -> dict[str, TargetRecord]:
    """target -> its target.json (set-up record: mkfs, mount, bulk load)."""
    df = frame(db, "SELECT target, target_json FROM targets WHERE study = ? ORDER BY target", [study])
    return {t: target_record.parse(json.loads(j), f"{db}: targets.target_json of {t}")[0] for t, j in df.iter_rows()}


def workloads_with_tool(db: str | Path, study: str, tools: Sequence[str]) -> list[str]:
    return [w for w, wl in study_of(db).workloads.items() if wl.tool in tools]
