"""The study config as Snakemake hands it over: which file(s), which overrides, or a raw folder alone.

Snakemake loads `configfile: config/default.yaml` and deep-merges `--configfile` files and `--config`
values into it. For a study that merge is wrong (the default study's targets would join every other
study's), so a config file named on the command line replaces the default whole and only `--config`
values are applied over it. These keys steer the workflow and are not part of a study:
    raw_only=1 study=NAME   re-analyse data/raw/NAME/ from its frozen study.yaml (no runs); a study
                            folder holding host folders (data/raw/NAME/<host>/) is merged
    config=PATH             the same as --configfile PATH (older command lines)
    hosts=a,b               run the whole plan once per host key, each as one job (`rule host_share`,
                            the Slurm profile's unit), then merge the hosts' raw folders
    pin_hosts=1             with hosts: each host key is a Slurm node name, its job goes there (--nodelist)
(`host=KEY` is a study key: the one host this Snakemake runs for, see the schema.)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from pgfslab import yaml_text
from pgfslab.config import host_folders
from pgfslab.config import study as labcfg
from pgfslab.config.host_folders import HOST_KEY
from pgfslab.errors import LabError

CONTROL_KEYS = ("raw_only", "config", "hosts", "pin_hosts", "day2")


def hosts(config: dict[str, Any]) -> list[str]:
    """The host keys of `--config hosts=a,b` (or a YAML list), checked; [] when not given."""
    value = config.get("hosts")
    if value in (None, "", []):
        return []
    items = value if isinstance(value, list) else str(value).strip("[]").split(",")
    keys = [str(k).strip() for k in items if str(k).strip()]
    bad = [k for k in keys if not HOST_KEY.match(k)]
    if bad or len(set(keys)) != len(keys):
        raise LabError(f"hosts={value}: host keys are distinct names of a-z, 0-9, _ and - (up to 32): {bad or keys}")
    return keys


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _typed(value: Any) -> Any:
    """Snakemake hands nested --config values over as text (`run={duration_s: 5}` gives '5'): a text that
    YAML reads as a number, boolean or null is that value; every other text stays text."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = yaml_text.safe_load(value)
        except yaml.YAMLError:
            return value
        return (
            parsed
            if isinstance(parsed, (int, float, bool)) or parsed is None and value.strip() in ("null", "~")
            else value
        )
    return value


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise LabError(f"{path}: config file not found")
    try:
        raw = yaml_text.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise LabError(f"{path}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise LabError(f"{path}: a study config is a mapping of keys (study, targets, workloads, ...)")
    return raw


def frozen_json(cfg: dict[str, Any]) -> str:
    """The resolved study config as the freeze rule passes it (its param and `pgfslab freeze --json`): in
    the config's own order, never sorted. The order of `targets` and `workloads` means something (the first
    target is every comparison's baseline; tables and figures follow it); sorted keys put btrfs before ext4."""
    return json.dumps(cfg)


def run_config(cfg: dict[str, Any], build: Path = Path("build")) -> Path:
    """The resolved config the machine-side rules read (prepare, device baseline, run), written when the
    Snakefile is parsed, and only when its content changed: `build/<study>/run-config[-<host>].json`.

    Not the frozen `data/raw/<study>/study.yaml`, and not an input of those rules. A job re-runs when its
    own parameters change (`params: spec`, pgfslab.config.study.Study.run_fingerprint); but Snakemake (9.x) does
    not compare a job's parameters while a job it takes input from must run first, and the freeze re-runs
    whenever the config changes. With the frozen file as their input, a changed workload was frozen and
    analysed in one `make run` and measured only in the next: a paper whose frozen config did not match its
    runs. The file written here exists before any job starts, so the parameters are compared in one pass."""
    host = cfg.get("host")
    path = build / str(cfg["study"]) / (f"run-config-{host}.json" if host else "run-config.json")
    text = frozen_json(cfg)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _shown(path: Path) -> str:
    """A config file as the frozen config's source names it: relative to the working directory when it is
    inside it. Snakemake makes `--configfile` paths absolute and `--config config=` leaves them as given;
    the same file must give the same source, or the frozen config (whose params include it) is written
    again and the whole analysis re-runs when a study is started one way after the other."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def resolve(
    config: dict[str, Any], *, cli_files: list[str], cli_overrides: dict[str, Any], default_file: str
) -> tuple[bool, dict[str, Any], str]:
    """(raw_only, validated study config, where it came from) for the Snakefile."""
    raw_only = bool(cli_overrides.get("raw_only") or config.get("raw_only"))
    if raw_only:
        study = cli_overrides.get("study")
        if not study:
            raise LabError("raw_only needs --config study=NAME (a folder data/raw/NAME/)")
        frozen = labcfg.raw_dir(str(study)) / "study.yaml"
        if not frozen.exists():
            folders = host_folders.host_folders(labcfg.raw_dir(str(study)))
            if folders:  # the raw folders of several hosts, no study.yaml of the study itself: theirs, less `host`
                common = host_folders.check_one_study(host_folders.study_folders(labcfg.raw_dir(str(study))))
                source = f"{labcfg.raw_dir(str(study))}/<host>/study.yaml"
                return True, labcfg.validate(common, source), source
            raise LabError(f"{frozen}: missing; is data/raw/{study}/ a study folder?")
        return True, labcfg.validate(yaml_text.safe_load(frozen.read_text()), str(frozen)), str(frozen)
    files = [Path(f) for f in cli_files]
    if cli_overrides.get("config"):
        files.append(Path(str(cli_overrides["config"])))
    overrides = {k: _typed(v) for k, v in cli_overrides.items() if k not in CONTROL_KEYS}
    if files:
        merged: dict[str, Any] = {}
        for f in files:
            merged = _merge(merged, _read(f))
        source = " + ".join(map(_shown, files))
    else:
        merged = {k: v for k, v in config.items() if k not in CONTROL_KEYS}
        source = default_file
        files = [Path(default_file)]
    merged = _merge(merged, overrides)
    if overrides:
        source += " with --config " + " ".join(f"{k}={json_text(v)}" for k, v in overrides.items())
    return False, labcfg.resolve(merged, source, files[0].parent), source


def json_text(value: Any) -> str:
    # a plain scalar is dumped as a document of its own ("h2\n...\n"): without its end marker
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...").strip()
