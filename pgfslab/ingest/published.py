"""The published reference results of data/external/ in every study database: the files its manifest.yaml
lists (checked: every file listed, every listing a file), ingested with the lab's parsers and marked
`origin = 'published'` in `files` and `runs`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import yaml

from pgfslab import paths, yaml_text
from pgfslab.errors import LabError
from pgfslab.ingest import parsers
from pgfslab.ingest.load import ingest_file
from pgfslab.ingest.prefetch import Prefetch
from pgfslab.ingest.schema import RUNS

EXTERNAL_DIR = paths.EXTERNAL


PUBLISHED = "published"


@dataclass
class ExternalSummary:
    files: int = 0
    rows: int = 0
    warnings: list[str] = field(default_factory=list)


def external_manifest(root: Path = EXTERNAL_DIR) -> list[dict[str, Any]]:
    """The entries of `root/manifest.yaml`, checked: every entry names an existing file and a known
    format, and every file under `root` (but README.md and the manifest) has an entry."""
    mf = root / "manifest.yaml"
    if not mf.exists():
        raise LabError(f"{mf}: missing (it lists the published files and their formats)")
    try:
        doc = yaml_text.safe_load(mf.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LabError(f"{mf}:{mark.line + 1 if mark else '?'}: not valid YAML: {exc}") from None
    entries = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise LabError(f"{mf}: expected a mapping with a 'files' list")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        where = f"{mf}: files[{i}]"
        if not isinstance(e, dict) or not {"path", "format", "seed"} <= set(e):
            raise LabError(f"{where}: needs path, format and seed")
        if e["format"] not in parsers.FORMATS:
            raise LabError(f"{where}: unknown format {e['format']!r} (known: {', '.join(parsers.FORMATS)})")
        if not (root / e["path"]).is_file():
            raise LabError(f"{where}: {root / e['path']}: no such file")
        if e["path"] in seen:
            raise LabError(f"{where}: {e['path']} listed twice")
        seen.add(e["path"])
        unknown = set(e.get("run") or {}) - set(RUNS) - {"settings", "note", "command"}
        if unknown:
            raise LabError(f"{where}: run keys that are no column of runs: {', '.join(sorted(unknown))}")
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {"README.md", "manifest.yaml"}
    missing = sorted(on_disk - seen)
    if missing:
        raise LabError(f"{mf}: files not listed (add them, with their seed and format): {', '.join(missing)}")
    return entries


def published_run_id(path: str) -> str:
    return f"{PUBLISHED}/{path.rsplit('.', 1)[0]}"


def external_files(root: Path = EXTERNAL_DIR) -> list[tuple[Path, str]]:
    """The published files of `root` and their formats, in the order `ingest_external` takes them."""
    return [(root / e["path"], e["format"]) for e in external_manifest(root)]


def ingest_external(
    con: duckdb.DuckDBPyConnection, root: Path = EXTERNAL_DIR, ahead: Prefetch | None = None
) -> ExternalSummary:
    """Ingest the published results of `root` (data/external/) with the lab's parsers: files get
    origin 'published' and a null study; a manifest entry with a `run` block also gets a `runs` row
    (origin 'published', study null, run_id 'published/<path without suffix>'), in the same
    transaction as its file. Re-running replaces what an earlier run stored."""
    summary = ExternalSummary()
    for e in external_manifest(root):
        path = root / e["path"]
        run = e.get("run")
        run_id = published_run_id(e["path"]) if run else None
        record: dict[str, object] | None = None
        if run:
            record = dict.fromkeys(RUNS)
            record.update({k: v for k, v in run.items() if k in RUNS})
            record.update(
                {
                    "run_id": run_id,
                    "study": None,
                    "origin": PUBLISHED,
                    "status": "ok",
                    "target_label": f"{run.get('target')} (published)",
                    "fallback": False,
                    "run_json": json.dumps({**e, "run_id": run_id}, sort_keys=True),
                }
            )
        got = ahead.take(path) if ahead is not None else None
        res = ingest_file(
            con,
            path,
            fmt=e["format"],
            run_id=run_id,
            study=None,
            source_name=f"external/{e['path']}",
            origin=PUBLISHED,
            run_record=record,
            parsed=got[1] if got else None,
        )
        summary.files += 1
        summary.rows += res.rows
        summary.warnings += res.warnings
    return summary
