"""A run whose target's image is gone (the study's work directory cleaned, then the study run again) is refused
before it touches the raw folder: the earlier run stays where it is, and the error names the record to delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgfslab.config.checks import validate
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.run import execute


def study(tmp_path: Path) -> Study:
    cfg = {
        "study": "gone",
        "workdir": str(tmp_path / "work"),
        "targets": {"ssd": {"fs": "ext4", "size_gb": 1}, "data": {"fs": "ext4", "size_gb": 1, "wal_on": "ssd"}},
        "workloads": {"w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "run": {"repeats": 1, "duration_s": 5},
    }
    return Study.from_dict(validate(cfg))


def image(s: Study, target: str) -> Path:
    path = s.work_dir / "images" / f"{target}.img"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_a_run_on_a_missing_image_keeps_the_earlier_run_and_names_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = study(tmp_path)
    run_id = next(r.run_id for r in s.runs if r.target == "data")
    earlier = s.raw_dir / run_id / "run.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps({"status": "ok"}))
    image(s, "ssd")  # the WAL target's is there, the data target's is not
    with pytest.raises(LabError) as err:
        execute.run_one(s, run_id)
    assert "target data" in str(err.value)
    assert str(Path("data/raw/gone/_setup/data/target.json")) in str(err.value)
    assert json.loads(earlier.read_text()) == {"status": "ok"}
    assert not (s.raw_dir / "_attempts").exists()


def test_the_wal_targets_image_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = study(tmp_path)
    image(s, "data")
    with pytest.raises(LabError, match="target ssd: its image"):
        execute.require_images(s.run_view(s.find_run(next(r.run_id for r in s.runs if r.target == "data"))))


def test_present_images_and_a_directory_fallback_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = study(tmp_path)
    image(s, "ssd")
    (s.work_dir / "dirs" / "data").mkdir(parents=True)  # no loop devices: the target fell back to a directory
    execute.require_images(s.run_view(s.find_run(next(r.run_id for r in s.runs if r.target == "data"))))
