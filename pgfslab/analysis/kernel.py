"""Where a batch-run notebook's kernel listens: Unix sockets in a folder of this process's own.

Snakemake runs the study's notebooks side by side, each through papermill in its own process. Over TCP the
client picks ports that are free at that moment and the kernel binds them a moment later, so two kernels
starting together can be handed the same port and one dies before replying to kernel_info ("Address already
in use", nteract/papermill#511). Sockets in a private temporary folder cannot collide, and they are removed
with it. A notebook opened in JupyterLab is not affected: its server starts the kernel as it always does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from traitlets.config import Config

# papermill's `start_timeout`: how long a new kernel may take to answer. Its default, 60 s, is exceeded on a
# 2-CPU machine while notebooks, the paper and a test suite start kernels side by side (a CI run beside
# re-analyses lost every recorded-study test to one "Kernel didn't respond in 60 seconds").
START_TIMEOUT_S = 300


@contextmanager
def private_sockets() -> Iterator[Config]:
    """The traitlets config for papermill's `config=` (passed on to nbclient's KernelManager): IPC transport
    with the socket files in a temporary folder that is removed on every exit path."""
    with tempfile.TemporaryDirectory(prefix="pgfs-kernel-") as folder:
        yield Config({"KernelManager": {"transport": "ipc", "ip": f"{folder}/kernel"}})
