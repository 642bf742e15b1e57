"""The package's types are checked whole (`make lint` runs mypy over pgfslab at pyproject.toml's settings, and
fails on an error): no module is exempt, and none may be made so."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_no_module_is_exempt_from_the_type_check() -> None:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    exempt = [m for o in cfg.get("overrides", []) if o.get("ignore_errors") for m in o["module"]]
    assert exempt == [], f"modules whose type errors are ignored: {exempt}"
    assert cfg["files"] == ["pgfslab"] and cfg.get("check_untyped_defs") is True


def test_every_type_ignore_names_its_error_code() -> None:
    """A bare `# type: ignore` hides every error on its line, the next one too."""
    bare = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "pgfslab").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"#\s*type:\s*ignore(?!\[)", line)
    ]
    assert bare == []
