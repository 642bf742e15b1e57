"""One study from several machines: their raw folders -> one DuckDB with a `host` column.

A study run on several hosts has one raw folder per host key (`data/raw/<study>/<host>/`, each a whole
study folder: its own study.yaml, _setup/, run folders and host.json). `merge_study` checks that every
folder's resolved config is the same study in everything but `host` (pgfslab.config.host_folders, refusing,
with the differing keys named, folders that are not), then ingests them all into one database: `runs.host` and `targets.host`
say where each row was measured, run ids end in `@<host>` (unique across hosts), `source_file` is
`<study>/<host>/<run-id>/<file>` (the path under data/raw/), and the table `hosts` holds each host's
provenance (CPU, memory, kernel, devices, the Slurm job that ran it). Built next to the target and
renamed into place only when everything succeeded, like `study.ingest_study`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import yaml

from pgfslab.config.checks import validate
from pgfslab.config.host_folders import HostFolder, check_one_study
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.ingest.load import insert, store_held
from pgfslab.ingest.published import EXTERNAL_DIR
from pgfslab.ingest.schema import duck_type
from pgfslab.ingest.study import StudySummary, ingest_folder, new_study_database
from pgfslab.records import run_record

HOSTS: dict[str, Any] = {
    "study": pl.Utf8,
    "host": pl.Utf8,
    "hostname": pl.Utf8,
    "cpu_model": pl.Utf8,
    "cpus": pl.Int64,
    "mem_total_kb": pl.Int64,
    "kernel": pl.Utf8,
    "os": pl.Utf8,
    "devices": pl.Utf8,
    "slurm_job_id": pl.Utf8,
    "slurm_node": pl.Utf8,
    "runs": pl.Int64,
    "raw_folder": pl.Utf8,
    "host_json": pl.Utf8,
}
HOSTS_DOC = (
    "one row per host of a study merged from several machines' raw folders: its key, hostname, CPU, "
    "memory, kernel, devices (JSON) and the Slurm job that ran its share (pgfslab.ingest.merge)"
)


def host_row(hf: HostFolder, study: str, runs: int) -> dict[str, Any]:
    """The `hosts` row of a folder: its host.json (written where it ran), else what its runs recorded."""
    rec: dict[str, Any] = {}
    hj = hf.folder / "host.json"
    if hj.exists():
        rec = json.loads(hj.read_text())
    machine = rec.get("machine") or {}
    if not machine:
        for rj in sorted(hf.folder.glob("*/run.json")):
            facts = run_record.read(rj)[0].host
            machine = facts.model_dump(mode="json", exclude_unset=True) if facts else {}
            if machine:
                break
    slurm = rec.get("slurm") or {}
    return {
        "study": study,
        "host": hf.host,
        "hostname": machine.get("hostname"),
        "cpu_model": machine.get("cpu_model"),
        "cpus": machine.get("cpus"),
        "mem_total_kb": machine.get("mem_total_kb"),
        "kernel": machine.get("kernel"),
        "os": machine.get("os"),
        "devices": json.dumps(rec.get("devices")) if rec.get("devices") is not None else None,
        "slurm_job_id": slurm.get("job_id"),
        "slurm_node": slurm.get("node"),
        "runs": runs,
        "raw_folder": str(hf.folder),
        "host_json": json.dumps(rec, sort_keys=True) if rec else None,
    }


def _check_no_file_twice(con: duckdb.DuckDBPyConnection, study: str, files: dict[str, int]) -> None:
    """One raw folder given under two host keys (copied twice) is refused, naming the hosts: most of a
    host's logs byte for byte the same as another host's. A few identical logs are not that (two crashed
    runs can print the same version line), and the ingest keeps each run's copy."""
    shared = con.execute(
        """
        WITH f AS (SELECT file_id, split_part(source_file, '/', 2) AS host FROM files WHERE source_file LIKE ?)
        SELECT a.host, b.host, count(DISTINCT a.file_id)
        FROM f a JOIN f b ON a.file_id = b.file_id AND a.host <> b.host
        GROUP BY ALL""",
        [f"{study}/%"],
    ).fetchall()
    for host, other, n in shared:
        expected = files.get(host, 0)
        if expected and n * 2 > expected:
            raise LabError(
                f"merge: {n} of host {host}'s {expected} logs are byte for byte the same as host {other}'s: the "
                "same raw folder under two host keys? (two machines' measurements do not write identical logs)"
            )


def merge_study(
    folders: Sequence[HostFolder], db_path: Path, *, progress: bool = True, external: Path | None = EXTERNAL_DIR
) -> StudySummary:
    """(Re)build one study database from several hosts' raw folders, atomically (see the module's doc)."""
    common = check_one_study(folders)
    # the config every folder shares, validated as the Snakefile validates it (workflow_config.resolve)
    merged = Study.from_dict(validate(common, f"{folders[0].folder.parent}/<host>/study.yaml"))
    study = merged.study
    summary = StudySummary()
    config_yaml = "# merged from the raw folders of hosts " + ", ".join(f.host for f in folders) + "\n"
    config_yaml += yaml.safe_dump(common, sort_keys=False)
    with new_study_database(db_path, merged, config_yaml, external, summary) as con:
        con.execute(f"CREATE TABLE hosts ({', '.join(f'{c} {duck_type(t)}' for c, t in HOSTS.items())})")
        files: dict[str, int] = {}
        for hf in folders:
            before, files_before = summary.runs, summary.files
            # source_file <study>/<host>/<run-id>/<file>: the file's path under data/raw/ once every host's
            # folder sits at data/raw/<study>/<host>/ (where notebooks look for the server logs)
            ingest_folder(
                con, hf.folder, study, summary, progress=progress, host=hf.host, source_prefix=f"{study}/{hf.host}"
            )
            insert(con, "hosts", pl.DataFrame([host_row(hf, study, summary.runs - before)], schema=HOSTS))
            files[hf.host] = summary.files - files_before
        store_held(con)  # the check reads the files stored so far
        _check_no_file_twice(con, study, files)
    return summary
