"""One study from several machines: their raw folders -> one DuckDB with a `host` column.

A study run on several hosts has one raw folder per host key (`data/raw/<study>/<host>/`, each a whole
study folder: its own study.yaml, _setup/, run folders and host.json). `merge_study` checks that every
folder's resolved config is the same study in everything but `host` (refusing, with the differing keys
named, folders that are not), then ingests them all into one database: `runs.host` and `targets.host`
say where each row was measured, run ids end in `@<host>` (unique across hosts), `source_file` is
`<study>/<host>/<run-id>/<file>` (the path under data/raw/), and the table `hosts` holds each host's
provenance (CPU, memory, kernel, devices, the Slurm job that ran it). Built next to the target and
renamed into place only when everything succeeded, like `load.ingest_study`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import yaml

from pgfslab import yaml_text
from pgfslab.errors import LabError
from pgfslab.ingest import load
from pgfslab.ingest.folders import host_folders

HOST_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# Keys of a resolved study config that may differ between the hosts of one study.
HOST_KEYS: frozenset[str] = frozenset({"host"})
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


@dataclass(frozen=True)
class HostFolder:
    """One host's raw folder of a study, with its resolved config and host key."""

    host: str
    folder: Path
    cfg: dict[str, Any]


def read_config(folder: Path) -> dict[str, Any]:
    study_file = folder / "study.yaml"
    if not study_file.exists():
        raise LabError(f"{study_file}: missing (every study folder carries its resolved config)")
    cfg = yaml_text.safe_load(study_file.read_text())
    if not isinstance(cfg, dict):
        raise LabError(f"{study_file}: not a study config")
    return cfg


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Dotted paths of the keys where two configs differ (a key one of them lacks counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(where)
            else:
                out += differences(a[key], b[key], where)
        return out
    return [] if a == b else [path or "(top level)"]


def without_host(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in HOST_KEYS}


def check_one_study(folders: Sequence[HostFolder]) -> dict[str, Any]:
    """The study config the folders share (without `host`); LabError naming every folder that differs from
    the first one and the keys in which it does."""
    if not folders:
        raise LabError("merge: no raw folders given")
    first = folders[0]
    common = without_host(first.cfg)
    problems = []
    for other in folders[1:]:
        keys = differences(common, without_host(other.cfg))
        if keys:
            shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
            problems.append(f"{other.folder} differs from {first.folder} in {shown}")
    if problems:
        raise LabError(
            "merge: these raw folders are not one study (their resolved configs may differ only in `host`):\n  "
            + "\n  ".join(problems)
        )
    seen: dict[str, Path] = {}
    for f in folders:
        if f.host in seen:
            raise LabError(
                f"merge: host key {f.host!r} names two folders ({seen[f.host]}, {f.folder}); "
                "give each its own with FOLDER=KEY"
            )
        seen[f.host] = f.folder
    return common


def _recorded_hostname(folder: Path) -> str | None:
    for rj in sorted(folder.glob("*/run.json")):
        try:
            name = (json.loads(rj.read_text()).get("host") or {}).get("hostname")
        except (OSError, json.JSONDecodeError):
            continue
        if name:
            return str(name)
    return None


def host_key_of(folder: Path, cfg: dict[str, Any], given: str | None = None) -> str:
    """A folder's host key: the one given (FOLDER=KEY), else its config's `host`, else (a folder from a
    study run on one machine) the hostname its runs recorded, as a key."""
    if given is not None:
        key = given
    elif cfg.get("host"):
        key = str(cfg["host"])
    else:
        name = _recorded_hostname(folder)
        if name is None:
            raise LabError(
                f"{folder}: no host key (no `host` in its study.yaml, no run.json): give one as {folder}=KEY"
            )
        key = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:32] or "host"
    if not HOST_KEY.match(key):
        raise LabError(
            f"{folder}: host key {key!r}: letters a-z, digits, _ and - only (up to 32, not starting with _ or -)"
        )
    if cfg.get("host") and cfg["host"] != key:
        raise LabError(f"{folder}: its study.yaml says host {cfg['host']!r}, not {key!r}")
    return key


def parse_folder_args(items: Iterable[str]) -> list[HostFolder]:
    """`FOLDER` or `FOLDER=KEY` arguments -> host folders. A study folder whose host folders are inside it
    (data/raw/<study>/ with <host>/ subfolders) stands for all of them."""
    out: list[HostFolder] = []
    for item in items:
        text, _, key = item.partition("=")
        folder = Path(text)
        if not folder.is_dir():
            raise LabError(f"{folder}: no such raw folder")
        inner = host_folders(folder)
        if inner and not key:
            out += [HostFolder(host_key_of(f, c := read_config(f)), f, c) for f in inner]
            continue
        cfg = read_config(folder)
        out.append(HostFolder(host_key_of(folder, cfg, key or None), folder, cfg))
    return out


def study_folders(root: Path) -> list[HostFolder]:
    """The host folders of data/raw/<study>/ (checked to be one study, also against the study's own
    study.yaml when it has one, as a Slurm run leaves)."""
    folders = [HostFolder(host_key_of(f, c := read_config(f)), f, c) for f in host_folders(root)]
    if not folders:
        raise LabError(f"{root}: no host folders (<host>/study.yaml)")
    check_one_study(folders)
    if (root / "study.yaml").exists():
        check_one_study([HostFolder("-", root, read_config(root)), *folders])
    return folders


def host_row(hf: HostFolder, runs: int) -> dict[str, Any]:
    """The `hosts` row of a folder: its host.json (written where it ran), else what its runs recorded."""
    rec: dict[str, Any] = {}
    hj = hf.folder / "host.json"
    if hj.exists():
        rec = json.loads(hj.read_text())
    machine = rec.get("machine") or {}
    if not machine:
        for rj in sorted(hf.folder.glob("*/run.json")):
            machine = json.loads(rj.read_text()).get("host") or {}
            if machine:
                break
    slurm = rec.get("slurm") or {}
    return {
        "study": hf.cfg["study"],
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
    folders: Sequence[HostFolder], db_path: Path, *, progress: bool = True, external: Path | None = load.EXTERNAL_DIR
) -> load.StudySummary:
    """(Re)build one study database from several hosts' raw folders, atomically (see the module's doc)."""
    common = check_one_study(folders)
    study = common["study"]
    summary = load.StudySummary()
    config_yaml = "# merged from the raw folders of hosts " + ", ".join(f.host for f in folders) + "\n"
    config_yaml += yaml.safe_dump(common, sort_keys=False)
    with load.new_study_database(db_path, common, config_yaml, external, summary) as con:
        con.execute(f"CREATE TABLE hosts ({', '.join(f'{c} {load._duck_type(t)}' for c, t in HOSTS.items())})")
        files: dict[str, int] = {}
        for hf in folders:
            before, files_before = summary.runs, summary.files
            # source_file <study>/<host>/<run-id>/<file>: the file's path under data/raw/ once every host's
            # folder sits at data/raw/<study>/<host>/ (where notebooks look for the server logs)
            load.ingest_folder(
                con, hf.folder, hf.cfg, summary, progress=progress, host=hf.host, source_prefix=f"{study}/{hf.host}"
            )
            load._insert(con, "hosts", pl.DataFrame([host_row(hf, summary.runs - before)], schema=HOSTS))
            files[hf.host] = summary.files - files_before
        load.store_held(con)  # the check reads the files stored so far
        _check_no_file_twice(con, study, files)
    return summary
