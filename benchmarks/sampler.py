"""Do the samplers disturb what they measure? (`make bench`, benchmark `sampler`)

1. CPU cost: each /proc sampler (meminfo, diskstats, vmstat) runs alone in a child process for a
   few seconds at 1 Hz and at 10 Hz; its CPU time (user+sys, from getrusage) over the wall time is
   its share of one core. Goal: under 1 % of one core at 10 Hz. The same child sleeping without a
   sampler is the baseline, reported beside it and subtracted.
2. Effect on a benchmark: with `--pg`, a throwaway PostgreSQL cluster in a temporary directory (as
   the `postgres` user, on a unix socket, port 57900) runs the same short pgbench select-only run
   with and without every sampler at 10 Hz, interleaved (A B A B ...), and the tps difference is
   reported as the median of the paired differences with its range. Goal: under 2 %.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from pgfslab.run.sampler import ProcSampler
source, hz, seconds, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.monotonic()
if source == "none":
    time.sleep(seconds); samples = 0
else:
    with ProcSampler(source, Path(out), hz) as s:
        time.sleep(seconds)
    samples = s.samples
r1 = resource.getrusage(resource.RUSAGE_SELF); wall = time.monotonic() - t0
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "samples": samples}))
"""


def _child(source: str, hz: float, seconds: float) -> dict[str, float]:
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run(
            [sys.executable, "-c", CHILD, source, str(hz), str(seconds), str(Path(tmp) / "out")],
            capture_output=True,
            text=True,
            check=True,
            cwd=repo,
        )
    return json.loads(res.stdout)


def cpu_cost(seconds: float) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    base = _child("none", 1, seconds)
    for source in ("/proc/meminfo", "/proc/diskstats", "/proc/vmstat"):
        for hz in (1.0, 10.0):
            r = _child(source, hz, seconds)
            share = 100 * (r["cpu_s"] - base["cpu_s"]) / r["wall_s"]
            rows.append(
                {
                    "sampler": Path(source).name,
                    "hz": hz,
                    "samples": r["samples"],
                    "cpu_pct_of_core": share,
                    "goal_met": share < 1.0 or hz < 10,
                }
            )
    return rows


def _pgbench_effect(runs: int, seconds: int) -> dict[str, object]:
    """Interleaved pgbench runs with and without all samplers at 10 Hz on a throwaway cluster."""
    import os
    import pwd

    from pgfslab.host import postgres
    from pgfslab.run.sampler import Samplers

    bindir = postgres.bindir()
    tmp = Path(tempfile.mkdtemp(prefix="pgfs-bench-"))
    tmp.chmod(0o755)
    pw = pwd.getpwnam("postgres")
    os.chown(tmp, pw.pw_uid, pw.pw_gid)
    tps: dict[str, list[float]] = {"off": [], "on": []}
    try:
        with postgres.running(
            tmp / "pgdata", 57900, bindir, "postgres", init=True, run_settings={"shared_buffers": "64MB"}
        ) as cl:
            subprocess.run(
                [str(bindir / "pgbench"), *cl.client_args(), "-i", "-s", "2", "-q", "postgres"],
                check=True,
                capture_output=True,
            )
            cmd = [
                str(bindir / "pgbench"),
                *cl.client_args(),
                "-S",
                "-c",
                "2",
                "-j",
                "2",
                "-T",
                str(seconds),
                "postgres",
            ]
            for i in range(2 * runs):
                mode = "on" if i % 2 else "off"
                rundir = tmp / f"run{i}"
                rundir.mkdir()
                cfg = (
                    {"meminfo_hz": 10, "diskstats_hz": 10, "vmstat_hz": 10, "pgstat_hz": 10}
                    if mode == "on"
                    else {"meminfo_hz": 0}
                )
                with Samplers(rundir, cfg, cl.conninfo if mode == "on" else None):
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                tps[mode].append(next(float(ln.split()[2]) for ln in out.splitlines() if ln.startswith("tps = ")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    diffs = [100 * (on - off) / off for off, on in zip(tps["off"], tps["on"])]
    return {
        "pairs": runs,
        "seconds": seconds,
        "tps_off": tps["off"],
        "tps_on": tps["on"],
        "median_diff_pct": statistics.median(diffs),
        "min_diff_pct": min(diffs),
        "max_diff_pct": max(diffs),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.sampler", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=5.0, help="seconds each sampler runs [5]")
    p.add_argument("--pg", action="store_true", help="also measure the effect on a pgbench run (root, PostgreSQL)")
    p.add_argument("--pairs", type=int, default=5, help="--pg: interleaved pairs of runs [5]")
    p.add_argument("--run-seconds", type=int, default=10, help="--pg: length of each pgbench run [10]")
    args = p.parse_args(argv)
    print(f"{'sampler':10s} {'Hz':>5s} {'samples':>8s} {'CPU % of one core':>18s}")
    ok = True
    for r in cpu_cost(args.seconds):
        print(
            f"{r['sampler']:10s} {r['hz']:5.0f} {r['samples']:8d} {r['cpu_pct_of_core']:18.3f}"
            + ("" if r["goal_met"] else "   above the 1 % goal")
        )
        ok &= bool(r["goal_met"])
    print("(baseline: the same child process sleeping, subtracted; goal: < 1 % of one core at 10 Hz)")
    if args.pg:
        e = _pgbench_effect(args.pairs, args.run_seconds)
        print(
            f"pgbench -S, {e['pairs']} interleaved pairs of {e['seconds']} s: tps without samplers "
            f"{statistics.median(e['tps_off']):.0f}, with all at 10 Hz {statistics.median(e['tps_on']):.0f}; "
            f"paired difference median {e['median_diff_pct']:+.2f} % (range {e['min_diff_pct']:+.2f} .. "
            f"{e['max_diff_pct']:+.2f} %); goal: |median| < 2 %"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
