"""How fast is a re-analysis, a notebook edit and a no-op? (`make bench`, benchmark `analyse`; no root)

From a raw folder alone (a recorded study of tests/data/studies/ by default, copied to a scratch folder),
in the same run:

* `make analyse` from nothing (database, notebooks, paper), every core, with each notebook, kernel and the
  paper started cold (PGFSLAB_WARM=0, the baseline) and forked from the warm interpreter (pgfslab.warm, the
  default; its start-up included);
* after an edit of one notebook (a blank line added to the lab's own copy, restored afterwards), no warm
  server running: the rebuild of that notebook and the paper;
* a second `make analyse` with nothing changed, against Snakemake's own start-up (`snakemake --version`)
  and a bare Snakemake no-op of the same study (what `make analyse` did before pgfslab.noop).

Prints seconds and ratios; the machine's load at the start (on a loaded machine every figure is larger).
"""

from __future__ import annotations

import argparse
import contextlib
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


def _env(scratch: Path, runtime: str, warm: str) -> dict[str, str]:
    """The environment of one step: its own runtime folder (so which warm server it finds is this step's
    business) and PGFSLAB_WARM."""
    d = scratch / runtime
    d.mkdir(mode=0o700, exist_ok=True)
    return {**os.environ, "XDG_RUNTIME_DIR": str(d), "PGFSLAB_WARM": warm}


def _stop_servers(scratch: Path) -> None:
    """The warm servers this benchmark started (each names its pid in its log); they would idle out anyway."""
    import re
    import signal

    for log in scratch.glob("run-*/pgfslab-warm-*/*.log"):
        for pid in re.findall(r"pgfslab warm server (\d+):", log.read_text()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)


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
        # the baseline: every notebook, kernel and the paper started cold (PGFSLAB_WARM=0, a fresh interpreter
        # each, as before pgfslab.warm); then the lab's way, from a runtime folder with no server in it (its
        # start-up is part of the time)
        for mode, warm in (("cold", "0"), ("warm", "1")):
            work = _fresh(args.raw, study, scratch / mode)
            make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}"]
            walls[mode], _ = _timed(make, work, _env(scratch, f"run-{mode}", warm))
        print(f"make analyse STUDY={study} from the raw folder, every core: {walls['warm']:.1f} s; baseline with every")
        print(
            f"  notebook, kernel and the paper started cold {walls['cold']:.1f} s (ratio {walls['warm'] / walls['cold']:.2f});"
            " goal < 30 s (default study)"
        )
        # a notebook edit (a blank line added to its source; restored, with its mtime, whatever happens), with
        # no server running (a researcher's edit comes minutes later): that notebook and the paper
        work = scratch / "warm"
        make = ["make", "-s", "-f", str(REPO / "Makefile"), "analyse", f"STUDY={study}"]
        nb = REPO / "notebooks" / f"{args.notebook}.ipynb"
        original, st = nb.read_bytes(), nb.stat()
        try:
            nb.write_bytes(original + b"\n")
            edit, out = _timed(make, work, _env(scratch, "run-edit", "1"))
        finally:
            nb.write_bytes(original)
            os.utime(nb, ns=(st.st_atime_ns, st.st_mtime_ns))
        ran = out.count("Finished jobid")
        print(
            f"after an edit of notebooks/{nb.name}: {edit:.1f} s ({ran} jobs: the notebook and the paper); goal < 15 s"
        )
        _timed(make, work, _env(scratch, "run-edit", "1"))  # back to the original notebook (not timed)
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
        _stop_servers(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
