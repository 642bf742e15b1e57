"""The workload tools a study may name (`workloads.<name>.tool`), registered in one place. Each tool's module
here says what every stage asks of it before it runs or reads it (whether it needs a PostgreSQL server,
whether its cells are compared as ratios of runs, what its headline number counts) and types its own keys of
a workload (its options). How a tool is run is its runner's (pgfslab.runners.<tool>), what it writes its
parsers' (pgfslab.ingest.parsers).
"""

from __future__ import annotations

from collections.abc import Iterable

from pgfslab.tools import durability, fsmicro, pgbench, sysbench
from pgfslab.tools.tool import DRIVEN_KEYS, ToolOptions, WorkloadTool

TOOLS: dict[str, WorkloadTool] = {m.TOOL.name: m.TOOL for m in (pgbench, sysbench, fsmicro, durability)}
PG_TOOLS = frozenset(n for n, t in TOOLS.items() if t.uses_postgres)  # the tools that run a PostgreSQL server
RATIO_TOOLS = frozenset(n for n, t in TOOLS.items() if t.compared_over_runs)  # compared as ratios of runs

__all__ = ["DRIVEN_KEYS", "PG_TOOLS", "RATIO_TOOLS", "TOOLS", "ToolOptions", "WorkloadTool", "data_sets", "tool"]


def tool(name: str) -> WorkloadTool:
    """The registered tool of that name; a name no tool has is a clear error naming the ones there are."""
    try:
        return TOOLS[name]
    except KeyError:
        raise KeyError(f"no workload tool {name!r} (tools: {', '.join(TOOLS)})") from None


def data_sets(names: Iterable[str]) -> set[str]:
    """The data sets the named tools run on: "pgbench" (pgbench -i's tables), "sysbench" (sbtest)."""
    return {t.loads for t in map(tool, names) if t.loads}
