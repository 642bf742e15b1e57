"""Recorded studies for the notebook and paper tests: small REAL raw folders (tests/data/studies/<study>/,
see its README.md), ingested with `python -m pgfslab ingest-study` into a database, every analysis
notebook the pipeline would run for the study executed with papermill, and the paper built from them.

Everything is done once per test session and in parallel (a few papermill processes at a time: a notebook is
mostly kernel start and imports), in a folder of the session (`session_dir`, removed by tests/conftest.py when
the session ends). test_notebooks.py and test_paper.py may run in two pytest-xdist workers: the first to ask
builds everything under a file lock and records the result there, the other waits for it and reads it (as
pytest-xdist's documentation makes a session fixture run once).
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from conftest import SESSION

from pgfslab.analysis import registry
from pgfslab.analysis.kernel import START_TIMEOUT_S
from pgfslab.config import study as labcfg

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

    @property
    def typed(self) -> labcfg.Study:
        """The study's frozen config as the pipeline builds it (pgfslab.config.study.Study)."""
        return labcfg.load_study(self.raw / "study.yaml")


def session_dir(session: str) -> Path:
    """The recorded studies' folder of test session `session` (its controlling process's id)."""
    return Path(tempfile.gettempdir()) / f"pgfs-nbtest-{session}"


@functools.cache
def workdir() -> Path:
    """This session's folder (every worker of it shares it); PGFS_TEST_KEEP=<dir>: there instead, kept to
    look at."""
    keep = os.environ.get("PGFS_TEST_KEEP")
    d = Path(keep) if keep else session_dir(os.environ.get(SESSION, str(os.getpid())))
    d.mkdir(parents=True, exist_ok=True)
    return d


def notebooks_for(st: Study) -> list[registry.Job]:
    """The notebooks the pipeline runs for this study (the same registry Snakemake uses)."""
    return registry.jobs(st.typed)


def ingest(raw: Path, db: Path, *extra: str) -> None:
    """`pgfslab ingest-study`, as the pipeline runs it."""
    res = subprocess.run(
        [PY, "-m", "pgfslab", "ingest-study", "--raw", str(raw), "--db", str(db), *extra],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"ingest-study {raw} failed:\n{res.stdout}\n{res.stderr}")


def papermill(notebook: str, out: Path, params: dict[str, object]) -> tuple[int, str]:
    """Execute a notebook with papermill in this process, in a fresh kernel as the pipeline runs it."""
    import papermill as pm

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
            start_timeout=START_TIMEOUT_S,
        )
    except pm.PapermillExecutionError as exc:
        return 1, f"{exc.ename}: {exc.evalue}"
    return 0, ""


def _execute(st: Study, job: registry.Job) -> Execution:
    out = workdir() / "executed" / st.name / f"{job.name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    params = job.parameters(st.typed, db=st.db, figures_dir=st.figures, tables_dir=st.tables)
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
    """Every recorded study, ingested, with all its notebooks executed and its paper built: by the first
    process of the session that asks, read from its record by the others."""
    record = workdir() / "studies.json"
    with open(workdir() / "studies.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            built = _build()
            saved = {"studies": built, "missing": _MISSING}
            record.write_text(
                json.dumps(saved, default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o) else str(o))
            )
            return built
    saved = json.loads(record.read_text())
    _MISSING.update({k: _execution(e) for k, e in saved["missing"].items()})
    return {name: _study(d) for name, d in saved["studies"].items()}


def _execution(d: dict) -> Execution:
    return Execution(**{**d, "output": Path(d["output"])})


def _study(d: dict) -> Study:
    paths = {k: Path(d[k]) for k in ("raw", "db", "figures", "tables")}
    executions = {k: _execution(e) for k, e in d["executions"].items()}
    pdf = Path(d["paper_pdf"]) if d["paper_pdf"] else None
    return Study(**{**d, **paths, "executions": executions, "paper_pdf": pdf})


def _build() -> dict[str, Study]:
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
        jobs = [(st, job) for st in out.values() for job in notebooks_for(st)]
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
    no_aio = next(  # one PostgreSQL major, no io_method variants
        s
        for n, s in st.items()
        if by_tool[n] & {"pgbench", "sysbench"}
        and not registry.sets_io_method(s.typed)
        and not registry.spans_versions(s.typed)
    )
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
        "io_methods": (no_aio.db, no_aio.study, None),
        "pg_versions": (no_aio.db, no_aio.study, None),
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
