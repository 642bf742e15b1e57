"""What every stage asks of a workload tool (`WorkloadTool`), and the base of each tool's own options
(`ToolOptions`: the keys of `workloads.<name>` that belong to that tool, typed in the tool's module)."""

from __future__ import annotations

from dataclasses import dataclass

from pgfslab.records.config_node import Node, config_fields


@dataclass(frozen=True)
class ToolOptions(Node):
    """A tool's own keys of a workload. What the stages ask of them, answered by each tool for itself."""

    def what(self) -> str | None:
        """What the workload runs, in a few words (a builtin script, a sysbench test, an operation)."""
        return None

    def kind(self) -> str | None:
        """What a seed claim's `kinds` match (pgbench's builtin script, sysbench's test); None: the analysis
        names the run's kind itself (an fs operation's kind, else the workload's name)."""
        return None

    def transactions_per_client(self) -> int | None:
        """The transactions each client runs (None: the run lasts its duration)."""
        return None

    def logs_latency(self) -> bool:
        """Whether its runs log latencies the analyses read."""
        return False

    def writes(self) -> bool:
        """Whether its transactions write (each commit waits for a WAL flush: the device's commit ceiling)."""
        return False

    def like_published(self) -> bool:
        """Whether it measures something the published results (data/external/) also report."""
        return False

    def problems(self, clients: tuple[int, ...], duration_s: int | None) -> list[str]:
        """What is wrong with these options, for a workload of those client counts and that duration, beyond
        what the schema says (empty: nothing)."""
        return []


@dataclass(frozen=True)
class WorkloadTool:
    name: str
    options: type[ToolOptions]  # its own keys of a workload, typed (pgfslab.tools.<name>)
    uses_postgres: bool  # runs against a PostgreSQL server the lab starts
    compared_over_runs: bool  # its cells' headline is compared between targets as a ratio of runs
    per_second: bool  # reports throughput every second (the series the stability analyses read)
    has_ladder: bool  # drives a loaded data set: runs at each rung of a ladder (a database per rung), warms it
    headline: str  # what its headline number counts
    unit: str | None = None  # the headline's unit in tables and figures (None: no headline number to compare)
    metric: str = "throughput"  # what the headline is called on an axis
    # what a run does with it on the mounted target (`module:function`, a pgfslab.run.execute.LifeCycle): by
    # default a client of the lab's PostgreSQL server, run by the tool's runner (client_command, run_client)
    life_cycle: str = "pgfslab.run.pg_run:pg_run"
    loads: str | None = None  # the data set it runs on: "pgbench" (pgbench -i's tables), "sysbench" (sbtest)
    query_kinds: bool = False  # reports its queries per second by kind (read, write, other)
    # the verdicts compare its runs' headline between cells as ratios (a file-system call's rate), so `pgfslab plan`
    # sizes its cells; None: as compared_over_runs
    planned: bool | None = None

    @property
    def sized_by_plan(self) -> bool:
        return self.compared_over_runs if self.planned is None else self.planned

    @property
    def keys(self) -> frozenset[str]:
        """Its own keys of a workload in the config (workflow/schemas/config.schema.yaml)."""
        own = {f.name for f in config_fields(self.options)}
        return frozenset(own | (DRIVEN_KEYS if self.has_ladder else set()))


# keys of every tool that drives a loaded database (common fields of the workload, not the tool's options)
DRIVEN_KEYS = frozenset({"prewarm", "rungs", "context"})
