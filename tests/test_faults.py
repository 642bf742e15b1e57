"""Faults injected for real into a tiny study (scale 1, 2-4 s runs, small ext4 images): the postmaster
killed (kill -9) mid-run, the pgbench client killed mid-run, a run that times out, a target that fills
up (at `pgbench -i` and during a run), Ctrl-C (SIGINT to the whole Snakemake process group) mid-run and
the resume after it, Ctrl-C through `make run`, SIGTERM to the whole pipeline and the resume after it,
and the durability check (a power cut mid-write, then restart and verification).

After each: the failure is recorded (run.json status and error, or run.incomplete.json for an
interrupt), nothing is left mounted, attached or running, no lab cgroup is left, the vm.dirty_*
settings are what they were; at the end the database holds what the partial logs hold and no file
half. The server listens on a unix socket only, in a 0700 directory, and no password is written anywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import REPO, machine_can_run_studies, machine_is_quiet
from conftest import leftovers as _leftovers

ok, why = machine_can_run_studies()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.machine_wide,
    pytest.mark.skipif(not ok, reason=why),
]

STUDY = "faults"
PORT = 26800
FILL_SQL = """CREATE TABLE IF NOT EXISTS filler (t text);
INSERT INTO filler SELECT md5(random()::text) || repeat('x', 500) FROM generate_series(1, 20000);
"""
CONFIG = {
    "study": STUDY,
    "targets": {
        "ext4": {"fs": "ext4", "size_gb": 0.5},
        "fillme": {"fs": "ext4", "size_gb": 0.25},  # a run fills it
        "tiny": {"fs": "ext4", "size_gb": 0.15, "dataset": {"scale": 30}},  # pgbench -i cannot fit
    },
    "postgres": {"port_base": PORT, "settings": {"shared_buffers": "16MB"}},
    "dataset": {"scale": 1},
    "workloads": {
        "tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [2], "repeats": 3},
        "forever": {
            "tool": "pgbench",
            "builtin": "tpcb-like",
            "clients": [1],
            "repeats": 1,
            "transactions": 100_000_000,
            "duration_s": 2,
        },
        "fill": {"tool": "pgbench", "scripts": [{"file": "fill.sql"}], "clients": [1], "repeats": 1, "duration_s": 30},
        "crash": {"tool": "durability", "clients": [2], "repeats": 1, "crash_after_s": 2},
    },
    "run": {"duration_s": 4, "drop_caches": False},
    "resources": {"memory_limit_mb": 1024},  # every PostgreSQL run in a cgroup of its own
    "sampler": {"meminfo_hz": 2, "diskstats_hz": 0, "vmstat_hz": 0, "pgstat_hz": 0},
}
VM_KEYS = ("dirty_background_bytes", "dirty_background_ratio", "dirty_bytes", "dirty_ratio")


def vm() -> dict[str, str]:
    return {k: Path(f"/proc/sys/vm/{k}").read_text().strip() for k in VM_KEYS}


def leftovers(root: Path) -> list[str]:
    return _leftovers(root, STUDY)


def settle(root: Path, timeout: float = 30) -> list[str]:
    """Leftovers once the processes that are ending have ended."""
    deadline = time.monotonic() + timeout
    while (left := leftovers(root)) and time.monotonic() < deadline:
        time.sleep(0.3)
    return left


class Lab:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.raw = work / "data" / "raw" / STUDY
        self.env = dict(os.environ)
        self.vm_before = vm()

    def config(self, name: str, **changes: object) -> str:
        cfg = json.loads(json.dumps(CONFIG))
        for key, value in changes.items():
            cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
        (self.work / name).write_text(yaml.safe_dump(cfg))
        return name

    def cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pgfslab", *args]

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.cmd(*args), cwd=self.work, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def start(self, *args: str, **kw: object) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.cmd(*args),
            cwd=self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            **kw,
        )

    def wait_for_progress(self, run_id: str, proc: subprocess.Popen[str], timeout: float = 90) -> None:
        """Until pgbench has printed a progress line: the run is under way."""
        err = self.raw / run_id / "pgbench.stderr"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if err.exists() and "progress: " in err.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                raise AssertionError(
                    f"ended before the run was under way:\n{proc.stdout.read() if proc.stdout else ''}"
                )
            time.sleep(0.1)
        raise AssertionError(f"{run_id}: no progress after {timeout} s")

    def record(self, run_id: str) -> dict:
        return json.loads((self.raw / run_id / "run.json").read_text())

    def clean(self) -> None:
        assert settle(self.work) == []
        assert vm() == self.vm_before, "vm.dirty_* not restored"


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    work = Path(tempfile.mkdtemp(prefix="pgfs-faults-"))
    work.chmod(0o755)  # not pytest's 0700 tmp_path: the postgres user must reach the data directory
    (work / "fill.sql").write_text(FILL_SQL)
    lab = Lab(work)
    lab.config("study.yaml")
    try:
        res = lab.run("prepare", "--config", "study.yaml", "--target", "ext4")
        assert res.returncode == 0, res.stderr
        yield lab
    finally:
        if leftovers(work):
            lab.run("release", "--config", "study.yaml")
        if not settle(work, 10):
            shutil.rmtree(work, ignore_errors=True)


def test_postmaster_killed_mid_run(lab: Lab) -> None:
    run_id = "ext4.tpcb.c2.r1"
    p = lab.start("run-one", "--config", "study.yaml", "--run-id", run_id)
    lab.wait_for_progress(run_id, p)
    pgdata = lab.work / "data" / "work" / STUDY / "mnt" / "ext4" / "pgdata"
    os.kill(int((pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out  # a crashed server is data, not a lab error
    assert "Traceback" not in out
    rec = lab.record(run_id)
    assert rec["status"] == "failed" and rec["partial"] is True
    assert rec["error"].startswith("server crashed: postmaster gone (see postgresql.log")
    assert rec["server"]["alive_after_run"] is False
    assert any("stale postmaster.pid" in n for n in rec["server"]["cleanup"])
    assert (lab.raw / run_id / "pgbench.stderr").read_text().count("progress: ") >= 1
    lab.clean()


def test_pgbench_killed_mid_run(lab: Lab) -> None:
    run_id = "ext4.tpcb.c2.r2"
    p = lab.start("run-one", "--config", "study.yaml", "--run-id", run_id)
    lab.wait_for_progress(run_id, p)
    rdir = str((lab.raw / run_id).resolve())
    pids = [
        int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and _comm(d) == "pgbench" and _cwd(d) == rdir
    ]
    assert pids, "pgbench not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    rec = lab.record(run_id)
    assert rec["status"] == "failed"
    assert rec["error"].startswith("killed by SIGKILL"), rec["error"]
    assert rec["server"]["crashed"] is False  # the server outlived its client and was stopped cleanly
    assert rec["postgres"]["version"].startswith("PostgreSQL")
    lab.clean()


def test_run_that_times_out(lab: Lab) -> None:
    """duration 2 s x timeout_factor 1 + 0 s grace: the endless pgbench -t run is killed at 2 s."""
    cfg = lab.config("timeout.yaml", run={"timeout_factor": 1, "timeout_grace_s": 0})
    run_id = "ext4.forever.c1.r1"
    res = lab.run("run-one", "--config", cfg, "--run-id", run_id)
    assert res.returncode == 0, res.stderr
    rec = lab.record(run_id)
    assert rec["status"] == "failed" and rec["outcome"]["timed_out"] is True
    assert rec["error"] == "timed out after 2 s"
    assert 1.5 < rec["outcome"]["wall_s"] < 30
    lab.clean()


def test_server_listens_on_a_unix_socket_only(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """listen_addresses = '', TCP to the port refused, socket directory 0700 and the server's user's,
    and root's pgbench still connects through it (trust authentication: no password anywhere)."""
    from pgfslab.config.study import load_study
    from pgfslab.host import postgres
    from pgfslab.host.targets import mount as target_mount

    monkeypatch.chdir(lab.work)
    study = load_study(lab.work / "study.yaml")
    wd = study.work_dir
    with (
        target_mount.mounted(wd, "ext4", study.targets["ext4"], "postgres", study=STUDY) as mnt,
        postgres.running(mnt.path / "pgdata", PORT, postgres.bindir(), "postgres") as cl,
    ):
        assert cl.query("SHOW listen_addresses") == [("",)]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(ConnectionRefusedError):
            s.settimeout(2)
            s.connect(("127.0.0.1", PORT))
        st = cl.sockdir.stat()
        assert st.st_mode & 0o777 == 0o700 and st.st_uid == __import__("pwd").getpwnam("postgres").pw_uid
        assert (cl.sockdir / f".s.PGSQL.{PORT}").exists()
        hba = [
            ln.split()
            for ln in (cl.pgdata / "pg_hba.conf").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")
        ]
        assert all(r[0] == "local" or r[-1] == "trust" for r in hba)
        res = subprocess.run(
            [str(postgres.bindir() / "pgbench"), *cl.client_args(), "-c", "1", "-t", "5", "-n", "postgres"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr
    lab.clean()


def test_durability_check_loses_nothing_with_synchronous_commit_on(lab: Lab) -> None:
    run_id = "ext4.crash.c2.r1"
    res = lab.run("run-one", "--config", "study.yaml", "--run-id", run_id)
    assert res.returncode == 0, res.stderr
    rec = lab.record(run_id)
    assert rec["status"] == "ok", rec["error"]
    d = json.loads((lab.raw / run_id / "durability.json").read_text())
    assert d["crash"] == "power-loss" and d["crashes"] == 1 and d["power_cut"]["sectors_after"] == 1
    assert d["synchronous_commit"] == "on" and d["window_ms"] == 0
    acked = sum(len(f.read_text().splitlines()) for f in (lab.raw / run_id / "durability").glob("acked.*.log"))
    assert d["committed_ids"] == acked > 0
    assert d["lost_ids"] == 0 and d["violations"] == 0
    assert d["balances_ok"] is True and d["amcheck"] == "ok"
    moved = d["balance_moved"]
    assert (
        moved["accounts"] == moved["tellers"] == moved["branches"] == moved["history"] == d["durability_log_delta_sum"]
    )
    assert "0 lost" in res.stderr
    lab.clean()


def test_bulk_load_into_a_too_small_image_says_the_target_is_full(lab: Lab) -> None:
    res = lab.run("prepare", "--config", "study.yaml", "--target", "tiny")
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert len(err) == 1, res.stderr
    assert err[0].startswith("error: target tiny (ext4, 0.15 GiB image) is full")
    assert "make targets.tiny.size_gb larger (now 0.15)" in err[0]
    lab.clean()


def test_run_that_fills_the_target(lab: Lab) -> None:
    res = lab.run("prepare", "--config", "study.yaml", "--target", "fillme")
    assert res.returncode == 0, res.stderr
    run_id = "fillme.fill.c1.r1"
    res = lab.run("run-one", "--config", "study.yaml", "--run-id", run_id)
    assert res.returncode == 0, res.stderr
    rec = lab.record(run_id)
    assert rec["status"] == "failed"
    assert rec["error"].startswith("target fillme (ext4, 0.25 GiB image) is full"), rec["error"]
    assert "make targets.fillme.size_gb larger" in rec["error"]
    lab.clean()


def test_ctrl_c_to_the_whole_pipeline_then_resume(lab: Lab) -> None:
    """SIGINT to Snakemake's process group, as a terminal's Ctrl-C: the run stops, everything is
    released (mount, loop device, server, cgroup, vm settings), run.incomplete.json says why; the next
    Snakemake run redoes the run and keeps the interrupted attempt under _attempts/."""
    quiet, _ = machine_is_quiet()
    # vm settings only on a quiet machine (they are machine-wide: another study's numbers would move)
    cfg = lab.config(
        "sigint.yaml", **({"os": {"vm_dirty_background_bytes": "48MB", "vm_dirty_bytes": "96MB"}} if quiet else {})
    )
    run_id = "ext4.tpcb.c2.r3"
    target = f"data/raw/{STUDY}/{run_id}/run.json"
    snake = [
        sys.executable,
        "-m",
        "snakemake",  # as `make` runs it
        "--snakefile",
        str(REPO / "workflow" / "Snakefile"),
        "--cores",
        "1",
        "--rerun-incomplete",
        "--keep-going",
        "--configfile",
        str(cfg),
        "--",
        target,
    ]
    p = subprocess.Popen(
        snake,
        cwd=lab.work,
        env=lab.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        lab.wait_for_progress(run_id, p, timeout=120)
        os.killpg(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode != 0, out
    assert settle(lab.work) == [], out
    assert vm() == lab.vm_before
    assert not (lab.raw / run_id / "run.json").exists()
    marker = json.loads((lab.raw / run_id / "run.incomplete.json").read_text())
    assert marker["status"] == "interrupted" and "SIGINT" in marker["error"]
    if quiet:
        assert marker["vm_applied"]["after"]["dirty_bytes"] == 96 * 10**6
        assert marker["vm_applied"]["restored"] == marker["vm_applied"]["before"]
    # the next run resumes: the interrupted run is redone, its attempt moved aside
    res = subprocess.run(snake, cwd=lab.work, env=lab.env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert lab.record(run_id)["status"] == "ok"
    attempts = list((lab.raw / "_attempts").glob(f"{run_id}.*"))
    assert len(attempts) == 1 and (attempts[0] / "run.incomplete.json").exists()
    lab.clean()


def test_status_and_database_hold_what_the_partial_logs_hold(lab: Lab) -> None:
    res = lab.run("status", "--config", "study.yaml")
    assert res.returncode == 1
    assert "ext4.tpcb.c2.r1: server crashed: postmaster gone" in res.stdout
    assert "ext4.forever.c1.r1: timed out after 2 s" in res.stdout
    assert "fillme.fill.c1.r1: target fillme (ext4, 0.25 GiB image) is full" in res.stdout
    assert "durability ext4: 1 crashes" in res.stdout and "0 lost" in res.stdout
    assert lab.run("freeze", "--config", "study.yaml", "--out", f"data/raw/{STUDY}/study.yaml").returncode == 0
    res = lab.run("ingest-study", "--raw", f"data/raw/{STUDY}", "--db", "data/faults.duckdb")
    assert res.returncode == 0, res.stderr
    from pgfslab.ingest import parsers

    with duckdb.connect(str(lab.work / "data" / "faults.duckdb"), read_only=True) as con:
        runs = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
        assert runs["ext4.tpcb.c2.r1"] == runs["ext4.tpcb.c2.r2"] == runs["fillme.fill.c1.r1"] == "failed"
        assert runs["ext4.crash.c2.r1"] == runs["ext4.tpcb.c2.r3"] == "ok"
        # every file in `files` has all its rows, and no more: no half-ingested file
        for file_id, fmt, rows in con.execute("SELECT file_id, format, rows FROM files").fetchall():
            have = sum(
                con.execute(f'SELECT count(*) FROM "{t}" WHERE file_id = ?', [file_id]).fetchone()[0]
                for t in parsers.FORMATS[fmt].TABLES
            )
            assert have == rows, (file_id, fmt)
        # the crashed run's partial logs are in as far as they go
        crashed = lab.raw / "ext4.tpcb.c2.r1"
        lines = [ln for ln in (crashed / "pgbench.stderr").read_text().splitlines() if ln.startswith("progress: ")]
        got = con.execute("SELECT count(*) FROM pgbench_progress WHERE run_id = 'ext4.tpcb.c2.r1'").fetchone()[0]
        assert got == len(lines) >= 1
        # every file of a failed run is either ingested whole or named in a warning
        ingested = {r[0] for r in con.execute("SELECT source_file FROM files").fetchall()}
        for rid in ("ext4.tpcb.c2.r1", "ext4.tpcb.c2.r2"):
            for f in (lab.raw / rid).iterdir():
                if f.is_file() and f.name not in ("run.json", "postgresql.log"):
                    assert (
                        f"{STUDY}/{rid}/{f.name}" in ingested
                        or f"data/raw/{STUDY}/{rid}/{f.name}: not ingested" in res.stderr
                    ), f
        d = con.execute("SELECT crashes, lost_ids, violations FROM durability").fetchall()
        assert d == [(1, 0, 0)]
    # no password in any log, config dump or run.json
    for f in lab.raw.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".yaml", ".log", ".stderr", ".stdout"):
            text = f.read_text(errors="replace").lower()
            assert "password=" not in text and "pgpassword" not in text, f
    lab.clean()


# Last in this module (the status test above counts the runs before these): a study of one long run,
# interrupted through `make run` and by SIGTERM, then resumed.
LONG_RUN = "ext4.long.c1.r1"


def long_config(lab: Lab) -> str:
    cfg = {
        **json.loads(json.dumps(CONFIG)),
        "targets": {"ext4": CONFIG["targets"]["ext4"]},
        "workloads": {
            "long": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1], "repeats": 1, "duration_s": 20}
        },
    }
    (lab.work / "long.yaml").write_text(yaml.safe_dump(cfg))
    # the status test made this database and the frozen config outside Snakemake (no provenance):
    # Snakemake would take them as up to date, skip the runs the database is missing, and run the long
    # study's jobs against the other study's frozen config
    (lab.work / "data" / f"{STUDY}.duckdb").unlink(missing_ok=True)
    (lab.raw / "study.yaml").unlink(missing_ok=True)
    return "long.yaml"


def interrupt(lab: Lab, argv: list[str], sig: signal.Signals) -> tuple[int, str]:
    """Start argv in a process group of its own (as a terminal's foreground job), send `sig` to the whole
    group once the long run is under way, and return the exit status and the output."""

    def aside() -> int:
        return len(list((lab.raw / "_attempts").glob(f"{LONG_RUN}.*")))

    redo, before = (lab.raw / LONG_RUN).exists(), aside()
    p = subprocess.Popen(
        argv,
        cwd=lab.work,
        env=lab.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while redo and aside() == before and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # an earlier attempt's logs are there until the run moves them aside
        lab.wait_for_progress(LONG_RUN, p, timeout=180)
        if p.poll() is not None:
            raise AssertionError(
                f"{argv} ended (exit {p.returncode}) before the run was under way:\n{p.communicate()[0][-4000:]}"
            )
        os.killpg(p.pid, sig)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return p.returncode, out


def test_ctrl_c_through_make_prints_the_summary_and_releases_everything(lab: Lab) -> None:
    """`make run`, Ctrl-C: make, its recipe shell, Snakemake, the run and pgbench all get SIGINT. The
    run is marked interrupted, everything is released, and the recipe still prints the status summary."""
    cfg = long_config(lab)
    rc, out = interrupt(lab, ["make", "-f", str(REPO / "Makefile"), "run", f"CONFIG={cfg}"], signal.SIGINT)
    assert rc != 0, out
    assert settle(lab.work) == [], out
    assert vm() == lab.vm_before
    marker = json.loads((lab.raw / LONG_RUN / "run.incomplete.json").read_text())
    assert marker["status"] == "interrupted" and "SIGINT" in marker["error"], marker
    assert f"study {STUDY}:" in out and f"{LONG_RUN}: interrupted" in out, out[-3000:]
    assert not (lab.raw / LONG_RUN / "run.json").exists()


def test_sigterm_to_the_whole_pipeline_then_resume(lab: Lab) -> None:
    """SIGTERM to Snakemake's process group (a service manager or `kill -- -PGID` stopping the study):
    the same release as Ctrl-C, the marker names SIGTERM, and the next run redoes the run."""
    cfg = long_config(lab)
    snake = [
        sys.executable,
        "-m",
        "snakemake",  # as `make` runs it
        "--snakefile",
        str(REPO / "workflow" / "Snakefile"),
        "--cores",
        "1",
        "--rerun-incomplete",
        "--keep-going",
        "--configfile",
        str(cfg),
        "--",
        f"data/raw/{STUDY}/{LONG_RUN}/run.json",
    ]
    rc, out = interrupt(lab, snake, signal.SIGTERM)
    assert rc != 0, out
    assert settle(lab.work) == [], out
    assert vm() == lab.vm_before
    marker = json.loads((lab.raw / LONG_RUN / "run.incomplete.json").read_text())
    assert marker["status"] == "interrupted" and "SIGTERM" in marker["error"], marker
    res = subprocess.run(snake, cwd=lab.work, env=lab.env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert lab.record(LONG_RUN)["status"] == "ok"
    # both interrupted attempts (make's SIGINT and this SIGTERM) are kept aside
    attempts = sorted((lab.raw / "_attempts").glob(f"{LONG_RUN}.*"))
    errors = sorted(json.loads((a / "run.incomplete.json").read_text())["error"] for a in attempts)
    assert len(attempts) == 2 and any("SIGINT" in e for e in errors) and any("SIGTERM" in e for e in errors)
    lab.clean()


def _comm(d: Path) -> str:
    try:
        return (d / "comm").read_text().strip()
    except OSError:
        return ""


def _cwd(d: Path) -> str:
    try:
        return os.readlink(d / "cwd")
    except OSError:
        return ""
