"""A kernel manager whose kernels are forks of the warm server (pgfslab.warm), for papermill and nbclient.

jupyter_client launches `python -m pgfslab.warm kernel -f CONNECTION_FILE` instead of the kernelspec's
`python -m ipykernel_launcher -f CONNECTION_FILE`: the same ipykernel, with its imports already made. The
launched client is the process jupyter_client watches, signals and waits for; it passes every signal on
to the kernel and ends with it. Interrupts, restarts and shutdown work as with any local kernel.
"""

from __future__ import annotations

import sys
from typing import Any

from jupyter_client.manager import AsyncKernelManager


class WarmKernelManager(AsyncKernelManager):
    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        try:  # the python3 kernelspec: [python, -m, ipykernel_launcher, -f, {connection_file}, ...]
            at = cmd.index("ipykernel_launcher")
        except ValueError:
            return cmd  # another kernel: launched as its spec says
        if at < 1 or cmd[at - 1] != "-m":
            return cmd
        return [sys.executable, "-m", "pgfslab.warm", "kernel", *cmd[at + 1 :]]


def papermill_options(warm: bool | None = None) -> dict[str, Any]:
    """papermill.execute_notebook's options for a warm kernel (none when PGFSLAB_WARM=0 or `warm` is False)."""
    from pgfslab.warm import protocol

    if warm is False or (warm is None and not protocol.enabled()):
        return {}
    return {"kernel_manager_class": WarmKernelManager}
