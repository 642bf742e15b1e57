"""The paper's HTML companion: its title, and nothing fetched from the network when it is opened."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from pgfslab.paper.build import export_html


def test_the_html_paper_carries_its_title_and_opens_offline(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('x')")
    cell.outputs = [nbformat.v4.new_output("display_data", {"text/markdown": "## Abstract\n\nThe answer."})]
    nb.cells = [cell]
    nb.metadata["pgfs"] = {"title": "Storage & PostgreSQL", "authors": ["A", "B"], "date": "2026-11-28", "study": "s"}
    src, out = tmp_path / "paper.ipynb", tmp_path / "paper.html"
    nbformat.write(nb, src)
    export_html(src, out)
    html = out.read_text()
    assert "<title>Storage &amp; PostgreSQL</title>" in html
    assert "<h1>Storage &amp; PostgreSQL</h1>" in html and "A, B · 2026-11-28 · study s" in html
    assert "The answer." in html and "print(" not in html  # outputs only, no code
    # no script or stylesheet from elsewhere (require.js and MathJax came from a CDN)
    assert re.findall(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', html) == []
