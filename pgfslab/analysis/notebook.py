"""What every analysis notebook does first, in one call: its path parameters resolved against the repository
(a notebook opened in JupyterLab runs with its kernel in notebooks/; papermill passes absolute paths), the
lab's chart theme on, the study's config and one colour per target.

    db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pgfslab.analysis import charts, queries
from pgfslab.paths import in_lab


class Setup(NamedTuple):
    db: Path
    figures_dir: Path
    tables_dir: Path
    cfg: dict[str, Any]
    colors: charts.alt.Scale


def setup(db: str | Path, study: str, figures_dir: str | Path, tables_dir: str | Path) -> Setup:
    """Resolve the notebook's paths, enable the theme, read the study's config and target colours.

    A database that does not exist stops the notebook with one line saying how to make it."""
    db_path = in_lab(db)
    if not db_path.exists():
        raise queries.MissingData(
            f"{db_path}: no such study database: run the study first (`make run`, or "
            f"`make analyse STUDY={study}` on its raw folder), or set `db` in the parameters cell"
        )
    charts.use_theme()
    cfg = queries.study_config(db_path)
    runs = queries.runs(db_path, study).select("target", "target_label").unique()
    labels = {t: lab for t, lab in runs.iter_rows() if lab and lab != t}  # e.g. 'zfs (zfs-fuse, userspace)'
    colors = charts.target_colors(queries.target_names(db_path, study), labels)  # one colour per target, everywhere
    return Setup(db_path, in_lab(figures_dir), in_lab(tables_dir), cfg, colors)
