"""How long does a re-analysis take, and a no-op? (`make bench`, benchmark `analyse`; no root)

From a raw folder alone (the default study's after `make run`, else a recorded study of tests/data/studies/),
copied to a scratch folder, in the same run:

* `make analyse` from nothing (ingest, every notebook, the paper), every core: its wall time against the goal,
  and the CPU it and its children used (the figure a loaded machine changes least);
* a second `make analyse`, with nothing to do, against Snakemake's own dry run of the same study (the same
  command line with `--dry-run`), interleaved, medians: what the Makefile adds to Snakemake's no-op.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.page import Figure, machine

REPO = Path(__file__).resolve().parent.parent
GOAL_S = 60.0
NOOP_GOAL_S = 1.0


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (the command and every child it waited for) and its output; a failure ends the
    benchmark with the command's output."""
    cpu0, t0 = _children_cpu_s(), time.monotonic()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, _children_cpu_s() - cpu0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return wall, cpu, res.stdout + res.stderr


def noop_figure(name: str, make: list[str], snake: list[str], cwd: Path, repeat: int) -> Figure:
    """A no-op `make` target against Snakemake's own dry run of the same command line, interleaved."""
    ours, theirs = [], []
    for _ in range(repeat):
        wall, _, out = timed(make, cwd)
        if "Nothing to be done" not in out:
            raise SystemExit(f"{' '.join(make)} was not a no-op:\n{out[-2000:]}")
        ours.append(wall)
        theirs.append(timed([*snake, "--dry-run"], cwd)[0])
    m, s = statistics.median(ours), statistics.median(theirs)
    print(f"{name}: {m:.2f} s; Snakemake's own dry run {s:.2f} s; difference {m - s:+.2f} s, ratio {m / s:.2f}")
    return Figure(
        name,
        f"{m:.2f} s",
        f"Snakemake's dry run {s:.2f} s",
        f"{m / s:.2f} ({m - s:+.2f} s)",
        f"within {NOOP_GOAL_S:.0f} s",
        m - s <= NOOP_GOAL_S,
        f"medians of {repeat}, interleaved",
    )


def run(raw: Path, repeat: int = 3) -> list[Figure]:
    study = raw.name
    print(machine())
    scratch = Path(tempfile.mkdtemp(prefix="pgfs-bench-analyse-"))
    try:
        (scratch / "data" / "raw").mkdir(parents=True)
        shutil.copytree(raw, scratch / "data" / "raw" / study)
        make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}"]
        timed(["make", "-s", "-f", str(REPO / "Makefile"), "setup"], scratch)  # not part of the figure
        wall, cpu, out = timed(make, scratch)
        jobs = out.count("Finished jobid") - 1  # rule all
        print(f"make analyse STUDY={study}: {wall:.1f} s wall ({jobs} jobs), {cpu:.0f} s CPU; goal ≤ {GOAL_S:.0f} s")
        analyse = Figure(
            f"`make analyse` of {study}'s raw folder",
            f"{wall:.1f} s",
            f"{cpu:.0f} s CPU on {os.cpu_count()} cores",
            f"{wall / GOAL_S:.2f} of the goal",
            f"≤ {GOAL_S:.0f} s",
            wall <= GOAL_S,
            f"{jobs} jobs: ingest, notebooks, paper; every core"
            + ("" if study == "default" else " (a recorded study: the default study's raw folder was not there)"),
        )
        snake = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile")]
        snake += ["--cores", "all", "--config", f"study={study}", "raw_only=1"]
        return [analyse, noop_figure("no-op `make analyse`", make, snake, scratch, repeat)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.analyse", description=__doc__)
    p.add_argument("--raw", type=Path, default=REPO / "tests" / "data" / "studies" / "dirty-bytes")
    p.add_argument("--repeat", type=int, default=3, help="no-op timings, medians [3]")
    args = p.parse_args(argv)
    run(args.raw, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
