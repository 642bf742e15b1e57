"""Recorded studies for the notebook and paper tests: small REAL raw folders (tests/data/studies/<study>/,
see its README.md), ingested with `python -m pgfslab ingest-study` into a database, every analysis
notebook the pipeline would run for the study executed with papermill, and the paper built from them.

Everything is done once per test session (both test_notebooks.py and test_paper.py use it) and in
parallel (a few papermill processes at a time: a notebook is mostly kernel start and imports), in a
temporary directory removed at exit.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pgfslab.analysis import registry

# jsonschema (via nbformat) would import the optional rfc3987_syntax, which builds a grammar for ~3 s
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "tests" / "data" / "studies"
NOTEBOOKS = REPO / "notebooks"
PY = sys.executable
# Notebooks run as JupyterLab runs them: the kernel in notebooks/, `pgfslab` importable because it is
# installed (editable) in the environment, never through PYTHONPATH
os.environ.pop("PYTHONPATH", None)
ENV = dict(os.environ)
WORKERS = int(os.environ.get("PGFS_TEST_WORKERS", 0)) or max(2, min(4, (os.cpu_count() or 2) + 1))

PER_WORKLOAD = ("throughput_stability", "latency_percentiles", "sysbench_qps")


@dataclass
class Execution:
    notebook: str  # notebook file stem
    name: str  # output name (<notebook>[-<workload>])
    study: str
    output: Path  # executed notebook
    returncode: int
    log: str


@dataclass
class Study:
    name: str  # folder under tests/data/studies/ (= the study's name)
    raw: Path
    db: Path
    figures: Path
    tables: Path
    cfg: dict
    executions: dict[str, Execution] = field(default_factory=dict)
    paper_pdf: Path | None = None
    paper_log: str = ""

    @property
    def study(self) -> str:
        return self.cfg["study"]


@functools.cache
def workdir() -> Path:
    """A temporary directory, removed at exit; PGFS_TEST_KEEP=<dir> keeps everything there to look at."""
    keep = os.environ.get("PGFS_TEST_KEEP")
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        Path(keep).mkdir(parents=True)
        return Path(keep)
    d = Path(tempfile.mkdtemp(prefix="pgfs-nbtest-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def notebooks_for(cfg: dict) -> list[registry.Job]:
    """The notebooks the pipeline runs for this config (the same registry Snakemake uses)."""
    return registry.jobs(cfg)


def ingest(raw: Path, db: Path, *extra: str) -> None:
    """`pgfslab ingest-study`, forked from the warm interpreter the notebooks use after it (tests/test_warm.py
    checks a forked command against the cold one): eight cold starts of the lab cost 15 s of CPU."""
    res = subprocess.run(
        [PY, "-m", "pgfslab.warm", "ingest-study", "--raw", str(raw), "--db", str(db), *extra],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"ingest-study {raw} failed:\n{res.stdout}\n{res.stderr}")


def papermill(notebook: str, out: Path, params: dict[str, object]) -> tuple[int, str]:
    """Execute a notebook with papermill in this process, in a fresh kernel as the pipeline runs it: forked
    from the warm interpreter (pgfslab.warm), or started cold with PGFSLAB_WARM=0."""
    import papermill as pm

    from pgfslab.warm import kernel as warm_kernel

    kwargs = warm_kernel.papermill_options()
    try:
        pm.execute_notebook(
            str(NOTEBOOKS / f"{notebook}.ipynb"),
            str(out),
            parameters={k: (str(v) if isinstance(v, Path) else v) for k, v in params.items()},
            kernel_name="python3",
            progress_bar=False,
            cwd=str(NOTEBOOKS),
            log_output=False,
            # as pgfslab.analysis.execute runs it: the executed copy is written once, at the end
            request_save_on_cell_execute=False,
            **kwargs,
        )
    except pm.PapermillExecutionError as exc:
        return 1, f"{exc.ename}: {exc.evalue}"
    return 0, ""


def _execute(st: Study, job: registry.Job) -> Execution:
    out = workdir() / "executed" / st.name / f"{job.name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    params = job.parameters(st.cfg, db=st.db, figures_dir=st.figures, tables_dir=st.tables, raw_dir=st.raw.parent)
    rc, log = papermill(job.notebook, out, params)
    return Execution(job.notebook, job.name, st.name, out, rc, log)


def _paper(st: Study) -> tuple[Path | None, str]:
    from pgfslab.paper import build as paper

    out = workdir() / "paper" / st.name
    out.mkdir(parents=True, exist_ok=True)
    pdf = out / f"{st.study}.pdf"
    try:
        paper.build(
            st.db,
            st.study,
            REPO / "paper" / "whitepaper.ipynb",
            out / "paper.ipynb",
            pdf,
            out / f"{st.study}.html",
            figures_dir=st.figures,
            tables_dir=st.tables,
        )
    except Exception as exc:  # reported by the paper tests
        return None, f"{type(exc).__name__}: {exc}"
    return pdf, ""


def recorded_names() -> list[str]:
    return sorted(p.name for p in STUDIES.iterdir() if (p / "study.yaml").exists())


@functools.cache
def studies() -> dict[str, Study]:
    """Every recorded study, ingested, with all its notebooks executed and its paper built."""
    out: dict[str, Study] = {}
    for name in recorded_names():
        raw = STUDIES / name
        base = workdir() / name
        db = base / f"{name}.duckdb"
        db.parent.mkdir(parents=True, exist_ok=True)
        out[name] = Study(
            name, raw, db, base / "figures", base / "tables", yaml.safe_load((raw / "study.yaml").read_text())
        )
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(lambda st: ingest(st.raw, st.db), out.values()))
        jobs = [(st, job) for st in out.values() for job in notebooks_for(st.cfg)]
        for ex in pool.map(lambda j: _execute(*j), jobs):
            out[ex.study].executions[ex.name] = ex
        papers = [pool.submit(_paper, st) for st in out.values()]
        missing = [pool.submit(_missing, item) for item in _missing_cases(out).items()]
        for st, fut in zip(out.values(), papers):
            st.paper_pdf, st.paper_log = fut.result()
        _MISSING.update({ex.notebook: ex for ex in (f.result() for f in missing)})
    return out


def _missing_cases(st: dict[str, Study]) -> dict[str, tuple[Path, str, str | None]]:
    """For each notebook, a database that lacks its data (the notebook must stop with one line)."""
    by_tool = {name: {w["tool"] for w in s.cfg["workloads"].values()} for name, s in st.items()}
    fs_db = next(s for n, s in st.items() if by_tool[n] == {"fsmicro"})
    pg_db = next(s for n, s in st.items() if by_tool[n] & {"pgbench", "sysbench"})
    # a study without runs (only its config) and one without the published reference results
    empty_raw = workdir() / "empty" / "empty-study"
    empty_raw.mkdir(parents=True, exist_ok=True)
    (empty_raw / "study.yaml").write_text(yaml.safe_dump(dict(fs_db.cfg, study="empty-study")))
    empty_db = workdir() / "empty" / "empty.duckdb"
    nopub_db = workdir() / "empty" / "nopub.duckdb"
    ingest(empty_raw, empty_db)
    ingest(fs_db.raw, nopub_db, "--no-published")
    wl_fs = next(iter(fs_db.cfg["workloads"]))
    return {
        "throughput_stability": (fs_db.db, fs_db.study, wl_fs),
        "latency_percentiles": (fs_db.db, fs_db.study, wl_fs),
        "sysbench_qps": (fs_db.db, fs_db.study, wl_fs),
        "variance_significance": (fs_db.db, fs_db.study, None),
        "precision": (fs_db.db, fs_db.study, None),
        "exchangeability": (fs_db.db, fs_db.study, None),
        "dirty_memory_checkpoints": (fs_db.db, fs_db.study, None),
        "scaling": (fs_db.db, fs_db.study, None),
        "fs_micro": (pg_db.db, pg_db.study, None),
        "compression_footprint": (empty_db, "empty-study", None),
        "local_vs_published": (nopub_db, fs_db.study, None),
        "seed_verdicts": (empty_db, "empty-study", None),
    }


def _missing(item: tuple[str, tuple[Path, str, str | None]]) -> Execution:
    nb, (db, study, wl) = item
    out = workdir() / "missing" / f"{nb}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    params: dict[str, object] = {
        "db": db,
        "study": study,
        "figures_dir": workdir() / "missing" / "figs",
        "tables_dir": workdir() / "missing" / "tables",
    }
    if wl:
        params["workload"] = wl
    rc, log = papermill(nb, out, params)
    return Execution(nb, nb, study, out, rc, log)


@functools.cache
def missing_data_runs() -> dict[str, Execution]:
    """Each notebook run against a database that lacks its data (run together with `studies`)."""
    studies()
    return _MISSING


_MISSING: dict[str, Execution] = {}


def outputs(nb_path: Path) -> list[dict]:
    """Every output of every code cell of an executed notebook."""
    nb = json.loads(nb_path.read_text())
    return [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
