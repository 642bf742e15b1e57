"""sysbench's OLTP tests against the lab's PostgreSQL server (run by pgfslab.runners.sysbench)."""

from __future__ import annotations

from dataclasses import dataclass

from pgfslab.tools.tool import ToolOptions, WorkloadTool

READ_ONLY_TESTS = frozenset({"oltp_read_only", "oltp_point_select"})
PUBLISHED_TESTS = frozenset({"oltp_read_write", "oltp_write_only"})  # what seed 002's published runs ran


@dataclass(frozen=True)
class SysbenchOptions(ToolOptions):
    test: str | None = None
    rand_type: str | None = None
    percentile: int = 95
    histogram: bool = False

    def what(self) -> str | None:
        return self.test

    def kind(self) -> str | None:
        return self.test

    def logs_latency(self) -> bool:
        return self.percentile > 0

    def writes(self) -> bool:
        return self.test not in READ_ONLY_TESTS

    def like_published(self) -> bool:
        return self.test in PUBLISHED_TESTS

    def problems(self, clients: tuple[int, ...], duration_s: int | None) -> list[str]:
        return [] if self.test else ["sysbench needs `test` (e.g. oltp_read_write)"]


TOOL = WorkloadTool(
    "sysbench",
    SysbenchOptions,
    uses_postgres=True,
    compared_over_runs=True,
    per_second=True,
    has_ladder=True,
    headline="transactions per second",
    unit="tps",
    loads="sysbench",
    query_kinds=True,
)
