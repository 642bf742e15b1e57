"""`pgfslab status`: what it tells a user whose study cannot go on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pgfslab.cli import main as cli

REPO = Path(__file__).resolve().parent.parent
CONFIG = str(REPO / "config" / "default.yaml")


def _status(capsys: pytest.CaptureFixture[str]) -> str:
    cli.main(["status", "--config", CONFIG])
    return capsys.readouterr().out


def _lock(where: Path, text: str) -> None:
    (where / ".snakemake" / "locks").mkdir(parents=True)
    (where / ".snakemake" / "locks" / "0.output.lock").write_text(text)


def test_a_lock_left_by_a_killed_run_is_named_with_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert "make unlock" not in _status(capsys)
    _lock(tmp_path, "data/raw/default/ext4.rw.c4.r1/run.json\ndata/raw/default/xfs.rw.c4.r1/run.json\n")
    assert "make unlock" in _status(capsys)


def test_another_studys_lock_is_not_this_studys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _lock(tmp_path, "data/raw/default-big/ext4.rw.c4.r1/run.json\ndata/fs-compare.duckdb\n")
    assert "make unlock" not in _status(capsys)


def test_a_lock_held_by_a_running_snakemake_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _lock(tmp_path, "data/default.duckdb\n")
    # a process named like Snakemake working in this folder (its command line is all the check reads)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "snakemake"], cwd=tmp_path)
    try:
        assert "make unlock" not in _status(capsys)
    finally:
        proc.kill()
        proc.wait()
    assert "make unlock" in _status(capsys)
