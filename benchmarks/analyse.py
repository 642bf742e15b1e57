"""How fast is a re-analysis, a notebook edit and a no-op? (`make bench`, benchmark `analyse`; no root)

From a raw folder alone (a recorded study of tests/data/studies/ by default, copied to a scratch folder),
in the same run:

* `make analyse` with one core (CORES=1, the baseline: one job at a time) and with every core
  (CORES=all, the default: notebooks side by side), each from nothing (database, notebooks, paper);
* after an edit of one notebook (a blank line added to the lab's own copy, restored afterwards): the
  rebuild of that notebook and the paper;
* a second `make analyse` with nothing changed, against Snakemake's own start-up (`snakemake --version`)
  and a bare Snakemake no-op of the same study (what `make analyse` did before pgfslab.noop).

Prints seconds and ratios; the machine's load at the start (on a loaded machine every figure is larger).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return wall, res.stdout + res.stderr


def _fresh(raw: Path, study: str, into: Path) -> Path:
    if into.exists():
        shutil.rmtree(into)
    (into / "data" / "raw").mkdir(parents=True)
    shutil.copytree(raw, into / "data" / "raw" / study)
    return into


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.analyse", description=__doc__)
    p.add_argument("--raw", type=Path, default=REPO / "tests" / "data" / "studies" / "dirty-bytes")
    p.add_argument("--notebook", default="throughput_stability", help="the notebook edited [throughput_stability]")
    p.add_argument("--repeat", type=int, default=3, help="no-op timings, medians [3]")
    args = p.parse_args(argv)
    study = args.raw.name
    load = os.getloadavg()
    print(
        f"machine load (1/5/15 min) at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores"
    )
    scratch = Path(tempfile.mkdtemp(prefix="pgfs-bench-analyse-"))
    py = sys.executable
    try:
        walls = {}
        for cores in ("1", "all"):
            work = _fresh(args.raw, study, scratch / f"cores-{cores}")
            make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}", f"CORES={cores}"]
            walls[cores], _ = _timed(make, work)
        print(f"make analyse STUDY={study} from the raw folder: {walls['all']:.1f} s with every core; baseline one")
        print(
            f"  core at a time {walls['1']:.1f} s (ratio {walls['all'] / walls['1']:.2f}); goal < 30 s (default study)"
        )
        # a notebook edit (a blank line added to its source; restored, with its mtime, whatever happens)
        work = scratch / "cores-all"
        make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}"]
        nb = REPO / "notebooks" / f"{args.notebook}.ipynb"
        original, st = nb.read_bytes(), nb.stat()
        try:
            nb.write_bytes(original + b"\n")
            edit, out = _timed(make, work)
        finally:
            nb.write_bytes(original)
            os.utime(nb, ns=(st.st_atime_ns, st.st_mtime_ns))
        ran = out.count("Finished jobid")
        print(
            f"after an edit of notebooks/{nb.name}: {edit:.1f} s ({ran} jobs: the notebook and the paper); goal < 15 s"
        )
        _timed(make, work)  # back to the original notebook (its executed copy is rebuilt: not timed)
        # no-op: make analyse (pgfslab.noop) vs Snakemake's start-up and its own no-op of the same study
        make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}"]
        snake = [py, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile"), "--cores", "1"]
        noop, version, bare = [], [], []
        for _ in range(args.repeat):
            noop.append(_timed(make, work)[0])
            version.append(_timed([py, "-m", "snakemake", "--version"], work)[0])
            bare.append(_timed([*snake, "--config", f"study={study}", "raw_only=1"], work)[0])
        med = sorted(noop)[len(noop) // 2]
        v = sorted(version)[len(version) // 2]
        b = sorted(bare)[len(bare) // 2]
        print(f"no-op make analyse: {med:.2f} s; baseline snakemake --version {v:.2f} s (ratio {med / v:.2f});")
        print(f"  Snakemake's own no-op of the study {b:.2f} s (ratio {med / b:.2f}); goal < 3 s")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
