"""Build the whitepaper: execute paper/whitepaper.ipynb with papermill against the study
database, stamp the notebook with title/authors/date taken from the data (never today's date,
so a rebuild from the same raw folder gives the same paper), and export PDF and HTML."""

from __future__ import annotations

import datetime as dt
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

from pgfslab.errors import LabError

META_FILE = "paper_meta.json"
LONG_CELLS_FILE = "long-cells.json"  # the table cells the PDF sets on more than three lines (pdf_export)


def write_meta(build_dir: str | Path, **meta: Any) -> None:
    """Called from the paper notebook: facts the exporter needs that only the data knows (abstract)."""
    p = Path(build_dir) / META_FILE
    p.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(p.read_text()) if p.exists() else {}
    p.write_text(json.dumps({**old, **meta}, indent=2, default=str))


def _study_meta(db: Path, study: str) -> dict[str, Any]:
    from pgfslab.analysis import queries

    info = queries.study_info(db)
    runs = queries.runs(db, study)
    last = runs["ended_at"].max() if runs.height else None
    authors = info.get("authors")
    return {
        "title": info.get("title") or f"pgfs-lab study {study}",
        "authors": (json.loads(authors) if isinstance(authors, str) else None) or ["pgfs-lab"],
        "date": last.date().isoformat() if isinstance(last, dt.datetime) else "undated",
        "study": study,
    }


def build(
    db: Path,
    study: str,
    source: Path,
    executed: Path,
    pdf: Path,
    html: Path,
    *,
    figures_dir: str | Path | None = None,
    tables_dir: str | Path | None = None,
) -> None:
    """Execute the paper notebook against `db` and the executed notebooks' outputs (figures in
    `figures_dir`, default figures/<study>; tables and their publications in `tables_dir`, default
    <build dir>/tables, the build dir being the executed notebook's folder), then export PDF and HTML."""
    # here, not at the top: the paper notebook's kernel imports this module (write_meta) and needs neither
    import papermill

    from pgfslab.analysis.kernel import START_TIMEOUT_S, private_sockets
    from pgfslab.paper import pdf_export

    executed, pdf, html = Path(executed), Path(pdf), Path(html)
    build_dir = executed.parent
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / META_FILE).unlink(missing_ok=True)
    with private_sockets() as kernel_config:
        try:
            papermill.execute_notebook(
                str(source),
                str(executed),
                kernel_name="python3",
                progress_bar=False,
                request_save_on_cell_execute=False,  # written once at the end (as analysis.execute)
                config=kernel_config,  # analysis.kernel: no port shared with a notebook started beside it
                start_timeout=START_TIMEOUT_S,
                # absolute: the notebook resolves relative paths against the repository, not this directory
                parameters={
                    "db": str(Path(db).absolute()),
                    "study": study,
                    "figures_dir": str(Path(figures_dir or f"figures/{study}").absolute()),
                    "tables_dir": str(Path(tables_dir or build_dir / "tables").absolute()),
                    "build_dir": str(build_dir.absolute()),
                },
            )
        except papermill.PapermillExecutionError as exc:
            raise LabError(
                f"{source}: cell {exc.exec_count} failed: {exc.ename}: {exc.evalue} "
                f"(executed copy with the traceback: {executed})"
            ) from None
    nb = nbformat.read(executed, as_version=4)
    meta = _study_meta(db, study)
    extra = build_dir / META_FILE
    if extra.exists():
        meta.update(json.loads(extra.read_text()))
    nb.metadata["pgfs"] = meta
    nbformat.write(nb, executed)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    # side by side: Typst typesets without the GIL, while nbconvert writes the HTML in this thread
    with ThreadPoolExecutor(max_workers=1) as pool:
        typeset = pool.submit(pdf_export.export_pdf, executed, pdf, build_dir / LONG_CELLS_FILE)
        export_html(executed, html)
        typeset.result()


TEMPLATES = Path(__file__).with_name("templates")


def export_html(notebook: Path, html: Path) -> None:
    """The executed paper as one HTML file: figures embedded, no code, the paper's title in <title> and at the
    top, and nothing fetched from the network (templates/offline)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        extra_template_basedirs=[str(TEMPLATES)],
        template_name="offline",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    nb = nbformat.read(notebook, as_version=4)
    title = (nb.metadata.get("pgfs") or {}).get("title")
    if title:
        nb.metadata["title"] = title
    body, _ = exporter.from_notebook_node(nb)
    html.write_text(body)
