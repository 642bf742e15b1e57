"""One study from several machines, before any data is read: each host's raw folder, its host key and its
resolved config, checked to be one study.

A study run on several hosts has one raw folder per host key (`data/raw/<study>/<host>/`, each a whole
study folder with its own study.yaml). `study_folders` finds them and checks that their resolved configs
differ only in `host`; `parse_folder_args` reads `FOLDER[=KEY]` command-line arguments. Only the standard
library and YAML: the Snakefile asks at every start-up (pgfslab.ingest.merge ingests the folders).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgfslab import yaml_text
from pgfslab.config.checks import validate
from pgfslab.errors import LabError
from pgfslab.records import run_record

HOST_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# Keys of a resolved study config that may differ between the hosts of one study.
HOST_KEYS: frozenset[str] = frozenset({"host"})


def host_folders(root: Path) -> list[Path]:
    """The host folders of a study folder: subfolders that carry a study.yaml of their own (run folders
    and _setup/ never do). Empty for a study run on one machine."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "study.yaml").exists()
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


def _as_read_today(folder: HostFolder) -> dict[str, Any]:
    """The folder's config as this lab reads it, defaults filled in: a key the lab gained since one of the
    folders was recorded (a sampler at its default rate) is not a difference between two runs of one study."""
    return validate(without_host(folder.cfg), str(folder.folder / "study.yaml"))


def check_one_study(folders: Sequence[HostFolder]) -> dict[str, Any]:
    """The study config the folders share (without `host`); LabError naming every folder that differs from
    the first one and the keys in which it does."""
    if not folders:
        raise LabError("merge: no raw folders given")
    first = folders[0]
    common = without_host(first.cfg)
    today = _as_read_today(first)
    problems = []
    for other in folders[1:]:
        keys = differences(today, _as_read_today(other))
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
            facts = run_record.read(rj)[0].host
        except LabError:
            continue
        name = facts.hostname if facts else None
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
