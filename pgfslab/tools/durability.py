"""durability: TPC-B transactions committed, a crash, and a count of the committed ones that came back (run
by pgfslab.run.crash_cycle with pgfslab.runners.durability)."""

from __future__ import annotations

from dataclasses import dataclass

from pgfslab.tools.tool import ToolOptions, WorkloadTool

DEFAULT_CRASH_AFTER_S = 3.0
DEFAULT_CRASH = "power-loss"


@dataclass(frozen=True)
class DurabilityOptions(ToolOptions):
    crash_after_s: float | None = None
    crash: str | None = None

    def what(self) -> str | None:
        return f"{self.crash_kind()} crash"

    def crash_kind(self) -> str:
        return self.crash or DEFAULT_CRASH

    def crash_after(self) -> float:
        return float(DEFAULT_CRASH_AFTER_S if self.crash_after_s is None else self.crash_after_s)


TOOL = WorkloadTool(
    "durability",
    DurabilityOptions,
    uses_postgres=True,
    compared_over_runs=False,
    per_second=False,
    has_ladder=False,
    headline="transactions lost after a crash",
    life_cycle="pgfslab.run.crash_cycle:durability_run",
    loads="pgbench",
)
