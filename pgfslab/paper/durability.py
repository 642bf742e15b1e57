"""The paper's durability section: per target, crashes and lost committed transactions, then every
crash check (pgfslab.runners.durability's records in the study database)."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import queries, report
from pgfslab.paper.context import Context, show


def durability_frame(ctx: Context) -> pl.DataFrame:
    """The durability checks of the study (empty when it ran none, or its database predates them)."""
    try:
        return queries.frame(
            ctx.db,
            """
            SELECT r.target, r.target_label, r.workload, r.status, d.* EXCLUDE (target, workload, run_id)
            FROM durability d JOIN runs r USING (run_id) WHERE r.study = ? ORDER BY r.plan_index""",
            [ctx.study],
        )
    except Exception:  # no durability table in this database
        return pl.DataFrame()


def _per_target(d: pl.DataFrame) -> pl.DataFrame:
    return d.group_by("target_label", maintain_order=True).agg(
        pl.col("crashes").sum(),
        pl.col("committed_ids").sum(),
        pl.col("lost_ids").sum(),
        pl.col("lost_allowed").sum(),
        pl.col("violations").sum(),
        (pl.col("restart_error").is_not_null()).sum().alias("failed_restarts"),
    )


def durability_abstract(ctx: Context) -> str:
    d = durability_frame(ctx)
    if d.height == 0:
        return f"Study {ctx.study}: {ctx.runs.height} runs; none produced pgbench throughput or a durability check."
    t = _per_target(d)
    parts = [
        f"{r['target_label']}: {r['crashes']} crashes, {r['lost_ids'] - r['lost_allowed']} lost committed transactions"
        for r in t.iter_rows(named=True)
    ]
    allowed = int(t["lost_allowed"].sum())
    return (
        f"We crashed PostgreSQL {int(t['crashes'].sum())} times on {t.height} storage "
        f"target{'s' if t.height != 1 else ''} while clients "
        f"committed transactions, restarted it and checked every transaction whose COMMIT had returned "
        f"({int(t['committed_ids'].sum()):,} in all). "
        + "; ".join(parts)
        + "."
        + (
            f" {allowed} further transactions were lost where the settings allow it (synchronous_commit=off "
            "within its documented window, or fsync=off)."
            if allowed
            else ""
        )
    )


def durability(ctx: Context) -> None:
    """The durability checks: per target "N crashes, M lost committed transactions", then every check."""
    d = durability_frame(ctx)
    if d.height == 0:
        return
    t = _per_target(d)
    lines = [
        f"* **{r['target_label']}**: {r['crashes']} crashes, {r['lost_ids'] - r['lost_allowed']} lost committed "
        f"transactions of {r['committed_ids']:,} checked"
        + (f" ({r['lost_allowed']} more lost as the settings allow)" if r["lost_allowed"] else "")
        + (f"; {r['failed_restarts']} restarts FAILED" if r["failed_restarts"] else "")
        for r in t.iter_rows(named=True)
    ]
    kinds = sorted(set(d["crash"].drop_nulls().to_list()))
    show(
        "## Durability under crashes\n\n"
        + "\n".join(lines)
        + f"""

Each check lets {", ".join(sorted(set(map(str, d["clients"].to_list()))))} client connection(s) commit pgbench's
TPC-B transaction plus one row with a unique id, the id written to a file (fsynced) only after COMMIT returned;
then PostgreSQL is crashed ({", ".join(kinds)}), restarted, and every acknowledged id is looked up. `kill` is a
SIGKILL of the postmaster: the operating system and its page cache survive, so it tests PostgreSQL's own crash
recovery. `power-loss` first cuts the target's loop device — from that instant no write reaches the image, so
whatever was only in the page cache is gone, as in a power cut of a machine whose disk has no volatile write
cache — then kills every server process and mounts the file system again before the restart. It cannot show
what a real disk's volatile cache, a torn sector or a lost flush would do. A lost id is allowed only where
PostgreSQL documents the loss: with synchronous_commit=off, commits acknowledged at most 3 × wal_writer_delay
before the crash; with fsync=off, anything after a power loss."""
    )
    tab = d.select(
        pl.col("target_label").alias("target"),
        "workload",
        "crash",
        pl.col("synchronous_commit").alias("sync commit"),
        "fsync",
        pl.col("committed_ids").alias("committed"),
        pl.col("lost_ids").alias("lost"),
        pl.col("lost_allowed").alias("allowed"),
        "violations",
        pl.when(pl.col("balances_ok"))
        .then(pl.lit("agree"))
        .when(pl.col("balances_ok").is_null())
        .then(pl.lit("–"))
        .otherwise(pl.lit("DISAGREE"))
        .alias("balances"),
        pl.col("restart_s").alias("restart (s)"),
    )
    show(
        report.markdown_table(
            tab,
            caption="Every crash: transactions acknowledged before it, lost after the "
            "restart, lost as the settings allow, and whether the TPC-B balances "
            "moved together.",
        )
    )
