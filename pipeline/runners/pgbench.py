"""pgbench: data loading (`pgbench -i`, timed as the bulk-load result) and timed runs with
`-P` progress and a per-second aggregate log.

pgbench writes its summary to stdout, and `starting vacuum`, progress lines and all of `-i` to
stderr; its logs go to the current directory, one file per thread (prefix.PID, prefix.PID.1, ...).
So each run executes in its own run directory and both streams are kept as files.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.progress import Progress

PROGRESS_RE = re.compile(r"^progress: ([0-9.]+) s, ([0-9.]+) tps")


@dataclass
class Outcome:
    command: list[str]
    returncode: int | None
    wall_s: float
    timed_out: bool
    error: str | None


def init_command(pgbench: Path, conn: list[str], scale: int, extra: list[str] | None = None) -> list[str]:
    return [str(pgbench), *conn, "-i", "-s", str(scale), *(extra or []), "postgres"]


def run_command(pgbench: Path, conn: list[str], workload: dict[str, Any], clients: int, run: dict[str, Any]) -> list[str]:
    threads = workload.get("threads") or min(clients, os.cpu_count() or 1)
    threads = min(threads, clients)
    return [
        str(pgbench), *conn,
        "-b", workload["builtin"],
        "-c", str(clients), "-j", str(threads),
        "-T", str(run["duration_s"]),
        "-P", str(run["progress_interval_s"]),
        "--log", "--log-prefix=pgbench_log", f"--aggregate-interval={run['aggregate_interval_s']}",
        "postgres",
    ]


def execute(cmd: list[str], cwd: Path, stdout_name: str, stderr_name: str, timeout_s: float,
            progress: Progress | None = None, duration_s: float | None = None) -> Outcome:
    """Run a pgbench command in `cwd`, streaming stderr to a file and to the progress line."""
    t0 = time.monotonic()
    timed_out = False
    last_err: list[str] = []
    with open(cwd / stdout_name, "w") as out, open(cwd / stderr_name, "w") as err:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)

        def pump() -> None:
            assert p.stderr is not None
            for line in p.stderr:
                err.write(line)
                err.flush()
                m = PROGRESS_RE.match(line)
                if m and progress is not None:
                    of = f"/{duration_s:.0f}" if duration_s else ""
                    progress.update(f"t={float(m.group(1)):.0f}{of} s  {float(m.group(2)):.0f} tps")
                elif line.strip() and not line.startswith("progress:"):
                    last_err[:] = [line.strip()]

        th = threading.Thread(target=pump, daemon=True)
        th.start()
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        except BaseException:
            # Ctrl-C / SIGTERM: stop the client before the caller stops the server
            with contextlib.suppress(Exception):
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=10)
            raise
        finally:
            th.join(timeout=5)
    rc = p.returncode
    error = None
    if timed_out:
        error = f"timed out after {timeout_s:.0f} s"
    elif rc != 0:
        error = last_err[0] if last_err else f"exit code {rc}"
    return Outcome(cmd, rc, round(time.monotonic() - t0, 3), timed_out, error)
