"""Text for the paper and notebooks: Markdown tables (they survive every export route, unlike
box-drawing tables), number formatting, and the setup section built from run.json provenance."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
from IPython.display import Markdown, display

from pgfslab.analysis import charts
from pgfslab.config.model import StudyConfig, Workload
from pgfslab.records.run_record import GitFacts, HostFacts, PgFacts, RunRecord


def fmt(value: Any, digits: int = 1) -> str:
    """One cell of a table: never `nan`/`None` in a paper."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text or "–"


NOTE_AT = 48  # characters: a longer entry of a notes column is set under its table, numbered


def markdown_table(
    df: pl.DataFrame,
    *,
    digits: dict[str, int] | None = None,
    caption: str | None = None,
    align: dict[str, str] | None = None,
    notes: tuple[str, ...] = (),
) -> str:
    """A pipe table; numeric columns right-aligned; optional pandoc `Table:` caption below it.

    The separator's dashes are as long as each column's longest entry (3 to 40), for a reader of the Markdown;
    the PDF ignores them (its template sizes every column from its entries: pgfslab.paper.pdf_export).
    `notes`: columns of sentences. An entry longer than NOTE_AT characters is set under the table as a numbered
    note (the same text once) and its cell says `note k`, so that no cell of a narrow column runs down the page."""
    digits = digits or {}
    align = align or {}
    cols = df.columns
    body = [[fmt(v, digits.get(c, 1)) for c, v in zip(cols, row)] for row in df.iter_rows()]
    said: dict[str, int] = {}
    for i in (i for i, c in enumerate(cols) if c in notes):
        for r in body:
            if len(r[i]) > NOTE_AT:
                r[i] = f"note {said.setdefault(r[i], len(said) + 1)}"
    widths = [min(40, max(3, len(c), *(len(r[i]) for r in body))) for i, c in enumerate(cols)]
    header = "| " + " | ".join(cols) + " |"

    def rule(c: str, w: int) -> str:
        a = align.get(c) or ("right" if df[c].dtype.is_numeric() else "left")
        return "-" * (w - 1) + ":" if a == "right" else ":" + "-" * (w - 1)

    lines = [header, "|" + "|".join(rule(c, w) for c, w in zip(cols, widths)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    text = "\n".join(lines)
    if caption:
        text += f"\n\nTable: {caption}"
    if said:
        text += "\n\n" + "\n".join(f"{k}. {note}" for note, k in said.items())
    return text


def pair_expr(first: str, second: str, *, brackets: bool = False, digits: int = 1) -> pl.Expr:
    """Two numbers in one cell, each as `fmt` sets it: `29.1 / 54.1`, or with `brackets` an interval
    `[186.5, 1,871]`; one column fewer in a table that would not fit its page."""
    left, sep, right = ("[", ", ", "]") if brackets else ("", " / ", "")
    return pl.struct(first, second).map_elements(
        lambda r: f"{left}{fmt(r[first], digits)}{sep}{fmt(r[second], digits)}{right}", return_dtype=pl.Utf8
    )


def transposed(df: pl.DataFrame, key: str, *, digits: dict[str, int] | None = None, most: int = 6) -> pl.DataFrame:
    """A few rows of many columns turned on their side for the page: one column per value of `key` (in row
    order), one row per other column, headed by `key`; every entry formatted as `fmt` sets it (`digits` per
    original column), so a table of ten measures over four targets is four narrow columns, not ten. More than
    `most` rows, or a `key` that repeats (two hosts' targets of one name), cannot be columns: `df` as it is."""
    digits = digits or {}
    rest = [c for c in df.columns if c != key]
    names = [fmt(v) for v in df[key]]
    if len(set(names)) != len(names) or len(names) > most:
        return df
    return pl.DataFrame(
        {key: rest}
        | {n: [fmt(row[c], digits.get(c, 1)) for c in rest] for n, row in zip(names, df.iter_rows(named=True))},
        schema={key: pl.Utf8} | dict.fromkeys(names, pl.Utf8),
    )


def markdown_entries(df: pl.DataFrame, key: str, *, digits: dict[str, int] | None = None) -> str:
    """A table of sentences as a list, one entry per row: its `key` in bold, then each other column as
    "*column:* text" (what a table with several columns of sentences would squeeze into narrow columns)."""
    digits = digits or {}
    rest = [c for c in df.columns if c != key]
    return "\n".join(
        f"- **{fmt(row[key])}**: " + "; ".join(f"*{c}:* {fmt(row[c], digits.get(c, 1))}" for c in rest)
        for row in df.iter_rows(named=True)
    )


def bytes_h(n: float | int | None) -> str:
    if n is None:
        return "–"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def setup_facts(rec: RunRecord) -> dict[str, str]:
    """Host, kernel, PostgreSQL and tool facts from one run's record (all runs of a study share them)."""
    host, tools, pg = rec.host or HostFacts(), rec.tools or {}, rec.postgres or PgFacts()
    git = rec.git or GitFacts()
    return {
        "CPU": f"{host.cpu_model or '?'} ({host.cpus} logical CPUs)",
        "Memory": bytes_h((host.mem_total_kb or 0) * 1024),
        "OS / kernel": f"{host.os or '?'} / Linux {host.kernel or '?'}",
        "PostgreSQL": (pg.version or "?").split(" on ")[0],
        "pgbench": tools.get("pgbench") or "?",
        "File-system tools": "; ".join(v for k, v in tools.items() if k.startswith("mkfs") and v),
        "Python stack": ", ".join(
            f"{k} {tools[k]}" for k in ("polars", "duckdb", "snakemake", "scipy") if tools.get(k)
        ),
        "Lab commit": (git.commit or "unknown")[:12] + (" (uncommitted changes)" if git.dirty else ""),
    }


def non_default_settings(rec: RunRecord) -> pl.DataFrame:
    """The server's settings in force that differ from its defaults (pg_settings' source), with units."""
    settings = rec.postgres.settings if rec.postgres else {}
    skip = {
        "port",
        "unix_socket_directories",
        "listen_addresses",
        "lc_messages",
        "lc_monetary",
        "lc_numeric",
        "lc_time",
        "DateStyle",
        "TimeZone",
        "log_timezone",
        "default_text_search_config",
        "dynamic_shared_memory_type",
    }
    rows = [
        {"setting": k, "value": pg_value(v["setting"], v.get("unit")), "source": v["source"]}
        for k, v in sorted(settings.items())
        if k not in skip
    ]
    return pl.DataFrame(rows, schema={"setting": pl.Utf8, "value": pl.Utf8, "source": pl.Utf8})


_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2, "GB": 1024**3}


def pg_value(setting: str, unit: str | None) -> str:
    """A pg_settings value in human units (shared_buffers 16384 x 8kB -> 128.0 MiB)."""
    if unit in _UNIT_BYTES and setting.lstrip("-").isdigit():
        return bytes_h(int(setting) * _UNIT_BYTES[unit])
    return f"{setting} {unit}" if unit else setting


# ---------------------------------------------------------------------------- what a notebook publishes


def pct(value: float | None, digits: int = 1, signed: bool = False) -> str:
    """A fraction as a percentage (0.123 -> "12.3 %"), "–" when unknown."""
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "–"
    return f"{100 * value:+.{digits}f} %" if signed else f"{100 * value:.{digits}f} %"


def pvalue(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def num(value: float | None, digits: int = 0) -> str:
    """A number in running text: thousands separated, "–" when unknown."""
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "–"
    return f"{value:,.{digits}f}"


class Publication:
    """What one executed notebook contributes to the paper, recorded as it is displayed.

    A notebook creates one (`name` = its output name, e.g. `latency_percentiles-tpcb`), shows its
    text, figures and tables through it, and saves its table; every call rewrites
    `<tables_dir>/<name>.json`, which the paper (`pgfslab.paper`) reads: title, question,
    and the blocks in order (text, figure with caption, table in Markdown with caption). Figures are
    written once by `charts.save_chart` (SVG, PDF, PNG) and displayed from the files.
    """

    def __init__(
        self,
        name: str,
        title: str,
        question: str,
        *,
        tables_dir: str | Path,
        figures_dir: str | Path,
        study: str | None = None,
    ) -> None:
        self.name, self.title, self.question, self.study = name, title, question, study
        self.tables_dir, self.figures_dir = Path(tables_dir), Path(figures_dir)
        self.blocks: list[dict[str, Any]] = []
        self.tables_dir.mkdir(parents=True, exist_ok=True)
        self.figures_dir.mkdir(parents=True, exist_ok=True)
        for stale in (self.manifest_path, self.table_path):
            stale.unlink(missing_ok=True)
        self._write()

    @property
    def manifest_path(self) -> Path:
        return self.tables_dir / f"{self.name}.json"

    @property
    def table_path(self) -> Path:
        return self.tables_dir / f"{self.name}.parquet"

    def _write(self) -> None:
        doc = {
            "name": self.name,
            "title": self.title,
            "question": self.question,
            "study": self.study,
            "blocks": self.blocks,
        }
        tmp = self.manifest_path.with_name(self.manifest_path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str))
        tmp.replace(self.manifest_path)

    def text(self, markdown: str, *, paper: bool = True) -> None:
        """Display Markdown; with `paper` also put it in the paper's subsection."""
        display(Markdown(markdown))
        if paper:
            self.blocks.append({"kind": "text", "markdown": markdown})
            self._write()

    def figure(self, chart: Any, slug: str, caption: str) -> dict[str, Any]:
        """Save `chart` as `<figures_dir>/<slug>.{svg,pdf,png}`, display it with its caption and
        record it for the paper. Returns {format: path}."""
        paths = charts.save_chart(chart, self.figures_dir / slug)
        charts.show_saved(paths, caption)
        self.blocks.append({"kind": "figure", "path": str(paths["svg"]), "caption": caption})
        self._write()
        return paths

    def table(
        self,
        df: pl.DataFrame,
        caption: str,
        *,
        digits: dict[str, int] | None = None,
        align: dict[str, str] | None = None,
        paper: bool = True,
        main: bool = False,
        notes: tuple[str, ...] = (),
    ) -> str:
        """Display `df` as a Markdown table with its caption (and record it for the paper: in its appendix of
        full tables, or with `main` in the main text, for a short table that carries an answer); `notes`: columns
        whose long entries are set under the table (`markdown_table`)."""
        text = markdown_table(df, digits=digits, caption=caption, align=align, notes=notes)
        display(Markdown(text))
        if paper:
            self.blocks.append({"kind": "table", "markdown": text, "caption": caption, "main": main})
            self._write()
        return text

    def entries(self, df: pl.DataFrame, key: str, intro: str, *, main: bool = False) -> str:
        """Display `df` as a list of entries (`markdown_entries`) after its `intro` paragraph, and record it for the
        paper (in its appendix, or with `main` in the main text), where a table's column would run down the page."""
        text = f"{intro}\n\n{markdown_entries(df, key)}"
        display(Markdown(text))
        self.blocks.append({"kind": "entries", "markdown": text, "main": main})
        self._write()
        return text

    def save(self, df: pl.DataFrame) -> None:
        """The notebook's table: `<tables_dir>/<name>.parquet`."""
        df.write_parquet(self.table_path)


def read_publication(tables_dir: str | Path, name: str) -> dict[str, Any] | None:
    p = Path(tables_dir) / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def workload_label(name: str, spec: Workload | None) -> str:
    """How a workload is named in text: `tpcb (pgbench tpcb-like)`, `read-write (sysbench
    oltp_read_write)`, `create (fsmicro create_fsync)`."""
    if spec is None:
        return f"{name} (?)"
    what = spec.options.what()
    return f"{name} ({spec.tool} {what})" if what else f"{name} ({spec.tool})"


def cell_workload_label(study: StudyConfig, name: str) -> str:
    """`workload_label` of a workload as the database names it: `tpcb.d2` is rung 2 of a data-set ladder,
    `tpcb.d2 (pgbench tpcb-like, data set 2: scale 60)`."""
    base, _, rung = name.rpartition(".d") if ".d" in name else (name, "", "")
    if not rung.isdigit() or base not in study.workloads:
        return workload_label(name, study.workloads.get(name))
    label = workload_label(name, study.workloads[base])
    lad = study.ladder
    size = []
    if lad is not None and lad.scales:
        size.append(f"scale {lad.scales[int(rung) - 1]}")
    if lad is not None and lad.table_sizes:
        size.append(f"{lad.table_sizes[int(rung) - 1]:,} rows per table")
    return label[:-1] + f", data set {rung}: {', '.join(size)})"


def pm_expr(center: str, pm: str, digits: int = 1) -> pl.Expr:
    """benchstat's "center ± x%" as a text column: `468.1 ± 3%`, `468.1 ± ∞` when the sample is too
    small for an interval, the bare center when there is no interval at all (a geomean row)."""
    c = pl.col(center).round(digits).cast(pl.Utf8)
    return (
        pl.when(pl.col(center).is_null())
        .then(pl.lit("–"))
        .when(pl.col(pm).is_null() | pl.col(pm).is_nan())
        .then(c)
        .when(pl.col(pm).is_infinite())
        .then(pl.format("{} ± ∞", c))
        .otherwise(pl.format("{} ± {}%", c, (100 * pl.col(pm)).round(0).cast(pl.Int64)))
    )
