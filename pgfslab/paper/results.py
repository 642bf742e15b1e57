"""The paper's answers (what holds of each seed's findings, first) and results: one subsection per executed
analysis notebook (its recorded publication), the device limit, WAL flushes and the comparison across hosts, the
runs that failed; and the comparison with published results.

The main text keeps what carries an answer: each notebook's text, its first figures (`MAIN_FIGURES`) and the
tables it marked `main`; its full tables and further figures go to Appendix A (`Context.defer`), and the main
text says so. Every figure and table names its source: the notebook, the study's runs, the lab commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.analysis import report
from pgfslab.paper.context import (
    ANSWERS,
    PUBLISHED,
    RESULT_ORDER,
    Context,
    figure,
    figure_md,
    publications,
    show,
    with_source,
)
from pgfslab.paper.device_baseline import device_results
from pgfslab.paper.hosts import across_hosts
from pgfslab.paper.wal import wal_results

# figures of a notebook kept in the main text (the first ones, in its order); the rest go to Appendix A. The
# sampler's figures (dirty memory, each run's throughput by round) and the precision chart support the answers
# rather than carry them.
MAIN_FIGURES = {
    ANSWERS: 1,
    "dirty_memory_checkpoints": 0,
    "exchangeability": 0,
    "precision": 0,
    "latency_percentiles": 0,
}


def _render(ctx: Context, doc: dict[str, Any], kind: str, heading: str = "###") -> None:
    """One notebook's publication: its text and main blocks here, the rest deferred to Appendix A."""
    show(f"{heading} {doc['title']}\n\n*{doc['question']}*")
    source = ctx.provenance(str(doc["name"]))
    figures, deferred = 0, 0
    for block in doc.get("blocks", []):
        if block["kind"] == "text":
            show(block["markdown"])
        elif block["kind"] == "figure" and Path(block["path"]).exists():
            md = figure_md(block["path"], block["caption"] + source)
            if figures < MAIN_FIGURES.get(kind, 1):
                show(md)
                figures += 1
            else:
                ctx.defer(doc["title"], md)
                deferred += 1
        elif block["kind"] in ("table", "entries"):
            md = with_source(block["markdown"], source) if block["kind"] == "table" else _intro_source(block, source)
            if block.get("main"):
                show(md)
            else:
                ctx.defer(doc["title"], md)
                deferred += 1
    if deferred:
        show(f'*Its full tables and further figures are in Appendix A, under "{doc["title"]}".*')


def _intro_source(block: dict[str, Any], source: str) -> str:
    """A list of entries (report.Publication.entries) with the source at the end of its introducing paragraph."""
    intro, gap, items = str(block["markdown"]).partition("\n\n")
    return f"{intro}{source}{gap}{items}"


def answers(ctx: Context) -> None:
    """What this study concludes of each seed finding it tested, before anything else."""
    docs = publications(ctx, ANSWERS)
    if not docs:
        return
    show(
        "## Answers\n\nEach finding of the seed documents this study reproduces, set against its runs in the seed's "
        "own condition: what holds, what does not, and what could not be decided (with what it would take). How "
        "the runs were made is in Setup and Method below; every cell of every finding is in Appendix A."
    )
    for doc in docs:
        _render(ctx, doc, ANSWERS, heading="###")


def results(ctx: Context) -> None:
    show(
        "## Results\n\nOne subsection per analysis notebook that ran for this study (each is a parameterized "
        "notebook under `notebooks/`; its executed copy, figures and tables are build products of the study)."
    )
    shown = 0
    for name in RESULT_ORDER:
        for doc in publications(ctx, name):
            _render(ctx, doc, name)
            shown += 1
    if not shown:
        show("No analysis notebook has produced results for this study yet.")
    device_results(ctx)
    wal_results(ctx)  # commits per WAL flush (pg_stat_wal), the WAL device apart (wal_on)
    across_hosts(ctx)  # a study from several hosts: comparisons with the host as block
    failed = ctx.runs.filter(~pl.col("status").is_in(["ok", "skipped"]))  # skipped: a precision round not needed
    if failed.height:
        show(
            report.markdown_table(
                failed.select("run_id", "status", pl.col("error").fill_null("–")),
                caption="Runs that did not complete; their partial logs are kept and they are left "
                "out of every statistic.",
            )
        )


def published(ctx: Context) -> None:
    docs = publications(ctx, PUBLISHED)
    show("## Comparison with published results")
    if not docs:
        show("Nothing in this study is comparable with the published results shipped with the lab.")
        return
    for doc in docs:
        show(f"*{doc['question']}*")
        source = ctx.provenance(str(doc["name"]))
        tables = 0
        for block in doc.get("blocks", []):
            if block["kind"] == "figure" and Path(block["path"]).exists():
                figure(block["path"], block["caption"] + source)
            elif block["kind"] == "text":
                show(block["markdown"])
            elif block["kind"] == "table":  # the numbers behind the figure, side by side: Appendix A
                ctx.defer("Comparison with published results", with_source(block["markdown"], source))
                tables += 1
        if tables:
            show('*The numbers side by side are in Appendix A, under "Comparison with published results".*')
