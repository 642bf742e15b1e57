"""The paper's parts for a study measured on several hosts (pgfslab.ingest.merge): the hosts in the setup
section, and the target comparisons with the host as a block (van Elteren, between-host variance share).
Both say nothing for a study from one machine (no `host` in its runs)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from pgfslab.analysis import charts, queries, report
from pgfslab.analysis.stats import blocked
from pgfslab.paper.context import Context, figure, names, show
from pgfslab.records.run_record import HostFacts

HARDWARE = ("cpu_model", "cpus", "mem_total_kb", "devices")


def host_keys(ctx: Context) -> list[str]:
    if "host" not in ctx.runs.columns:
        return []
    return sorted(str(h) for h in ctx.runs["host"].drop_nulls().unique().to_list())


def _hosts_table(ctx: Context) -> pl.DataFrame:
    """One row per host: from the database's `hosts` table (merge), else from its runs' records."""
    if queries.has_table(ctx.db, "hosts"):
        return queries.frame(ctx.db, "SELECT * FROM hosts WHERE study = ? ORDER BY host", [ctx.study])
    rows = []
    for h in host_keys(ctx):
        ids = ctx.runs.filter(pl.col("host") == h)["run_id"].to_list()
        machine = next((ctx.records[i].host for i in ids if i in ctx.records and ctx.records[i].host), None)
        facts = machine or HostFacts()
        rows.append(
            {
                "host": h,
                "hostname": facts.hostname,
                "cpu_model": facts.cpu_model,
                "cpus": facts.cpus,
                "mem_total_kb": facts.mem_total_kb,
                "kernel": facts.kernel,
            }
        )
        rows[-1].update(devices=None, slurm_job_id=None, runs=len(ids))
    return pl.DataFrame(rows)


def _devices_text(text: str | None) -> str:
    if not text:
        return "–"
    devs: list[dict[str, Any]] = json.loads(text)
    return (
        "; ".join(
            f"{d['name']} {d.get('model') or ''} {report.bytes_h(d['size_bytes']) if d.get('size_bytes') else ''}"
            f"{', rotational' if d.get('rotational') else ''}".replace("  ", " ").strip()
            for d in devs
        )
        or "–"
    )


def differing_hardware(hosts: pl.DataFrame) -> list[str]:
    """The hardware facts in which the hosts differ (names of `hosts` columns)."""
    return [c for c in HARDWARE if c in hosts.columns and hosts[c].n_unique() > 1]


def setup_hosts(ctx: Context) -> None:
    """Every host: machine, CPU, memory, kernel, devices, the Slurm job; whether the hardware differs."""
    keys = host_keys(ctx)
    if not keys:
        return
    hosts = _hosts_table(ctx)
    table = hosts.select(
        pl.col("host"),
        pl.col("hostname").fill_null("?").alias("machine"),
        pl.col("cpu_model").fill_null("?").alias("CPU"),
        pl.col("cpus").alias("CPUs"),
        pl.col("mem_total_kb").map_elements(lambda kb: report.bytes_h(kb * 1024), return_dtype=pl.Utf8).alias("memory"),
        pl.col("kernel").fill_null("?"),
        pl.col("devices").map_elements(_devices_text, return_dtype=pl.Utf8).fill_null("–").alias("devices"),
        pl.col("slurm_job_id").fill_null("–").alias("Slurm job"),
        pl.col("runs"),
    )
    machines = sorted({str(m) for m in hosts["hostname"].drop_nulls().to_list()})
    differ = differing_hardware(hosts)
    text = f"### Hosts\n\nThe study ran on {len(keys)} hosts ({names(keys)}), each the whole plan: every target, every run. "
    if len(machines) == 1 and hosts.height > 1:
        text += (
            f"All host keys ran on the same machine ({machines[0]}), one after the other: the hosts here are "
            "repeated sessions of one machine, not different machines, and a between-host effect is a "
            "difference between those sessions. "
        )
    if differ:
        text += (
            f"**The hosts differ in hardware** ({', '.join(d.replace('_', ' ') for d in differ)}): targets are "
            "compared within each host and the per-host ratios are shown beside the combined test. "
        )
    else:
        text += "Their hardware is the same (CPU, logical CPUs, memory and block devices as recorded). "
    show(text)
    show(
        report.markdown_table(
            table, caption="Hosts: machine, CPU, memory, kernel and block devices as each recorded them."
        )
    )


def across_hosts(ctx: Context) -> None:
    """Target comparisons with the host as the block, the host's share of the variance, a figure by host."""
    keys = host_keys(ctx)
    if len(keys) < 2:
        return
    frame = ctx.ok.join(ctx.runs.select("run_id", "host"), on="run_id", how="left")
    table = blocked.blocked_comparison(frame, ctx.baseline)
    show(
        "## Across hosts\n\n"
        f"Each target is compared with {ctx.baseline} within each host, and the hosts are combined with van "
        "Elteren's stratified rank-sum test (the host is a block: a faster host cannot make a target look "
        "faster, and each host counts about equally). *ratio* is the geometric mean over hosts of each host's "
        "median ratio; *host share* is the fraction of the run-to-run variance of a target's headline number "
        "that lies between hosts (one-way random-effects estimate; 0 when the hosts agree within their noise)."
    )
    if table.height == 0:
        show("No cell has runs of the baseline and another target on the same host.")
        return
    shown = table.select(
        "workload",
        "clients",
        "candidate",
        "ratio_per_host",
        "ratio",
        "z",
        "p",
        pl.col("host_share_baseline").alias("host share (baseline)"),
        pl.col("host_share_candidate").alias("host share (candidate)"),
    )
    show(
        report.markdown_table(
            shown,
            digits={"ratio": 3, "z": 2, "p": 4, "host share (baseline)": 2, "host share (candidate)": 2},
            caption=f"Targets against {ctx.baseline}, host as block (van Elteren; normal approximation, two-sided).",
        )
    )
    cells = frame.with_columns(
        (pl.col("workload") + pl.lit(", ") + pl.col("clients").cast(pl.Utf8) + pl.lit(" clients")).alias("cell")
    )
    chart = charts.comparison_dots(
        cells, "value", "target", "host", facet="cell", log_x=False, x_title=f"{ctx.unit()} per run"
    )
    paths = charts.save_chart(chart, ctx.figures_dir / "hosts_by_target", formats=("svg", "png", "pdf"))
    figure(paths["png"], "Every run's headline number by target, coloured by host, one panel per cell.")
