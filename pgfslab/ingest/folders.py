"""How a study's raw folder is laid out, read without the ingest's libraries (the Snakefile asks at every
start-up, where importing DuckDB and polars for it cost a third of a second)."""

from __future__ import annotations

from pathlib import Path


def host_folders(root: Path) -> list[Path]:
    """The host folders of a study folder: subfolders that carry a study.yaml of their own (run folders
    and _setup/ never do). Empty for a study run on one machine."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "study.yaml").exists()
    )
