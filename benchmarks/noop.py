"""How fast does `make run` return when nothing changed? (`make bench`, benchmark `noop`)

A no-op `make run` of a finished study (its status summary included) against Snakemake's own dry run of the
same study, interleaved, medians: what the Makefile adds to Snakemake's no-op. Goal: within about 1 s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.analyse import noop_figure, timed
from benchmarks.page import Figure

REPO = Path(__file__).resolve().parent.parent


def run(config: str, repeat: int = 3) -> Figure | None:
    """The figure, or None when the study is not finished (Snakemake has work to do)."""
    snake = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile")]
    snake += ["--cores", "all", "--configfile", config]
    if "Nothing to be done" not in timed([*snake, "--dry-run"], REPO)[2]:
        print(f"{config}: not a finished study (Snakemake has work to do); run `make run` first")
        return None
    make = ["make", "-s", "-f", str(REPO / "Makefile"), "run", f"CONFIG={config}"]
    return noop_figure(f"no-op `make run` ({config})", make, snake, REPO, repeat)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.noop", description=__doc__)
    p.add_argument("--config", default="config/default.yaml", help="a study that has been run [config/default.yaml]")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    run(args.config, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
