"""Benchmark the ingest of a big pgbench per-transaction log against DuckDB's bare CSV scan.

Generates a log of N lines (default 10 million, about 340 MB) in a temporary directory, with
realistic values (8 clients, log-normal latencies around 1.5 ms, epoch timestamps in completion
order, optionally a failed transaction in a thousand), then runs each method in its own child
process, so that its peak memory (ru_maxrss, which counts native allocations too, unlike
tracemalloc) and CPU time are its own:

* `duckdb read_csv`: `CREATE TABLE t AS SELECT * FROM read_csv(log, delim=' ', header=false)` into a
  fresh database file, types auto-detected: the bare scan, the yardstick;
* `lab ingest`: `ingest.ingest_file` into a fresh study-schema database (hash, checks, the txlog
  table with its file_id/source_file/run_id columns, the files row, one transaction);
* `lab ingest, polars parser`: the same with the DuckDB fast path off (`direct=False`);
* `python split loop`: `for line in f: line.split()`, storing nothing.

Times are wall-clock seconds around the work (interpreter start and imports excluded); ratios are
to the bare DuckDB scan. The machine may be busy with other work: `--repeat N` runs every method N
times, interleaved, and reports the best wall time (the least disturbed run, as timeit does) and the
median CPU time (user+sys of all threads, less sensitive to other load); the load average is printed
with the table.

    .venv/bin/python -m benchmarks.ingest --lines 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET = 1.5  # the lab's ingest should take at most this many times the bare DuckDB scan

METHODS = {
    "duckdb": "duckdb read_csv (bare)",
    "lab": "lab ingest",
    "lab-polars": "lab ingest, polars parser",
    "python": "python split loop",
}


def generate(path: Path, lines: int, *, failures: bool = False, seed: int = 1) -> None:
    """A pgbench 15 per-transaction log (6 columns: client_id tx_no latency_us script_no epoch_s
    epoch_us) of `lines` lines, written in completion order like one pgbench thread does."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    clients = 8
    client = np.arange(lines, dtype=np.int64) % clients
    tx_no = np.arange(lines, dtype=np.int64) // clients
    latency = np.maximum(rng.lognormal(np.log(1500.0), 0.5, lines).round(), 50).astype(np.int64)
    # completion time: every client runs back to back; the log interleaves them in completion order
    done_us = np.empty(lines, dtype=np.int64)
    for c in range(clients):
        sel = client == c
        done_us[sel] = np.cumsum(latency[sel])
    order = np.argsort(done_us, kind="stable")
    start_us = 1_795_371_000 * 1_000_000
    frame = pl.DataFrame(
        {
            "client_id": client[order],
            "tx_no": tx_no[order],
            "time": latency[order],
            "script_no": np.zeros(lines, dtype=np.int64),
            "epoch_s": (start_us + done_us[order]) // 1_000_000,
            "epoch_us": (start_us + done_us[order]) % 1_000_000,
        }
    )
    if failures:
        frame = frame.with_columns(
            pl.when(pl.int_range(pl.len()) % 1000 == 999)
            .then(pl.lit("failed"))
            .otherwise(pl.col("time").cast(pl.String))
            .alias("time")
        )
    frame.write_csv(path, separator=" ", include_header=False, quote_style="never")


def _child(method: str, log: Path, work: Path) -> dict[str, object]:
    """Runs in the child process: one method, timed."""
    db = work / f"{method}.duckdb"
    for p in (db, db.with_name(db.name + ".wal")):
        p.unlink(missing_ok=True)
    rows = 0
    if method != "python":
        import duckdb

        from pgfslab.ingest import load as ingest
        from pgfslab.ingest.schema import create_schema
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    if method == "python":
        t0 = time.perf_counter()
        with open(log, "rb") as fh:
            for line in fh:
                line.split()
                rows += 1
        seconds = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        con = duckdb.connect(str(db))
        if method == "duckdb":
            quoted = str(log).replace("'", "''")
            con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{quoted}', delim=' ', header=false)")
            rows = int(con.execute("SELECT count(*) FROM t").fetchall()[0][0])
        else:
            create_schema(con)
            res = ingest.ingest_file(con, log, source_name="bench/tx.log", direct=(method == "lab"))
            rows = res.rows
            if method == "lab" and not res.direct:
                raise SystemExit("the lab's fast path was not taken for the generated log")
        con.close()
        seconds = time.perf_counter() - t0
        db.unlink(missing_ok=True)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru.ru_utime + ru.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return {"method": method, "seconds": seconds, "cpu_s": cpu, "peak_rss_mb": ru.ru_maxrss / 1024, "rows": rows}


def _run_child(method: str, log: Path, work: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.ingest", "--child", method, "--log", str(log), "--work", str(work)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark child {method!r} failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


@dataclass
class Row:
    method: str
    seconds: float
    cpu_s: float
    peak_rss_mb: float
    rows: int


def run(
    lines: int, repeat: int = 1, methods: list[str] | None = None, failures: bool = False, keep: Path | None = None
) -> list[Row]:
    methods = methods or list(METHODS)
    with tempfile.TemporaryDirectory(prefix="pgfs-bench-", dir=keep) as d:
        work = Path(d)
        log = work / "tx_bench.log"
        t0 = time.perf_counter()
        # in a child too: this process stays small, so the children it forks start small (Linux
        # carries a parent's peak RSS over fork+exec into the child's ru_maxrss)
        gen = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.ingest",
                "--generate",
                str(log),
                "--lines",
                str(lines),
                *(["--failures"] if failures else []),
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent.parent,
        )
        if gen.returncode != 0:
            raise SystemExit(f"generating the log failed:\n{gen.stderr.strip()}")
        size_mb = log.stat().st_size / 1e6
        print(
            f"generated {lines:,} lines ({size_mb:,.0f} MB) in {time.perf_counter() - t0:.1f} s: {log}", file=sys.stderr
        )
        samples: dict[str, list[dict[str, object]]] = {m: [] for m in methods}
        for i in range(repeat):
            for m in methods:  # interleaved: a burst of load elsewhere hits every method alike
                samples[m].append(_run_child(m, log, work))
                print(f"  [{i + 1}/{repeat}] {m}: {samples[m][-1]['seconds']:.2f} s", file=sys.stderr)
    out = []
    for m, runs in samples.items():
        out.append(
            Row(
                m,
                min(float(r["seconds"]) for r in runs),  # type: ignore[arg-type]
                statistics.median(float(r["cpu_s"]) for r in runs),  # type: ignore[arg-type]
                max(float(r["peak_rss_mb"]) for r in runs),
                int(runs[0]["rows"]),
            )
        )  # type: ignore[arg-type]
    return out


def table(rows: list[Row], lines: int, repeat: int) -> str:
    base = next((r for r in rows if r.method == "duckdb"), None)
    head = (
        f"ingest benchmark: pgbench per-transaction log, {lines:,} lines; {repeat} run(s) per method; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    out = [
        head,
        "",
        f"{'method':28s} {'wall s':>8s} {'x duckdb':>9s} {'cpu s':>8s} {'x duckdb':>9s} {'peak RSS MB':>12s} "
        f"{'rows':>12s}",
        f"{'':28s} {'(best)':>8s} {'':>9s} {'(median)':>8s}",
        "-" * 92,
    ]
    for r in rows:
        wall_x = f"{r.seconds / base.seconds:.2f}x" if base else "-"
        cpu_x = f"{r.cpu_s / base.cpu_s:.2f}x" if base else "-"
        out.append(
            f"{METHODS[r.method]:28s} {r.seconds:8.2f} {wall_x:>9s} {r.cpu_s:8.2f} {cpu_x:>9s} "
            f"{r.peak_rss_mb:12.0f} {r.rows:12,d}"
        )
    lab = next((r for r in rows if r.method == "lab"), None)
    if base and lab:
        ratio, cpu_ratio = lab.seconds / base.seconds, lab.cpu_s / base.cpu_s
        verdict = "within" if ratio <= TARGET else "OVER"
        out += [
            "",
            f"lab ingest: {ratio:.2f}x the bare DuckDB scan in wall time, {cpu_ratio:.2f}x in CPU time "
            f"(target <= {TARGET}x): {verdict} target",
        ]
    out.append("(peak RSS includes the interpreter and its imports; cpu s: user+sys of the timed work, all threads)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.ingest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--lines", type=int, default=10_000_000, help="lines of the generated log [10,000,000]")
    p.add_argument("--repeat", type=int, default=1, help="runs per method, interleaved; medians reported [1]")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated subset of {', '.join(METHODS)}")
    p.add_argument("--failures", action="store_true", help="make 1 transaction in 1000 a 'failed' one")
    p.add_argument("--tmpdir", type=Path, help="where to write the log and databases [system temp dir]")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.log, args.work)))
        return 0
    if args.generate:
        generate(args.generate, args.lines, failures=args.failures)
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or args.lines < 1 or args.repeat < 1:
        p.error(f"unknown method(s) {', '.join(unknown)}" if unknown else "--lines and --repeat must be >= 1")
    rows = run(args.lines, args.repeat, methods, args.failures, args.tmpdir)
    print(table(rows, args.lines, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
