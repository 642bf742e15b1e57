"""Record the lab's PostgreSQL samples (pgstat.csv, pgstat_io.csv, pg_aios.csv) from a real server, for the
parsers' tests (tests/data/captured/pgstat/, ORIGINS.md says how each file was made).

A throw-away cluster of the given major (pgfslab.host.pg_install's build) in a temporary directory, run as
the postgres user on a unix socket: pgbench -i at a small scale, then the aio study's scans
(config/aio/seqscan.sql and bitmapscan.sql) for a few seconds from two clients while the lab's own sampler
(pgfslab.run.sampler.PgStatSampler) samples once a second. Needs root.

    .venv/bin/python scripts/capture_pg_samples.py 18 tests/data/captured/pgstat/pg18
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pgfslab import paths
from pgfslab.host import pg_install, pg_probe, postgres
from pgfslab.run.sampler import PgStatSampler

SETTINGS_18 = {"io_method": "worker", "io_workers": 2, "effective_io_concurrency": 16, "track_wal_io_timing": "on"}
SETTINGS = {
    "shared_buffers": "16MB",
    "track_io_timing": "on",
    "max_parallel_workers_per_gather": 0,
    "enable_indexscan": "off",
    "enable_seqscan": "on",
}


def main(major: int, out: Path, scale: int = 5, seconds: int = 6) -> int:
    build = pg_install.build_for(major, None)
    pw = pwd.getpwnam("postgres")
    settings = {**SETTINGS, **(SETTINGS_18 if major >= 18 else {})}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pgfs-capture-") as tmp:
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        port = pg_probe.free_port()
        with postgres.running(Path(tmp) / "pgdata", port, build.bindir, "postgres", settings, init=True) as cl:
            pgbench = str(build.bindir / "pgbench")
            subprocess.run([pgbench, *cl.client_args(), "-i", "-q", "-s", str(scale), "postgres"], check=True)
            scripts = [str(paths.CONFIGS / "aio" / s) for s in ("seqscan.sql", "bitmapscan.sql")]
            with PgStatSampler(cl.conninfo, Path(tmp), 1.0) as smp:
                subprocess.run(
                    [pgbench, *cl.client_args(), "-n", "-c", "2", "-T", str(seconds)]
                    + [a for s in scripts for a in ("-f", s)]
                    + ["postgres"],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            print(f"PostgreSQL {build.version}: {smp.samples} samples, error {smp.error}", file=sys.stderr)
        for name in ("pgstat.csv", "pgstat_io.csv", "pg_aios.csv"):
            if (Path(tmp) / name).exists():
                shutil.copyfile(Path(tmp) / name, out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), Path(sys.argv[2])))
