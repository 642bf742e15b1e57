"""Which notebooks a study runs, with which parameters: the one list Snakemake and the tests both use.

A notebook never meets a study without its data, so what runs is decided from the study config (the
tools its workloads use):

    throughput_stability-<wl>   every pgbench and sysbench workload (per-second progress)
    latency_percentiles-<wl>    pgbench workloads with a log (aggregate or per transaction), sysbench
    sysbench_qps-<wl>           sysbench workloads (per-second queries read/write/other; seed 002's table)
    variance_significance       any pgbench/sysbench workload
    precision                   any pgbench/sysbench workload (precision per cell, detectable differences)
    exchangeability             any pgbench/sysbench workload (trend, first round, two groups, outliers; A/A band)
    dirty_memory_checkpoints    any pgbench/sysbench workload (meminfo is always sampled)
    scaling                     any pgbench/sysbench workload
    io_methods                  a workload that sets io_method (PostgreSQL 18): its variants against sync
    pg_versions                 targets on more than one PostgreSQL major (`postgres.versions`)
    compression_footprint       always
    fs_micro                    fsmicro workloads
    local_vs_published          a workload or target a seed document also measured (`comparable`)
    seed_verdicts               a study that names the seeds it reproduces (`seeds`)

Every job writes build/<study>/notebooks/<name>.ipynb (executed), figures/<study>/<figure>.{svg,png,pdf},
build/<study>/tables/<name>.parquet (its table) and build/<study>/tables/<name>.json (what it gives the
paper, pgfslab.analysis.report.Publication).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgfslab import paths
from pgfslab.config.study import Study
from pgfslab.tools import TOOLS

FIGURE_FORMATS = (".svg", ".png", ".pdf")
PER_WORKLOAD = ("throughput_stability", "latency_percentiles", "sysbench_qps")
STUDY_WIDE = (
    "compression_footprint",
    "variance_significance",
    "precision",
    "exchangeability",
    "dirty_memory_checkpoints",
    "scaling",
    "io_methods",
    "pg_versions",
    "fs_micro",
    "local_vs_published",
    "seed_verdicts",
)
ALL = (*PER_WORKLOAD, *STUDY_WIDE)
# figures a notebook writes when they are not one named like the job
FIGURES = {"fs_micro": ("fs_micro-ops", "fs_micro-latency")}


@dataclass(frozen=True)
class Job:
    """One notebook execution of a study."""

    name: str  # <notebook>[-<workload>]: names the executed copy, table and figure
    notebook: str  # notebooks/<notebook>.ipynb
    workload: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # parameters beyond the common ones

    @property
    def source(self) -> Path:
        return paths.NOTEBOOKS / f"{self.notebook}.ipynb"

    @property
    def figures(self) -> tuple[str, ...]:
        return FIGURES.get(self.notebook, (self.name,))

    def outputs(self, study: str) -> dict[str, Any]:
        """Every file the job writes, relative to the working directory."""
        return {
            "nb": f"build/{study}/notebooks/{self.name}.ipynb",
            "figs": [f"figures/{study}/{f}{ext}" for f in self.figures for ext in FIGURE_FORMATS],
            "table": f"build/{study}/tables/{self.name}.parquet",
            "publication": f"build/{study}/tables/{self.name}.json",
        }

    def parameters(self, study: Study, *, db: Path, figures_dir: Path, tables_dir: Path) -> dict[str, Any]:
        """The papermill parameters (paths absolute, so the kernel's working directory never matters)."""
        a = study.analysis
        out: dict[str, Any] = {
            "db": str(Path(db).absolute()),
            "study": study.study,
            "figures_dir": str(Path(figures_dir).absolute()),
            "tables_dir": str(Path(tables_dir).absolute()),
            "alpha": a.alpha,
            "trim_s": a.trim_s,
        }
        if self.workload is not None:
            out["workload"] = self.workload
        if self.notebook == "throughput_stability":
            out["moving_average_s"] = a.moving_average_s
        return out | self.extra


def _with_rungs(study: Study, names: list[str]) -> list[str]:
    """A ladder study's workloads per rung they run at, as the database names them (`tpcb.d1`, `tpcb.d2`,
    ...; a workload with `rungs: [2]` only at its own)."""
    if not study.ladder_rungs():
        return names
    return [f"{w}.d{i}" for w in names for i in study.rungs_for(w) if i is not None]


def series_workloads(study: Study) -> list[str]:
    """Workloads with per-second throughput (pgbench -P, sysbench --report-interval); fsmicro has none."""
    return _with_rungs(study, [w for w, wl in study.workloads.items() if TOOLS[wl.tool].per_second])


def sysbench_workloads(study: Study) -> list[str]:
    """Workloads with sysbench's per-second queries by kind (read, write, other)."""
    return _with_rungs(study, [w for w, wl in study.workloads.items() if TOOLS[wl.tool].query_kinds])


def latency_workloads(study: Study) -> list[str]:
    return _with_rungs(
        study,
        [w for w, wl in study.workloads.items() if wl.options.logs_latency()],
    )


def comparable(study: Study) -> bool:
    """Does the study measure something the published results (data/external/) also report?"""
    if any(wl.options.like_published() for wl in study.workloads.values()):
        return True  # seeds 001 (pgbench), 002 (sysbench), 003 (fsmicro)
    return any(
        t.fs == "btrfs" and any(o.startswith("compress") for o in t.mount_options) for t in study.targets.values()
    )  # seeds 002, 004: compression


def sets_io_method(study: Study) -> bool:
    """Does a PostgreSQL workload set io_method (PostgreSQL 18's asynchronous I/O) in its postgres_settings?"""
    return any(
        "io_method" in (wl.postgres_settings or {})
        for wl in study.workloads.values()
        if TOOLS[wl.tool].compared_over_runs
    )


def spans_versions(study: Study) -> bool:
    """Do the study's targets run more than one PostgreSQL major (`postgres.versions`, or targets that name
    their own)?"""
    return len({study.pg_version_of(t) for t in study.targets}) > 1


def jobs(study: Study) -> list[Job]:
    """Every notebook the study runs, in the paper's order."""
    series = series_workloads(study)
    out = [Job(f"throughput_stability-{w}", "throughput_stability", w) for w in series]
    out += [Job(f"latency_percentiles-{w}", "latency_percentiles", w) for w in latency_workloads(study)]
    out += [Job(f"sysbench_qps-{w}", "sysbench_qps", w) for w in sysbench_workloads(study)]
    out.append(Job("compression_footprint", "compression_footprint"))
    if series:
        out += [Job(n, n) for n in ("variance_significance", "precision", "dirty_memory_checkpoints", "scaling")]
        out.append(Job("exchangeability", "exchangeability"))
    if sets_io_method(study):
        out.append(Job("io_methods", "io_methods"))
    if series and spans_versions(study):
        out.append(Job("pg_versions", "pg_versions"))
    if "fsmicro" in study.tools():
        out.append(Job("fs_micro", "fs_micro"))
    if comparable(study):
        out.append(Job("local_vs_published", "local_vs_published"))
    if study.seeds:
        out.append(Job("seed_verdicts", "seed_verdicts"))
    return out


def job(study: Study, name: str) -> Job:
    for j in jobs(study):
        if j.name == name:
            return j
    raise KeyError(
        f"study {study.study!r} runs no notebook {name!r} (it runs: {', '.join(j.name for j in jobs(study))})"
    )


def stage_code() -> dict[str, list[Path]]:
    """The package code each stage runs (Snakemake re-runs a stage when it changes)."""
    pkg = paths.LAB / "pgfslab"

    def code(folder: str) -> list[Path]:
        # the data a stage reads is its code too: the ingest's schema.sql, the seeds' claims.yaml
        return sorted(p for p in (pkg / folder).rglob("*") if p.suffix in (".py", ".sql", ".yaml"))

    ingest, analysis = code("ingest"), code("analysis")
    paper = code("paper") + [paths.PAPER_TEMPLATE]
    return {"ingest": ingest, "analyse": analysis, "paper": [*paper, *analysis]}
