"""Every notebook has its percent-format pair beside it (jupytext.toml), the two say the same, and no notebook is
committed with outputs. The .ipynb is the source of truth; `make sync-notebooks` rewrites the .py from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_config

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + [REPO / "paper" / "whitepaper.ipynb"]
FIX = "run `make sync-notebooks` (it writes every .py from its .ipynb)"


def pair_text(ipynb: Path) -> str:
    """The percent-format script jupytext writes for `ipynb` under the repository's jupytext.toml."""
    return jupytext.writes(jupytext.read(ipynb), fmt="py:percent", config=load_jupytext_config(str(ipynb)))


def out_of_sync(ipynb: Path) -> str | None:
    """Why `ipynb` and its .py disagree, or None when they say the same."""
    py = ipynb.with_suffix(".py")
    if not py.exists():
        return f"{py.name} is missing beside {ipynb.name}: {FIX}"
    want, have = pair_text(ipynb), py.read_text()
    if want == have:
        return None
    for no, (w, h) in enumerate(zip(want.splitlines(), have.splitlines(), strict=False), start=1):
        if w != h:
            return f"{py.name}:{no} differs from {ipynb.name} ({h!r}, the notebook says {w!r}): {FIX}"
    return f"{py.name} and {ipynb.name} differ in length: {FIX}"


def test_the_config_pairs_ipynb_with_percent_scripts() -> None:
    cfg = load_jupytext_config(str(NOTEBOOKS[0]))
    assert cfg is not None, "jupytext.toml not found from notebooks/"
    formats = cfg.formats if isinstance(cfg.formats, str) else ",".join(cfg.formats)
    assert formats == "ipynb,py:percent"


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.name)
def test_pair_in_sync(ipynb: Path) -> None:
    assert out_of_sync(ipynb) is None, out_of_sync(ipynb)


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(ipynb: Path) -> None:
    cells = json.loads(ipynb.read_text())["cells"]
    with_output = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count") is not None]
    assert not with_output, f"{ipynb.name}: cells {with_output} carry outputs (clear them before committing)"


def test_no_stray_scripts() -> None:
    """A .py in notebooks/ without its notebook is a pair whose source of truth was deleted."""
    stray = [p.name for p in (REPO / "notebooks").glob("*.py") if not p.with_suffix(".ipynb").exists()]
    assert not stray, f"scripts without a notebook: {stray}"


def test_the_check_fails_when_one_side_is_edited_alone(tmp_path: Path) -> None:
    """Copies of a real pair: editing either file alone is caught, at the line that changed."""
    src = NOTEBOOKS[0]
    shutil.copy(REPO / "jupytext.toml", tmp_path / "jupytext.toml")
    ipynb = shutil.copy(src, tmp_path / src.name)
    py = shutil.copy(src.with_suffix(".py"), tmp_path / src.with_suffix(".py").name)
    assert out_of_sync(Path(ipynb)) is None

    # the script edited alone
    original = Path(py).read_text()
    Path(py).write_text(original.replace("import ", "import  ", 1))
    assert "differs" in (out_of_sync(Path(ipynb)) or "")
    Path(py).write_text(original)

    # the notebook edited alone
    nb = json.loads(Path(ipynb).read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = ["x = 1\n", *code["source"]] if isinstance(code["source"], list) else "x = 1\n" + code["source"]
    Path(ipynb).write_text(json.dumps(nb, indent=1))
    assert "differs" in (out_of_sync(Path(ipynb)) or "")

    # the script deleted
    Path(py).unlink()
    assert "missing" in (out_of_sync(Path(ipynb)) or "")
