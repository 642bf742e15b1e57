"""`make bench` (`python -m benchmarks`): the lab's speed figures, as ratios, written to docs/benchmarks.md.

    .venv/bin/python -m benchmarks                          # the three figures below, and the page
    .venv/bin/python -m benchmarks --only ingest --lines 1000000

The figures (docs/benchmarks.md, generated):

* `measuring` (benchmarks.measuring): the measuring share of a study after set-up, from the default study's raw
  folder after `make run`, else from a tiny real study run here (root; takes the machine lock); goal ≥ 90 %;
* `analyse` (benchmarks.analyse): `make analyse` of the default study's raw folder (a recorded study's before
  `make run`), goal ≤ 60 s, and a no-op `make analyse` against Snakemake's own dry run;
* `noop` (benchmarks.noop): a no-op `make run` of the default study against Snakemake's own dry run, goal
  within about 1 s (after `make run`);
* `precision` (benchmarks.precision): precision per machine-minute of the default study's headline cell from
  its raw folder (interval half-width reached within the budget, the A/A half-width, run-to-run CV per target),
  beside issue 30's goals; "no raw folder" before `make run`.

More, printed only (`--only`): `ingest` (benchmarks.ingest: a 10-million-line pgbench log through the lab's
ingest, DuckDB's bare read_csv and a Python split loop), `ingest-command` (benchmarks.ingest_command: `python -m
pgfslab ingest` against a process doing only DuckDB's read_csv), `sampler` (benchmarks.sampler: the samplers'
CPU cost; with --pg pgbench's tps with and without them).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks import analyse as bench_analyse
from benchmarks import ingest as bench_ingest
from benchmarks import ingest_command as bench_ingest_command
from benchmarks import measuring as bench_measuring
from benchmarks import noop as bench_noop
from benchmarks import page
from benchmarks import precision as bench_precision
from benchmarks import sampler as bench_sampler

# the default study's raw folder, once `make run` has made it: the figures are the default study's
DEFAULT_RAW = page.REPO / "data" / "raw" / "default"
RECORDED_RAW = page.REPO / "tests" / "data" / "studies" / "dirty-bytes"


def _measuring(args: argparse.Namespace) -> list[page.Figure]:
    if DEFAULT_RAW.is_dir():
        for line in bench_measuring.from_raw(DEFAULT_RAW):
            print(line)
        got = bench_measuring.figure(DEFAULT_RAW, "the default study")
        return [got] if got else []
    if os.geteuid() != 0:
        print("measuring: no default study's raw folder (make run) and not root (a tiny study needs it); skipped")
        return []
    got = bench_measuring.tiny_study(args.repeats, args.duration, args.lock)
    return [got] if got else []


def _analyse(args: argparse.Namespace) -> list[page.Figure]:
    return bench_analyse.run(DEFAULT_RAW if DEFAULT_RAW.is_dir() else RECORDED_RAW, args.repeat)


def _noop(args: argparse.Namespace) -> list[page.Figure]:
    got = bench_noop.run(args.config, args.repeat)
    return [got] if got else []


def _precision(args: argparse.Namespace) -> list[page.Figure]:
    return bench_precision.run(args.raw)


def _printed(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], list[page.Figure]]:
    def figures(args: argparse.Namespace) -> list[page.Figure]:
        run(args)
        return []

    return figures


BENCHMARKS: dict[str, Callable[[argparse.Namespace], list[page.Figure]]] = {
    "measuring": _measuring,
    "analyse": _analyse,
    "noop": _noop,
    "precision": _precision,
    "ingest": _printed(lambda a: bench_ingest.main(["--lines", str(a.lines)])),
    "ingest-command": _printed(lambda a: bench_ingest_command.main(["--lines", str(a.command_lines)])),
    "sampler": _printed(lambda a: bench_sampler.main(["--pg"] if a.pg else [])),
}
DEFAULT = ("measuring", "analyse", "noop", "precision")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--only", action="append", choices=list(BENCHMARKS), help="run only this benchmark (repeatable)")
    p.add_argument("--repeat", type=int, default=3, help="no-op timings per side, medians [3]")
    p.add_argument("--config", default="config/default.yaml", help="noop: a finished study [config/default.yaml]")
    p.add_argument("--repeats", type=int, default=4, help="measuring's tiny study: runs [4]")
    p.add_argument("--duration", type=int, default=10, help="measuring's tiny study: seconds per run [10]")
    p.add_argument("--lock", default="/tmp/pgfslab-real.lock", help="the machine lock real runs take ('' for none)")
    p.add_argument("--lines", type=int, default=10_000_000, help="ingest: lines of the generated log [10,000,000]")
    p.add_argument("--command-lines", type=int, default=5_000_000, help="ingest-command: lines [5,000,000]")
    p.add_argument("--raw", type=Path, default=DEFAULT_RAW, help="precision: a study's raw folder [data/raw/default]")
    p.add_argument("--pg", action="store_true", help="sampler: also pgbench's tps with and without samplers")
    args = p.parse_args(argv)
    started, where = page.now(), page.machine()
    figures: list[page.Figure] = []
    for name in args.only or DEFAULT:
        print(f"== {name} ==", flush=True)
        figures += BENCHMARKS[name](args)
        print(flush=True)
    if figures:
        print(f"written: {page.write(figures, started, where).relative_to(page.REPO)}")
    return 0  # figures, not tests: a goal not met is a "no" on the page


if __name__ == "__main__":
    sys.exit(main())
