"""A plan sized from a study's last runs on a machine that does not have them: the measures `pgfslab seed-summary`
keeps with the study's record (docs/results/<study>.json, `plan`) read back by `pgfslab plan`
(pgfslab.analysis.plan_record)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
import yaml

from pgfslab import paths
from pgfslab.analysis import design, plan_record
from pgfslab.cli import main as cli
from pgfslab.config.study import Study, validate
from pgfslab.errors import LabError
from pgfslab.paper import seed_summary

CFG = {
    "study": "t",
    "seeds": ["004"],
    "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
    "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8], "repeats": 6}},
    "run": {"duration_s": 30},
}


def _record(tmp_path: Path, measured: plan_record.PlanInputs | None) -> Path:
    s = seed_summary.StudyVerdicts(
        study="t",
        verdicts=pl.DataFrame({"claim": ["c"], "verdict": ["holds"]}),
        first_start=datetime(2026, 12, 1, 9, tzinfo=UTC),
        last_end=datetime(2026, 12, 2, 1, tzinfo=UTC),
        commits={"a" * 40: 12},
        runs=12,
        plan=measured,
    )
    seed_summary.save_record(s, tmp_path)
    return tmp_path / "t.json"


def test_the_plan_reads_a_record_and_says_whose_runs_it_was_sized_from(tmp_path: Path) -> None:
    measured = plan_record.inputs(
        "here",
        sigma=pl.DataFrame({"workload": ["rw"], "clients": [8], "rung": [None], "sigma": [0.04]}),
        sigma_rounds=pl.DataFrame({"workload": ["rw"], "clients": [8], "sigma": [0.015]}),  # no rung column at all
        cost=pl.DataFrame(
            {
                "workload": ["rw", "rw"],
                "clients": [8, 8],
                "target": ["ext4", "btrfs"],
                "wall_s": [41.0, 50.0],
                "beyond_s": [11.0, 20.0],
            }
        ),  # fmt: skip
    )
    back = plan_record.load(_record(tmp_path, measured))
    assert back is not None
    assert back.source == "the study's runs of 2026-12-01 – 2026-12-02 (t.json in docs/results)"
    study = Study.from_dict(validate(CFG, "t.yaml"))
    cells = {r["clients"]: r for r in design.cells(study, back.sigma, back.cost, back.source).iter_rows(named=True)}
    # the 8-client cell takes the record's noise and cost; the 1-client cell, which the record lacks, the defaults
    assert (cells[8]["sigma"], cells[8]["sigma_from"]) == (0.04, back.source)
    assert cells[8]["minutes"] == pytest.approx(6 * ((30 + 11) + (30 + 20) + 2 * design.JOB_START_S) / 60)
    assert (cells[1]["sigma"], cells[1]["sigma_from"], cells[1]["cost_from"]) == (
        design.DEFAULT_SIGMA,
        "default",
        "estimate",
    )
    text = design.report(study, back)
    assert "sigma 0.040 (the study's runs of 2026-12-01 – 2026-12-02 (t.json in docs/results))" in text
    # a study that pairs by round is sized from the paired noise
    paired = Study.from_dict(validate({**CFG, "analysis": {"primary": "rounds-t"}}, "t.yaml"))
    assert "sigma 0.015 (the study's runs" in design.report(paired, back)


def test_a_record_without_plan_measures_gives_the_defaults(tmp_path: Path) -> None:
    assert plan_record.load(tmp_path / "none.json") is None
    assert plan_record.load(_record(tmp_path, None)) is None
    assert plan_record.load(_record(tmp_path, plan_record.inputs("here"))) is None  # measured nothing


def test_a_noise_that_could_not_be_measured_is_not_kept(tmp_path: Path) -> None:
    measured = plan_record.inputs(
        "here", sigma=pl.DataFrame({"workload": ["rw", "rw"], "clients": [1, 8], "sigma": [float("nan"), 0.05]})
    )
    kept = json.loads(_record(tmp_path, measured).read_text())["plan"]["sigma"]
    assert [r["clients"] for r in kept] == [8]


def test_a_broken_record_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text('{"study": "t", "plan": {"sigma": [{"workload": "rw", "clients": "many", "sigma": 0.1}]}}')
    with pytest.raises(LabError, match=r"t\.json: its plan measures do not read as"):
        plan_record.load(bad)
    bad.write_text("{")
    with pytest.raises(LabError, match=r"t\.json: not a readable study record"):
        plan_record.load(bad)


def test_a_follow_up_study_is_sized_from_the_study_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    measured = plan_record.inputs(
        "here", sigma=pl.DataFrame({"workload": ["rw"], "clients": [8], "rung": [None], "sigma": [0.04]})
    )
    _record(tmp_path, measured)  # study t's record, t.json
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    monkeypatch.chdir(tmp_path)  # no data/<study>.duckdb of either study here
    follow = tmp_path / "follow.yaml"
    follow.write_text(yaml.safe_dump({**CFG, "study": "follow"}))
    assert cli.main(["plan", str(follow), "--noise-from", "t"]) == 0
    assert (
        "sigma 0.040 (the study's runs of 2026-12-01 – 2026-12-02 (t.json in docs/results))" in capsys.readouterr().err
    )
    # without it the follow-up, which has never run, is sized at the stated defaults
    assert cli.main(["plan", str(follow)]) == 0
    assert f"sigma {design.DEFAULT_SIGMA:.3f} (default)" in capsys.readouterr().err
    # a study named that left nothing to size from is an error, not the defaults in silence
    assert cli.main(["plan", str(follow), "--noise-from", "nosuch"]) == 2
    assert "--noise-from nosuch: no data/nosuch.duckdb here and no record" in capsys.readouterr().err
