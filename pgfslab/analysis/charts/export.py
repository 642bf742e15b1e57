"""A chart's Vega-Lite spec with the lab theme, rendered offline by vl-convert, written to SVG, PDF, PNG
or JSON files."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import vl_convert as vlc

from pgfslab.analysis.charts.theme import MAX_ROWS, THEME, alt


def _vl_version() -> str:
    """The Vega-Lite version altair writes, in vl-convert's spelling (e.g. "6.4")."""
    major_minor = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    known = vlc.get_vegalite_versions()
    return major_minor if major_minor in known else known[-1]


@contextmanager
def _lab_theme(theme: str | None) -> Iterator[None]:
    if theme is None:
        yield
        return
    previous = alt.theme.active
    alt.theme.enable(theme)
    try:
        yield
    finally:
        alt.theme.enable(previous)


def chart_spec(chart: alt.TopLevelMixin, theme: str | None = THEME) -> dict[str, Any]:
    """The chart's Vega-Lite dict with the lab theme applied (None: whatever theme is active)."""
    with _lab_theme(theme), alt.data_transformers.enable("default", max_rows=MAX_ROWS):
        return chart.to_dict()


def chart_svg(spec: dict[str, Any]) -> str:
    """The spec's SVG, rendered by vl-convert in this process."""
    return vlc.vegalite_to_svg(spec, vl_version=_vl_version())


def _write(path: Path, data: bytes) -> None:
    """Atomic write: a half-written figure never has the final name."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def save_chart(
    chart: alt.TopLevelMixin,
    basepath: str | Path,
    formats: Sequence[str] = ("svg", "pdf", "png"),
    scale: float = 2,
    *,
    theme: str | None = THEME,
) -> dict[str, Path]:
    """Write `basepath.<fmt>` for each format ("svg", "pdf", "png", "json" = the Vega-Lite spec),
    offline with vl-convert, and return {format: path}. The chart is rendered once to SVG; PDF
    (vector, fonts embedded) and PNG (`scale` x pixel density) are converted from that SVG, so the
    same chart gives the same SVG and PNG bytes (PDF: same content; object order may vary). The lab theme is applied unless `theme` says otherwise."""
    basepath = Path(basepath)
    basepath.parent.mkdir(parents=True, exist_ok=True)
    spec = chart_spec(chart, theme)
    svg = chart_svg(spec)
    render = {
        "svg": lambda: svg.encode(),
        "pdf": lambda: vlc.svg_to_pdf(svg),
        "png": lambda: vlc.svg_to_png(svg, scale=scale),
        "json": lambda: json.dumps(spec, indent=1, sort_keys=True).encode(),
    }
    paths: dict[str, Path] = {}
    for fmt in formats:
        if fmt not in render:
            raise ValueError(f"unknown chart format {fmt!r}; use one of {sorted(render)}")
        path = basepath.with_name(f"{basepath.name}.{fmt}")
        _write(path, render[fmt]())
        paths[fmt] = path
    return paths
