"""How much of a study's time is measuring? (`make bench`, benchmark `measuring`; needs root, real)

Runs a tiny real study through Snakemake (one loop-mounted ext4 target, scale 1, pgbench tpcb-like,
`--repeats` runs of `--duration` s) in a scratch folder, in three timed stages: set-up (freeze the config,
prepare the target), the runs (`snakemake raw`), the analysis (ingest, notebooks, paper). Then it prints,
from the runs' run.json (`phases_s`, pgfslab.run.phases):

* the measuring share of the runs stage: Σ measured intervals / the stage's wall time, beside its
  baseline of the same run, Σ measured (what a lab with no overhead would take);
* the per-run overhead split by phase (mean seconds per run), Snakemake's own share (the stage's wall
  time not inside any run's process) included;
* the share the default study's runs would have at the same per-run overhead (its runs are 20 s).

`--raw data/raw/<study>` reads a study that has already run instead (the default study after `make run`): the
same breakdown over its runs, from the first run's start to the last one's end, and the share of the whole
study from the first target's preparation on (targets, device baselines, runs; the analysis after them is
not in a raw folder's records).

Real runs take the lab's machine lock (`--lock`, /tmp/pgfslab-real.lock by default) for the whole study.
The machine's load is printed: on a loaded machine every overhead is larger than on an idle one.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from benchmarks.page import Figure

REPO = Path(__file__).resolve().parent.parent
STUDY = "benchmeasure"
PORT_BASE = 56900  # not a port range of the tests' studies


def config(repeats: int, duration_s: int) -> dict[str, Any]:
    return {
        "study": STUDY,
        "title": "Measuring-share benchmark",
        "authors": ["pgfs-lab benchmarks"],
        "targets": {"ext4": {"fs": "ext4", "size_gb": 1}},
        "postgres": {"port_base": PORT_BASE, "settings": {"shared_buffers": "32MB"}},
        "dataset": {"scale": 1},
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [2], "repeats": repeats}},
        "run": {"duration_s": duration_s},
        "sampler": {"meminfo_hz": 1},
    }


@contextmanager
def machine_lock(path: str | None) -> Iterator[None]:
    if not path:
        yield
        return
    with open(path, "a") as fh:
        t0 = time.monotonic()
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.monotonic() - t0
        if waited > 1:
            print(f"(waited {waited:.0f} s for {path})", flush=True)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def snakemake(work: Path, *targets: str, lab: Path = REPO) -> float:
    py = lab / ".venv" / "bin" / "python" if lab != REPO else Path(sys.executable)
    # Snakemake as `make run` runs it, every core; `--` ends --config's list, which would take the targets as
    # config items
    cmd = [str(py), "-m", "snakemake", "--snakefile", str(lab / "workflow" / "Snakefile"), "--cores", "all"]
    cmd += ["--scheduler", "greedy", "--quiet", "rules", "--config", "config=study.yaml", "--", *targets]
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(targets)} failed:\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}")
    return wall


def _epoch(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso).timestamp()


def snakemake_split(runs: list[dict[str, Any]], stage_start: float, stage_s: float) -> tuple[float, float] | None:
    """Snakemake's time in the runs stage outside any run's process, split into its start-up and wind-down
    (before the first run's process, after the last one's: once per invocation, whatever the study's size)
    and the gaps between consecutive runs (per run). None without the runs' clocks (`started_at`, `ended_at`,
    `phases_s.process_start`)."""
    spans = []
    for r in runs:
        started = (r.get("phases_s") or {}).get("process_start")
        if started is None or not r.get("started_at") or not r.get("ended_at"):
            return None
        spans.append((_epoch(r["started_at"]) - float(started), _epoch(r["ended_at"])))
    spans.sort()
    once = (spans[0][0] - stage_start) + (stage_start + stage_s - spans[-1][1])
    between = sum(max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:]))
    return max(0.0, once), between


def report(
    runs: list[dict[str, Any]], stage_s: float, default_run_s: float = 20.0, stage_start: float | None = None
) -> list[str]:
    """The lines the benchmark prints for the runs stage (a pure function of the run records)."""
    n = len(runs)
    phases: dict[str, float] = {}
    for r in runs:
        # a run.json without phases (a lab before they were recorded): its configured duration, and the
        # rest of its process's wall time as one phase
        got = r.get("phases_s") or {
            "measured": float(r["duration_s"]),
            "unsplit": float(r["wall_s"]) - float(r["duration_s"]),
        }
        for k, v in got.items():
            phases[k] = phases.get(k, 0.0) + float(v)
    measured = phases.get("measured", 0.0)
    in_process = sum(phases.values())
    outside = max(0.0, stage_s - in_process)
    split = snakemake_split(runs, stage_start, stage_s) if stage_start is not None else None
    once = 0.0
    if split is None:
        phases["snakemake (between runs' processes)"] = outside
    else:
        once, between = split
        phases["snakemake (between runs' processes)"] = between
    overhead = stage_s - measured
    lines = [
        f"runs stage: {n} runs, wall {stage_s:.1f} s; baseline (Σ measured intervals) {measured:.1f} s",
        f"measuring share: {measured / stage_s:.1%} (goal ≥ 90 %); overhead {overhead / n:.2f} s per run",
    ]
    if split is not None:
        lines.append(
            f"  of which Snakemake's start-up and wind-down, once per invocation: {once:.1f} s; "
            f"per run without it {(overhead - once) / n:.2f} s"
        )
    lines.append("per-run overhead by phase (mean s/run, largest first):")
    for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
        if k != "measured":
            lines.append(f"  {k:38s} {v / n:6.2f}")
    per_run = (overhead - once) / n
    share_default = default_run_s / (default_run_s + per_run)
    lines.append(
        f"at this per-run overhead, {default_run_s:.0f} s runs (the default study's) would be {share_default:.1%} measuring"
        + (" (Snakemake's start-up aside)" if split is not None else "")
    )
    return lines


def baseline_measured_s(bj: Path) -> float:
    """A device baseline's measured intervals: its fio jobs' runtimes and pg_test_fsync's timed tests."""
    total = 0.0
    for f in bj.parent.glob("*.json"):
        if f.name in ("baseline.json", "manifest.json"):
            continue
        text = f.read_text()
        try:
            report = json.loads(text[text.index("{") :])
        except ValueError:
            continue
        total += sum(float(j.get("job_runtime") or 0) for j in report.get("jobs", [])) / 1000
    pgtf = bj.parent / "pg_test_fsync.txt"
    secs = float((json.loads(bj.read_text()).get("settings") or {}).get("pg_test_fsync_s") or 0)
    if pgtf.exists():
        total += secs * sum(1 for line in pgtf.read_text().splitlines() if "ops/sec" in line)
    return total


def from_raw(raw: Path) -> list[str]:
    """The lines for a study that has run: its ok runs' breakdown over the runs' span, and its share from the
    first target's preparation to the last run's end."""
    runs = [json.loads(f.read_text()) for f in sorted(raw.glob("*/run.json"))]
    runs = [r for r in runs if r.get("status") == "ok" and r.get("started_at") and r.get("ended_at")]
    if not runs:
        return [f"{raw}: no finished run"]
    first = min(_epoch(r["started_at"]) - float((r.get("phases_s") or {}).get("process_start", 0.0)) for r in runs)
    last = max(_epoch(r["ended_at"]) for r in runs)
    lines = [f"{raw}: {len(runs)} runs, the first run's start to the last one's end"]
    lines += report(runs, last - first, 20.0, first)
    targets = [json.loads(f.read_text()) for f in sorted(raw.glob("_setup/*/target.json"))]
    baselines = [json.loads(f.read_text()) for f in sorted(raw.glob("_setup/*/device/baseline.json"))]
    starts = [_epoch(t["started_at"]) for t in targets if t.get("started_at")]
    if starts:
        prepare = sum(_epoch(t["ended_at"]) - _epoch(t["started_at"]) for t in targets if t.get("ended_at"))
        device = sum(float(b.get("wall_s") or 0.0) for b in baselines)
        whole = last - min(starts)
        measured = sum(float((r.get("phases_s") or {}).get("measured", r["duration_s"])) for r in runs)
        device_measured = sum(baseline_measured_s(bj) for bj in sorted(raw.glob("_setup/*/device/baseline.json")))
        lines.append(
            f"from the first target's preparation: {whole:.0f} s (preparing {len(targets)} targets {prepare:.0f} s, "
            f"device baselines {device:.0f} s, of it {device_measured:.0f} s fio's and pg_test_fsync's intervals)"
        )
        lines.append(
            f"  measuring, the runs' intervals alone: {measured / whole:.1%}; after the targets' preparation "
            f"{measured / (whole - prepare):.1%}; with the device baselines' intervals "
            f"{(measured + device_measured) / (whole - prepare):.1%}"
        )
    return lines


GOAL_SHARE = 0.90


def share_after_setup(raw: Path) -> tuple[float, float] | None:
    """A finished study's Σ measured intervals and its wall time after set-up (from the first target's
    preparation to the last run's end, less the preparations' own time), from its raw folder's records; None
    without finished runs or target records."""
    runs = [json.loads(f.read_text()) for f in sorted(raw.glob("*/run.json"))]
    runs = [r for r in runs if r.get("status") == "ok" and r.get("started_at") and r.get("ended_at")]
    targets = [json.loads(f.read_text()) for f in sorted(raw.glob("_setup/*/target.json"))]
    starts = [_epoch(t["started_at"]) for t in targets if t.get("started_at")]
    if not runs or not starts:
        return None
    last = max(_epoch(r["ended_at"]) for r in runs)
    prepare = sum(_epoch(t["ended_at"]) - _epoch(t["started_at"]) for t in targets if t.get("ended_at"))
    measured = sum(float((r.get("phases_s") or {}).get("measured", r["duration_s"])) for r in runs)
    return measured, last - min(starts) - prepare


def figure(raw: Path, what: str) -> Figure | None:
    """The measuring share of a study after set-up, for docs/benchmarks.md."""
    got = share_after_setup(raw)
    if got is None:
        return None
    measured, after = got
    return Figure(
        f"measuring share after set-up ({what})",
        f"{measured:.0f} s measured",
        f"{after:.0f} s after set-up",
        f"{measured / after:.1%}",
        f"≥ {GOAL_SHARE:.0%}",
        measured / after >= GOAL_SHARE,
        "from the raw folder's records: Σ runs' measured intervals / (first target's preparation to the last "
        "run's end, less the preparations); device baselines count as overhead",
    )


def tiny_study(repeats: int, duration: int, lock: str, lab: Path = REPO, keep: bool = False) -> Figure | None:
    """Run the tiny study in a scratch folder, print its breakdown; its measuring share after set-up."""
    work = Path(tempfile.mkdtemp(prefix="pgfs-bench-measuring-"))
    work.chmod(0o755)  # the postgres user reaches its data directory through it
    (work / "study.yaml").write_text(yaml.safe_dump(config(repeats, duration)))
    raw = work / "data" / "raw" / STUDY
    try:
        with machine_lock(lock):
            try:
                load = os.getloadavg()
                setup_s = snakemake(work, f"data/raw/{STUDY}/_setup/ext4/target.json", lab=lab)
                stage_start = time.time()
                stage_s = snakemake(work, "raw", lab=lab)
                analysis_s = snakemake(work, lab=lab)
            finally:  # whatever a failure left mounted or running, released under the lock
                subprocess.run(
                    [sys.executable, "-m", "pgfslab", "release", "--config", "study.yaml"],
                    cwd=work,
                    capture_output=True,
                )
        runs = [json.loads(f.read_text()) for f in sorted(raw.glob("*/run.json"))]
        print(
            f"machine load (1/5/15 min) at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores"
        )
        print(
            f"set-up (freeze + prepare the target): {setup_s:.1f} s; analysis (ingest, notebooks, paper): {analysis_s:.1f} s"
        )
        for line in report(runs, stage_s, 20.0, stage_start):
            print(line)
        whole = setup_s + stage_s + analysis_s
        measured = sum(float((r.get("phases_s") or {}).get("measured", r["duration_s"])) for r in runs)
        print(f"whole tiny study after environment set-up: {whole:.1f} s, {measured / whole:.1%} measuring")
        walls = [float(r["wall_s"]) for r in runs]
        print(f"run.json wall_s per run: median {statistics.median(walls):.2f} s (duration {duration} s)")
        return figure(raw, f"a tiny study, {repeats} runs of {duration} s")
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.measuring", description=__doc__)
    p.add_argument("--repeats", type=int, default=4, help="runs of the tiny study [4]")
    p.add_argument("--duration", type=int, default=10, help="seconds per run [10]")
    p.add_argument("--lock", default="/tmp/pgfslab-real.lock", help="the machine lock real runs take ('' for none)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (printed)")
    p.add_argument(
        "--lab",
        type=Path,
        default=REPO,
        help="the lab checkout (its Snakefile and .venv) to measure, e.g. main beside a branch [this one]",
    )
    p.add_argument("--raw", type=Path, help="a finished study's raw folder: read it instead of running one")
    args = p.parse_args(argv)
    if args.raw is not None:
        for line in from_raw(args.raw):
            print(line)
        return 0
    if os.geteuid() != 0:
        print("measuring: needs root (loop devices, mounts, PostgreSQL); skipped")
        return 0
    tiny_study(args.repeats, args.duration, args.lock, args.lab, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
