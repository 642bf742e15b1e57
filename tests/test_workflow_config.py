"""What Snakemake's --configfile / --config mean for a study (pgfslab.config.workflow_config)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from pgfslab import paths
from pgfslab.config import workflow_config
from pgfslab.errors import LabError

REPO = Path(__file__).resolve().parent.parent


def _default() -> dict:
    return yaml.safe_load((REPO / "config" / "default.yaml").read_text())


def test_a_config_file_on_the_command_line_replaces_the_default_study_whole() -> None:
    # what Snakemake hands over: the default deep-merged with the --configfile (its targets would leak in)
    other = yaml.safe_load((REPO / "config" / "fs-micro.yaml").read_text())
    merged = {**_default(), **other, "targets": {**_default()["targets"], **other["targets"]}}
    raw_only, cfg, source = workflow_config.resolve(
        merged, cli_files=[str(REPO / "config" / "fs-micro.yaml")], cli_overrides={}, default_file="config/default.yaml"
    )
    assert not raw_only
    assert set(cfg["targets"]) == set(other["targets"])
    assert cfg["study"] == other["study"]
    assert source.endswith("fs-micro.yaml")


def test_config_values_apply_over_the_file_and_are_recorded() -> None:
    overrides = {"run": {"duration_s": 7}, "study": "shorter"}
    _, cfg, source = workflow_config.resolve(
        {**_default(), **overrides},
        cli_files=[str(REPO / "config" / "default.yaml")],
        cli_overrides=overrides,
        default_file="config/default.yaml",
    )
    assert cfg["run"]["duration_s"] == 7
    assert cfg["run"]["progress_interval_s"] == _default()["run"]["progress_interval_s"]  # nested keys kept
    assert cfg["study"] == "shorter"
    assert "--config" in source and "duration_s" in source


def test_raw_only_needs_a_study_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LabError, match="study=NAME"):
        workflow_config.resolve({"raw_only": 1}, cli_files=[], cli_overrides={"raw_only": 1}, default_file="x")
    with pytest.raises(LabError, match="data/raw/nothing/study.yaml: missing"):
        workflow_config.resolve({}, cli_files=[], cli_overrides={"raw_only": 1, "study": "nothing"}, default_file="x")
    frozen = tmp_path / "data" / "raw" / "there"
    frozen.mkdir(parents=True)
    (frozen / "study.yaml").write_text(yaml.safe_dump({**_default(), "study": "there"}))
    raw_only, cfg, _ = workflow_config.resolve(
        {}, cli_files=[], cli_overrides={"raw_only": 1, "study": "there"}, default_file="x"
    )
    assert raw_only and cfg["study"] == "there"


def test_a_bad_override_is_refused_with_the_key_named() -> None:
    overrides = {"run": {"duration_s": "long"}}
    with pytest.raises(LabError, match="duration_s"):
        workflow_config.resolve(
            {**_default(), **overrides}, cli_files=[], cli_overrides=overrides, default_file="config/default.yaml"
        )


def test_nested_config_values_arrive_as_text_and_numbers_are_read_as_numbers() -> None:
    overrides = {"run": {"duration_s": "5", "restore": "false"}, "title": "1e3 MB"}  # as Snakemake passes them
    _, cfg, _ = workflow_config.resolve(
        _default(), cli_files=[], cli_overrides=overrides, default_file="config/default.yaml"
    )
    assert cfg["run"]["duration_s"] == 5 and cfg["run"]["restore"] is False
    assert cfg["title"] == "1e3 MB"


def test_the_same_file_given_either_way_is_the_same_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make run` passes `--configfile` (Snakemake makes it absolute), scripts `--config config=` (as given):
    the frozen config's source, a param of the freeze rule, must not differ, or every analysis re-runs."""
    (tmp_path / "study.yaml").write_text((REPO / "config" / "fs-micro.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    _, _, by_file = workflow_config.resolve(
        {}, cli_files=[str(tmp_path / "study.yaml")], cli_overrides={}, default_file="config/default.yaml"
    )
    _, _, by_key = workflow_config.resolve(
        {}, cli_files=[], cli_overrides={"config": "study.yaml"}, default_file="config/default.yaml"
    )
    assert by_file == by_key == "study.yaml"


def test_the_frozen_config_keeps_the_order_of_targets_and_workloads(tmp_path: Path) -> None:
    """The freeze rule's JSON goes through `pgfslab freeze` into data/raw/<study>/study.yaml: btrfs-compression
    lists ext4 first (every comparison's baseline), and so must its frozen config (it once came out sorted)."""
    import subprocess
    import sys

    _, cfg, source = workflow_config.resolve(
        {}, cli_files=[str(REPO / "config" / "btrfs-compression.yaml")], cli_overrides={}, default_file="x"
    )
    out = tmp_path / "study.yaml"
    subprocess.run(
        [sys.executable, "-m", "pgfslab", "freeze", "--json", workflow_config.frozen_json(cfg), "--source", source,
         "--out", str(out)],
        check=True, cwd=REPO,
    )  # fmt: skip
    frozen = yaml.safe_load(out.read_text())
    assert list(frozen["targets"]) == ["ext4", "btrfs", "btrfs-zlib"]
    assert list(frozen["workloads"]) == ["tpcb", "select", "tpcb-nofsync"]


def test_the_run_config_is_written_at_parse_time_only_when_it_changed(tmp_path: Path) -> None:
    cfg = {"study": "s", "targets": {"ext4": {"fs": "ext4"}}, "run": {"duration_s": 5}}
    path = workflow_config.run_config(cfg, tmp_path)
    assert path == tmp_path / "s" / "run-config.json"
    assert json.loads(path.read_text()) == cfg
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))  # a second older, so that a rewrite would show
    workflow_config.run_config(dict(cfg), tmp_path)
    assert path.stat().st_mtime_ns == before - 10**9  # same content: not written (no-op stamps stay valid)
    changed = {**cfg, "run": {"duration_s": 6}}
    workflow_config.run_config(changed, tmp_path)
    assert json.loads(path.read_text())["run"] == {"duration_s": 6}
    host = workflow_config.run_config({**cfg, "host": "h1"}, tmp_path)
    assert host.name == "run-config-h1.json" and path.exists()


def test_a_changed_claim_or_schema_reruns_its_stage() -> None:
    """Snakemake re-runs a stage when its code changes: the seeds' claims and the ingest's schema are code
    too (an edited claims.yaml once left a study's verdict table as it was)."""
    from pgfslab.analysis import registry

    code = {
        stage: {p.relative_to(paths.LAB).as_posix() for p in files} for stage, files in registry.stage_code().items()
    }
    assert "pgfslab/analysis/verdicts/claims.yaml" in code["analyse"] & code["paper"]
    assert "pgfslab/ingest/schema.sql" in code["ingest"]
    assert "pgfslab/analysis/verdicts/evaluate.py" in code["analyse"]
