"""nbconvert exporter: executed notebook -> Markdown -> pandoc -> Typst -> PDF, no TeX.

    jupyter nbconvert --to pgfslab.paper.pdf_export.TypstPDFExporter paper.ipynb   (pgfslab installed, as `make setup` does)
    python -m pgfslab.paper.pdf_export paper.ipynb paper.pdf
    pgfslab.paper.pdf_export.export_pdf(Path("paper.ipynb"), Path("paper.pdf"))

Code input and prompts are left out. Title, authors, date and abstract come from the notebook's
metadata (`metadata["pgfs"] = {"title", "authors", "date", "abstract", "lang"}`; Jupyter's own
`metadata.title/authors` as a fallback), never from the clock, so a rebuild gives the same paper.

Conventions for notebook authors (see `pgfslab.analysis.charts.figure`):
- Numbered figure: `charts.figure(chart, "caption", label="fig-x")` in a code cell, or a displayed
  Markdown image alone in its paragraph, `display(Markdown("![caption](figures/x.svg){#fig-x}"))`.
  An image without alt text / a chart shown as a bare cell result is an unnumbered, uncaptioned image.
- Numbered table: a displayed Markdown pipe table followed by a blank line and `Table: caption`
  (`report.markdown_table(df, caption=...)`); an optional `{#tbl-x}` at the end of the caption
  labels it. Tables get their caption above, figures below.
- Table columns are sized by the template (templates/paper.typ) as a browser sizes an automatic table: each at
  least its longest word, short columns whole, the rest of the line to the columns of long text. A cell the PDF
  still sets on more than `max_cell_lines` lines (3) is named in a warning, and `export_pdf` can list them in a
  JSON file (the paper build writes build/<study>/long-cells.json; tests hold every recorded paper to none):
  set a column of sentences under its table (`report.markdown_table(notes=...)`), as a list
  (`report.Publication.entries`), or turn a few rows of many columns on their side (`report.transposed`).
- Cross-references: `@fig-x`, `@tbl-x`, `@sec-x` (a heading `## Setup {#sec-setup}`) in Markdown
  become "Figure 1" etc. Other `@words` stay literal text (pandoc citations are off).
- Headings: the shallowest heading level in the document becomes a numbered section (1, 1.1);
  deeper levels are unnumbered.
- Images: SVG is converted to PDF with vl-convert (Typst would draw SVG text in its own fonts, and
  has no Liberation Sans), or the PDF `charts.save_chart` drew from it is taken (the SVG file's `.pdf`
  sibling, written after it); PDF and PNG/JPEG are embedded as they are. Relative image paths are looked
  up next to the notebook, then in the current directory, then in `image_search_paths`.
- Output types: Markdown, images and plain text appear; HTML-only outputs (e.g. a DataFrame's
  table) cannot be typeset and fall back to their plain text, with a warning. stderr is left out,
  with a warning. A cell error output stops the export.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import nbformat
import pypandoc
import typst
import vl_convert as vlc
from jinja2 import DictLoader
from nbconvert.exporters import Exporter, MarkdownExporter
from traitlets import Bool, Int, List, Unicode, default
from traitlets.config import Config

from pgfslab import paths
from pgfslab.errors import LabError

TEMPLATE = paths.PAPER_TEMPLATE
READER = "markdown-citations-yaml_metadata_block"  # pandoc's Markdown; `@x` stays text, no YAML blocks
PRIORITY = ["text/markdown", "application/pdf", "image/svg+xml", "image/png", "image/jpeg", "text/plain"]
IMAGE_TYPES = {"application/pdf", "image/svg+xml", "image/png", "image/jpeg"}

# Extends nbconvert's Markdown template: images carry the caption/label from the output's
# metadata["pgfs"] (set by charts.figure), else no alt text (a bare image, not a figure);
# stderr is dropped; Markdown outputs marked metadata["pgfs"]["front_matter"] (the abstract, which the
# template typesets from the notebook metadata) are left out of the body.
MARKDOWN_TEMPLATE = r"""{%- extends 'markdown/index.md.j2' -%}
{%- macro image(output, mime) -%}
{%- set p = output.metadata.get('pgfs', {}) -%}

![{{ p.get('caption', '') }}]({{ output.metadata.filenames[mime] | path2url }}){% if p.get('label') %}{{ '{#' ~ p.get('label') ~ '}' }}{% endif %}

{% endmacro -%}
{% block data_pdf %}{{ image(output, 'application/pdf') }}{% endblock data_pdf %}
{% block data_svg %}{{ image(output, 'image/svg+xml') }}{% endblock data_svg %}
{% block data_png %}{{ image(output, 'image/png') }}{% endblock data_png %}
{% block data_jpg %}{{ image(output, 'image/jpeg') }}{% endblock data_jpg %}
{% block data_markdown %}{% if not output.metadata.get('pgfs', {}).get('front_matter') %}{{ output.data['text/markdown'] }}{% endif %}{% endblock data_markdown %}
{% block stream %}{% if output.name == 'stdout' %}
{{ output.text | indent }}
{% endif %}{% endblock stream %}
"""


class PDFExportError(LabError):
    """pandoc or Typst failed, an image is missing, or the notebook holds an error output."""

    workdir: Path | None = None  # set after a Typst error: the kept directory with paper.typ


def paper_metadata(nb_meta: dict[str, Any]) -> dict[str, Any]:
    """Pandoc metadata (title, author, date, abstract, lang, pgfs-year/month/day) from the notebook."""
    pgfs = dict(nb_meta.get("pgfs") or {})
    title = pgfs.get("title") or nb_meta.get("title")
    authors = pgfs.get("authors") or nb_meta.get("authors") or []
    if isinstance(authors, str):
        authors = [authors]
    authors = [a.get("name", "") if isinstance(a, dict) else str(a) for a in authors]
    meta: dict[str, Any] = {"author": [a for a in authors if a]}
    for key in ("abstract", "lang"):
        if pgfs.get(key):
            meta[key] = str(pgfs[key])
    if title:
        meta["title"] = str(title)
    date = pgfs.get("date") or nb_meta.get("date")
    if date:
        meta["date"] = str(date)
        parsed = _parse_date(str(date))
        if parsed:
            meta.update({"pgfs-year": str(parsed.year), "pgfs-month": str(parsed.month), "pgfs-day": str(parsed.day)})
    return meta


def _parse_date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


class TypstMarkdownExporter(MarkdownExporter):
    """nbconvert's Markdown export as the Typst route needs it: no code, no prompts, images with
    captions from output metadata, the best static output type first (PRIORITY), no stderr."""

    @default("template_file")
    def _template_file_default(self) -> str:
        return "pgfs_typst.md.j2"

    @default("extra_loaders")
    def _extra_loaders_default(self) -> list[Any]:
        return [DictLoader({"pgfs_typst.md.j2": MARKDOWN_TEMPLATE})]

    @default("exclude_input")
    def _exclude_input_default(self) -> bool:
        return True

    @default("exclude_input_prompt")
    def _exclude_input_prompt_default(self) -> bool:
        return True

    @default("exclude_output_prompt")
    def _exclude_output_prompt_default(self) -> bool:
        return True

    @property
    def default_config(self) -> Config:
        c = super().default_config
        c.merge(Config({"NbConvertBase": {"display_data_priority": PRIORITY}}))
        return c


class TypstPDFExporter(Exporter):
    """Notebook -> PDF through `TypstMarkdownExporter`, pandoc's Typst writer and the Typst compiler."""

    export_from_notebook = "PDF via Typst"
    output_mimetype = "application/pdf"

    typst_template = Unicode(str(TEMPLATE), help="pandoc template for the Typst writer").tag(config=True)
    font_paths = List(Unicode(), help="extra font directories for Typst (system fonts are ignored)").tag(config=True)
    image_search_paths = List(Unicode(), help="more directories for relative image paths").tag(config=True)
    allow_errors = Bool(False, help="export even if a cell has an error output").tag(config=True)
    max_cell_lines = Int(
        3, help="a table cell set on more lines than this is named in a warning and in `long_cells` (0: not checked)"
    ).tag(config=True)

    long_cells: list[LongCell]  # after an export: the table cells set on more than `max_cell_lines` lines

    @default("file_extension")
    def _file_extension_default(self) -> str:
        return ".pdf"

    def from_notebook_node(  # type: ignore[override]  # a PDF exporter gives bytes, as nbconvert's own PDFExporter
        self, nb: nbformat.NotebookNode, resources: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[bytes, dict[str, Any]]:
        nb, resources = super().from_notebook_node(nb, resources, **kw)  # a copy, preprocessed
        self._check_outputs(nb)
        markdown, resources = TypstMarkdownExporter(config=self.config, parent=self).from_notebook_node(nb, resources)
        started = time.perf_counter()
        pdf = self.markdown_to_pdf(markdown, paper_metadata(nb.metadata), resources)
        self.log.info("typeset %d bytes of PDF in %.2f s", len(pdf), time.perf_counter() - started)
        resources.pop("outputs", None)  # the images are inside the PDF; nothing to write beside it
        resources.pop("attachments", None)
        resources["output_extension"] = self.file_extension
        return pdf, resources

    def _check_outputs(self, nb: nbformat.NotebookNode) -> None:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            kept = []
            for out in cell.get("outputs", []):
                if out.output_type == "error" and not self.allow_errors:
                    raise PDFExportError(
                        f"cell {i} has an error output, not exporting a paper with a traceback: "
                        f"{out.get('ename')}: {out.get('evalue')}"
                    )
                if out.output_type == "stream" and out.get("name") == "stderr":
                    self.log.warning("cell %d: stderr left out of the PDF: %s", i, out.text.strip()[:200])
                    continue
                data = out.get("data", {})
                if "text/html" in data and not ({"text/markdown"} | IMAGE_TYPES) & set(data):
                    self.log.warning(
                        "cell %d: HTML output cannot be typeset; its plain text is shown instead "
                        "(emit Markdown, e.g. report.markdown_table)",
                        i,
                    )
                kept.append(out)
            cell.outputs = kept

    def markdown_to_pdf(self, markdown: str, meta: dict[str, Any], resources: dict[str, Any]) -> bytes:
        """Markdown (with image references into `resources` or on disk) -> PDF bytes. The work
        directory is removed, except after a Typst error (the error names it, to inspect paper.typ)."""
        work = Path(tempfile.mkdtemp(prefix="pgfs-typst-"))
        keep = False
        try:
            return self._typeset(markdown, meta, resources, work)
        except PDFExportError as exc:
            keep = exc.workdir is not None
            raise
        finally:
            if not keep:
                shutil.rmtree(work, ignore_errors=True)

    def _typeset(self, markdown: str, meta: dict[str, Any], resources: dict[str, Any], work: Path) -> bytes:
        self.long_cells = []
        (work / "meta.json").write_text(json.dumps(meta, ensure_ascii=False))
        (work / "paper.md").write_text(markdown)
        ast = json.loads(_pandoc(markdown, "json", READER, [f"--metadata-file={work / 'meta.json'}"]))
        _Images(work, resources, self._search_paths(resources)).rewrite(ast)
        _shift_headings(ast)
        _keep_with_heading(ast)
        _apostrophes_after_digits(ast)
        typ = _pandoc(json.dumps(ast), "typst", "json", ["--standalone", f"--template={self.typst_template}"])
        typ = re.sub(r"\\@((?:fig|tbl|sec|eq)-[\w:.-]*\w)", r"#ref(<\1>)", typ)  # @fig-x -> "Figure 1"
        typ = re.sub(r"(caption: \[)\s+", r"\1", typ)  # pandoc's line break after "[" would print a space
        # pandoc gives a wide table fixed percentage columns (from the Markdown dashes), which squeezes short
        # headers ("clients") into hyphenation; Typst's auto columns size each to its content and wrap the rest
        typ = re.sub(r"columns: \(((?:[\d.]+%,?\s*)+)\)", lambda m: f"columns: {m.group(1).count('%')}", typ)
        main = work / "paper.typ"
        main.write_text(typ)
        date = _parse_date(str(meta.get("date", "")))
        stamp = dt.datetime(date.year, date.month, date.day, tzinfo=dt.UTC) if date else None
        check = self.max_cell_lines > 0
        try:
            # with the check, the template records each table cell's height in lines (templates/paper.typ)
            compiler = typst.Compiler(
                str(main),
                root=str(work),
                font_paths=list(self.font_paths),
                ignore_system_fonts=True,
                sys_inputs={"cell-lines": "1"} if check else {},
            )
            pdf, warnings = compiler.compile_with_warnings(timestamp=stamp)
            cells = json.loads(compiler.query("<cell-lines>", field="value")) if check else []
        except typst.TypstError as exc:
            detail = (getattr(exc, "diagnostic", "") or getattr(exc, "message", "") or str(exc)).rstrip()
            hints = "".join(f"\n  hint: {h}" for h in getattr(exc, "hints", []) or [])
            error = PDFExportError(f"typst failed:\n{detail}{hints}\n(Typst source: {main})")
            error.workdir = work
            raise error from None
        for w in warnings:
            self.log.warning("typst: %s", (getattr(w, "diagnostic", "") or getattr(w, "message", "") or w))
        if not isinstance(pdf, bytes):
            raise PDFExportError("typst returned no PDF")
        self.long_cells = long_cells(cells, self.max_cell_lines)
        for c in self.long_cells:
            self.log.warning("%s", c.text())
        return pdf

    def _search_paths(self, resources: dict[str, Any]) -> list[Path]:
        nb_dir = resources.get("metadata", {}).get("path") or "."
        return [Path(nb_dir), Path.cwd(), *(Path(p) for p in self.image_search_paths)]


@dataclass(frozen=True)
class LongCell:
    """A table cell the PDF sets on more lines than the exporter allows: where it is and how it begins."""

    table: int  # the table's number in the paper
    column: str  # the column's header
    row: int  # 0 is the header row
    lines: int
    page: int
    start: str  # its first words

    def text(self) -> str:
        return (
            f"Table {self.table} (page {self.page}), column {self.column!r}, row {self.row}: set on {self.lines} "
            f"lines: {self.start!r}"
        )


def long_cells(cells: list[dict[str, Any]], most: int) -> list[LongCell]:
    """The cells of the template's `<cell-lines>` records set on more than `most` lines (a header cell too)."""

    def words(text: str) -> str:
        return " ".join(text.split())

    heads = {(c["table"], c["x"]): words(c["text"]) for c in cells if c["y"] == 0}
    return [
        LongCell(
            c["table"],
            heads.get((c["table"], c["x"]), f"column {c['x'] + 1}"),
            c["y"],
            int(c["lines"]),
            int(c["page"]),
            text if len(text := words(c["text"])) <= 60 else text[:59] + "…",
        )
        for c in cells
        if c["lines"] > most
    ]


def _pandoc(text: str, to: str, fmt: str, args: list[str]) -> str:
    try:
        return pypandoc.convert_text(text, to, format=fmt, extra_args=args)
    except RuntimeError as exc:
        raise PDFExportError(f"pandoc failed ({fmt} -> {to}): {exc}") from None


class _Images:
    """Copies every image the document uses into the Typst root, SVG converted to PDF."""

    def __init__(self, work: Path, resources: dict[str, Any], search: list[Path]) -> None:
        self.work, self.search = work, search
        self.files: dict[str, bytes | str] = {**resources.get("attachments", {}), **resources.get("outputs", {})}
        self.done: dict[str, str] = {}

    def rewrite(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self.rewrite(item)
            return
        if not isinstance(node, dict):
            return
        kind, c = node.get("t"), node.get("c") or []
        if kind == "Image":
            c[2][0] = self.local(c[2][0])
        elif kind in ("Para", "Plain") and len(c) == 1 and c[0].get("t") == "Image":
            attrs = c[0]["c"][0][2]  # a standalone image without a caption: text width, like figures
            if not any(k == "width" for k, _ in attrs):
                attrs.append(["width", "100%"])
        for value in node.values():
            if isinstance(value, (list, dict)):
                self.rewrite(value)

    def local(self, url: str) -> str:
        if url not in self.done:
            data, suffix, path = self._load(url)
            if suffix == ".svg":
                data, suffix = _drawn_pdf(path) or vlc.svg_to_pdf(data.decode("utf-8")), ".pdf"
            name = f"img-{len(self.done) + 1:03d}{suffix}"
            (self.work / name).write_bytes(data)
            self.done[url] = name
        return self.done[url]

    def _load(self, url: str) -> tuple[bytes, str, Path | None]:
        """The image's bytes, its type (a suffix) and the file it came from (None: the notebook's own)."""
        if url.startswith("data:"):
            head, _, payload = url.partition(",")
            mime = head[5:].split(";")[0]
            ext = {
                "image/svg+xml": ".svg",
                "image/svg": ".svg",
                "image/png": ".png",
                "image/jpeg": ".jpg",
                "application/pdf": ".pdf",
            }.get(mime)
            if ext is None:
                raise PDFExportError(f"unsupported data URI image type {mime!r}")
            return (base64.b64decode(payload) if ";base64" in head else unquote(payload).encode()), ext, None
        if urlparse(url).scheme in ("http", "https", "ftp"):
            raise PDFExportError(f"remote image {url!r}: the PDF build is offline, save the file and link it")
        key = unquote(url)
        for k in (url, key):
            if k in self.files:
                data = self.files[k]
                return (data.encode() if isinstance(data, str) else data), Path(key).suffix.lower(), None
        path = Path(key)
        candidates = [path] if path.is_absolute() else [base / path for base in self.search]
        for cand in candidates:
            if cand.is_file():
                return cand.read_bytes(), cand.suffix.lower(), cand
        raise PDFExportError(f"image {url!r} not found (looked in: {', '.join(str(c) for c in candidates)})")


def _drawn_pdf(svg: Path | None) -> bytes | None:
    """The PDF `charts.save_chart` drew from this SVG file (its sibling `.pdf`, converted from the same SVG by
    the same vl-convert call, so the same PDF; written after the SVG), or None: convert it here."""
    if svg is None:
        return None
    pdf = svg.with_suffix(".pdf")
    try:
        if pdf.stat().st_mtime_ns >= svg.stat().st_mtime_ns:
            return pdf.read_bytes()
    except OSError:
        pass
    return None


def _keep_with_heading(ast: dict[str, Any]) -> None:
    """A paragraph right under a heading (a section's question) is kept on the page of what follows it,
    as Typst keeps a heading with its next block: a heading, its question and the section's first table
    (kept whole) move to the next page together instead of the heading ending a page alone."""

    def walk(blocks: list[Any]) -> None:
        for i in range(len(blocks) - 1, 0, -1):
            if blocks[i - 1].get("t") == "Header" and blocks[i].get("t") == "Para":
                blocks[i : i + 1] = [
                    {"t": "RawBlock", "c": ["typst", "#block(sticky: true)["]},
                    blocks[i],
                    {"t": "RawBlock", "c": ["typst", "]"]},
                ]
        for b in blocks:
            if b.get("t") == "Div":
                walk(b["c"][1])

    walk(ast["blocks"])


_DIGIT_APOSTROPHE = re.compile(r"(?<=\d)[’']")


def _apostrophes_after_digits(ast: dict[str, Any]) -> None:
    """An apostrophe after a digit ("PostgreSQL 18's") stays an apostrophe. Pandoc's Typst writer writes
    every apostrophe as ASCII `'`, and Typst's smart quotes set one after a digit as a prime (18′s, as for
    feet); the typographic apostrophe as raw Typst is left alone. Everywhere: the metadata (the title) too."""

    def pieces(text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, part in enumerate(_DIGIT_APOSTROPHE.split(text)):
            if i:
                out.append({"t": "RawInline", "c": ["typst", "’"]})
            if part:
                out.append({"t": "Str", "c": part})
        return out

    def walk(node: Any) -> None:
        if isinstance(node, list):
            i = 0
            while i < len(node):
                item = node[i]
                if isinstance(item, dict) and item.get("t") == "Str" and _DIGIT_APOSTROPHE.search(item["c"]):
                    new = pieces(item["c"])
                    node[i : i + 1] = new
                    i += len(new)
                    continue
                walk(item)
                i += 1
        elif isinstance(node, dict):
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)

    walk(ast.get("meta", {}))
    walk(ast["blocks"])


def _shift_headings(ast: dict[str, Any]) -> None:
    """Make the shallowest heading level of the document level 1 (a notebook may start at ##)."""
    headers: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("t") == "Header":
                headers.append(node)
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)

    walk(ast["blocks"])
    shift = min((h["c"][0] for h in headers), default=1) - 1
    for h in headers:
        h["c"][0] -= shift


def export_pdf(
    notebook_path: str | Path, pdf_path: str | Path, long_cells_json: str | Path | None = None, **config: Any
) -> Path:
    """Export an executed notebook to `pdf_path` (written atomically); returns the path. `long_cells_json`: where
    to write the table cells set on more than `max_cell_lines` lines (a JSON list, empty when none).
    `config` sets exporter traits, e.g. `image_search_paths=["figures"]`."""
    exporter = TypstPDFExporter(**config)
    pdf, _ = exporter.from_filename(str(notebook_path))
    if long_cells_json is not None:
        Path(long_cells_json).write_text(json.dumps([asdict(c) for c in exporter.long_cells], indent=1) + "\n")
    pdf_path = Path(pdf_path)
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=pdf_path.parent, prefix=f".{pdf_path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(pdf)
    os.chmod(tmp, 0o644)
    os.replace(tmp, pdf_path)
    return pdf_path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m pgfslab.paper.pdf_export NOTEBOOK.ipynb OUTPUT.pdf")
    try:
        print(export_pdf(Path(sys.argv[1]), Path(sys.argv[2])))
    except LabError as err:
        sys.exit(f"error: {err}")
