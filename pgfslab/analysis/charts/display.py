"""Charts in a notebook's output: static SVG + PNG + PDF mime bundles that survive every nbconvert
export, and numbered, captioned figures for the paper's PDF export."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import vl_convert as vlc
from IPython import display as ipython_display

from pgfslab.analysis.charts.export import chart_spec, chart_svg
from pgfslab.analysis.charts.theme import alt

RENDERER = "pgfs"


def _svg_size(svg: str) -> tuple[float, float] | None:
    m = re.search(r'<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"', svg)
    return (float(m.group(1)), float(m.group(2))) if m else None


def mimebundle(
    spec: dict[str, Any], formats: Sequence[str] = ("svg", "png", "pdf"), scale: float = 2
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Jupyter mime bundle (data, metadata) with static renderings of a Vega-Lite spec."""
    svg = chart_svg(spec)
    data: dict[str, Any] = {"text/plain": "<altair chart>"}
    meta: dict[str, Any] = {}
    if "svg" in formats:
        data["image/svg+xml"] = svg
    if "png" in formats:
        data["image/png"] = base64.b64encode(vlc.svg_to_png(svg, scale=scale)).decode()
        size = _svg_size(svg)
        if size:  # show the 2x PNG at its natural size
            meta["image/png"] = {"width": round(size[0]), "height": round(size[1])}
    if "pdf" in formats:
        data["application/pdf"] = base64.b64encode(vlc.svg_to_pdf(svg)).decode()
    return data, meta


def _renderer(spec: dict[str, Any], **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return mimebundle(spec, formats=options.get("formats", ("svg", "png", "pdf")), scale=options.get("scale", 2))


alt.renderers.register(RENDERER, _renderer)


def enable_pdf_renderer(formats: Sequence[str] = ("svg", "png", "pdf"), scale: float = 2) -> None:
    """Display notebook charts as static SVG + PNG (+ PDF) made by vl-convert instead of Vega JSON/HTML,
    so they survive nbconvert's Markdown/HTML/LaTeX/Typst exports (the default renderer's output
    silently vanishes from a PDF). Not interactive."""
    alt.renderers.enable(RENDERER, formats=tuple(formats), scale=scale)


def figure(chart: alt.TopLevelMixin | str | Path, caption: str, label: str | None = None) -> None:
    """Display a numbered figure with a caption, for `pgfslab.paper.pdf_export` (Typst: "Figure N: caption").

    `chart` is an altair chart (rendered with the lab theme into the cell's output) or the path of a
    saved figure file (emitted as a Markdown image, `![caption](path){#label}`). `caption` is Markdown.
    `label` (e.g. "fig-throughput") lets the text refer to it as `@fig-throughput`.
    """
    if isinstance(chart, (str, Path)):
        target = Path(chart).as_posix()
        target = f"<{target}>" if " " in target else target
        ipython_display.display(
            ipython_display.Markdown(f"![{caption}]({target})" + (f"{{#{label}}}" if label else ""))
        )
        return
    data, meta = mimebundle(chart_spec(chart))
    meta["pgfs"] = {"caption": caption, **({"label": label} if label else {})}
    ipython_display.display(data, raw=True, metadata=meta)


def show_saved(paths: dict[str, Path], caption: str, label: str | None = None) -> None:
    """Display a figure written by `save_chart` (its SVG, PNG and PDF files, as one mime bundle) as a
    numbered figure with a caption, like `figure(chart, ...)` but without rendering the chart again."""
    data: dict[str, Any] = {"text/plain": f"<figure {Path(paths.get('svg') or next(iter(paths.values()))).name}>"}
    meta: dict[str, Any] = {"pgfs": {"caption": caption, **({"label": label} if label else {})}}
    if "svg" in paths:
        svg = Path(paths["svg"]).read_text()
        data["image/svg+xml"] = svg
        size = _svg_size(svg)
        if size and "png" in paths:
            meta["image/png"] = {"width": round(size[0]), "height": round(size[1])}
    if "png" in paths:
        data["image/png"] = base64.b64encode(Path(paths["png"]).read_bytes()).decode()
    if "pdf" in paths:
        data["application/pdf"] = base64.b64encode(Path(paths["pdf"]).read_bytes()).decode()
    ipython_display.display(data, raw=True, metadata=meta)
