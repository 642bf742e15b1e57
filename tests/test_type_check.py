"""The package's types are checked (`make lint` runs mypy over pgfslab at pyproject.toml's settings, and fails on
an error), and the list of modules not clean yet only shrinks: a listed module that has become clean must come
off the list."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _not_clean_yet() -> list[str]:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    return [m for o in cfg.get("overrides", []) if o.get("ignore_errors") for m in o["module"]]


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_every_module_not_clean_yet_exists() -> None:
    for module in _not_clean_yet():
        path = REPO / Path(*module.split("."))
        assert path.with_suffix(".py").exists() or (path / "__init__.py").exists(), module


@pytest.mark.slow
def test_a_module_on_the_not_clean_list_still_has_errors(tmp_path: Path) -> None:
    """Each listed module checked alone, without its exemption: one with no error left is taken off the list."""
    listed = _not_clean_yet()
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = tmp_path / "mypy.ini"
    strict.write_text(
        "[mypy]\npython_version = 3.11\nplugins = pydantic.mypy\nignore_missing_imports = True\n"
        f"check_untyped_defs = {cfg.get('check_untyped_defs', False)}\n"
    )
    res = _mypy("--config-file", str(strict), "pgfslab")
    failing = {line.split(":", 1)[0] for line in res.stdout.splitlines() if ": error:" in line}
    clean = [
        m
        for m in listed
        if not any(f.removesuffix(".py").removesuffix("/__init__").replace("/", ".") == m for f in failing)
    ]
    assert clean == [], f"clean now, take them off [tool.mypy] overrides in pyproject.toml: {clean}"
