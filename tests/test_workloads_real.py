"""Every workload tool, knob and sampler against a real run (tiny sizes): pgbench with a fixed rate,
per-statement latencies and a per-transaction log; sysbench OLTP with a histogram and a fillfactor
rewrite; fsmicro; per-target and per-workload PostgreSQL settings; vm.dirty_background_bytes applied
and restored; a cgroup memory limit; btrfs snapshots; the diskstats, vmstat and pg_stat samplers.

Only the measurement stage runs (`snakemake raw`), then the study ingest. Expected values come from
the config and from the raw files read here with plain string operations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO, leftovers, machine_can_run_studies

from pgfslab.analysis.verdicts import facts

ok, why = machine_can_run_studies()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.machine_wide,
    pytest.mark.skipif(not ok, reason=why),
]

STUDY = "wtest"
DELETE_FILES = 300
CONFIG = {
    "study": STUDY,
    "targets": {
        "ext4": {"fs": "ext4", "size_gb": 1, "postgres_settings": {"synchronous_commit": "off"}},
        "btrfs": {
            "fs": "btrfs",
            "size_gb": 1,
            "mount_options": ["compress=zstd"],
            "dataset": {"sysbench": {"fillfactor": 70}},
        },
    },
    # ports of its own (test_slurm's study has 26600-26601): test files run side by side
    "postgres": {"port_base": 26660, "settings": {"shared_buffers": "32MB"}},
    "dataset": {"scale": 1, "sysbench": {"tables": 1, "table_size": 2000}},
    "workloads": {
        "tpcb": {
            "tool": "pgbench",
            "builtin": "tpcb-like",
            "clients": [2],
            "repeats": 1,
            "rate_tps": 100,
            "per_statement": True,
            "log": "transactions",
        },
        "rw": {
            "tool": "sysbench",
            "test": "oltp_read_write",
            "clients": [2],
            "repeats": 1,
            "histogram": True,
            "postgres_settings": {"full_page_writes": "off"},
        },
        "create": {"tool": "fsmicro", "op": "create_fsync", "repeats": 1},
        # seed 003's delete: no duration, it runs until every pre-created file is gone
        "delete": {"tool": "fsmicro", "op": "delete", "files": DELETE_FILES, "size_bytes": 4096, "repeats": 1},
    },
    # a retry only where the host took more than half of the CPU time wanted: a real run records its steal
    "run": {"duration_s": 3, "steal_retry": {"above": 0.5, "attempts": 2}},
    # pgbench -T 3 may print progress at 1 and 2 s only: a 1 s warm-up leaves the stability notebook a sample
    "analysis": {"trim_s": 1},
    "os": {"vm_dirty_background_bytes": "32MB"},
    "resources": {"memory_limit_mb": 256},
    "snapshots": {"interval_s": 1, "keep_s": 2, "targets": ["btrfs"]},
    "sampler": {"meminfo_hz": 2, "diskstats_hz": 2, "vmstat_hz": 1, "pgstat_hz": 2},
}
VM = Path("/proc/sys/vm")


def vm_dirty() -> dict[str, str]:
    return {p.name: p.read_text().strip() for p in VM.glob("dirty_*")}


@pytest.fixture(scope="module")
def study() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="pgfs-wtest-"))
    work.chmod(0o755)
    (work / "study.yaml").write_text(yaml.safe_dump(CONFIG))
    before = vm_dirty()
    try:
        cmd = [
            sys.executable,
            "-m",
            "snakemake",  # as `make` runs it
            "--snakefile",
            str(REPO / "workflow" / "Snakefile"),
            "--cores",
            "1",
            "--config",
            "config=study.yaml",
            "--",
            "raw",
        ]
        res = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-5000:]
        ing = subprocess.run(
            [sys.executable, "-m", "pgfslab", "ingest-study", "--raw", f"data/raw/{STUDY}", "--db", "w.duckdb"],
            cwd=work,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert ing.returncode == 0, ing.stderr
        yield work
    finally:
        assert vm_dirty() == before, "vm.dirty_* not restored"
        if not leftovers(work):
            shutil.rmtree(work, ignore_errors=True)


def run(study: Path, run_id: str) -> dict:
    return json.loads((study / "data" / "raw" / STUDY / run_id / "run.json").read_text())


def q(study: Path, sql: str, *params: object) -> list[tuple]:
    with duckdb.connect(str(study / "w.duckdb"), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_every_run_records_the_hosts_steal(study: Path) -> None:
    raw = study / "data" / "raw" / STUDY
    for rj in raw.glob("*/run.json"):
        rec = json.loads(rj.read_text())
        assert 0.0 <= rec["host_steal"] <= 1.0, rj
        # an attempt set aside is listed in the kept run and its folder is there, never ingested
        for a in rec.get("steal_attempts") or []:
            assert a["host_steal"] > 0.5 and (raw / a["kept"] / "run.json").exists()


def test_nothing_left(study: Path) -> None:
    assert leftovers(study) == []
    assert not list(Path("/sys/fs/cgroup").glob("*/**/pgfs-lab/wtest-*"))


def test_a_runs_p95_of_its_logged_transactions_is_read_from_its_log(study: Path) -> None:
    raw = study / "data" / "raw" / STUDY / "ext4.tpcb.c2.r1"
    # pgbench --log: client, transaction, latency (us), script, epoch s, us, lag; a skipped one has a word for latency
    rows = [ln.split() for p in raw.glob("pgbench_tx.*") for ln in p.read_text().splitlines()]
    first = min(int(r[4]) * 10**6 + int(r[5]) for r in rows)
    trim = CONFIG["analysis"]["trim_s"]
    kept = [int(r[2]) for r in rows if r[2].isdigit() and (int(r[4]) * 10**6 + int(r[5]) - first) // 10**6 + 1 > trim]
    got = facts.run_facts(study / "w.duckdb", STUDY, trim_s=trim).filter(pl.col("run_id") == "ext4.tpcb.c2.r1")
    assert len(kept) > 20
    assert got["latency_p95_tx"].item() == pytest.approx(float(np.percentile(kept, 95)) / 1e3)
    # sysbench keeps no per-transaction log: no such p95, rather than another quantity in its place
    sysbench = facts.run_facts(study / "w.duckdb", STUDY, trim_s=trim).filter(pl.col("tool") == "sysbench")
    assert sysbench.height > 0 and sysbench["latency_p95_tx"].null_count() == sysbench.height


def test_pgbench_knobs_reach_the_command_and_the_server(study: Path) -> None:
    rec = run(study, "ext4.tpcb.c2.r1")
    cmd = rec["commands"][0]
    assert "--rate=100" in cmd and "-r" in cmd and "--log-prefix=pgbench_tx" in cmd
    assert rec["postgres"]["settings"]["synchronous_commit"]["setting"] == "off"  # the target's setting
    raw = study / "data" / "raw" / STUDY / "ext4.tpcb.c2.r1"
    n_tx = sum(len(p.read_text().splitlines()) for p in raw.glob("pgbench_tx.*"))
    assert q(study, "SELECT count(*) FROM pgbench_txlog WHERE run_id = ?", "ext4.tpcb.c2.r1")[0][0] == n_tx > 0
    text = (raw / "pgbench.stdout").read_text()
    block = text.split("statement latencies in milliseconds")[1].splitlines()[1:]
    statements = [ln for ln in block if ln.startswith("  ") and ln.split()[0].replace(".", "").isdigit()]
    assert q(study, "SELECT count(*) FROM pgbench_statement WHERE run_id = ?", "ext4.tpcb.c2.r1")[0][0] == len(
        statements
    )


def test_sysbench_run_fillfactor_and_workload_settings(study: Path) -> None:
    rec = run(study, "btrfs.rw.c2.r1")
    assert rec["status"] == "ok" and rec["tool"] == "sysbench"
    assert rec["postgres"]["settings"]["full_page_writes"]["setting"] == "off"  # the workload's setting
    table = {r["relname"]: r for r in rec["postgres"]["relations"]}
    assert table["sbtest1"]["fillfactor"] == 70  # the target's dataset override, applied after prepare
    assert run(study, "ext4.rw.c2.r1")["postgres"]["relations"][0]["fillfactor"] in (100, None)
    out = (study / "data" / "raw" / STUDY / "btrfs.rw.c2.r1" / "sysbench.stdout").read_text()
    intervals = [ln for ln in out.splitlines() if ln.startswith("[ ")]
    assert q(study, "SELECT count(*) FROM sysbench_interval WHERE run_id = ?", "btrfs.rw.c2.r1")[0][0] == len(intervals)
    tps = float(out.split("transactions:")[1].split("(")[1].split()[0])
    assert q(study, "SELECT tps FROM sysbench_summary WHERE run_id = ?", "btrfs.rw.c2.r1")[0][0] == pytest.approx(tps)
    assert q(study, "SELECT sum(count) FROM sysbench_histogram WHERE run_id = ?", "btrfs.rw.c2.r1")[0][0] > 0


def test_fsmicro_run(study: Path) -> None:
    rec = run(study, "btrfs.create.c1.r1")
    assert rec["status"] == "ok" and "postgres" not in rec  # no server for a file-system benchmark
    raw = study / "data" / "raw" / STUDY / "btrfs.create.c1.r1"
    ops = len((raw / "fsmicro_ops.csv").read_text().splitlines()) - 1
    assert q(study, "SELECT ops FROM fs_ops WHERE run_id = ?", "btrfs.create.c1.r1")[0][0] == ops > 0
    assert not list(raw.rglob("fsmicro.work")), "the runner's work directory belongs on the target"


def test_a_delete_without_a_duration_deletes_every_file(study: Path) -> None:
    rec = run(study, "btrfs.delete.c1.r1")
    assert rec["status"] == "ok", rec.get("error")
    rows = (study / "data" / "raw" / STUDY / "btrfs.delete.c1.r1" / "fsmicro_ops.csv").read_text().splitlines()
    assert len(rows) - 1 == DELETE_FILES  # one timed unlink per file made, and no more
    assert rec["phases_s"]["measured"] > 0


def test_os_cgroup_and_snapshot_records(study: Path) -> None:
    rec = run(study, "btrfs.rw.c2.r1")
    vm = rec["vm_applied"]
    assert vm["after"]["dirty_background_bytes"] == 32_000_000 and vm["restored"] == vm["before"]
    assert rec["cgroup"]["applied"] is True
    assert rec["cgroup"]["limits"]["memory_limit_bytes"] == 256 * 2**20
    assert rec["cgroup"]["usage"]["memory"]["peak_bytes"] <= 256 * 2**20
    snaps = rec["snapshots"]
    assert snaps["created"] >= 2 and snaps["created"] == snaps["deleted"] and snaps["errors"] == []
    assert rec["compsize"]["disk_bytes"] < rec["compsize"]["uncompressed_bytes"]  # zstd compressed something
    assert "snapshots" not in run(study, "ext4.rw.c2.r1")


def test_samplers_land_in_the_database(study: Path) -> None:
    raw = study / "data" / "raw" / STUDY / "ext4.tpcb.c2.r1"
    rec = run(study, "ext4.tpcb.c2.r1")
    for table, fname in (("diskstats", "diskstats.log"), ("vmstat", "vmstat.log"), ("meminfo", "meminfo.log")):
        stamps = sum(1 for ln in (raw / fname).read_text().splitlines() if ln.startswith("@ "))
        assert q(study, f"SELECT count(DISTINCT ts) FROM {table} WHERE run_id = ?", rec["run_id"])[0][0] == stamps > 0
    device = Path(rec["mount"]["device"]).name
    assert q(study, "SELECT count(*) FROM diskstats WHERE run_id = ? AND device = ?", rec["run_id"], device)[0][0] > 0
    pg_rows = len((raw / "pgstat.csv").read_text().splitlines()) - 2  # comment + header
    assert q(study, "SELECT count(*) FROM pgstat WHERE run_id = ?", rec["run_id"])[0][0] == pg_rows > 0
