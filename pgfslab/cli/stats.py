"""Statistics commands: compare (benchstat-style table of two targets from a study database).

The analysis stack (polars, scipy) is imported inside the commands: every `pgfslab` command imports this
module, and only these need it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pgfslab.errors import LabError

# pgbench_summary columns that can be compared, and whether higher is better
METRICS: dict[str, bool] = {
    "tps": True,
    "transactions_processed": True,
    "latency_avg_ms": False,
    "latency_stddev_ms": False,
    "failed_transactions": False,
    "initial_connection_time_ms": False,
}


def _pick_study(db: Path, study: str | None) -> str:
    from pgfslab.analysis import queries

    runs = queries.frame(db, "SELECT DISTINCT study FROM runs WHERE study IS NOT NULL ORDER BY study")
    studies = runs["study"].to_list() if runs.height else []
    if study:
        if study not in studies:
            raise LabError(f"{db}: no study {study!r} (has: {', '.join(studies) or 'none'})")
        return study
    if len(studies) != 1:
        raise LabError(f"{db}: {len(studies)} studies ({', '.join(studies) or 'none'}): choose one with --study")
    return str(studies[0])


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the benchstat-style table of --candidate vs --baseline over the study's workload x
    clients cells (one value per successful run); exit 1 with --fail-on-regression when a cell is
    significantly worse after the --adjust correction."""
    import polars as pl

    from pgfslab.analysis import queries, stats

    if args.metric not in METRICS:
        raise LabError(f"--metric {args.metric!r}: one of {', '.join(METRICS)}")
    try:
        study = _pick_study(args.db, args.study)
        df = queries.summaries(args.db, study)
    except queries.MissingData as exc:
        raise LabError(str(exc)) from None
    df = df.filter((pl.col("status") == "ok") & pl.col(args.metric).is_not_null())
    if args.workload:
        df = df.filter(pl.col("workload") == args.workload)
    targets = set(df["target"].unique().to_list())
    for name in (args.baseline, args.candidate):
        if name not in targets:
            raise LabError(
                f"no successful runs of target {name!r}"
                f"{' for workload ' + repr(args.workload) if args.workload else ''} in study {study!r}"
                f" (targets: {', '.join(sorted(targets)) or 'none'})"
            )
    fallback = df.filter(pl.col("fallback").fill_null(False) & pl.col("target").is_in([args.baseline, args.candidate]))
    df = df.with_columns(pl.format("{}/c={}", pl.col("workload"), pl.col("clients")).alias("benchmark"))
    higher = METRICS[args.metric]
    table = stats.benchstat(
        df.sort("plan_index"),
        args.metric,
        "benchmark",
        "target",
        args.baseline,
        args.candidate,
        alpha=args.alpha,
        adjust=args.adjust,
        higher_is_better=higher,
    )
    print(
        f"study {study}: {args.metric} ({'higher' if higher else 'lower'} is better), "
        f"median of repeats, {args.baseline} vs {args.candidate}"
    )
    if fallback.height:
        labels = sorted(set(fallback["target"].to_list()))
        print(f"warning: {', '.join(labels)} ran on a FALLBACK plain directory, not the intended file system")
    print(stats.format_benchstat(table, args.metric), end="")
    regressions = table.filter(pl.col("regression"))
    if regressions.height:
        names = ", ".join(f"{r['benchmark']} ({r['delta']})" for r in regressions.iter_rows(named=True))
        print(f"significant regressions of {args.candidate} vs {args.baseline}: {names}")
        if args.fail_on_regression:
            return 1
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the statistics commands with `python -m pgfslab`'s subparsers."""
    p = sub.add_parser("compare", help="benchstat-style comparison of two targets (median, CI, U test, geomean)")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--study", help="the study in the database (needed when it holds several)")
    p.add_argument("--baseline", required=True, help="target name of the baseline")
    p.add_argument("--candidate", required=True, help="target name compared with the baseline")
    p.add_argument("--metric", default="tps", help=f"pgbench summary column ({', '.join(METRICS)}); default tps")
    p.add_argument("--workload", help="only this workload (benchmarks are workload x clients cells)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument(
        "--adjust",
        choices=["holm", "bh", "none"],
        default="holm",
        help="multiple-comparison adjustment over the cells (default holm)",
    )
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a significant (after adjustment) regression exists",
    )
    p.set_defaults(func=cmd_compare)
