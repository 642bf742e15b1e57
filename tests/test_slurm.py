"""A tiny study on a real one-node Slurm cluster, through Snakemake's Slurm executor, to the paper.

The fixture starts munged, slurmctld and slurmd on localhost (Debian's slurm-wlm and munge; everything
under a work folder of its own, own ports, own munge key: tests/slurm_cluster.py) and stops them, with
every job, on every exit path. The study runs with the repository's profile (workflow/profiles/slurm)
and two host keys: two host shares, each one exclusive Slurm job on the one node (the same machine
twice: host.json says so, and the paper does not claim two machines' hardware differ), then the merge,
the notebooks and the paper on the submit side.

Expected values come from Slurm itself (sbatch's job ids in Snakemake's log, scontrol's start and end
times), the raw files and the config, never from the code under test.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import slurm_cluster as cluster
import yaml
from conftest import REPO, leftovers, machine_can_run_studies

ok, why = machine_can_run_studies()
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.skipif(not ok, reason=why)]

STUDY = "slurmtest"
HOSTS = ("h1", "h2")
TARGETS = ("ext4", "xfs")
REPEATS = 2
CONFIG = {
    "study": STUDY,
    "title": "Slurm test study",
    "authors": ["pgfs-lab tests"],
    "targets": {t: {"fs": t, "size_gb": 1} for t in TARGETS},
    # ports of its own, so a study running beside the tests is not disturbed
    "postgres": {"port_base": 26600, "settings": {"shared_buffers": "32MB"}},
    "dataset": {"scale": 1},
    "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [2], "repeats": REPEATS}},
    "run": {"duration_s": 3},
}
TIMEOUT_S = 1500  # Snakemake ignores SIGTERM while Slurm jobs run: subprocess.run's timeout kills (SIGKILL)


def _daemons() -> set[int]:
    """Live processes named like a Slurm or munge daemon (ours or anybody's)."""
    found = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            comm = Path(f"/proc/{d}/comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith(("slurm", "munged")) and cluster._pid_alive(int(d)):
            found.add(int(d))
    return found


@pytest.fixture(scope="module")
def slurm() -> Iterator[cluster.Handle]:
    try:
        cluster.check_available()
        md.version("snakemake-executor-plugin-slurm")
        jobstep = md.version("snakemake-executor-plugin-slurm-jobstep")
    except cluster.ClusterUnavailable as exc:
        pytest.skip(f"one-node Slurm cannot start here: {exc}")
    except md.PackageNotFoundError as exc:
        pytest.skip(f"not installed: {exc} (make setup)")
    before = _daemons()
    # munged runs as user munge: its folder must be reachable (pytest's 0700 tmp_path is not)
    work = Path(tempfile.mkdtemp(prefix="pgfs-slurm-", dir="/tmp"))
    try:
        # jobstep >= 0.6.1 drops SLURM_CONF before its srun: then link the config where Slurm looks for it
        strips = tuple(int(x) for x in re.findall(r"\d+", jobstep)[:3]) >= (0, 6, 1)
        handle = cluster.start(work, run_conf_link=strips)
    except cluster.ClusterUnavailable as exc:
        shutil.rmtree(work, ignore_errors=True)
        pytest.skip(f"one-node Slurm cannot start here: {exc}")
    print(f"\none-node Slurm up in {handle.timings['start_s']} s", file=sys.stderr)
    try:
        yield handle
    finally:
        stopped = cluster.stop(handle)
        shutil.rmtree(work, ignore_errors=True)
        print(f"\none-node Slurm down in {stopped['stop_s']} s", file=sys.stderr)
        left = _daemons() - before
        assert not left, f"Slurm/munge processes left running: {left}"


@pytest.fixture(scope="module")
def study(slurm: cluster.Handle) -> Iterator[tuple[Path, subprocess.CompletedProcess[str], float]]:
    """The tiny study through the README's command, `make run EXECUTOR=slurm HOSTS=h1,h2` (Snakemake with
    workflow/profiles/slurm), with the status options a cluster without slurmdbd needs."""
    work = Path(tempfile.mkdtemp(prefix="pgfs-slurmstudy-"))
    work.chmod(0o755)  # the postgres user must reach its data directories
    (work / "study.yaml").write_text(yaml.safe_dump(CONFIG))
    cmd = [
        "make",
        "-f",
        str(REPO / "Makefile"),
        "run",
        "CONFIG=study.yaml",
        "EXECUTOR=slurm",
        f"HOSTS={','.join(HOSTS)}",
        "SNAKE_ARGS=--slurm-status-command squeue --slurm-init-seconds-before-status-checks 2",
    ]
    t0 = time.monotonic()
    try:
        res = subprocess.run(
            cmd,
            cwd=work,
            env=slurm.env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            preexec_fn=cluster.pdeathsig(signal.SIGKILL),
        )
        took = time.monotonic() - t0
        print(f"tiny study through Slurm: {took:.0f} s", file=sys.stderr)
        (work / "snakemake.log").write_text(res.stdout + res.stderr)
        assert res.returncode == 0, f"snakemake failed:\n{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
        yield work, res, took
    finally:
        if leftovers(work):
            for h in HOSTS:
                subprocess.run(
                    [sys.executable, "-m", "pgfslab", "release", "--config", f"data/raw/{STUDY}/{h}/study.yaml"],
                    cwd=work,
                    capture_output=True,
                )
        if not leftovers(work):
            shutil.rmtree(work, ignore_errors=True)


def _scontrol(env: dict[str, str], job: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "job", job], env=env, capture_output=True, text=True, check=True, timeout=10
    ).stdout
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", out))


def test_each_host_share_was_one_exclusive_slurm_job(slurm: cluster.Handle, study: tuple) -> None:
    work, res, _ = study
    log = res.stdout + res.stderr
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(submitted) == len(HOSTS), log[-3000:]
    env = slurm.env()
    jobs = {j: _scontrol(env, j) for j in submitted}
    for info in jobs.values():
        assert info["JobState"] == "COMPLETED", info
        assert info["OverSubscribe"] == "NO", info  # --exclusive
    spans = sorted((info["StartTime"], info["EndTime"]) for info in jobs.values())
    assert spans[1][0] >= spans[0][1], f"host shares overlapped: {spans}"
    recorded = {}
    for h in HOSTS:
        share = json.loads((work / "data" / "raw" / STUDY / h / "share.json").read_text())
        host = json.loads((work / "data" / "raw" / STUDY / h / "host.json").read_text())
        recorded[h] = share["slurm_job_id"]
        assert host["slurm"]["job_id"] == share["slurm_job_id"]
        assert host["machine"]["hostname"] == os.uname().nodename
    assert set(recorded.values()) == set(submitted)
    for j, info in sorted(jobs.items()):
        print(f"\nSlurm job {j}: {info['StartTime']} to {info['EndTime']} ({info['RunTime']})", file=sys.stderr)
    # analysis and paper ran once, on the submit side (the only Slurm jobs were the host shares, above)
    for rule in ("ingest", "paper"):
        assert len(re.findall(rf"\(Rule: {rule}\)", log)) == 1, log[-3000:]


def test_every_host_has_its_raw_folder_with_host_run_ids(study: tuple) -> None:
    work, _, _ = study
    for h in HOSTS:
        raw = work / "data" / "raw" / STUDY / h
        assert yaml.safe_load((raw / "study.yaml").read_text())["host"] == h
        for t in TARGETS:
            for r in range(1, REPEATS + 1):
                rec = json.loads((raw / f"{t}.tpcb.c2.r{r}@{h}" / "run.json").read_text())
                assert rec["status"] == "ok", rec.get("error")
                assert rec["host_key"] == h and rec["run_id"] == f"{t}.tpcb.c2.r{r}@{h}"


def test_one_database_with_every_host(study: tuple) -> None:
    work, _, _ = study
    with duckdb.connect(str(work / "data" / f"{STUDY}.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT host, target, count(*) FROM runs WHERE study = ? GROUP BY ALL", [STUDY]).fetchall()
        assert sorted(rows) == sorted((h, t, REPEATS) for h in HOSTS for t in TARGETS)
        tps = dict(con.execute("SELECT run_id, tps FROM pgbench_summary").fetchall())
    for h in HOSTS:
        out = (work / "data" / "raw" / STUDY / h / f"ext4.tpcb.c2.r1@{h}" / "pgbench.stdout").read_text()
        line = next(ln for ln in out.splitlines() if ln.startswith("tps = "))
        assert tps[f"ext4.tpcb.c2.r1@{h}"] == pytest.approx(float(line.split()[2]), rel=1e-6)


def test_paper_lists_the_hosts_and_the_blocked_comparison(study: tuple) -> None:
    work, _, took = study
    pdf = work / "paper" / f"{STUDY}.pdf"
    text = " ".join(
        subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split()
    )
    for h in HOSTS:
        assert h in text
    assert "van Elteren" in text
    assert "same machine" in text  # two host keys, one machine: said, not hidden


def test_nothing_left_behind(study: tuple) -> None:
    work, _, _ = study
    assert leftovers(work, STUDY) == []
