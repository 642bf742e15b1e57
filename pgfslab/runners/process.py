"""Run one benchmark process in its run directory: both streams kept as files untouched, progress
lines echoed (at most every few seconds) from whichever stream the tool prints them on, a timeout,
and the client stopped first on Ctrl-C/SIGTERM so the caller can then stop the server."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgfslab.progress import Progress


@dataclass
class Outcome:
    command: list[str]
    returncode: int | None
    wall_s: float
    timed_out: bool
    error: str | None


# A progress line -> the short status to show, or None for a line that is not progress.
ProgressParser = Callable[[str], "str | None"]


def regex_progress(pattern: str, fmt: Callable[[re.Match[str]], str]) -> ProgressParser:
    rx = re.compile(pattern)

    def parse(line: str) -> str | None:
        m = rx.search(line)
        return fmt(m) if m else None

    return parse


def execute(
    cmd: list[str],
    cwd: Path,
    stdout_name: str,
    stderr_name: str,
    timeout_s: float,
    progress: Progress | None = None,
    parse_progress: ProgressParser | None = None,
    progress_stream: str = "stderr",
) -> Outcome:
    """Run `cmd` in `cwd`; stdout -> cwd/stdout_name, stderr -> cwd/stderr_name (verbatim).

    The stream named `progress_stream` is read line by line (and still written verbatim) so that
    progress can be shown; the last non-progress line of stderr becomes the error of a failed run.
    """
    t0 = time.monotonic()
    timed_out = False
    last_err: list[str] = []
    with open(cwd / stdout_name, "w") as out, open(cwd / stderr_name, "w") as err:
        pipe_out = progress_stream == "stdout"
        p = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdout=subprocess.PIPE if pipe_out else out,
            stderr=subprocess.PIPE if not pipe_out else err,
            text=True,
            start_new_session=True,
        )
        stream, sink = (p.stdout, out) if pipe_out else (p.stderr, err)

        def pump() -> None:
            assert stream is not None
            for line in stream:
                sink.write(line)
                sink.flush()
                shown = parse_progress(line) if parse_progress else None
                if shown is not None:
                    if progress is not None:
                        progress.update(shown)
                elif not pipe_out and line.strip():
                    last_err[:] = [line.strip()]

        th = threading.Thread(target=pump, daemon=True)
        th.start()
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop(p)
        except BaseException:
            stop(p)  # Ctrl-C / SIGTERM: stop the client before the caller stops the server
            raise
        finally:
            th.join(timeout=5)
    if pipe_out:
        with contextlib.suppress(OSError):
            tail = [ln.strip() for ln in (cwd / stderr_name).read_text(errors="replace").splitlines() if ln.strip()]
            last_err[:] = tail[-1:]
    rc = p.returncode
    error = None
    if timed_out:
        error = f"timed out after {timeout_s:.0f} s"
    elif rc is not None and rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else f"signal {-rc}"
        error = f"killed by {name}" + (f" (last message: {last_err[0]})" if last_err else "")
    elif rc != 0:
        error = last_err[0] if last_err else f"exit code {rc}"
    return Outcome(cmd, rc, round(time.monotonic() - t0, 3), timed_out, error)


def stop(p: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
