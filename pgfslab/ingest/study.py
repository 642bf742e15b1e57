"""A study folder (data/raw/<study>/) -> a study database: its targets, device baselines, runs and their
logs, with the published reference results (pgfslab.ingest.published).

`ingest_study` builds a fresh database next to the target and renames it into place only when every
step succeeded (`new_study_database`): a failed study ingest leaves the old database untouched. Its rows
are stored together, one INSERT per table (pgfslab.ingest.batch). A failed run's partial logs are
ingested where they parse, and said where they do not.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from pgfslab.config.study import Study, load_study
from pgfslab.errors import LabError
from pgfslab.ingest import parsers
from pgfslab.ingest.load import batched, ingest_file, insert
from pgfslab.ingest.prefetch import Prefetch
from pgfslab.ingest.published import EXTERNAL_DIR, external_files, ingest_external
from pgfslab.ingest.run_rows import run_params, run_row, target_row
from pgfslab.ingest.schema import DEVICE_BASELINES, RUN_PARAMS, RUNS, STUDY, TARGETS, create_schema
from pgfslab.records import baseline_record, run_record, target_record
from pgfslab.records.baseline_record import Measured
from pgfslab.records.reading import not_understood
from pgfslab.records.run_record import MountFacts

# Files of a run folder that are records, not logs: provenance (run.json), the runners' own diagnostics
# (sysbench and fsmicro print only errors and parameters on stderr; their failures are in run.json), and copies
# of pgbench scripts. The server's log is read for its checkpoints (pg_log).
RUN_FILES_SKIPPED = {"run.json", "run.incomplete.json", "sysbench.stderr", "fsmicro.stderr"}


def _run_files(rdir: Path) -> Iterable[Path]:
    return sorted(
        p
        for p in rdir.iterdir()
        if p.is_file()
        and p.name not in RUN_FILES_SKIPPED
        and not p.name.endswith(".tmp")
        and not p.name.startswith("script_")
    )


def baseline_id(target: str, host: str | None = None) -> str:
    """The run_id under which a target's device-baseline files are stored (fio_job, pg_test_fsync, files); a
    merge of several machines' or days' folders ends it in `@<host>`, as their run ids (a file of the same bytes
    stored for the same run_id replaces the earlier one's rows, ingest.load)."""
    return f"device-baseline:{target}" + (f"@{host}" if host else "")


def _ingest_baseline(
    con: duckdb.DuckDBPyConnection,
    bj: Path,
    raw: Path,
    study: str,
    summary: StudySummary,
    ahead: Prefetch | None,
    prefix: Path,
    host: str | None,
) -> int:
    """A target's device baseline: its record into `device_baselines`, its fio reports and pg_test_fsync
    output into their tables, named `<prefix>/_setup/...`. Returns the number of files ingested."""
    warnings = summary.warnings
    rec, unknown = baseline_record.read(bj)
    warnings.extend(not_understood(bj, unknown))
    bl, mount = rec.baseline or Measured(), rec.mount or MountFacts()
    bid = baseline_id(rec.target, host)
    row = {
        "study": rec.study,
        "target": rec.target,
        "baseline_id": bid,
        "fs": (rec.spec or {}).get("fs"),
        "fs_label": rec.fs_label,
        "fs_implementation": mount.implementation,
        "device": mount.device,
        "fio_version": bl.fio_version,
        "ioengine": bl.ioengine,
        "direct": bl.direct,
        "duration_s": bl.duration_s,
        "pg_test_fsync_s": (rec.settings or {}).get("pg_test_fsync_s"),
        "wall_s": rec.wall_s,
        "notes": "; ".join(bl.notes) or None,
        "baseline_json": json.dumps(rec.to_json(), sort_keys=True),
    }
    insert(con, "device_baselines", pl.DataFrame([row], schema=DEVICE_BASELINES))
    n = 0
    for f, fmt in baseline_files(bj):
        got = ahead.take(f) if ahead is not None else None
        res = ingest_file(
            con,
            f,
            fmt=fmt,
            run_id=bid,
            study=study,
            source_name=summary.stored_once(str(prefix / f.relative_to(raw)), f),
            parsed=got[1] if got else None,
        )
        warnings += res.warnings
        n += 1
    return n


def baseline_files(bj: Path) -> list[tuple[Path, str]]:
    """A device baseline's fio reports and pg_test_fsync output (not empty), with their formats."""
    out = []
    for f in sorted(bj.parent.iterdir()):
        fmt = "fio" if f.suffix == ".json" and f.name not in ("baseline.json", "manifest.json") else None
        fmt = "pg-test-fsync" if f.name == "pg_test_fsync.txt" else fmt
        if fmt is not None and f.stat().st_size:
            out.append((f, fmt))
    return out


@dataclass
class StudySummary:
    runs: int = 0
    files: int = 0
    rows: int = 0
    failed_runs: list[str] = field(default_factory=list)
    skipped_runs: int = 0
    warnings: list[str] = field(default_factory=list)
    published_files: int = 0
    # the name each file of this build is stored under, and the file: a name is a file's identity in the database
    # (re-ingesting a changed file under its name replaces its rows), so two files of one build never share one
    stored: dict[str, Path] = field(default_factory=dict, repr=False)

    def stored_once(self, name: str, path: Path) -> str:
        """`name`, the `source_file` `path` is stored under; a LabError when another file of this build has it."""
        other = self.stored.setdefault(name, path)
        if other != path:
            raise LabError(
                f"{path}: would be stored as {name}, the name {other} has in this build, and one file's rows "
                "would replace the other's (two folders of one name ingested together?)"
            )
        return name


def ingest_study(
    raw: Path, db_path: Path, *, progress: bool = True, external: Path | None = EXTERNAL_DIR
) -> StudySummary:
    """(Re)build the study database from a data/raw/<study>/ folder, atomically, with the published
    reference results of `external` (data/external/; None leaves them out)."""
    if not raw.is_dir():
        raise LabError(f"{raw}: no such study folder")
    study_file = raw / "study.yaml"
    if not study_file.exists():
        raise LabError(f"{study_file}: missing (every study folder carries its resolved config)")
    study = load_study(study_file)  # the frozen config, validated: a study folder says what it measured
    summary = StudySummary()
    # every file parsed ahead, in the order stored: the published ones, the device baselines, the runs' logs
    files = [*(external_files(external) if external is not None else []), *folder_files(raw)]
    with (
        Prefetch(files) as ahead,
        new_study_database(db_path, study, study_file.read_text(), external, summary, ahead=ahead) as con,
    ):
        ingest_folder(con, raw, study.study, summary, progress=progress, ahead=ahead)
    return summary


@contextlib.contextmanager
def new_study_database(
    db_path: Path,
    study: Study,
    config_yaml: str,
    external: Path | None,
    summary: StudySummary,
    *,
    ahead: Prefetch | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A study database built beside `db_path` (`.building`) and put in its place only when the block
    succeeds: a failed ingest leaves the old database as it was. Inside: the schema, the `study` row and
    the published reference results of `external` (None leaves them out); the caller adds the runs."""
    tmp = db_path.with_name(db_path.name + ".building")
    tmp.unlink(missing_ok=True)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        create_schema(con)
        row = {
            "study": study.study,
            "title": study.title,
            "authors": json.dumps(list(study.authors)),
            "config_yaml": config_yaml,
        }
        with batched(con):  # a new database, all or nothing anyway: rows stored together (batch.py)
            insert(con, "study", pl.DataFrame([row], schema=STUDY))
            if external is not None:
                ext = ingest_external(con, external, ahead)
                summary.published_files = ext.files
                summary.warnings += ext.warnings
            yield con
        con.execute("CHECKPOINT")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, db_path)


def ingest_folder(
    con: duckdb.DuckDBPyConnection,
    raw: Path,
    study: str,
    summary: StudySummary,
    *,
    progress: bool = True,
    host: str | None = None,
    source_prefix: str | None = None,
    ahead: Prefetch | None = None,
) -> None:
    """Targets, runs and logs of one raw folder (of study `study`) into an open database. `host` (a merge of several
    machines' folders, pgfslab.ingest.merge) labels its runs and targets and ends its run ids in
    `@<host>`; `source_file` names are `<source_prefix>/<run-id>/<file>` (default prefix: the folder's name).
    `ahead`: a Prefetch holding `folder_files(raw)` (else the folder gets its own)."""
    if ahead is None:
        with Prefetch(folder_files(raw)) as own:
            ingest_folder(
                con, raw, study, summary, progress=progress, host=host, source_prefix=source_prefix, ahead=own
            )
        return
    prefix = Path(raw.name if source_prefix is None else source_prefix)
    for tj in sorted(raw.glob("_setup/*/target.json")):
        trec, unknown = target_record.read(tj)
        summary.warnings.extend(not_understood(tj, unknown))
        if host is not None:
            trec.host_key = host
        insert(con, "targets", pl.DataFrame([target_row(trec)], schema=TARGETS))
    for bj in _baselines(raw):
        summary.files += _ingest_baseline(con, bj, raw, study, summary, ahead, prefix, host)
    _ingest_runs(con, raw, _run_dirs(raw), study, summary, ahead, progress=progress, host=host, prefix=prefix)


def _baselines(raw: Path) -> list[Path]:
    return sorted(raw.glob("_setup/*/device/baseline.json"))


def _run_dirs(raw: Path) -> list[Path]:
    return sorted(p for p in raw.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def folder_files(raw: Path) -> list[Path | tuple[Path, str]]:
    """The files `ingest_folder` parses, in its order: the device baselines' (with their formats), then the
    runs' logs (not empty)."""
    logs = [f for d in _run_dirs(raw) if (d / "run.json").exists() for f in _run_files(d) if f.stat().st_size]
    return [*(item for bj in _baselines(raw) for item in baseline_files(bj)), *logs]


def _ingest_runs(
    con: duckdb.DuckDBPyConnection,
    raw: Path,
    run_dirs: list[Path],
    study: str,
    summary: StudySummary,
    ahead: Prefetch,
    *,
    progress: bool,
    host: str | None,
    prefix: Path,
) -> None:
    for i, rdir in enumerate(run_dirs, 1):
        rj = rdir / "run.json"
        if not rj.exists():
            marker = rdir / "run.incomplete.json"
            if marker.exists():
                summary.warnings.append(f"{rdir}: incomplete run (no run.json), left out")
            continue
        run, unknown = run_record.read(rj)
        run.require("run_id", "study", "target", where=str(rj))
        summary.warnings.extend(not_understood(rj, unknown))
        if host is not None:
            suffix = f"@{host}"
            run.host_key = host
            run.run_id = str(run.run_id).removesuffix(suffix) + suffix
        insert(con, "runs", pl.DataFrame([run_row(run)], schema=RUNS))
        insert(con, "run_params", pl.DataFrame(run_params(run), schema=RUN_PARAMS))
        summary.runs += 1
        if run.status == "skipped":  # an optional precision round that was not needed: no output
            summary.skipped_runs += 1
            continue
        if run.status != "ok":
            summary.failed_runs.append(f"{run.run_id}: {run.status}: {run.error}")
        for f in _run_files(rdir):
            if f.stat().st_size == 0:  # an empty stream (a tool that printed nothing) holds no rows
                summary.warnings.append(f"{f}: not ingested (empty file)")
                continue
            # source_file is <study>/<run-id>/<file>: the same on every machine the folder is copied to
            got = ahead.take(f)
            try:
                res = ingest_file(
                    con,
                    f,
                    fmt=got[0] if got else None,
                    run_id=str(run.run_id),
                    study=study,
                    source_name=summary.stored_once(str(prefix / f.relative_to(raw)), f),
                    parsed=got[1] if got else None,
                )
            except (parsers.ParseError, LabError) as exc:
                if run.status == "ok":
                    raise
                # a failed run's partial logs: what parses is in, the rest is said (never half a file)
                summary.warnings.append(f"{f}: not ingested (partial output of a failed run): {exc}")
                continue
            summary.files += 1
            summary.rows += res.rows
            summary.warnings += res.warnings
        if progress and (i % 10 == 0 or i == len(run_dirs)):
            print(
                f"[ingest {study}{'@' + host if host else ''}] {i}/{len(run_dirs)} run folders, {summary.rows} rows",
                file=sys.stderr,
                flush=True,
            )
