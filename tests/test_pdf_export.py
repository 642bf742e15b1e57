"""pgfslab.paper.pdf_export: a notebook built here, executed with papermill, exported through
Markdown -> pandoc -> Typst, and checked with poppler (pdftotext, pdffonts, pdfinfo, pdftoppm)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from pgfslab.paper.pdf_export import PDFExportError, TypstPDFExporter, export_pdf

pytestmark = pytest.mark.slow  # executes notebooks (kernels, figures)

REPO = Path(__file__).resolve().parent.parent
POPPLER = all(shutil.which(t) for t in ("pdftotext", "pdffonts", "pdfinfo", "pdftoppm"))
needs_poppler = pytest.mark.skipif(not POPPLER, reason="poppler-utils (pdftotext, pdffonts, ...) not installed")

META = {
    "title": "Storage under PostgreSQL: an export test",
    "authors": ["Ada Lovelace", "Edgar F. Codd"],
    "date": "2025-03-14",
    "abstract": "Three file systems, **synthetic** numbers, one test of the PDF route.",
}
FIG1 = "Per-second throughput, thin lines one per repeat, bold the moving average."
FIG2 = "Median throughput per target at four clients."
TAB1 = "Median throughput per target."

SETUP = """
import sys
import polars as pl
from IPython.display import Markdown, display
from pgfslab.analysis import charts

charts.use_theme()
charts.enable_pdf_renderer()
rows = [dict(run_id=f"{t}-{r}", target=t, repeat=r, t_s=float(s), tps=base + 40.0 * ((s * 7 + r) % 5))
        for t, base in [("ext4", 1500.0), ("xfs", 1400.0), ("btrfs", 900.0)] for r in (1, 2) for s in range(1, 31)]
progress = charts.moving_average(pl.DataFrame(rows), "tps", 15, by=["run_id"])
colors = charts.target_colors(["ext4", "xfs", "btrfs"])
print("stderr-noise-xyz", file=sys.stderr)
"""

FIGURE = f"""
chart = charts.throughput_small_multiples(progress, facet="target", color_scale=colors)
charts.figure(chart, {FIG1!r}, label="fig-tput")
"""

TABLE = f"""
med = progress.group_by("target").agg(pl.col("tps").median().alias("median")).sort("target")
rows = ["| target | median tps |", "|:---|---:|"] + [f"| {{t}} | {{m:,.1f}} |" for t, m in med.iter_rows()]
display(Markdown("\\n".join(rows) + "\\n\\nTable: {TAB1} {{#tbl-med}}"))
"""

SAVED = f"""
cells = med.with_columns(clients=pl.lit(4), lo=pl.col("median") * 0.95, hi=pl.col("median") * 1.05)
paths = charts.save_chart(charts.grouped_bars_with_error(
    cells, "clients", "median", "target", "lo", "hi", colors, x_title="clients",
    y_title="median throughput (tps)"), "figures/bars")
charts.figure(paths["svg"], {FIG2!r})
"""


def build_notebook(path: Path) -> None:
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "pgfs": META,
        }
    )
    nb.cells = [
        new_markdown_cell(
            "## Introduction\n\nThe throughput of every target is in @fig-tput and the medians "
            "in @tbl-med. Storage write-back makes comparisons delicate, and PostgreSQL 18's asynchronous I/O more so.\n\n### Scope\n\n"
            "Only synthetic numbers are used in this document."
        ),
        new_code_cell(SETUP.strip()),
        new_markdown_cell("## Results"),
        new_code_cell(FIGURE.strip()),
        new_code_cell(TABLE.strip()),
        new_code_cell(SAVED.strip()),
        new_code_cell(
            'charts.scaling_curve(cells, "clients", "median", "target", [(2, "two CPUs")], '
            'color_scale=colors, y_title="median throughput (tps)")'
        ),
        new_markdown_cell(
            "## Threats to validity\n\nThe mean is $\\bar x = \\frac{1}{n}\\sum_i x_i$. Loop devices are not disks."
        ),
    ]
    nbformat.write(nb, path)


def kernel_available() -> bool:
    from jupyter_client.kernelspec import KernelSpecManager

    return "python3" in KernelSpecManager().find_kernel_specs()


class Built:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.executed = directory / "executed.ipynb"
        self.pdf = directory / "paper.pdf"
        self.seconds = 0.0

    def run(self, *cmd: str) -> str:
        return subprocess.run([*cmd], capture_output=True, text=True, check=True).stdout

    @property
    def text(self) -> str:
        raw = self.run("pdftotext", str(self.pdf), "-")
        return " ".join(re.sub("\u00ad\\s*", "", raw).split())  # drop soft hyphens, join lines


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if not kernel_available():
        pytest.skip("no 'python3' Jupyter kernel: .venv/bin/python -m ipykernel install --sys-prefix")
    import papermill

    b = Built(tmp_path_factory.mktemp("paper"))
    build_notebook(b.dir / "source.ipynb")
    papermill.execute_notebook(
        str(b.dir / "source.ipynb"), str(b.executed), kernel_name="python3", cwd=str(b.dir), progress_bar=False
    )
    started = time.perf_counter()
    export_pdf(b.executed, b.pdf)
    b.seconds = time.perf_counter() - started
    print(f"\nPDF export took {b.seconds:.2f} s ({b.pdf.stat().st_size} bytes): {b.pdf}")
    return b


def test_pdf_is_written(built: Built) -> None:
    data = built.pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 20_000
    assert built.seconds < 30


@needs_poppler
def test_title_authors_date_from_metadata(built: Built) -> None:
    text = built.text
    assert META["title"] in text
    assert "Ada Lovelace and Edgar F. Codd" in text
    assert "2025-03-14" in text
    assert "Abstract. Three file systems, synthetic numbers" in text
    info = built.run("pdfinfo", str(built.pdf))
    assert re.search(r"Title:\s+" + re.escape(META["title"]), info)
    assert re.search(r"CreationDate:.*2025", info), info  # the metadata date, not the clock


@needs_poppler
def test_an_apostrophe_after_a_digit_stays_an_apostrophe(built: Built) -> None:
    """Typst's smart quotes would set "18's" as "18′s" (a prime, as for feet)."""
    assert "PostgreSQL 18’s asynchronous" in built.text
    assert "′" not in built.text


@needs_poppler
def test_numbered_headings_figures_tables_and_references(built: Built) -> None:
    text = built.text
    for heading in ("1 Introduction", "1.1 Scope", "2 Results", "3 Threats to validity"):
        assert heading in text, heading
    assert f"Figure 1: {FIG1}" in text
    assert f"Figure 2: {FIG2}" in text
    assert f"Table 1: {TAB1}" in text
    assert "Figure 3" not in text  # a bare chart output is an image, not a numbered figure
    assert "is in Figure 1 and the medians in Table 1." in text  # @fig-tput, @tbl-med
    for cell in ("btrfs", "ext4", "xfs", "median tps"):
        assert cell in text


@needs_poppler
def test_table_values_and_chart_text_are_real_text(built: Built) -> None:
    text = built.text
    layout = built.run("pdftotext", "-layout", str(built.pdf), "-")
    assert re.search(r"ext4\s+1,5\d\d\.\d\n", layout)  # a table row, cells side by side
    # axis titles and facet labels of the embedded charts: vector text, searchable
    for label in ("time since start (s)", "throughput (tps)", "median throughput (tps)", "clients", "two CPUs"):
        assert label in text, label


@needs_poppler
def test_no_code_no_errors_no_missing_values(built: Built) -> None:
    text = built.text
    for code in ("import", "charts.", "display(", "sys.path", "pl.col", "progress =", "stderr-noise-xyz"):
        assert code not in text, code
    for bad in (r"\bnan\b", r"\bNone\b", "Traceback", r"\bnull\b"):
        assert not re.search(bad, text, re.IGNORECASE), bad


@needs_poppler
def test_all_fonts_embedded(built: Built) -> None:
    lines = built.run("pdffonts", str(built.pdf)).splitlines()[2:]
    assert lines
    assert all(line.split()[-5] == "yes" for line in lines), "\n".join(lines)
    names = " ".join(lines)
    assert "LibertinusSerif" in names and "LiberationSans" in names


@needs_poppler
def test_page_one_renders(built: Built) -> None:
    subprocess.run(
        ["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", str(built.pdf), str(built.dir / "page")], check=True
    )
    page = next(built.dir.glob("page*.png"))
    assert page.stat().st_size > 10_000


def test_export_is_byte_reproducible(built: Built) -> None:
    again = export_pdf(built.executed, built.dir / "again.pdf")
    assert again.read_bytes() == built.pdf.read_bytes()


def test_nbconvert_accepts_the_dotted_exporter_name(built: Built) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "pgfslab.paper.pdf_export.TypstPDFExporter",
            str(built.executed),
            "--output-dir",
            str(built.dir / "cli"),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    out = built.dir / "cli" / "executed.pdf"
    assert out.read_bytes().startswith(b"%PDF")
    assert not (built.dir / "cli" / "executed_files").exists()  # images live inside the PDF


# --------------------------------------------------------------------------- errors surface


def tiny(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return new_notebook(cells=list(cells), metadata={"pgfs": {"title": "T", "date": "2025-01-01"}})


def test_typst_error_names_the_line() -> None:
    nb = tiny(new_markdown_cell("## A\n\n```{=typst}\n#no-such-function(1)\n```\n"))
    with pytest.raises(
        PDFExportError, match=r"(?s)typst failed.*unknown variable: no-such-function.*paper\.typ:\d+"
    ) as exc:
        TypstPDFExporter().from_notebook_node(nb)
    assert exc.value.workdir is not None and (exc.value.workdir / "paper.typ").exists()  # kept to inspect
    shutil.rmtree(exc.value.workdir)


def test_missing_image_is_an_error() -> None:
    with pytest.raises(PDFExportError, match="figures/missing.svg' not found"):
        TypstPDFExporter().from_notebook_node(tiny(new_markdown_cell("![A caption](figures/missing.svg)")))


def test_error_output_stops_the_export() -> None:
    cell = new_code_cell("1/0")
    cell.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
    with pytest.raises(PDFExportError, match="ZeroDivisionError"):
        TypstPDFExporter().from_notebook_node(tiny(cell))


def test_pandoc_error_is_reported() -> None:
    with pytest.raises(PDFExportError, match="pandoc failed"):
        TypstPDFExporter(typst_template="/nonexistent/paper.typ").from_notebook_node(tiny(new_markdown_cell("x")))


def _svg(text: str) -> str:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="60" viewBox="0 0 200 60">'
        f'<text x="10" y="40" font-family="Liberation Sans" font-size="20">{text}</text></svg>'
    )


@needs_poppler
def test_an_svg_uses_the_pdf_drawn_from_it_only_when_written_after_it(tmp_path: Path) -> None:
    """charts.save_chart writes a figure's PDF from the same SVG, after it: the export embeds that PDF instead
    of converting the SVG again; a PDF older than its SVG (the SVG redrawn since) is not used."""
    import os

    import vl_convert as vlc

    fig = tmp_path / "fig.svg"
    fig.write_text(_svg("from the svg"))
    sibling = tmp_path / "fig.pdf"
    sibling.write_bytes(vlc.svg_to_pdf(_svg("from the sibling")))  # a different drawing, to tell which one is used
    nb = tiny(new_markdown_cell(f"![A caption]({fig})"))

    def text_of_export() -> str:
        out = tmp_path / "out.pdf"
        out.write_bytes(TypstPDFExporter().from_notebook_node(nb)[0])
        return subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout

    assert "from the sibling" in text_of_export()
    old = fig.stat().st_mtime_ns - 10**9
    os.utime(sibling, ns=(old, old))
    text = text_of_export()
    assert "from the svg" in text and "from the sibling" not in text


def _cells_nb(long: str) -> nbformat.NotebookNode:
    """A Typst table with cells of exactly four and three lines (line breaks), and a pipe table with one cell of
    many words in a narrow column."""
    typst = (
        "#figure(table(columns: 2, [head], [lines], [four], [a \\ b \\ c \\ d], [three], [a \\ b \\ c]), caption: [T])"
    )
    rows = "\n".join(f"| r{i} | {i} | {long if i == 2 else 'short'} | x | y | z |" for i in range(1, 4))
    pipe = "| name | n | words | a | b | c |\n|:--|--:|:--|:--|:--|:--|\n" + rows + "\n\nTable: Three rows."
    return tiny(new_markdown_cell(f"```{{=typst}}\n{typst}\n```\n\n{pipe}"))


def test_a_table_cell_set_on_more_than_three_lines_is_named(caplog: pytest.LogCaptureFixture) -> None:
    nb = _cells_nb(" ".join(["a sentence that goes on and on"] * 25))
    exporter = TypstPDFExporter()
    exporter.from_notebook_node(nb)
    found = [(c.table, c.column, c.row) for c in exporter.long_cells]
    assert found == [(1, "lines", 1), (2, "words", 2)]  # the three-line cell and the short ones are not named
    four, words = exporter.long_cells
    assert four.lines == 4 and four.start == "a b c d" and four.page == 1
    assert words.lines >= 6 and words.start.startswith("a sentence that goes on") and words.start.endswith("…")
    assert "Table 2 (page 1), column 'words', row 2: set on" in caplog.text


@needs_poppler
def test_the_cell_check_leaves_the_pages_as_they_are(tmp_path: Path) -> None:
    nb = _cells_nb(" ".join(["a sentence that goes on and on"] * 25))
    images = []
    for most in (3, 0):
        exporter = TypstPDFExporter(max_cell_lines=most)
        pdf, _ = exporter.from_notebook_node(nb)
        assert (len(exporter.long_cells) > 0) == (most > 0)
        (tmp_path / f"{most}.pdf").write_bytes(pdf)
        subprocess.run(["pdftoppm", "-r", "40", "-gray", str(tmp_path / f"{most}.pdf"), str(tmp_path / f"p{most}")],
                       check=True)  # fmt: skip
        images.append(sorted(p.read_bytes() for p in tmp_path.glob(f"p{most}-*.pgm")))
    assert images[0] == images[1] and len(images[0]) >= 1
