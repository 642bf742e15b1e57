"""Where the lab's own files are (found from this package, whatever the working directory).

A study's outputs (data/raw/<study>/, data/<study>.duckdb, figures/, build/, paper/) are relative to
the working directory of the command that makes them, so a study never writes outside the tree it runs
in; the lab's source files (config schema, templates, published seed data, notebooks) are found here.
"""

from __future__ import annotations

from pathlib import Path

LAB = Path(__file__).resolve().parent.parent
SCHEMA = LAB / "workflow" / "schemas" / "config.schema.yaml"
EXTERNAL = LAB / "data" / "external"
NOTEBOOKS = LAB / "notebooks"
PAPER_SOURCE = LAB / "paper" / "whitepaper.ipynb"
PAPER_TEMPLATE = LAB / "paper" / "templates" / "paper.typ"
CONFIGS = LAB / "config"
# each seed study's last verdicts and plan measures, kept with the lab (`pgfslab seed-summary`)
RESULTS = LAB / "docs" / "results"


def in_lab(path: str | Path) -> Path:
    """A path as a notebook parameter means it: absolute as given, relative to the repository (never to
    the kernel's working directory, which JupyterLab sets to the notebook's folder)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else LAB / p
