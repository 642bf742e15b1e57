"""pgfslab.analysis.charts: builders, colours, polars helpers and offline export (no kernel, no network)."""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl
import pytest

from pgfslab.analysis import charts

TARGETS = ["xfs", "ext4", "btrfs"]


@pytest.fixture(autouse=True)
def _theme() -> None:
    charts.use_theme()


def progress_frame(seconds: int = 40, repeats: int = 2, seed: int = 3) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = [
        {"run_id": f"{t}-{r}", "target": t, "repeat": r, "t_s": float(s), "tps": base + rng.gauss(0, 80)}
        for t, base in zip(TARGETS, (1400.0, 1500.0, 900.0))
        for r in range(1, repeats + 1)
        for s in range(1, seconds + 1)
    ]
    return pl.DataFrame(rows)


def latency_frame() -> pl.DataFrame:
    rng = random.Random(5)
    rows = []
    for t in TARGETS:
        for s in range(1, 31):
            p = sorted(rng.expovariate(0.5) for _ in range(200))
            rows.append(
                {"target": t, "t_s": float(s), **{f"p{q}": p[int(q / 100 * 199)] for q in (25, 50, 75, 95, 99)}}
            )
    return pl.DataFrame(rows)


def cells_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "clients": [1, 4, 1, 4, 1, 4],
            "target": ["ext4", "ext4", "xfs", "xfs", "btrfs", "btrfs"],
            "median": [500.0, 1500.0, 450.0, 1400.0, 300.0, 900.0],
        }
    ).with_columns(lo=pl.col("median") * 0.9, hi=pl.col("median") * 1.1)


def all_charts() -> dict[str, alt.TopLevelMixin]:
    colors = charts.target_colors(TARGETS)
    prog = charts.moving_average(progress_frame(), "tps", 15, by=["run_id"])
    cells = cells_frame()
    return {
        "throughput": charts.throughput_small_multiples(prog, facet="target", color_scale=colors, title="tpcb"),
        "bars": charts.grouped_bars_with_error(
            cells,
            "clients",
            "median",
            "target",
            "lo",
            "hi",
            colors,
            x_title="clients",
            y_title="median throughput (tps)",
        ),
        "percentiles": charts.percentile_bands(latency_frame(), "t_s", facet="target", color_scale=colors),
        "scaling": charts.scaling_curve(
            cells,
            "clients",
            "median",
            "target",
            [(2, "2 CPUs")],
            color_scale=colors,
            err_low="lo",
            err_high="hi",
            x_title="clients",
            y_title="median throughput (tps)",
        ),
    }


def color_map(spec: Any) -> dict[str, str]:
    """target -> colour from every colour scale with an explicit domain in a Vega-Lite dict."""
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            scale = node.get("scale") if node.get("field") in ("target", "target_label") else None
            if isinstance(scale, dict) and isinstance(scale.get("domain"), list):
                for d, c in zip(scale["domain"], scale["range"]):
                    assert found.setdefault(d, c) == c
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return found


# --------------------------------------------------------------------------- polars helpers


def test_moving_average_is_trailing_and_per_group() -> None:
    df = pl.DataFrame(
        {
            "run_id": ["a"] * 6 + ["b"] * 3,
            "t_s": [1.0, 2, 3, 4, 5, 7, 1, 2, 3],
            "tps": [10.0, 20, 30, 40, 50, 70, 1, 2, 3],
        }
    )
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1)
    out = charts.moving_average(shuffled, "tps", window_s=3, by=["run_id"])
    got = {(r["run_id"], r["t_s"]): r["tps_ma3"] for r in out.iter_rows(named=True)}
    # by hand: mean of the samples with t-3 < time <= t, same run only
    assert got[("a", 1.0)] == 10
    assert got[("a", 2.0)] == 15
    assert got[("a", 3.0)] == 20
    assert got[("a", 4.0)] == 30
    assert got[("a", 5.0)] == 40
    assert got[("a", 7.0)] == 60  # (50 + 70) / 2: the gap at t=6 shrinks the window, it never reaches t=4
    assert got[("b", 3.0)] == 2
    assert out["run_id"].to_list() == sorted(out["run_id"].to_list())


def test_moving_average_matches_pure_python_on_15_s() -> None:
    df = progress_frame(seconds=60, repeats=1)
    out = charts.moving_average(df, "tps", 15, by="run_id")
    for run, grp in out.group_by("run_id"):
        tps = grp["tps"].to_list()
        expected = [sum(tps[max(0, i - 14) : i + 1]) / len(tps[max(0, i - 14) : i + 1]) for i in range(len(tps))]
        assert grp["tps_ma15"].to_list() == pytest.approx(expected), run


def test_downsample_keeps_bound_and_extremes() -> None:
    n = 10_000
    big = pl.DataFrame(
        {
            "g": ["a"] * n + ["b"] * n,
            "t": [float(i) for i in range(n)] * 2,
            "v": [float((i * 7919) % 1000) for i in range(2 * n)],
        }
    )
    big = big.with_columns(
        pl.when((pl.col("g") == "a") & (pl.col("t") == 4321)).then(5000.0).otherwise(pl.col("v")).alias("v")
    )  # one spike
    small = pl.DataFrame({"g": ["c"] * 50, "t": [float(i) for i in range(50)], "v": [1.0] * 50})
    out = charts.downsample_time(pl.concat([big, small]), "t", "v", max_points=200, by="g")
    sizes = dict(out.group_by("g").len().iter_rows())
    assert sizes["a"] <= 200 and sizes["b"] <= 200
    assert sizes["c"] == 50  # small groups untouched
    for g in ("a", "b"):
        full, kept = big.filter(pl.col("g") == g), out.filter(pl.col("g") == g)
        assert kept["v"].max() == full["v"].max() and kept["v"].min() == full["v"].min()
        assert kept["t"].min() < 100 and kept["t"].max() > n - 100  # spans the whole run
        assert kept["t"].is_sorted()
    assert 4321.0 in out.filter(pl.col("g") == "a")["t"].to_list()  # the spike survives
    two = charts.downsample_time(big, "t", ["v", "t"], max_points=100, by="g")
    assert two.group_by("g").len()["len"].max() <= 100


def test_downsample_rejects_too_small_budget() -> None:
    with pytest.raises(ValueError):
        charts.downsample_time(progress_frame(), "t_s", ["tps", "repeat"], max_points=3)


# --------------------------------------------------------------------------- colours


def test_target_colors_depend_on_the_set_not_the_order() -> None:
    a = charts.target_colors(["xfs", "ext4", "btrfs"]).to_dict()
    b = charts.target_colors(["btrfs", "xfs", "ext4", "xfs"]).to_dict()
    assert a == b
    assert a["domain"] == ["btrfs", "ext4", "xfs"]
    assert len(set(a["range"])) == 3
    many = charts.target_colors([f"t{i:02d}" for i in range(18)]).to_dict()
    assert len(set(many["range"])) == 18


def test_same_target_same_colour_across_charts_and_row_orders() -> None:
    colors = charts.target_colors(TARGETS)
    prog = charts.moving_average(progress_frame(), "tps", 15, by=["run_id"])
    c1 = charts.throughput_small_multiples(prog, color_scale=colors)
    c2 = charts.throughput_small_multiples(prog.reverse().filter(pl.col("target") != "xfs"), color_scale=colors)
    bars = charts.grouped_bars_with_error(cells_frame().reverse(), "clients", "median", "target", "lo", "hi", colors)
    maps = [color_map(charts.chart_spec(c)) for c in (c1, c2, bars)]
    assert maps[0] == maps[1] == maps[2]
    assert set(maps[0]) == set(TARGETS)
    svg1 = charts.chart_svg(charts.chart_spec(c1))
    svg2 = charts.chart_svg(charts.chart_spec(c2))
    # every line stroke in the second figure is one the first figure also uses for that target
    strokes = lambda s: set(re.findall(r'stroke="(#[0-9a-fA-F]{6})"', s))  # noqa: E731
    assert strokes(svg2) <= strokes(svg1)
    assert maps[0]["btrfs"].lower() in {c.lower() for c in strokes(svg2)}


def test_colour_scale_must_cover_the_data() -> None:
    with pytest.raises(ValueError, match="outside the colour scale"):
        charts.throughput_small_multiples(progress_frame(), color_scale=charts.target_colors(["ext4"]))


# --------------------------------------------------------------------------- builders and export


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("name", ["throughput", "bars", "percentiles", "scaling"])
def test_save_chart_writes_vector_svg_pdf_and_png(tmp_path: Path, name: str) -> None:
    paths = charts.save_chart(all_charts()[name], tmp_path / "sub" / name)
    assert set(paths) == {"svg", "pdf", "png"}
    for fmt, path in paths.items():
        assert path == tmp_path / "sub" / f"{name}.{fmt}"
        assert path.stat().st_size > 3000, path
    svg = paths["svg"].read_text()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert texts, "SVG text must be <text> elements, not paths"
    wanted = {
        "throughput": ["time since start (s)", "throughput (tps)", "ext4"],
        "bars": ["clients", "median throughput (tps)", "btrfs"],
        "percentiles": ["time since start (s)", "latency (ms)", "p25–p50"],
        "scaling": ["clients", "median throughput (tps)", "2 CPUs"],
    }[name]
    for title in wanted:
        assert title in texts, (title, texts[:20])
    assert "Liberation Sans" in svg
    assert paths["pdf"].read_bytes().startswith(b"%PDF")
    w, h = png_size(paths["png"].read_bytes())
    m = re.search(r'<svg[^>]*width="([\d.]+)"[^>]*height="([\d.]+)"', svg)
    assert m and abs(w - 2 * float(m.group(1))) <= 2 and abs(h - 2 * float(m.group(2))) <= 2
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(paths["pdf"]), "-"], capture_output=True, text=True, check=True).stdout
        assert wanted[1] in text  # vector text survives in the PDF
    if shutil.which("pdffonts"):
        fonts = subprocess.run(["pdffonts", str(paths["pdf"])], capture_output=True, text=True, check=True).stdout
        assert "LiberationSans" in fonts and all(" yes " in ln for ln in fonts.splitlines()[2:])


def test_small_multiples_share_y_and_draw_each_repeat() -> None:
    prog = charts.moving_average(progress_frame(repeats=3), "tps", 15, by=["run_id"])
    spec = charts.chart_spec(charts.throughput_small_multiples(prog, color_scale=charts.target_colors(TARGETS)))
    assert spec["resolve"]["scale"]["y"] == "shared"
    layers = spec["spec"]["layer"]
    assert [lay["encoding"]["detail"]["field"] for lay in layers] == ["run_id", "run_id"]
    assert [lay["encoding"]["y"]["field"] for lay in layers] == ["tps", "tps_ma15"]
    assert layers[1]["mark"]["strokeWidth"] > layers[0]["mark"]["strokeWidth"]
    assert spec["config"]["font"].startswith("Liberation Sans")
    assert spec["config"]["view"]["stroke"] is None


def test_long_runs_are_downsampled_before_vega() -> None:
    prog = charts.moving_average(progress_frame(seconds=3000, repeats=2), "tps", 15, by=["run_id"])
    spec = charts.chart_spec(charts.throughput_small_multiples(prog, max_points_per_line=500))
    values = next(v for k, v in spec["datasets"].items())
    assert len(values) <= 6 * 500 < prog.height


def test_save_chart_is_deterministic(tmp_path: Path) -> None:
    chart = all_charts()["throughput"]
    a = charts.save_chart(chart, tmp_path / "a")
    b = charts.save_chart(chart, tmp_path / "b")
    for fmt in ("svg", "png"):
        assert a[fmt].read_bytes() == b[fmt].read_bytes(), fmt
    # vl-convert's SVG->PDF writer orders some objects by a randomly seeded hash map: same content and
    # size, not always the same bytes (the paper PDF is byte-identical anyway: Typst rewrites the objects)
    assert a["pdf"].stat().st_size == b["pdf"].stat().st_size


def test_pdf_renderer_emits_static_mime_bundle() -> None:
    previous = alt.renderers.active
    try:
        charts.enable_pdf_renderer()
        bundle = all_charts()["scaling"]._repr_mimebundle_()
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        assert "<text" in data["image/svg+xml"]
        assert data["image/png"].startswith("iVBOR")  # base64 PNG
        assert data["application/pdf"].startswith("JVBER")  # base64 %PDF
        assert meta["image/png"]["width"] > 100
        assert not any("vega" in k or k == "text/html" for k in data)
    finally:
        alt.renderers.enable(previous)


def test_cell_panels_one_row_per_target_one_column_per_client_count() -> None:
    df = pl.DataFrame({"target_label": ["ext4", "ext4", "xfs", "xfs"], "clients": [1, 16, 1, 16]})
    labelled, n_cols = charts.cell_panels(df)
    assert n_cols == 2
    assert labelled["panel"].to_list() == [
        "ext4 ·  1 client",
        "ext4 · 16 clients",
        "xfs ·  1 client",
        "xfs · 16 clients",
    ]
    # sorted ascending (as the facet sorts), panels fill rows target by target
    assert sorted(labelled["panel"].to_list()) == labelled["panel"].to_list()


def test_panel_labels_keep_only_what_varies() -> None:
    df = pl.DataFrame({"target_label": ["ext4", "ext4", "xfs"], "workload": ["a", "b", "a"], "clients": [1, 1, 1]})
    out = charts.panel_labels(df)
    assert out["panel"].to_list() == ["ext4 · a", "ext4 · b", "xfs · a"]  # clients do not vary: left out
    two = charts.panel_labels(df.with_columns(pl.Series("clients", [1, 8, 1])))
    assert two["panel"].to_list() == ["ext4 · a · 1 client", "ext4 · b · 8 clients", "xfs · a · 1 client"]


def test_timeline_shades_windows_and_marks_events(tmp_path: Path) -> None:
    rows = [
        {"panel": p, "key": k, "t_s": float(t), "MiB": float(t * (2 if k == "Dirty" else 1))}
        for p in ("ext4", "xfs")
        for k in ("Dirty", "Writeback")
        for t in range(30)
    ]
    windows = pl.DataFrame({"panel": ["ext4", "xfs"], "start_s": [5.0, 12.0], "end_s": [9.0, 12.0]})
    chart = charts.timeline_with_windows(
        pl.DataFrame(rows), "t_s", "MiB", "key", "panel", windows, title="dirty", y_title="MiB"
    )
    spec = charts.chart_spec(chart)
    marks = [lay["mark"]["type"] if isinstance(lay["mark"], dict) else lay["mark"] for lay in spec["spec"]["layer"]]
    assert marks == ["rect", "rule", "line"]  # a window is shaded, an instant is a dashed rule
    assert spec["resolve"]["scale"]["y"] == "shared"
    svg = charts.save_chart(chart, tmp_path / "tl")["svg"].read_text()
    assert "Dirty" in svg and "Writeback" in svg and "checkpoint" in svg


def test_grouped_bars_log_axis_draws_dots_with_independent_panels() -> None:
    df = pl.DataFrame(
        {
            "bench": ["a", "a", "b", "b"],
            "stat": ["p50", "p99"] * 2,
            "target": ["ext4"] * 4,
            "ms": [0.02, 0.5, 3.0, 90.0],
        }
    )
    spec = charts.chart_spec(
        charts.grouped_bars_with_error(
            df, "stat", "ms", "target", column="bench", log_y=True, resolve_y="independent", columns=2, x_sort=None
        )
    )
    assert spec["spec"]["layer"][0]["mark"]["type"] == "point"
    assert spec["spec"]["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert spec["resolve"]["scale"]["y"] == "independent" and spec["columns"] == 2


def test_comparison_dots_stack_one_panel_per_measure(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "kind": ["tps", "tps", "tps", "savings %"],
            "item": ["a", "b", "c", "zstd"],
            "source": ["this lab", "published", "this lab", "published"],
            "value": [100.0, 50_000.0, 0.0, 60.0],
        }
    )
    chart = charts.comparison_dots(df, "value", "item", "source", "kind")
    spec = charts.chart_spec(chart)
    assert len(spec["vconcat"]) == 2
    assert [p["title"]["text"] for p in spec["vconcat"]] == ["tps", "savings %"]
    svg = charts.save_chart(chart, tmp_path / "dots")["svg"].read_text()
    assert "this lab" in svg and "published" in svg and ">c<" not in svg  # a zero has no place on a log axis


def test_show_saved_displays_the_files_as_a_captioned_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    shown: list[tuple[dict, dict]] = []
    monkeypatch.setattr(IPython.display, "display", lambda data, raw, metadata: shown.append((data, metadata)))
    paths = charts.save_chart(all_charts()["bars"], tmp_path / "bars")
    charts.show_saved(paths, "the caption")
    data, meta = shown[0]
    assert data["image/svg+xml"] == paths["svg"].read_text()
    assert data["image/png"].startswith("iVBOR") and data["application/pdf"].startswith("JVBER")
    assert meta["pgfs"] == {"caption": "the caption"}
