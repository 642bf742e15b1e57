"""`python -m pgfslab.cli.snakemake_main ARGV...`: `python -m snakemake ARGV...`, without its last second.

Snakemake's scheduler, while jobs run and none can start, re-evaluates after `--max-jobs-per-timespan`'s
timespan (1 s at least: "100/1s" is the default, and a timespan in ms is misparsed as minutes) through a
`threading.Timer`, a non-daemon thread. When the workflow is done, the last such timer still waits, and the
interpreter waits for it before it exits: every invocation that ran a job ended about 1 s after Snakemake's
"Elapsed time" (measured here: 0.95 s of a no-job `--forcerun all`). Those timers only wake a scheduler that
has finished, so they are cancelled once Snakemake has returned; nothing else changes.
"""

from __future__ import annotations

import sys
import threading


def cancel_timers() -> None:
    """Cancel the pending `threading.Timer`s (Snakemake's scheduler re-evaluations)."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


def main(argv: list[str]) -> None:
    import snakemake
    from snakemake.cli import main as snakemake_main

    sys.argv = [f"{snakemake.__path__[0]}/__main__.py", *argv]  # as `python -m snakemake` sets it
    try:
        snakemake_main(argv)  # exits (SystemExit) with Snakemake's status
    finally:
        cancel_timers()


if __name__ == "__main__":
    main(sys.argv[1:])
