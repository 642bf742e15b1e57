"""The ingest as the user runs it: whole commands, process start and imports included.

    python -m pgfslab ingest --db X.duckdb tx.log       (the lab's command)
    python -c "<duckdb: CREATE TABLE t AS SELECT * FROM read_csv(log)>"   (the baseline)

on a generated pgbench per-transaction log of 5 million lines (`benchmarks.ingest.generate`), each
run in a fresh process into a fresh database, interleaved `--repeat` times; the best wall time of
each is compared (the ratio is against the baseline of the same run). Target: at most 1.5x.

    .venv/bin/python -m benchmarks.ingest_command --lines 5000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.5
ROOT = Path(__file__).resolve().parent.parent

BASELINE = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "con.execute(\"CREATE TABLE t AS SELECT * FROM read_csv(?, delim=' ', header=false)\", [sys.argv[2]])\n"
    "con.close()\n"
)


def commands(log: Path, work: Path) -> dict[str, list[str]]:
    return {
        "duckdb read_csv (bare process)": [sys.executable, "-c", BASELINE, str(work / "bare.duckdb"), str(log)],
        "python -m pgfslab ingest": [
            sys.executable,
            "-m",
            "pgfslab",
            "ingest",
            "--db",
            str(work / "lab.duckdb"),
            str(log),
        ],
    }


def _clean(work: Path) -> None:
    for name in ("bare.duckdb", "lab.duckdb"):
        for p in (work / name, work / (name + ".wal")):
            p.unlink(missing_ok=True)


def run(lines: int, repeat: int, tmpdir: Path | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="pgfs-bench-cmd-", dir=tmpdir) as d:
        work = Path(d)
        log = work / "tx.log"
        gen = [sys.executable, "-m", "benchmarks.ingest", "--generate", str(log), "--lines", str(lines)]
        subprocess.run(gen, check=True, cwd=ROOT, capture_output=True)
        best: dict[str, float] = {}
        for i in range(repeat):
            for name, cmd in commands(log, work).items():
                _clean(work)
                t0 = time.perf_counter()
                out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
                seconds = time.perf_counter() - t0
                if out.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{out.stderr.strip()}")
                best[name] = min(best.get(name, float("inf")), seconds)
                print(f"  [{i + 1}/{repeat}] {name}: {seconds:.2f} s", file=sys.stderr)
        _clean(work)
    return best


def report(best: dict[str, float], lines: int, repeat: int) -> tuple[str, float]:
    base = best["duckdb read_csv (bare process)"]
    lab = best["python -m pgfslab ingest"]
    ratio = lab / base
    out = [
        f"ingest, whole commands: pgbench per-transaction log of {lines:,} lines; best of {repeat}; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
        "",
        *(f"{name:34s} {s:8.2f} s {s / base:6.2f}x" for name, s in best.items()),
        "",
        f"python -m pgfslab ingest: {ratio:.2f}x DuckDB's bare read_csv process (target <= {TARGET}x): "
        f"{'within' if ratio <= TARGET else 'OVER'} target",
    ]
    return "\n".join(out), ratio


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ingest_command", description=__doc__)
    p.add_argument("--lines", type=int, default=5_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tmpdir", type=Path)
    args = p.parse_args(argv)
    text, _ = report(run(args.lines, args.repeat, args.tmpdir), args.lines, args.repeat)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
