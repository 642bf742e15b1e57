"""The lab's charts: one altair theme, one colour per target for a whole study, chart builders that
take small, already aggregated polars frames, and offline export with vl-convert. One module per job:
`theme` (theme and colours), `frames` (polars preparation), `timeseries` and `comparisons` (builders),
`export` (spec, SVG, files), `display` (notebook output, figures); everything is importable from here.

- `use_theme()` enables the print theme; `enable_pdf_renderer()` makes notebook charts survive every
  nbconvert export (SVG + PNG + PDF mime bundle instead of Vega JSON/HTML).
- Text is drawn in Liberation Sans, which vl-convert carries inside its own binary: the same text
  metrics on every machine, offline, and the font is embedded (subset) in every PDF, so the text stays
  real, searchable vector text.
- Builders never aggregate millions of rows in Vega: do it in polars (`moving_average`,
  `downsample_time`); the builders downsample per line themselves as a last guard.
- `save_chart` renders the spec once to SVG and derives PDF and PNG from that SVG: the same chart gives
  the same SVG and PNG bytes; the PDF has the same content and size, but vl-convert orders a few
  objects by a randomly seeded hash map, so its bytes can differ (the Typst paper built from it is
  byte-identical: Typst rewrites embedded PDFs).
- `figure(chart, caption)` displays a chart as a numbered, captioned figure for the PDF export
  (`pgfslab.paper.pdf_export`).
"""

from __future__ import annotations

from pgfslab.analysis.charts.comparisons import comparison_dots, grouped_bars_with_error, scaling_curve
from pgfslab.analysis.charts.display import RENDERER, enable_pdf_renderer, figure, mimebundle, show_saved
from pgfslab.analysis.charts.export import chart_spec, chart_svg, save_chart
from pgfslab.analysis.charts.frames import cell_panels, downsample_time, moving_average, panel_labels
from pgfslab.analysis.charts.theme import (
    FONT,
    FONT_STACK,
    MAX_ROWS,
    OKABE_ITO,
    PALETTE,
    TABLEAU10,
    THEME,
    TIME_TITLE,
    TPS_TITLE,
    WIDTH,
    alt,
    checked_color_scale,
    target_colors,
    use_theme,
)
from pgfslab.analysis.charts.timeseries import (
    QPS_COLORS,
    percentile_bands,
    qps_small_multiples,
    throughput_small_multiples,
    timeline_with_windows,
)

__all__ = [
    "FONT",
    "FONT_STACK",
    "MAX_ROWS",
    "OKABE_ITO",
    "PALETTE",
    "QPS_COLORS",
    "RENDERER",
    "TABLEAU10",
    "THEME",
    "TIME_TITLE",
    "TPS_TITLE",
    "WIDTH",
    "alt",
    "cell_panels",
    "chart_spec",
    "chart_svg",
    "checked_color_scale",
    "comparison_dots",
    "downsample_time",
    "enable_pdf_renderer",
    "figure",
    "grouped_bars_with_error",
    "mimebundle",
    "moving_average",
    "panel_labels",
    "percentile_bands",
    "qps_small_multiples",
    "save_chart",
    "scaling_curve",
    "show_saved",
    "target_colors",
    "throughput_small_multiples",
    "timeline_with_windows",
    "use_theme",
]
