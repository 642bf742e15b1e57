"""What the paper says of a study's runs: which runs ran and with which lab commit (an optional precision round the
study skipped ran nothing). Inputs are run.json records and configs written here by hand, or a recorded study's
raw folder read with plain code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from conftest import DATA

from pgfslab.config import study as config
from pgfslab.ingest.run_rows import run_row
from pgfslab.paper import testbed
from pgfslab.paper.context import Context

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def study(workloads: dict[str, dict[str, Any]], **more: Any) -> config.Study:
    raw = {"study": "t", "targets": {"ext4": {"fs": "ext4"}}, "workloads": workloads, "run": {"duration_s": 15}}
    return config.Study.from_dict(config.validate(raw | more, "test"))


def record(run_id: str, workload: str, tool: str, **more: Any) -> dict[str, Any]:
    """A run.json as run/record.py writes it, with what the paper reads."""
    rec = {"run_id": run_id, "study": "t", "target": "ext4", "fs": "ext4", "workload": workload, "tool": tool}
    rec |= {"clients": 1, "repeat": 1, "status": "ok", "run": {"duration_s": 15}, "git": {"commit": COMMIT}}
    return rec | more


def context(cfg: config.Study, records: list[dict[str, Any]]) -> Context:
    """A paper context of `records`, their rows as the ingest makes them (run_rows.run_row)."""
    runs = pl.DataFrame([run_row(r) for r in records], infer_schema_length=None)
    return Context(
        db="-",
        study="t",
        info={},
        cfg=cfg,
        runs=runs,
        targets=pl.DataFrame(),
        headline=pl.DataFrame(),
        records={r["run_id"]: r for r in records},
        figures_dir=Path("-"),
        tables_dir=Path("-"),
        build_dir=Path("-"),
    )


# ---------------------------------------------------------------- which runs ran, with which commit


def test_skipped_precision_rounds_are_no_runs_of_an_unknown_commit(tmp_path: Path) -> None:
    """ladder-precision skipped round 4 of both rungs (precise enough): those run.json say `skipped` and carry no
    commit. The paper's runs, records and lab commit are those of the runs that ran."""
    from pgfslab.ingest.study import ingest_study

    raw = DATA / "studies" / "ladder-precision"
    recs = [json.loads(p.read_text()) for p in sorted(raw.glob("*/run.json"))]
    ran = [r for r in recs if r["status"] != "skipped"]
    assert len(ran) < len(recs) and all("git" not in r for r in recs if r["status"] == "skipped")
    db = tmp_path / "lp.duckdb"
    ingest_study(raw, db, progress=False, external=None)
    ctx = Context.load(str(db), "ladder-precision", figures_dir="f", tables_dir="t", build_dir="b")
    commits = sorted({r["git"]["commit"][:12] for r in ran})
    assert testbed._facts(ctx)["Lab commit"] == ", ".join(commits)
    assert sorted(ctx.runs["run_id"]) == sorted(ctx.records) == sorted(r["run_id"] for r in ran)


def test_a_run_that_ran_without_a_commit_is_unknown() -> None:
    cfg = study({"wf": {"tool": "fsmicro", "op": "write_fsync"}})
    recs = [record("a", "wf", "fsmicro"), record("b", "wf", "fsmicro", git={})]
    assert testbed._facts(context(cfg, recs))["Lab commit"] == f"{COMMIT[:12]}, unknown — 2 commits over the runs"
