"""A tiny study through the whole DAG, for real: loop-mounted ext4 and btrfs, PostgreSQL started and
stopped by the pipeline, pgbench, DuckDB, papermill, the PDF. Then: the database holds what the raw
logs say, the figures and the PDF are there, a second run does nothing, the raw folder alone rebuilds
the paper on "another machine", and nothing is left mounted, attached or running.

Expected values come from the raw files (read here with plain string operations) and from the
config, never from the code under test.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import REPO, leftovers, machine_can_run_studies

ok, why = machine_can_run_studies()
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.skipif(not ok, reason=why)]

STUDY = "itest"
TARGETS = {"ext4": "ext4", "btrfs-zstd": "btrfs"}
REPEATS = 2
DURATION_S = 5
CONFIG = {
    "study": STUDY,
    "title": "Integration test study",
    "authors": ["pgfs-lab tests"],
    "targets": {
        "ext4": {"fs": "ext4", "size_gb": 1},
        "btrfs-zstd": {"fs": "btrfs", "size_gb": 1, "mount_options": ["compress=zstd"]},
    },
    # a port range of its own, so a study running beside the tests is not disturbed
    "postgres": {"port_base": 26400, "settings": {"shared_buffers": "32MB"}},
    "dataset": {"scale": 1},
    "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [2], "repeats": REPEATS}},
    "run": {"duration_s": DURATION_S},
    "sampler": {"meminfo_hz": 2},
}
NOTEBOOK = REPO / "notebooks" / "throughput_stability.ipynb"


def snakemake(cwd: Path, *config: str, dry_run: bool = False, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",  # as `make` runs it
        "--snakefile",
        str(REPO / "workflow" / "Snakefile"),
        # every core, as `make run` gives it: the runs still take all of them (nothing runs beside a
        # measurement), the notebooks after them run side by side
        "--cores",
        "all",
        "--scheduler",
        "greedy",
        "--rerun-incomplete",
        "--config",
        *config,
    ]
    if dry_run:
        cmd += ["--dry-run", "--quiet", "rules"]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise AssertionError(f"snakemake failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-6000:]}")
    return res


@pytest.fixture(scope="module")
def study() -> Iterator[Path]:
    """Run the tiny study once for every test of this module (a real one takes about a minute).

    Not under pytest's 0700 tmp_path: the `postgres` user must be able to reach its data directory."""
    work = Path(tempfile.mkdtemp(prefix="pgfs-itest-"))
    work.chmod(0o755)
    (work / "study.yaml").write_text(yaml.safe_dump(CONFIG))
    t0 = time.monotonic()
    try:
        res = snakemake(work, "config=study.yaml")
        print(f"tiny study: {time.monotonic() - t0:.0f} s", file=sys.stderr)
        (work / "snakemake.stderr").write_text(res.stderr)
        yield work
    finally:
        if leftovers(work):  # release whatever a failure left, so the machine stays clean
            subprocess.run(
                [sys.executable, "-m", "pgfslab", "release", "--config", "study.yaml"],
                cwd=work,
                env=dict(os.environ),
                capture_output=True,
            )
        if not leftovers(work):
            shutil.rmtree(work, ignore_errors=True)


def run_ids() -> list[str]:
    return [f"{t}.tpcb.c2.r{r}" for r in range(1, REPEATS + 1) for t in TARGETS]


def summary_tps(stdout: Path) -> float:
    for line in stdout.read_text().splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    raise AssertionError(f"{stdout}: no tps line")


def test_nothing_left_mounted_attached_or_running(study: Path) -> None:
    assert leftovers(study) == []


def test_every_run_has_raw_logs_and_provenance(study: Path) -> None:
    raw = study / "data" / "raw" / STUDY
    # the targets in the order the study's config gives them (the frozen study.yaml), which the rounds rotate
    order = list(yaml.safe_load((raw / "study.yaml").read_text())["targets"])
    assert sorted(order) == sorted(TARGETS)
    for run_id in run_ids():
        rec = json.loads((raw / run_id / "run.json").read_text())
        assert rec["status"] == "ok", rec.get("error")
        assert rec["fallback"] is False
        assert rec["mount"]["device"].startswith("/dev/loop")
        assert rec["mount"]["direct_io"] is True
        fs = TARGETS[rec["target"]]
        assert rec["fs"] == fs
        if fs == "btrfs":
            assert "compress=zstd" in rec["mount"]["mount_options"]
        assert rec["postgres"]["version"].startswith("PostgreSQL ")
        assert rec["postgres"]["settings"]["shared_buffers"]["setting"] == str(32 * 1024 // 8)  # 8 kB pages
        assert rec["commands"][0][0].endswith("pgbench")
        assert rec["host"]["kernel"] and rec["git"]["commit"]
        assert (raw / run_id / "pgbench.stdout").stat().st_size > 0
        assert list((raw / run_id).glob("pgbench_log.*")), "aggregate log missing"
        # the defined starting state: a cold start, a checkpoint just before the run; the target's
        # place in its round rotates (round r starts at target r - 1)
        st = rec["start_state"]
        assert st["cache"] == "cold" and st["caches_dropped"] and st["hit_ratio"] is None
        assert re.fullmatch(r"[0-9A-F]+/[0-9A-F]+", st["checkpoint"]["lsn"]) and st["checkpoint"]["time"]
        assert isinstance(st["autovacuum_quiet"], bool)
        assert rec["burn_in"] is False
        assert rec["position"] == (order.index(rec["target"]) - (rec["repeat"] - 1)) % len(order)
    for target in TARGETS:
        setup = json.loads((raw / "_setup" / target / "target.json").read_text())
        assert setup["load"]["scale"] == 1 and setup["load"]["wall_s"] > 0
        settled = setup["settled"]  # vacuumed, analysed, checkpointed, autovacuum waited for before any run
        assert settled["vacuum_analyze"]["databases"] == ["postgres"] and settled["checkpoint"]["lsn"]
        assert settled["autovacuum"]["waited_s"] <= settled["autovacuum"]["timeout_s"] + 2


def test_every_run_says_where_its_wall_time_went(study: Path) -> None:
    """run.json `phases_s`: the measured interval is the configured duration, with pgbench's own start and
    end beside it its wall time, and the phases add up to the run's wall time (plus what comes before and
    after it in the process)."""
    raw = study / "data" / "raw" / STUDY
    for run_id in run_ids():
        rec = json.loads((raw / run_id / "run.json").read_text())
        ph = rec["phases_s"]
        assert ph["measured"] == pytest.approx(DURATION_S, abs=0.01)
        assert ph["measured"] + ph["tool_overhead"] == pytest.approx(rec["outcome"]["wall_s"], abs=0.1)
        for phase in ("process_start", "mount", "drop_caches", "server_start", "server_stop", "unmount"):
            assert ph[phase] > 0, phase
        inside = sum(v for k, v in ph.items() if k != "process_start")
        # wall_s starts after the provenance phase and ends before the finishing lap
        assert inside - ph["provenance"] - ph["finish"] == pytest.approx(rec["wall_s"], abs=0.05)


def test_database_holds_what_the_logs_say(study: Path) -> None:
    raw = study / "data" / "raw" / STUDY
    with duckdb.connect(str(study / "data" / f"{STUDY}.duckdb"), read_only=True) as con:
        runs = dict(con.execute("SELECT run_id, status FROM runs WHERE study = ?", [STUDY]).fetchall())
        assert runs == {r: "ok" for r in run_ids()}
        tps = dict(con.execute("SELECT run_id, tps FROM pgbench_summary").fetchall())
        for run_id in run_ids():
            assert tps[run_id] == pytest.approx(summary_tps(raw / run_id / "pgbench.stdout"), rel=1e-6)
        progress = dict(con.execute("SELECT run_id, count(*) FROM pgbench_progress GROUP BY run_id").fetchall())
        for run_id in run_ids():
            lines = [
                ln for ln in (raw / run_id / "pgbench.stderr").read_text().splitlines() if ln.startswith("progress: ")
            ]
            assert progress[run_id] == len(lines) >= DURATION_S - 1
        samples = dict(con.execute("SELECT run_id, count(DISTINCT ts) FROM meminfo GROUP BY run_id").fetchall())
        for run_id in run_ids():
            stamps = [ln for ln in (raw / run_id / "meminfo.log").read_text().splitlines() if ln.startswith("@ ")]
            assert samples[run_id] == len(stamps) >= DURATION_S
        agg_rows = con.execute("SELECT count(*) FROM pgbench_aggregate").fetchone()[0]
        assert agg_rows >= len(run_ids()) * (DURATION_S - 1)
        targets = {r[0] for r in con.execute("SELECT target FROM targets").fetchall()}
        assert targets == set(TARGETS)


def test_figures_are_real_images(study: Path) -> None:
    base = study / "figures" / STUDY / "throughput_stability-tpcb"
    png = base.with_suffix(".png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    svg = base.with_suffix(".svg").read_text()
    assert "<svg" in svg and all(t in svg for t in TARGETS)
    assert base.with_suffix(".pdf").read_bytes().startswith(b"%PDF")


def job_counts(res: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """Jobs per rule from a dry run's "Job stats:" table (after its header and ---- line, up to "total")."""
    table = res.stdout[res.stdout.index("Job stats:") :].splitlines()[3:]
    return {
        line.split()[0]: int(line.split()[1])
        for line in table[: table.index(next(t for t in table if t.startswith("total")))]
    }


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def test_paper_has_the_figure_its_caption_and_every_target(study: Path) -> None:
    text = pdf_text(study / "paper" / f"{STUDY}.pdf")
    flat = " ".join(text.split())
    assert CONFIG["title"] in flat
    assert "Figure 1:" in flat and "throughput per second of every run" in flat
    for target in TARGETS:
        assert target in flat
    for bad in (r"Traceback", r"\bnan\b", r"\bNone\b", r"\bNaN\b", r"Exception"):
        assert not re.search(bad, flat), f"{bad!r} in the paper"
    fonts = subprocess.run(["pdffonts", str(study / "paper" / f"{STUDY}.pdf")], capture_output=True, text=True).stdout
    rows = fonts.splitlines()[2:]
    assert rows and all(r.split()[-5] == "yes" for r in rows), f"fonts not embedded:\n{fonts}"


def test_second_run_does_nothing(study: Path) -> None:
    """Nothing is redone (how fast a no-op returns is measured by `make bench`, not asserted here)."""
    res = snakemake(study, "config=study.yaml")
    assert "Nothing to be done" in res.stdout + res.stderr
    assert "Finished job" not in res.stdout + res.stderr


def make_run(study: Path) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        ["make", "-f", str(REPO / "Makefile"), "run", "CONFIG=study.yaml"],
        cwd=study,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def test_a_second_make_run_has_nothing_to_do(study: Path) -> None:
    """`make run` on a finished study: Snakemake finds nothing to do, runs no job, and the status summary is
    still printed."""
    again = make_run(study)
    assert "Nothing to be done" in again.stdout + again.stderr
    assert "Finished job" not in again.stdout + again.stderr
    assert "runs planned" in again.stdout


def test_a_run_set_aside_by_hand_is_measured_again(study: Path) -> None:
    """A run folder a user moves to _attempts/ (run beside something that disturbed it) is planned again at
    once, that run alone, and the analyses after it; nothing else is redone."""
    run_dir = next(p for p in sorted((study / "data" / "raw" / STUDY).iterdir()) if (p / "run.json").is_file())
    aside = study / "data" / "raw" / STUDY / "_attempts" / f"{run_dir.name}.by-hand"
    aside.parent.mkdir(exist_ok=True)
    run_dir.rename(aside)
    try:
        res = snakemake(study, "config=study.yaml", dry_run=True)
    finally:
        aside.rename(run_dir)
        if not any(aside.parent.iterdir()):
            aside.parent.rmdir()
    assert "Nothing to be done" not in res.stdout + res.stderr, res.stdout
    counts = job_counts(res)
    assert counts.get("run") == 1 and "prepare_target" not in counts, res.stdout
    # the database is built again from every run, with the run back
    assert counts.get("ingest") == 1, res.stdout


def test_a_second_study_waits_for_the_one_measuring(study: Path) -> None:
    """While another study holds the machine lock, `make run` says so and waits; it goes on once the lock is
    released (here a no-op run of the finished study, so that only the waiting is measured)."""
    lock = study / "machine.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.Popen(
            ["make", "-f", str(REPO / "Makefile"), "run", "CONFIG=study.yaml", f"MACHINE_LOCK={lock}"],
            cwd=study,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            time.sleep(8)  # make's own start, then the lock (the set-up waits for it)
            assert p.poll() is None, p.communicate()[0][-3000:]
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out[-3000:]
    wait = f"another study is measuring on this machine (it holds {lock}): waiting"
    assert wait in out
    # the set-up (apt, the environment) waits too: a fresh clone's set-up beside a run slowed it by half
    assert out.index(wait) < out.index("setup: ok"), out[-3000:]
    assert "Nothing to be done" in out and "runs planned" in out


def test_changed_notebook_reruns_only_notebook_and_paper(study: Path) -> None:
    """An edited notebook (content, not just mtime: Snakemake compares checksums) re-runs itself and the paper."""
    original = NOTEBOOK.read_bytes()
    before = NOTEBOOK.stat()
    try:
        NOTEBOOK.write_bytes(original + b"\n")
        res = snakemake(study, "config=study.yaml", dry_run=True)
    finally:
        NOTEBOOK.write_bytes(original)
        os.utime(NOTEBOOK, ns=(before.st_atime_ns, before.st_mtime_ns))
    counts = job_counts(res)
    assert counts == {"notebook": 1, "paper": 1, "all": 1}, res.stdout  # the one notebook, not the other six


def test_raw_folder_alone_rebuilds_database_and_paper(study: Path, tmp_path: Path) -> None:
    """Someone else's data/raw/<study>/ on a machine that ran nothing: `make analyse` rebuilds it all."""
    shutil.copytree(study / "data" / "raw" / STUDY, tmp_path / "data" / "raw" / STUDY)
    snakemake(tmp_path, f"study={STUDY}", "raw_only=1")
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "data" / "work").exists(), "re-analysis must not create targets"
    q = "SELECT run_id, tps FROM pgbench_summary ORDER BY run_id"
    with (
        duckdb.connect(str(study / "data" / f"{STUDY}.duckdb"), read_only=True) as a,
        duckdb.connect(str(tmp_path / "data" / f"{STUDY}.duckdb"), read_only=True) as b,
    ):
        assert a.execute(q).fetchall() == b.execute(q).fetchall()
    flat = " ".join(pdf_text(tmp_path / "paper" / f"{STUDY}.pdf").split())
    assert "Figure 1:" in flat and all(t in flat for t in TARGETS)


def test_a_changed_target_is_prepared_and_measured_again_in_one_pass(study: Path) -> None:
    """A study config edited after its runs (btrfs-zstd's mount options): the next `make run` re-prepares that
    target and re-measures its runs, in the same pass that freezes the new config, and leaves ext4's alone.
    (With the frozen file as the rules' input, Snakemake 9 compared no parameters while the freeze had to run:
    the new config was frozen and analysed with the old runs, and measured only by the run after.)"""
    changed = json.loads(json.dumps(CONFIG))
    changed["targets"]["btrfs-zstd"]["mount_options"] = ["compress=zstd:1"]
    (study / "study-changed.yaml").write_text(yaml.safe_dump(changed))
    try:
        res = snakemake(study, "config=study-changed.yaml", dry_run=True)
    finally:  # the next Snakemake parse writes the run config of study.yaml back
        snakemake(study, "config=study.yaml", dry_run=True)
    counts = job_counts(res)
    assert counts.get("freeze_config") == 1, res.stdout
    # one target of two: its preparation and its runs (REPEATS), not ext4's
    assert counts.get("prepare_target") == 1 and counts.get("run") == REPEATS, res.stdout
