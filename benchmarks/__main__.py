"""`make bench` (`python -m benchmarks.__main__`): every benchmark of the lab, one after the other.

    .venv/bin/python -m benchmarks.__main__                       # all, full size
    .venv/bin/python -m benchmarks.__main__ --only ingest --lines 1000000

Benchmarks: `ingest` (benchmarks.ingest: a 10-million-line pgbench per-transaction log through
the lab's ingest, DuckDB's bare read_csv and a Python split loop; time, ratios, peak memory),
`ingest-command` (benchmarks.ingest_command: `python -m pgfslab ingest` on a 5-million-line log
against a process doing only DuckDB's read_csv, start-up included; the ratio of the same run),
`sampler` (benchmarks.sampler: the samplers' CPU cost at 1 and 10 Hz; with --pg the tps of
pgbench with and without them, interleaved), `noop` (benchmarks.noop: a no-op `make run` against
Snakemake's start-up and its own no-op), `measuring` (benchmarks.measuring: a tiny real study's measuring
share with its per-phase breakdown; root, takes the machine lock), `analyse` (benchmarks.analyse: `make
analyse` of the default study's raw folder (a recorded one before `make run`), warm and cold, a notebook edit's
rebuild, the no-op). After `make run`, `measuring` also reads the default study's own records.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from benchmarks import analyse as bench_analyse
from benchmarks import ingest as bench_ingest
from benchmarks import ingest_command as bench_ingest_command
from benchmarks import measuring as bench_measuring
from benchmarks import noop as bench_noop
from benchmarks import sampler as bench_sampler


def _ingest(args: argparse.Namespace) -> int:
    argv = ["--lines", str(args.lines), "--repeat", str(args.repeat)]
    return bench_ingest.main(argv)


def _ingest_command(args: argparse.Namespace) -> int:
    return bench_ingest_command.main(["--lines", str(args.command_lines), "--repeat", str(max(args.repeat, 3))])


def _sampler(args: argparse.Namespace) -> int:
    return bench_sampler.main(["--pg"] if args.pg else [])


def _noop(args: argparse.Namespace) -> int:
    return bench_noop.main(["--config", args.config])


# the default study's raw folder, once `make run` has made it: the figures are the default study's
DEFAULT_RAW = bench_analyse.REPO / "data" / "raw" / "default"


def _measuring(args: argparse.Namespace) -> int:
    status = bench_measuring.main([])
    if DEFAULT_RAW.is_dir():
        print("-- the default study as it ran (its raw folder's records):")
        status = bench_measuring.main(["--raw", str(DEFAULT_RAW)]) or status
    return status


def _analyse(args: argparse.Namespace) -> int:
    # from the default study's raw folder when there is one (else a recorded study's, tests/data/studies/)
    return bench_analyse.main(["--raw", str(DEFAULT_RAW)] if DEFAULT_RAW.is_dir() else [])


BENCHMARKS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ingest": _ingest,
    "ingest-command": _ingest_command,
    "sampler": _sampler,
    "noop": _noop,
    "measuring": _measuring,
    "analyse": _analyse,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.__main__", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--only", action="append", choices=list(BENCHMARKS), help="run only this benchmark (repeatable)")
    p.add_argument("--lines", type=int, default=10_000_000, help="ingest: lines of the generated log [10,000,000]")
    p.add_argument(
        "--command-lines",
        type=int,
        default=5_000_000,
        help="ingest-command: lines of the log ingested by whole commands [5,000,000]",
    )
    p.add_argument("--repeat", type=int, default=1, help="ingest: runs per method, medians reported [1]")
    p.add_argument("--pg", action="store_true", help="sampler: also the tps of pgbench with and without samplers")
    p.add_argument("--config", default="config/default.yaml", help="noop: a finished study [config/default.yaml]")
    args = p.parse_args(argv)
    status = 0
    for name in args.only or list(BENCHMARKS):
        print(f"== {name} ==", flush=True)
        status |= BENCHMARKS[name](args)
        print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
