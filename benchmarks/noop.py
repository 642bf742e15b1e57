"""How fast does `make run` return when nothing changed? (`make bench`, benchmark `noop`)

Times, in the same run, Snakemake's bare start-up (`snakemake --version`, the floor no workflow can
go below) and a no-op run of a finished study (the full DAG check of `make run`), a few times each,
and prints the medians and their ratio. Goal from the brief: a no-op `make run` within 10 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _time(cmd: list[str]) -> tuple[float, str]:
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return time.monotonic() - t0, res.stdout + res.stderr


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.noop", description=__doc__)
    p.add_argument("--config", default="config/default.yaml", help="a study that has been run [config/default.yaml]")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    snake = [sys.executable, "-m", "snakemake"]
    run = [*snake, "--snakefile", "workflow/Snakefile", "--cores", "1", "--configfile", str(args.config)]
    if "Nothing to be done" not in _time([*run, "--dry-run"])[1]:
        print(f"{args.config}: not a finished study (Snakemake has work to do); run `make run` first", file=sys.stderr)
        return 2
    base = [_time([*snake, "--version"])[0] for _ in range(args.repeat)]
    noop = [_time(run)[0] for _ in range(args.repeat)]
    b, n = statistics.median(base), statistics.median(noop)
    print(f"snakemake --version (start-up floor): {b:6.2f} s  (min {min(base):.2f}, max {max(base):.2f})")
    print(f"no-op run of {args.config}:   {n:6.2f} s  (min {min(noop):.2f}, max {max(noop):.2f})")
    print(f"ratio no-op / start-up: {n / b:.2f}x; goal: no-op under 10 s -> {'met' if n < 10 else 'NOT met'}")
    return 0 if n < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
