"""The whitepaper built from each recorded study (tests/recorded.py: a pgbench, a sysbench and an fsmicro
study, their notebooks executed first): the PDF exists, every figure and table the notebooks published
is in it with its caption, the setup table lists every target, no nan/None/Traceback text, every font
embedded, and every page renders.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import recorded

from pgfslab.paper.pdf_export import LongCell

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("pdftotext") is None or shutil.which("pdffonts") is None,
        reason="poppler-utils (pdftotext, pdffonts, pdftoppm) not installed",
    ),
]


PAPER_FIGURES = ("device_ceiling", "wal_commits_per_flush", "wal_device")


def flat(text: str) -> str:
    """PDF text as one line: hyphenation at line ends undone, whitespace collapsed."""
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)
    return " ".join(text.replace("\u2019", "'").split())  # the typographic apostrophe read as the typed one


def words(text: str) -> str:
    """Only letters and digits, lower case: to find a caption whatever typography did to it."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


@pytest.fixture(scope="module")
def papers() -> dict[str, tuple[recorded.Study, str]]:
    out = {}
    for name, st in recorded.studies().items():
        assert st.paper_pdf is not None, f"{name}: paper not built: {st.paper_log[-3000:]}"
        text = subprocess.run(
            ["pdftotext", "-layout", str(st.paper_pdf), "-"], capture_output=True, text=True, check=True
        ).stdout
        out[name] = (st, text)
    return out


def publications(st: recorded.Study) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(st.tables.glob("*.json"))]


def test_one_paper_per_kind_of_study(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    tools = [{w["tool"] for w in st.cfg["workloads"].values()} for st, _ in papers.values()]
    for tool in ("pgbench", "sysbench", "fsmicro", "durability"):
        assert {tool} in tools, f"no recorded {tool}-only study: the paper must work for one"


def test_title_sections_and_date(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    for st, text in papers.values():
        f = flat(text)
        assert flat(st.cfg["title"]) in f
        for author in st.cfg["authors"]:
            assert author in f
        for section in (
            "Setup",
            "Methodology",
            "Results",
            "Comparison with published results",
            "Threats to validity",
            "Appendix",
        ):
            assert re.search(rf"\d+ {section}", f), f"{st.name}: section {section!r} missing"
        ended = max(
            json.loads((p / "run.json").read_text())["ended_at"][:10]
            for p in st.raw.iterdir()
            if (p / "run.json").exists()
        )
        assert ended in f, f"{st.name}: the date of the data ({ended}) is not on the paper"
        assert "Abstract." in f


def test_every_figure_and_table_with_its_caption(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    for st, text in papers.values():
        f = flat(text)
        w = words(f)
        figures = [b for pub in publications(st) for b in pub["blocks"] if b["kind"] == "figure"]
        tables = [b for pub in publications(st) for b in pub["blocks"] if b["kind"] == "table"]
        assert figures and tables
        n_fig = len(set(re.findall(r"Figure (\d+):", f)))
        # the paper's own figures (device ceiling, WAL flushes, WAL device), drawn from the database by its sections
        own = [n for n in PAPER_FIGURES if (st.figures / f"{n}.svg").exists()]
        assert n_fig == len(figures) + len(own), f"{st.name}: {n_fig} numbered figures, {len(figures)} published, {own}"
        for b in figures + tables:
            head = words(re.sub(r"[`*_]", "", b["caption"]))[:70]
            assert head in w, f"{st.name}: caption not found: {b['caption'][:90]!r}"
        n_tab = len(set(re.findall(r"Table (\d+):", f)))
        assert n_tab >= len(tables) + 3, f"{st.name}: {n_tab} tables, {len(tables)} from notebooks + setup tables"


def test_setup_lists_every_target(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    for st, text in papers.values():
        setup = flat(text.split("Methodology")[0])
        for target in st.cfg["targets"]:
            assert target in setup, f"{st.name}: target {target} not in the setup section"
        rec = json.loads(
            next(p / "run.json" for p in sorted(st.raw.iterdir()) if (p / "run.json").exists()).read_text()
        )
        assert rec["host"]["kernel"] in setup
        if rec["tool"] != "fsmicro":
            assert rec["postgres"]["version"].split(" on ")[0].split(" (")[0] in setup


def test_numbers_come_from_the_data(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    for st, text in papers.values():
        f = flat(text)
        # the runs that ran, read from the raw folders: an optional round skipped as unneeded measured nothing
        statuses = [
            json.loads((p / "run.json").read_text())["status"] for p in st.raw.iterdir() if (p / "run.json").exists()
        ]
        n_runs = sum(1 for s in statuses if s != "skipped")
        abstract = f.split("Abstract.", 1)[1][:400]
        said = (
            f"We crashed PostgreSQL {n_runs} times"  # a crash check's abstract counts its crashes, one per run
            if {w["tool"] for w in st.cfg["workloads"].values()} == {"durability"}
            else f"RAM): {n_runs} runs of"
        )
        assert said in abstract, f"{st.name}: run count not in the abstract: {abstract[:200]}"
        setup = re.search(r"Setup Study \S+: (\d+) runs", f)
        assert setup and int(setup[1]) == n_runs, f"{st.name}: run count not in the setup section: {setup}"


def test_no_nan_none_or_traceback(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    for st, text in papers.values():
        f = flat(text)
        for bad in (r"\bnan\b", r"\bNaN\b", r"\bNone\b", r"Traceback", r"\bnull\b", r"\binf\b", r"Error:", r"STOP:"):
            assert not re.search(bad, f), (
                f"{st.name}: {bad!r} in the paper: ...{f[max(0, re.search(bad, f).start() - 80) :][:160]}..."
            )


def test_fonts_embedded_and_pages_render(papers: dict[str, tuple[recorded.Study, str]], tmp_path: Path) -> None:
    for st, _ in papers.values():
        fonts = subprocess.run(["pdffonts", str(st.paper_pdf)], capture_output=True, text=True, check=True).stdout
        rows = fonts.splitlines()[2:]
        assert rows and all(r.split()[-5] == "yes" for r in rows), f"{st.name}: fonts not embedded:\n{fonts}"
        pages = int(
            re.search(
                r"Pages:\s+(\d+)",
                subprocess.run(["pdfinfo", str(st.paper_pdf)], capture_output=True, text=True, check=True).stdout,
            )[1]
        )
        assert 4 <= pages <= 40, (st.name, pages)
        out = tmp_path / st.name
        subprocess.run(["pdftoppm", "-r", "20", "-png", str(st.paper_pdf), str(out)], check=True, capture_output=True)
        pngs = sorted(tmp_path.glob(f"{st.name}*.png"))
        assert len(pngs) == pages
        assert all(p.stat().st_size > 500 for p in pngs)


def test_pages_fit_a_readers_sitting(papers: dict[str, tuple[recorded.Study, str]]) -> None:
    """Checked by looking (pgfslab.paper.page_check): the main text before the appendices in at most 12 pages, no
    page's ink past the text block, no page more than half empty unless the next starts a section."""
    from pgfslab.paper import page_check

    for st, _ in papers.values():
        report = page_check.check(st.paper_pdf)
        assert report.main_pages <= 12, (st.name, report.lines())
        assert report.too_wide() == [], (st.name, report.lines())
        assert report.half_empty() == [], (st.name, report.lines())
        # every table cell on at most three lines (pdf_export's check, written beside the executed paper)
        long = json.loads((st.paper_pdf.parent / "long-cells.json").read_text())
        assert long == [], (st.name, [LongCell(**c).text() for c in long])
