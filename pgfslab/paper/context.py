"""What every section of the whitepaper shares: the study as the paper sees it (`Context`, loaded once
from the study database), how a section shows Markdown and figures, and the executed notebooks' records
(`report.Publication`: <tables_dir>/<name>.json) that the results, the comparison with published results
and the appendix read.

Works for every kind of study: pgbench, sysbench and fsmicro workloads, alone or mixed. A run's
headline number is its tool's throughput (`data.headline`: pgbench/sysbench tps, fsmicro ops/s,
higher is better).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from IPython.display import Markdown, display

from pgfslab.analysis import queries
from pgfslab.config.model import Workload
from pgfslab.config.study import Study
from pgfslab.paths import in_lab
from pgfslab.records.run_record import RunRecord
from pgfslab.records.target_record import TargetRecord
from pgfslab.runners import runner
from pgfslab.tools import PG_TOOLS

# the notebook whose answers open the paper (what holds of each seed's findings), before the results
ANSWERS = "seed_verdicts"
# the executed notebooks whose results the paper shows, in this order (per-workload ones first)
RESULT_ORDER = [
    "io_methods",  # the aio study's question: which file systems gain from asynchronous I/O
    "pg_versions",  # the pg-versions study's question: does a file-system choice hold on a newer major
    "throughput_stability",
    "sysbench_qps",
    "latency_percentiles",
    "variance_significance",
    "precision",
    "exchangeability",  # beside the comparisons: are the runs exchangeable, the A/A band, two days
    "dirty_memory_checkpoints",
    "compression_footprint",
    "scaling",
    "fs_micro",
]
PUBLISHED = "local_vs_published"


@dataclass
class Context:
    db: str
    study: str
    info: dict[str, Any]
    cfg: Study
    runs: pl.DataFrame
    targets: pl.DataFrame
    headline: pl.DataFrame
    records: dict[str, RunRecord]
    figures_dir: Path
    tables_dir: Path
    build_dir: Path
    target_records: dict[str, TargetRecord] = field(default_factory=dict)
    # Appendix A: (section, Markdown) of every full table and further figure, in the order the sections deferred
    # them; the main text keeps what carries an answer (pgfslab.paper.appendix shows these)
    later: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def load(cls, db: str, study: str, *, figures_dir: str, tables_dir: str, build_dir: str) -> Context:
        """Paths relative to the repository (or absolute), wherever the kernel runs."""
        db = str(in_lab(db))
        figures_dir, tables_dir, build_dir = (str(in_lab(p)) for p in (figures_dir, tables_dir, build_dir))
        info = queries.study_info(db)
        runs = queries.require(queries.runs(db, study), f"runs of study {study!r}")
        # the paper speaks of the config's workloads: a ladder's `tpcb.d2` is `tpcb` (its cell in cell_workload)
        runs = runs.with_columns(
            pl.col("workload").alias("cell_workload"), pl.coalesce("base_workload", "workload").alias("workload")
        )
        return cls(
            db,
            study,
            info,
            queries.study_of(db),
            runs,
            queries.targets(db, study),
            queries.headline(db, study, only_ok=False),
            queries.run_records(db, study, only_ok=False),
            Path(figures_dir),
            Path(tables_dir),
            Path(build_dir),
            queries.target_records(db, study),
        )

    # ---------------------------------------------------------------- facts used by several sections
    @property
    def ok(self) -> pl.DataFrame:
        return self.headline.filter((pl.col("status") == "ok") & pl.col("value").is_not_null())

    @property
    def tools(self) -> list[str]:
        return self.runs["tool"].unique(maintain_order=True).to_list()

    @property
    def ran(self) -> pl.DataFrame:
        """The runs that ran (ok or failed): an optional round skipped as unneeded measured nothing."""
        return self.runs.filter(pl.col("status") != "skipped")

    def skipped_words(self) -> str:
        """How many optional runs of the precision rounds measured nothing (their cell precise or its budget spent)."""
        n = self.runs.height - self.ran.height
        return (
            f" ({n} optional run{'s' if n != 1 else ''} of the precision rounds skipped, measuring nothing)"
            if n
            else ""
        )

    @property
    def uses_postgres(self) -> bool:
        return any(t in PG_TOOLS for t in self.tools)

    @property
    def target_names(self) -> list[str]:
        return queries.target_names(self.db, self.study)

    @property
    def baseline(self) -> str:
        return self.target_names[0]

    @property
    def twins(self) -> dict[str, str]:
        """A/A controls in the study: twin -> the target whose exact spec it repeats (`aa_twin_of`)."""
        return {t: spec.aa_twin_of for t, spec in self.cfg.targets.items() if spec.aa_twin_of}

    @property
    def compared_targets(self) -> list[str]:
        """The targets under study: every target but the A/A controls, which measure the instrument."""
        return [t for t in self.target_names if t not in self.twins]

    def first_record(self, tools: Collection[str] | None = None) -> RunRecord:
        """The first run's record (of one of `tools`, when given; an empty record for a study without runs)."""
        for rec in self.records.values():
            if tools is None or rec.tool in tools:
                return rec
        return next(iter(self.records.values()), RunRecord())

    def defer(self, section: str, markdown: str) -> None:
        """A full table or a further figure, for Appendix A under `section` (the main text says where it is)."""
        self.later.append((section, markdown))

    def provenance(self, notebook: str | None = None) -> str:
        """Where a figure or table comes from, for its caption: the notebook that made it (linked to its
        executed copy, a build product beside the paper), the study's runs and the lab commit they ran at."""
        ran = self.ran.height
        made = (
            f"notebook [`{notebook}`](../build/{self.study}/notebooks/{notebook}.ipynb); "
            if notebook
            else "the paper; "
        )
        return f" *Source: {made}{ran} runs of study `{self.study}`, lab commit {lab_commit(list(self.records.values()))}.*"

    def unit(self, tool: str | None = None) -> str:
        return queries.METRICS.get(tool or self.tools[0], queries.METRICS["pgbench"]).unit

    def headline_cell(self) -> tuple[str, int | None]:
        """The cell with the most repeats per target (ties: more clients, then config order)."""
        order = {w: i for i, w in enumerate(self.cfg.workloads)}
        counts = (
            self.ok.group_by(["workload", "clients"])
            .agg((pl.len() / pl.col("target").n_unique()).alias("n"), pl.col("target").n_unique().alias("t"))
            .with_columns(
                pl.col("workload")
                .str.replace(r"\.d[0-9]+$", "")
                .replace_strict(order, default=99, return_dtype=pl.Int64)
                .alias("o")
            )
            .sort(["t", "n", "clients", "o", "workload"], descending=[True, True, True, False, True])
        )
        return counts["workload"][0], counts["clients"][0]


def show(text: str) -> None:
    display(Markdown(text))


# the tallest a figure may be drawn, as a share of the text's width: at the text's width a tall, narrow chart took
# a page of its own and left a hole on the page before it (paper.typ draws every figure at the text's width)
MAX_ASPECT = 0.7


def figure_width(path: Path | str) -> str | None:
    """A narrower width for a chart taller than MAX_ASPECT of its width (from the SVG's own size), else None."""
    try:
        head = Path(path).read_text(errors="replace")[:2000]
    except OSError:
        return None
    size = re.search(r'<svg[^>]*?\bwidth="([0-9.]+)[a-z]*"[^>]*?\bheight="([0-9.]+)[a-z]*"', head, re.S)
    if size is None or float(size[1]) <= 0:
        return None
    aspect = float(size[2]) / float(size[1])
    return f"{max(35, int(100 * MAX_ASPECT / aspect))}%" if aspect > MAX_ASPECT else None


def figure_md(path: Path | str, caption: str) -> str:
    """A numbered figure with its caption (pandoc implicit figure: an image alone in a paragraph)."""
    width = figure_width(path)
    return f"![{caption}]({Path(path).as_posix()})" + (f"{{width={width}}}" if width else "")


def figure(path: Path | str, caption: str) -> None:
    show(figure_md(path, caption))


def with_source(table_md: str, source: str) -> str:
    """A Markdown table whose caption (`Table: ...`, the paragraph after the table; its notes may follow) ends with
    `source`."""
    head, sep, rest = table_md.rpartition("\n\nTable: ")
    caption, gap, notes = rest.partition("\n\n")
    return f"{head}{sep}{caption}{source}{gap}{notes}" if sep else table_md


def lab_commit(records: list[RunRecord]) -> str:
    """The lab commits the runs ran at, short, in order; "unknown" for a run that ran without one recorded.
    A round the precision target skipped ran no code and records no commit: it is not counted."""
    ran = [r for r in records if r.status != "skipped"]
    commits = sorted({(r.git.commit if r.git else None) or "unknown" for r in ran})
    dirty = any(r.git and r.git.dirty for r in ran)
    out = ", ".join(c[:12] for c in commits) + (" (uncommitted changes)" if dirty else "")
    return out + (f" — {len(commits)} commits over the runs" if len(commits) > 1 else "")


def names(items: list[str]) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def workload_what(spec: Workload) -> str:
    return str(runner(spec.tool).describe(spec))


def publications(ctx: Context, prefix: str) -> list[dict[str, Any]]:
    found = []
    for p in sorted(ctx.tables_dir.glob(f"{prefix}*.json")):
        doc = json.loads(p.read_text())
        if doc.get("name") == prefix or str(doc.get("name", "")).startswith(prefix + "-"):
            found.append(doc)
    order = {w: i for i, w in enumerate(ctx.cfg.workloads)}
    return sorted(found, key=lambda d: order.get(str(d["name"]).removeprefix(prefix + "-"), 99))
