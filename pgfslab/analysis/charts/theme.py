"""The lab's chart theme (print sizes, Liberation Sans, light grid) and its colours: one colour per
target for a whole study, colour-blind safe."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

THEME = "pgfs"
FONT = "Liberation Sans"  # bundled in vl-convert; viewers without it fall back along the stack
FONT_STACK = f"{FONT}, Arial, Helvetica, sans-serif"
MAX_ROWS = 100_000  # altair's inline-data guard, raised from 5,000 (per-second lines of long runs)

# Okabe & Ito (2008), colour-blind safe; yellow last (weak on white). Tableau 10 after eight targets.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"]
TABLEAU10 = [
    "#4E79A7",
    "#F28E2B",
    "#E15759",
    "#76B7B2",
    "#59A14F",
    "#EDC948",
    "#B07AA1",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
]
PALETTE = OKABE_ITO + TABLEAU10

WIDTH = 440  # view width in px; with axes a chart is ~480 px, ~A4 text width, so 1 px ~ 1 pt in print
TIME_TITLE = "time since start (s)"
TPS_TITLE = "throughput (tps)"


def _theme() -> alt.theme.ThemeConfig:
    axis = {
        "labelFontSize": 10,
        "titleFontSize": 11,
        "titleFontWeight": "normal",
        "titleColor": "#222222",
        "labelColor": "#333333",
        "domainColor": "#888888",
        "tickColor": "#888888",
        "gridColor": "#e6e6e6",
        "gridWidth": 0.6,
        "titlePadding": 6,
    }
    return {
        "config": {
            "font": FONT_STACK,
            "background": "white",
            "padding": 4,
            "view": {"stroke": None, "continuousWidth": WIDTH, "continuousHeight": 220},
            "title": {
                "fontSize": 13,
                "fontWeight": "bold",
                "anchor": "start",
                "offset": 8,
                "color": "#111111",
                "subtitleFontSize": 11,
                "subtitleColor": "#555555",
            },
            "axis": axis,  # type: ignore[typeddict-item]
            "header": {
                "labelFontSize": 11,
                "labelFontWeight": "bold",
                "labelColor": "#222222",
                "labelAnchor": "start",
                "labelPadding": 3,
                "titleFontSize": 11,
            },
            "legend": {
                "labelFontSize": 10,
                "titleFontSize": 10,
                "titleFontWeight": "normal",
                "orient": "bottom",
                "symbolStrokeWidth": 2.5,
                "labelLimit": 260,
            },
            "facet": {"spacing": 12},
            "line": {"strokeWidth": 1.6},
            "range": {"category": OKABE_ITO},
        }
    }


alt.theme.register(THEME, enable=False)(_theme)


def use_theme() -> None:
    """Enable the lab theme (print sizes, Liberation Sans, light grid, no view border) and raise
    altair's inline-row guard to MAX_ROWS (the builders downsample; see `downsample_time`)."""
    alt.theme.enable(THEME)
    alt.data_transformers.enable("default", max_rows=MAX_ROWS)


def target_colors(targets: Sequence[str], labels: dict[str, str] | None = None) -> alt.Scale:
    """One colour per target, the same in every figure of a study: the palette is assigned in sorted
    order of the study's distinct targets (not in order of appearance), so any subset of runs and any
    row order gives each target the same colour. Pass the full list of the study's targets. `labels`
    (target -> its label where that differs, e.g. 'zfs (zfs-fuse, userspace)') puts each label in the
    domain too, with its target's colour."""
    names = sorted({str(t) for t in targets})
    colour = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(names)}
    domain = list(names)
    for t, label in (labels or {}).items():
        if str(t) in colour and label not in colour:
            colour[label] = colour[str(t)]
            domain.append(label)
    return alt.Scale(domain=domain, range=[colour[d] for d in domain])


def checked_color_scale(df: pl.DataFrame, field: str, scale: alt.Scale | None) -> alt.Scale:
    """The given scale, checked to cover every value of `field` (else colours would silently shift)."""
    if scale is None:
        return target_colors(df[field].cast(pl.Utf8).unique().to_list())
    domain = scale.to_dict().get("domain")
    if isinstance(domain, list):
        missing = sorted(set(df[field].cast(pl.Utf8).unique().to_list()) - {str(d) for d in domain})
        if missing:
            raise ValueError(
                f"colour field {field!r} has values outside the colour scale's domain {domain}: "
                f"{missing} (build the scale from the same column with target_colors)"
            )
    return scale
