"""A data-set ladder with a memory limit and a precision target, for real: a tiny study through the whole
DAG (loop-mounted ext4 and xfs, PostgreSQL, pgbench at two rungs, optional rounds decided from the
intervals so far, DuckDB, the notebooks, the paper).

Expected values come from the config and from what pgbench itself printed, never from the code under test.
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
import pytest
import yaml
from conftest import leftovers, machine_can_run_studies
from test_integration import snakemake

ok, why = machine_can_run_studies()
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.skipif(not ok, reason=why)]

STUDY = "ladder-itest"
SCALES = [1, 3]
MIN_R, MAX_R = 3, 4
CONFIG = {
    "study": STUDY,
    "title": "Ladder and precision test study",
    "targets": {"ext4": {"fs": "ext4", "size_gb": 1}, "xfs": {"fs": "xfs", "size_gb": 1}},
    "postgres": {"port_base": 26500, "settings": {"shared_buffers": "16MB"}},
    "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [2]}},
    "ladder": {"scales": SCALES, "memory_limit_mb": 256},
    # a loose goal at a low confidence, so that three rounds can be enough and round 4 may be skipped
    "precision": {"half_width": 0.5, "confidence": 0.75, "min_repeats": MIN_R, "max_repeats": MAX_R},
    "run": {"duration_s": 3, "prewarm": True},
    # pgbench -T 3 may print progress at 1 and 2 s only: a 1 s warm-up leaves the stability notebook a sample
    "analysis": {"trim_s": 1},
    "sampler": {"meminfo_hz": 1},
}


@pytest.fixture(scope="module")
def study() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="pgfs-ladder-"))
    work.chmod(0o755)
    (work / "study.yaml").write_text(yaml.safe_dump(CONFIG))
    try:
        snakemake(work, "config=study.yaml", timeout=1500)
        yield work
    finally:
        if leftovers(work):
            subprocess.run([sys.executable, "-m", "pgfslab", "release", "--config", "study.yaml"], cwd=work)
        if not leftovers(work):
            shutil.rmtree(work, ignore_errors=True)


def raw(study: Path) -> Path:
    return study / "data" / "raw" / STUDY


def test_each_rung_is_loaded_at_its_scale(study: Path) -> None:
    for target in CONFIG["targets"]:
        setup = raw(study) / "_setup" / target
        for k, scale in enumerate(SCALES, 1):
            # pgbench -i reports the rows it generated: 100000 per unit of scale
            text = (setup / f"pgbench_init.d{k}.stderr").read_text() + (setup / f"pgbench_init.d{k}.stdout").read_text()
            assert f"{100000 * scale} of {100000 * scale} tuples" in text, (target, k)


def test_runs_use_their_rungs_database(study: Path) -> None:
    for target in CONFIG["targets"]:
        for k, scale in enumerate(SCALES, 1):
            for r in range(1, MIN_R + 1):
                out = (raw(study) / f"{target}.tpcb.d{k}.c2.r{r}" / "pgbench.stdout").read_text()
                assert f"scaling factor: {scale}\n" in out


def test_a_warm_start_loaded_the_rungs_relations(study: Path) -> None:
    for k in range(1, len(SCALES) + 1):
        rec = json.loads((raw(study) / f"ext4.tpcb.d{k}.c2.r1" / "run.json").read_text())
        loaded = rec["target_setup"]["database_bytes_loaded"]  # pg_database_size after the load
        # pg_prewarm's own count of 8 kB blocks read: most of the database (tables and indexes)
        assert 0.5 * loaded <= rec["prewarm"]["blocks"] * 8192 <= 1.5 * loaded, (k, rec["prewarm"], loaded)


def test_an_optional_round_is_measured_for_every_target_or_for_none(study: Path) -> None:
    for k in range(1, len(SCALES) + 1):
        for r in range(MIN_R + 1, MAX_R + 1):
            states = {
                json.loads((raw(study) / f"{t}.tpcb.d{k}.c2.r{r}" / "run.json").read_text())["status"]
                for t in CONFIG["targets"]
            }
            assert len(states) == 1 and states <= {"ok", "skipped"}, (k, r, states)
            decision = json.loads((raw(study) / "_precision" / f"tpcb.d{k}.c2.r{r}.json").read_text())
            assert decision["run"] == (states == {"ok"})


def test_database_and_paper(study: Path) -> None:
    con = duckdb.connect(str(study / "data" / f"{STUDY}.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT rung, scale, count(*) FROM runs WHERE status = 'ok' AND origin = 'local' GROUP BY ALL ORDER BY 1"
    ).fetchall()
    con.close()
    assert [(k, s) for k, s, _ in rows] == list(enumerate(SCALES, 1))
    assert all(n >= MIN_R * len(CONFIG["targets"]) for *_, n in rows)
    pdf = study / "paper" / f"{STUDY}.pdf"
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Precision of the answers" in text
    assert not leftovers(study)
