"""`python -m pgfslab.cli.snakemake_main ARGV...`: `python -m snakemake ARGV...`, without its last second and
without loading the Slurm executor where no command can use it.

Snakemake's scheduler, while jobs run and none can start, re-evaluates after `--max-jobs-per-timespan`'s
timespan (1 s at least: "100/1s" is the default, and a timespan in ms is misparsed as minutes) through a
`threading.Timer`, a non-daemon thread. When the workflow is done, the last such timer still waits, and the
interpreter waits for it before it exits: every invocation that ran a job ended about 1 s after Snakemake's
"Elapsed time" (measured here: 0.95 s of a no-job `--forcerun all`). Those timers only wake a scheduler that
has finished, so they are cancelled once Snakemake has returned; nothing else changes.

Snakemake imports every installed executor plugin at its start to register it. The Slurm plugin (installed for
`make run EXECUTOR=slurm`) imports pandas for its efficiency report: 0.5 s of a 2.4 s start here, on every
`make run` and `make analyse`. A command line that names no Slurm executor or option and reads no profile (no
`--profile`, no SNAKEMAKE_PROFILE, no default workflow profile) cannot use it: Snakemake then starts as if it were
not installed. Anything else starts Snakemake exactly as `python -m snakemake` does.
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

SLURM_PLUGIN = "snakemake_executor_plugin_slurm"
_PROFILE_OPTIONS = ("--profile", "--workflow-profile")


def cancel_timers() -> None:
    """Cancel the pending `threading.Timer`s (Snakemake's scheduler re-evaluations)."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


def _snakefile(argv: list[str]) -> Path:
    for i, arg in enumerate(argv):
        if arg in ("--snakefile", "-s") and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--snakefile="):
            return Path(arg.split("=", 1)[1])
    return next((p for p in (Path("workflow/Snakefile"), Path("Snakefile")) if p.exists()), Path("Snakefile"))


def _executor(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg in ("--executor", "-e") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--executor="):
            return arg.split("=", 1)[1]
    return None


def slurm_may_be_used(argv: list[str], env: dict[str, str] | None = None) -> bool:
    """Whether this Snakemake command line may run or configure the Slurm executor: it names it (`--executor
    slurm`, a `--slurm-...` option), or reads a profile this does not look into (any `--profile` or
    `--workflow-profile`, SNAKEMAKE_PROFILE, a profiles/default in the working directory or beside the Snakefile)."""
    env = os.environ if env is None else env
    if env.get("SNAKEMAKE_PROFILE") or (_executor(argv) or "").startswith("slurm"):
        return True
    if any(arg.startswith("--slurm-") or arg.split("=", 1)[0] in _PROFILE_OPTIONS for arg in argv):
        return True
    # Snakemake reads profiles/default unnamed: beside the working directory, else beside the Snakefile
    return any((where / "profiles" / "default").exists() for where in (Path.cwd(), _snakefile(argv).parent))


@contextlib.contextmanager
def _without_module(name: str) -> Iterator[None]:
    """Plugin discovery (pkgutil.iter_modules over sys.path) does not list top-level package `name`."""
    original = pkgutil.iter_modules

    def iter_modules(path=None, prefix=""):  # type: ignore[no-untyped-def]
        return (m for m in original(path, prefix) if path is not None or m.name != name)

    pkgutil.iter_modules = iter_modules  # type: ignore[assignment]
    try:
        yield
    finally:
        pkgutil.iter_modules = original


def main(argv: list[str]) -> None:
    # the plugins are collected when Snakemake's scheduler module is imported, and again for its command line
    plugins = contextlib.nullcontext() if slurm_may_be_used(argv) else _without_module(SLURM_PLUGIN)
    try:
        with plugins:
            import snakemake
            from snakemake.cli import main as snakemake_main

            sys.argv = [f"{snakemake.__path__[0]}/__main__.py", *argv]  # as `python -m snakemake` sets it
            snakemake_main(argv)  # exits (SystemExit) with Snakemake's status
    finally:
        cancel_timers()


if __name__ == "__main__":
    main(sys.argv[1:])
