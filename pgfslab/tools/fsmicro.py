"""fsmicro: one file-system operation in a loop in the target's file system, no PostgreSQL (seed 003's
micro-benchmarks; run by pgfslab.runners.fsmicro, its operations in pgfslab.tools.fsmicro_ops)."""

from __future__ import annotations

from dataclasses import dataclass

from pgfslab.tools import fsmicro_ops
from pgfslab.tools.tool import ToolOptions, WorkloadTool


@dataclass(frozen=True)
class FsmicroOptions(ToolOptions):
    op: str | None = None
    count: int | None = None
    size_bytes: int | None = None
    files: int | None = None
    bg_files: int | None = None
    bg_size_bytes: int | None = None
    max_file_bytes: int | None = None
    fsync_dir: bool | None = None
    unlink_open: bool | None = None
    setup_sync: str | None = None
    fill: str | None = None

    def what(self) -> str | None:
        return self.op

    def like_published(self) -> bool:
        return True  # seed 003 ran the same operations

    def problems(self, clients: tuple[int, ...], duration_s: int | None) -> list[str]:
        if not self.op:
            return ["fsmicro needs `op` (e.g. create_fsync)"]
        if clients != (1,):
            return ["fsmicro runs single-threaded: clients must be [1]"]
        try:
            fsmicro_ops.resolve({"duration_s": duration_s or 1, **self.to_dict()})
        except ValueError as exc:
            return [str(exc)]
        return []


TOOL = WorkloadTool(
    "fsmicro",
    FsmicroOptions,
    uses_postgres=False,
    compared_over_runs=False,
    per_second=False,
    has_ladder=False,
    headline="file-system operations per second",
    unit="ops/s",
    metric="operations",
    life_cycle="pgfslab.run.fs_run:fs_run",
    planned=True,  # seed 003's claims compare operations per second (and bytes synced per second) over runs
)
