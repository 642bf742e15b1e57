"""Execute one registered notebook of a study with papermill, as JupyterLab would run it.

The kernel starts in notebooks/ (JupyterLab's working directory for a notebook there) and every path
parameter is absolute, so what runs in the pipeline is what a researcher runs by opening the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import papermill as pm

from pgfslab import paths
from pgfslab.analysis.kernel import START_TIMEOUT_S, private_sockets
from pgfslab.analysis.registry import Job
from pgfslab.errors import LabError


def run(job: Job, params: dict[str, Any], out: Path, *, kernel_cwd: Path = paths.NOTEBOOKS) -> None:
    """Execute `job`'s notebook into `out`; a failing cell is a LabError naming the notebook and the error."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with private_sockets() as kernel_config:
        try:
            pm.execute_notebook(
                str(job.source),
                str(out),
                parameters=params,
                kernel_name="python3",
                progress_bar=False,
                cwd=str(kernel_cwd),
                log_output=False,
                # written once, at the end (also after a failed cell, with its traceback), instead of after
                # every cell's start and end: each write serialises and validates the whole notebook
                request_save_on_cell_execute=False,
                config=kernel_config,
                start_timeout=START_TIMEOUT_S,
            )
        except pm.PapermillExecutionError as exc:
            raise LabError(
                f"notebook {job.name} ({job.source.name}) failed in cell {exc.exec_count}: "
                f"{exc.ename}: {exc.evalue} (executed copy: {out})"
            ) from None
