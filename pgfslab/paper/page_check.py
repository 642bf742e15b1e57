"""The exported PDF checked by looking at it: each page rendered to an image (poppler's pdftoppm) and its text
read (pdftotext), then what can be checked is: how many pages the main text takes before the appendices, no
page's ink reaching past the text block (a table wider than its page), and no page more than half empty unless
the next one starts a section (a table or figure pushed over leaves a hole).

tests/test_paper.py holds every recorded study's paper to it (`PageReport.lines` says what it found).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pgfslab.errors import LabError

DPI = 30  # enough to see ink and margins; a 36-page paper renders in about a second
INK = 200  # a grey level below this is ink (0 black, 255 white)
# headings as the PDF numbers them (paper/templates/paper.typ): `3 Results`, `3.2 Title`; Appendix A's own
APPENDIX = re.compile(r"^\s*(\d+\s+)?Appendix A\b", re.MULTILINE)
SECTION = re.compile(r"^\s*\d+(\.\d+)?\s+[A-Z]", re.MULTILINE)


@dataclass(frozen=True)
class Page:
    number: int  # from 1
    ink_bottom: float  # the lowest ink, as a share of the page's height (the running footer excluded)
    ink_right: float  # the rightmost ink, as a share of the page's width
    starts_section: bool  # a section heading is among its first lines
    appendix: bool  # an appendix starts on it or before it


@dataclass(frozen=True)
class PageReport:
    pages: list[Page]
    text_right: float  # the text block's right edge: the median page's rightmost ink (the running header's end)

    @property
    def main_pages(self) -> int:
        """Pages before the first appendix (the page it starts on not counted)."""
        return next((p.number - 1 for p in self.pages if p.appendix), len(self.pages))

    def too_wide(self, slack: float = 0.01) -> list[int]:
        """Pages whose ink reaches past the text block's right edge (a table or figure wider than the page)."""
        return [p.number for p in self.pages if p.ink_right > self.text_right + slack]

    def half_empty(self) -> list[int]:
        """Main-text pages with ink on less than half the page whose next page does not start a section (the
        last page of the main text is allowed, as is any page before a section)."""
        main = [p for p in self.pages if not p.appendix]
        return [
            p.number
            for p, nxt in zip(main, self.pages[1:], strict=False)
            if p.ink_bottom < 0.5 and not nxt.starts_section and not nxt.appendix
        ]

    def lines(self) -> list[str]:
        out = [f"{len(self.pages)} pages, {self.main_pages} before the appendices"]
        if wide := self.too_wide():
            out.append(f"ink past the text block on page(s) {', '.join(map(str, wide))}")
        if holes := self.half_empty():
            out.append(f"more than half empty, not before a section: page(s) {', '.join(map(str, holes))}")
        return out


def _pgm(path: Path) -> np.ndarray:
    """A binary PGM (P5, 8 bit) as an array of grey levels."""
    data = path.read_bytes()
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    if m is None:
        raise LabError(f"{path}: not an 8-bit binary PGM image")
    w, h = int(m[1]), int(m[2])
    return np.frombuffer(data, dtype=np.uint8, count=w * h, offset=m.end()).reshape(h, w)


def _page_texts(pdf: Path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")


def check(pdf: Path) -> PageReport:
    """Render every page of `pdf` and measure it (see the module's docstring)."""
    if not pdf.exists():
        raise LabError(f"{pdf}: no such PDF")
    texts = _page_texts(pdf)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-gray", "-r", str(DPI), str(pdf), f"{tmp}/p"], check=True, capture_output=True)
        images = [_pgm(p) for p in sorted(Path(tmp).glob("p-*.pgm"), key=lambda p: int(p.stem.split("-")[1]))]
    pages: list[Page] = []
    in_appendix = False
    for i, img in enumerate(images, 1):
        ink = img < INK
        h, w = ink.shape
        rows = np.flatnonzero(ink.any(axis=1))
        cols = np.flatnonzero(ink.any(axis=0))
        # the running footer (the page number) sits in the bottom margin: the last ink row at the bottom
        body = rows[rows < 0.9 * h] if rows.size else rows
        text = texts[i - 1] if i - 1 < len(texts) else ""
        head = "\n".join(text.splitlines()[1:6])  # the running header first
        in_appendix = in_appendix or bool(APPENDIX.search(text))
        pages.append(
            Page(
                number=i,
                ink_bottom=float(body.max() + 1) / h if body.size else 0.0,
                ink_right=float(cols.max() + 1) / w if cols.size else 0.0,
                starts_section=bool(SECTION.search(head)),
                appendix=in_appendix,
            )
        )
    # most pages reach the text block's right edge (the running header, justified text); a title page may not
    edge = float(np.median([p.ink_right for p in pages])) if pages else 1.0
    return PageReport(pages=pages, text_right=edge)
