"""How fast does `make run` return when nothing changed? (`make bench`, benchmark `noop`)

Times, in the same run, Snakemake's bare start-up (`snakemake --version`, the floor Snakemake cannot go
below), Snakemake's own no-op of a finished study (its full DAG check) and a no-op `make run` (which answers
from pgfslab.noop's stamp when Snakemake certified the state; its status summary included), a few times
each, and prints the medians and their ratios. Goal (issue 16): a no-op `make run` under 3 s.
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
    make = ["make", "-s", "run", f"CONFIG={args.config}"]
    _time(make)  # certifies the state once (a no-op Snakemake run), if no stamp says so yet
    base, bare, noop = [], [], []
    for _ in range(args.repeat):  # interleaved: the machine's load changes alike for all three
        base.append(_time([*snake, "--version"])[0])
        bare.append(_time(run)[0])
        noop.append(_time(make)[0])
    b, s, n = statistics.median(base), statistics.median(bare), statistics.median(noop)
    print(f"snakemake --version (start-up floor): {b:6.2f} s  (min {min(base):.2f}, max {max(base):.2f})")
    print(f"Snakemake's no-op of {args.config}: {s:6.2f} s  (min {min(bare):.2f}, max {max(bare):.2f})")
    print(f"no-op make run (stamp + status): {n:6.2f} s  (min {min(noop):.2f}, max {max(noop):.2f})")
    print(f"ratios: make run / start-up {n / b:.2f}x, make run / Snakemake's no-op {n / s:.2f}x; goal < 3 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
