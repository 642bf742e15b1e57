"""The workload tools a study may name (`workloads.<name>.tool`), registered in one place: what every stage asks
of a tool before it runs or reads it (whether it needs a PostgreSQL server, whether its cells are compared as
ratios of runs, its own config keys, what its headline number counts). How a tool is run is its runner's
(pgfslab.runners.<tool>), what it writes its parsers' (pgfslab.ingest.parsers).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadTool:
    name: str
    uses_postgres: bool  # runs against a PostgreSQL server the lab starts
    compared_over_runs: bool  # its cells' headline is compared between targets as a ratio of runs
    per_second: bool  # reports throughput every second (the series the stability analyses read)
    has_ladder: bool  # drives a loaded data set: runs at each rung of a ladder (a database per rung), warms it
    keys: frozenset[str]  # its own workload keys in the config (workflow/schemas/config.schema.yaml)
    headline: str  # what its headline number counts
    unit: str | None = None  # the headline's unit in tables and figures (None: no headline number to compare)
    metric: str = "throughput"  # what the headline is called on an axis
    # what a run does with it on the mounted target (`module:function`, a pgfslab.run.execute.LifeCycle): by
    # default a client of the lab's PostgreSQL server, run by the tool's runner (client_command, run_client)
    life_cycle: str = "pgfslab.run.pg_run:pg_run"


_DRIVEN = {"prewarm", "rungs", "context"}  # keys of every tool that drives a loaded database
TOOLS: dict[str, WorkloadTool] = {
    t.name: t
    for t in (
        WorkloadTool(
            "pgbench",
            uses_postgres=True,
            compared_over_runs=True,
            per_second=True,
            has_ladder=True,
            keys=frozenset(
                {
                    "builtin",
                    "scripts",
                    "threads",
                    "transactions",
                    "rate_tps",
                    "latency_limit_ms",
                    "query_mode",
                    "per_statement",
                    "log",
                    "sampling_rate",
                    *_DRIVEN,
                }
            ),  # fmt: skip
            headline="transactions per second",
            unit="tps",
        ),
        WorkloadTool(
            "sysbench",
            uses_postgres=True,
            compared_over_runs=True,
            per_second=True,
            has_ladder=True,
            keys=frozenset({"test", "rand_type", "percentile", "histogram", *_DRIVEN}),
            headline="transactions per second",
            unit="tps",
        ),
        WorkloadTool(
            "fsmicro",
            uses_postgres=False,
            compared_over_runs=False,
            per_second=False,
            has_ladder=False,
            keys=frozenset(
                {
                    "op",
                    "count",
                    "size_bytes",
                    "files",
                    "bg_files",
                    "bg_size_bytes",
                    "max_file_bytes",
                    "fsync_dir",
                    "unlink_open",
                    "setup_sync",
                    "fill",
                }
            ),  # fmt: skip
            headline="file-system operations per second",
            unit="ops/s",
            metric="operations",
            life_cycle="pgfslab.run.fs_run:fs_run",
        ),
        WorkloadTool(
            "durability",
            uses_postgres=True,
            compared_over_runs=False,
            per_second=False,
            has_ladder=False,
            keys=frozenset({"crash_after_s", "crash"}),
            headline="transactions lost after a crash",
            life_cycle="pgfslab.run.crash_cycle:durability_run",
        ),
    )
}
PG_TOOLS = frozenset(n for n, t in TOOLS.items() if t.uses_postgres)  # the tools that run a PostgreSQL server
RATIO_TOOLS = frozenset(n for n, t in TOOLS.items() if t.compared_over_runs)  # compared as ratios of runs


def tool(name: str) -> WorkloadTool:
    """The registered tool of that name; a name no tool has is a clear error naming the ones there are."""
    try:
        return TOOLS[name]
    except KeyError:
        raise KeyError(f"no workload tool {name!r} (tools: {', '.join(TOOLS)})") from None
