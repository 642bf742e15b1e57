"""The no-op stamp (pgfslab.noop): `make run` skips Snakemake only in the state Snakemake last certified up to
date, for the same command line. A stand-in "snakemake" (a script) plays Snakemake's dry run here; the real
one is exercised by tests/test_integration.py (a second `make run`-style invocation)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from pgfslab import noop

FAKE = """import sys, pathlib
answer = pathlib.Path("answer.txt").read_text()
if "--dry-run" in sys.argv:
    print(answer)
    if pathlib.Path("touch-on-dry-run").exists():
        pathlib.Path("notebooks/nb.ipynb").write_text("edited during the dry run")
"""


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "lab"
    for rel in ("workflow/Snakefile", "notebooks/nb.ipynb", "config/study.yaml", "data/raw/s/r1/run.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "fake_snake.py").write_text(FAKE)
    (root / "answer.txt").write_text("Nothing to be done (all requested files are present and up to date).")
    monkeypatch.setattr(noop, "LAB", root)
    monkeypatch.chdir(root)
    return root


ARGV = [sys.executable, "fake_snake.py", "--configfile", "config/study.yaml"]


def run(action: str, argv: list[str] = ARGV) -> int:
    return noop.main([action, "--", *argv])


def certified(argv: list[str] = ARGV) -> None:
    assert run("snapshot", argv) == 0
    assert run("certify", argv) == 0


def bump(p: Path, text: str | None = None) -> None:
    """Change a file as an editor would (new content, later mtime)."""
    time.sleep(0.01)
    p.write_text(text if text is not None else p.read_text() + " edited")


def test_no_stamp_means_run_snakemake(lab: Path) -> None:
    assert run("check") == 3


def test_a_certified_state_is_up_to_date_for_the_same_command_line_only(lab: Path) -> None:
    certified()
    assert run("check") == 0
    assert run("check", [*ARGV, "--config", "x=1"]) == 3
    assert run("check", ARGV) == 0


@pytest.mark.parametrize(
    "change",
    [
        "edit a notebook",
        "add a raw run",
        "remove a raw run",
        "touch the config",
        "edit the venv's lock stamp",
        "environment",
    ],
)
def test_any_change_runs_snakemake_again(lab: Path, change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (lab / ".venv").mkdir()
    (lab / ".venv" / ".lock-sha256").write_text("a")
    certified()
    assert run("check") == 0
    if change == "edit a notebook":
        bump(lab / "notebooks" / "nb.ipynb")
    elif change == "add a raw run":
        (lab / "data/raw/s/r2").mkdir()
        (lab / "data/raw/s/r2/run.json").write_text("{}")
    elif change == "remove a raw run":
        (lab / "data/raw/s/r1/run.json").unlink()
    elif change == "touch the config":  # same bytes, later mtime: Snakemake would look again too
        time.sleep(0.01)
        os.utime(lab / "config/study.yaml")
    elif change == "edit the venv's lock stamp":
        bump(lab / ".venv" / ".lock-sha256", "b")
    else:
        monkeypatch.setenv("SNAKEMAKE_PROFILE", "slurm")
    assert run("check") == 3


def test_work_done_is_stamped_only_when_the_dry_run_says_nothing_is_left(lab: Path) -> None:
    assert run("snapshot") == 0
    bump(lab / "data/raw/s/r1/run.json")  # Snakemake ran a job
    (lab / "answer.txt").write_text("Job stats: 1 job")  # and something is still to do (say)
    assert run("certify") == 0
    assert run("check") == 3
    assert run("snapshot") == 0
    bump(lab / "data/raw/s/r1/run.json")
    (lab / "answer.txt").write_text("Nothing to be done (all requested files are present and up to date).")
    assert run("certify") == 0
    assert run("check") == 0


def test_a_file_changed_while_the_dry_run_looked_is_never_stamped(lab: Path) -> None:
    assert run("snapshot") == 0
    bump(lab / "data/raw/s/r1/run.json")
    (lab / "touch-on-dry-run").write_text("")
    assert run("certify") == 0
    assert run("check") == 3


def test_snakemake_about_to_run_removes_the_stamp(lab: Path) -> None:
    certified()
    assert run("snapshot") == 0  # a run starts (and may be interrupted: no certify)
    assert run("check") == 3


def test_mounted_or_work_trees_and_caches_are_not_part_of_the_state(lab: Path) -> None:
    certified()
    (lab / "data" / "work").mkdir()
    (lab / "data" / "work" / "image.img").write_text("x")
    (lab / "workflow" / "__pycache__").mkdir()
    (lab / "workflow" / "__pycache__" / "x.pyc").write_text("x")
    # Snakemake's file-listing cache, rewritten at each of its starts (a no-op one included)
    (lab / ".snakemake" / "iocache").mkdir(parents=True)
    (lab / ".snakemake" / "iocache" / "latest.pkl").write_text("x")
    # the test suite's example database (hypothesis), written while the suite runs in the checkout
    (lab / ".hypothesis" / "examples").mkdir(parents=True)
    (lab / ".hypothesis" / "examples" / "1a2b").write_text("x")
    assert run("check") == 0
