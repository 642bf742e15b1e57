"""pgbench: the built-in TPC-B-like and select-only scripts, or the study's own scripts, against the lab's
PostgreSQL server (run by pgfslab.runners.pgbench, read by the ingest's pgbench parsers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pgfslab.records.config_node import Node
from pgfslab.tools.tool import ToolOptions, WorkloadTool

READ_ONLY_BUILTINS = frozenset({"select-only"})
PUBLISHED_BUILTINS = frozenset({"tpcb-like", "select-only"})  # what seed 001's published runs ran


@dataclass(frozen=True)
class Script(Node):
    file: str
    weight: int = 1


@dataclass(frozen=True)
class PgbenchOptions(ToolOptions):
    builtin: str | None = None
    scripts: tuple[Script, ...] | None = None
    threads: int | None = None
    transactions: int | None = None
    rate_tps: float | None = None
    latency_limit_ms: float | None = None
    query_mode: str | None = None
    per_statement: bool = False
    log: str = "aggregate"
    sampling_rate: float | None = None

    def what(self) -> str | None:
        names = [Path(s.file).name for s in self.scripts or ()]  # resolved paths: the file's name says it
        return ", ".join(([self.builtin] if self.builtin else []) + names) or None

    def kind(self) -> str | None:
        return self.builtin

    def transactions_per_client(self) -> int | None:
        return self.transactions

    def logs_latency(self) -> bool:
        return self.log != "none"

    def writes(self) -> bool:
        return self.builtin not in READ_ONLY_BUILTINS or bool(self.scripts)

    def like_published(self) -> bool:
        return self.builtin in PUBLISHED_BUILTINS

    def problems(self, clients: tuple[int, ...], duration_s: int | None) -> list[str]:
        out = [] if self.builtin or self.scripts else ["pgbench needs `builtin` or `scripts`"]
        if self.sampling_rate and self.log != "transactions":
            out.append("sampling_rate needs log: transactions")
        return out


TOOL = WorkloadTool(
    "pgbench",
    PgbenchOptions,
    uses_postgres=True,
    compared_over_runs=True,
    per_second=True,
    has_ladder=True,
    headline="transactions per second",
    unit="tps",
    loads="pgbench",
)
