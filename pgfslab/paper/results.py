"""The paper's results: one subsection per executed analysis notebook (its recorded publication), the
device limit, WAL flushes and the comparison across hosts, the runs that failed; and the comparison with
published results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.analysis import report
from pgfslab.paper.context import PUBLISHED, RESULT_ORDER, Context, figure, publications, show
from pgfslab.paper.device_baseline import device_results
from pgfslab.paper.hosts import across_hosts
from pgfslab.paper.wal import wal_results


def _render(doc: dict[str, Any]) -> None:
    show(f"### {doc['title']}\n\n*{doc['question']}*")
    for block in doc.get("blocks", []):
        if block["kind"] == "text":
            show(block["markdown"])
        elif block["kind"] == "figure":
            if Path(block["path"]).exists():
                figure(block["path"], block["caption"])
        elif block["kind"] == "table":
            show(block["markdown"])


def results(ctx: Context) -> None:
    show(
        "## Results\n\nOne subsection per analysis notebook that ran for this study (each is a parameterized "
        "notebook under `notebooks/`; its executed copy, figures and tables are build products of the study)."
    )
    shown = 0
    for name in RESULT_ORDER:
        for doc in publications(ctx, name):
            _render(doc)
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
        for block in doc.get("blocks", []):
            if block["kind"] == "figure" and Path(block["path"]).exists():
                figure(block["path"], block["caption"])
            elif block["kind"] in ("text", "table"):
                show(block["markdown"])
