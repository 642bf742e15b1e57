"""A fixed amount of CPU work timed just before a run: how fast the host is at that moment, measured where
the file system under test cannot act (no I/O, nothing of the target touched). On a shared VM the CPU time
the hypervisor gives the guest moves from run to run; a comparison can take this as a covariate, which a
treatment cannot have caused, unlike the steal measured during the run itself.

The work is SHA-256 over an in-memory buffer on every CPU at once (hashlib releases the GIL for large
buffers): about a sixth of a second here.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Any

BUFFER_MIB = 16
ROUNDS = 16


def measure() -> dict[str, Any]:
    """The probe's result for run.json: the work done, its wall time and the rate (MiB hashed per second
    over all CPUs)."""
    cpus = os.cpu_count() or 1
    data = bytes(BUFFER_MIB * 2**20)

    def work() -> None:
        for _ in range(ROUNDS):
            hashlib.sha256(data).digest()

    threads = [threading.Thread(target=work) for _ in range(cpus)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    total = cpus * ROUNDS * BUFFER_MIB
    return {
        "work": f"sha256 of {BUFFER_MIB} MiB x {ROUNDS} on {cpus} threads",
        "wall_s": wall,
        "mib_per_s": total / wall,
    }
