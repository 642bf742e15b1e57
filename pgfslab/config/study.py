"""Load a study config, validate it against workflow/schemas/config.schema.yaml, and expand it into a run plan.

The plan interleaves repeats (A B C A B C ..., never A A A B B B) so that slow drift of the
machine cannot masquerade as a difference between targets.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from pgfslab import paths, yaml_text
from pgfslab.config import fsmicro_spec, targets, vm_settings
from pgfslab.errors import LabError

REPO = paths.LAB
SCHEMA_PATH = paths.SCHEMA


@dataclass(frozen=True)
class RunSpec:
    """One run of the plan: a (target, workload, clients) cell and its repeat number."""

    run_id: str
    plan_index: int
    target: str
    workload: str
    clients: int
    repeat: int
    optional: bool = False  # a round beyond precision.min_repeats: run only while the cell is not yet precise
    rung: int | None = None  # the data-set ladder's rung (1-based), None in a study without a ladder

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=2)
def _schema_of(stamp: tuple[int, int]) -> tuple[dict[str, Any], jsonschema.Draft202012Validator]:
    schema = yaml_text.safe_load(SCHEMA_PATH.read_text())
    return schema, jsonschema.Draft202012Validator(schema)


def _schema() -> tuple[dict[str, Any], jsonschema.Draft202012Validator]:
    """The config schema and its validator, parsed once per version of the file (every command, run and
    notebook validates a config: parsing the schema each time took 0.1 s, 0.3 s under load)."""
    st = SCHEMA_PATH.stat()
    return _schema_of((st.st_mtime_ns, st.st_size))


def _fill_defaults(instance: Any, schema: dict[str, Any]) -> Any:
    """Fill `default`s from the schema into a validated instance (objects only, recursively)."""
    if not isinstance(instance, dict) or schema.get("type") != "object":
        return instance
    props: dict[str, Any] = schema.get("properties", {})
    for key, sub in props.items():
        if key not in instance and "default" in sub:
            instance[key] = json.loads(json.dumps(sub["default"]))
        if key in instance:
            instance[key] = _fill_defaults(instance[key], sub)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in instance.items():
            if key not in props:
                instance[key] = _fill_defaults(value, extra)
    return instance


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return path or "(top level)"


def validate(raw: Any, source: str = "<config>") -> dict[str, Any]:
    """Validate a config mapping and return it with defaults filled in.

    Raises LabError naming the file and the offending key.
    """
    if not isinstance(raw, dict):
        raise LabError(f"{source}: a study config must be a mapping, got {type(raw).__name__}")
    schema, validator = _schema()
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for err in errors[:10]:
            msg = err.message
            if err.validator == "additionalProperties":
                msg = f"unknown key: {msg}"
            lines.append(f"{source}: {_where(err)}: {msg}")
        raise LabError("invalid study config\n  " + "\n  ".join(lines))
    _check_characters(raw, source)
    cfg = _fill_defaults(json.loads(json.dumps(raw)), schema)
    _check_semantics(cfg, source)
    _resolve_drop_caches(raw, cfg, source)
    return cfg


def _check_characters(value: Any, source: str, path: str = "") -> None:
    """No control character (a newline above all) in any key or string value: the schema's patterns
    end in `$`, which Python's re also matches before a final newline, and a newline in a setting or a
    path could start a line of its own in a config file or a command."""
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and any(ord(c) < 32 or ord(c) == 127 for c in k):
                raise LabError(f"{source}: {path or '(top level)'}: key {k!r} contains a control character")
            _check_characters(v, source, where)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_characters(v, source, f"{path}.{i}")
    elif isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise LabError(f"{source}: {path}: {value!r} contains a control character (a newline?)")


def _resolve_drop_caches(raw: dict[str, Any], cfg: dict[str, Any], source: str) -> None:
    """os.drop_caches and run.drop_caches are one setting: they must agree; the one given wins."""
    given_os = (raw.get("os") or {}).get("drop_caches")
    given_run = (raw.get("run") or {}).get("drop_caches")
    if given_os is not None and given_run is not None and given_os != given_run:
        raise LabError(
            f"{source}: os.drop_caches ({given_os}) and run.drop_caches ({given_run}) disagree; give one of them"
        )
    value = given_os if given_os is not None else cfg["run"]["drop_caches"]
    cfg["os"]["drop_caches"] = cfg["run"]["drop_caches"] = value


def _check_semantics(cfg: dict[str, Any], source: str) -> None:
    devices: dict[str, str] = {}
    for name, spec in cfg["targets"].items():
        for problem in targets.spec_problems(spec):
            raise LabError(f"{source}: targets.{name}: {problem}")
        if spec.get("device"):
            if spec["device"] in devices:
                raise LabError(
                    f"{source}: targets.{name}: device {spec['device']} is also target {devices[spec['device']]}'s"
                )
            devices[spec["device"]] = name
    for name, spec in cfg["targets"].items():
        wal = spec.get("wal_on")
        if wal is None:
            continue
        where = f"{source}: targets.{name}.wal_on"
        if wal == name:
            raise LabError(f"{where}: a target cannot hold its own WAL on itself; name another target")
        if wal not in cfg["targets"]:
            raise LabError(f"{where}: {wal!r} is not a target (targets: {', '.join(cfg['targets'])})")
        if cfg["targets"][wal].get("wal_on"):
            raise LabError(f"{where}: target {wal} keeps its own WAL on another target; WAL targets do not chain")
        if targets.kind(spec) == "existing" or targets.kind(cfg["targets"][wal]) == "existing":
            raise LabError(f"{where}: WAL on another target needs targets the lab prepares (not fs: existing)")
    for name in [None, *cfg["workloads"]]:
        try:
            vm_settings.settings_from_config(cfg["os"] if name is None else os_for(cfg, name))
        except LabError as exc:
            where = "os" if name is None else f"workloads.{name}.os"
            raise LabError(f"{source}: {where}: {str(exc).removeprefix('os: ')}") from None
    if cfg["resources"].get("blkio"):
        for name, spec in cfg["targets"].items():
            if targets.kind(spec) in ("tmpfs", "dir"):
                raise LabError(
                    f"{source}: resources.blkio: target {name} ({spec['fs']}) has no block device to throttle"
                )
    snaps = cfg.get("snapshots")
    if snaps:
        for name in snaps["targets"]:
            if name not in cfg["targets"]:
                raise LabError(
                    f"{source}: snapshots.targets: {name!r} is not a target (targets: {', '.join(cfg['targets'])})"
                )
            spec = cfg["targets"][name]
            if spec["fs"] not in ("btrfs", "zfs") or targets.kind(spec) not in ("image", "device"):
                raise LabError(
                    f"{source}: snapshots.targets: {name} is {spec['fs']} ({targets.kind(spec)}): "
                    "the lab snapshots btrfs image or device targets and zfs targets only (LVM thin "
                    "snapshots would need device-mapper)"
                )
    _check_precision(cfg, source)
    _check_ladder(cfg, source)
    for name, wl in cfg["workloads"].items():
        _check_workload(name, wl, source)
        reps = wl.get("repeats")
        if isinstance(reps, dict):
            unknown = sorted(set(int(k) for k in reps) - set(wl["clients"]))
            if unknown:
                raise LabError(
                    f"{source}: workloads.{name}.repeats: client counts {unknown} are not in clients {wl['clients']}"
                )


def _check_ladder(cfg: dict[str, Any], source: str) -> None:
    """A ladder's lists match the tools, climb, have one length, and its memory limit is said once."""
    lad = cfg.get("ladder")
    if not lad:
        return
    used = tools(cfg)
    scales, sizes = lad.get("scales"), lad.get("table_sizes")
    if not scales and not sizes:
        raise LabError(f"{source}: ladder: give `scales` (pgbench) or `table_sizes` (sysbench)")
    if "pgbench" in used and not scales:
        raise LabError(f"{source}: ladder: the study runs pgbench: give `scales`, one per rung")
    if "sysbench" in used and not sizes:
        raise LabError(f"{source}: ladder: the study runs sysbench: give `table_sizes`, one per rung")
    if scales and sizes and len(scales) != len(sizes):
        raise LabError(f"{source}: ladder: scales ({len(scales)}) and table_sizes ({len(sizes)}) differ in length")
    for key, values in (("scales", scales), ("table_sizes", sizes)):
        if values and list(values) != sorted(values):
            raise LabError(f"{source}: ladder.{key}: rungs climb: {values} is not ascending")
    if "durability" in used:
        raise LabError(f"{source}: ladder: a durability check does not climb a ladder; give it a study of its own")
    limit, res = lad.get("memory_limit_mb"), cfg["resources"].get("memory_limit_mb")
    if limit is not None and res is not None and limit != res:
        raise LabError(
            f"{source}: ladder.memory_limit_mb ({limit}) and resources.memory_limit_mb ({res}) disagree; give one"
        )
    if limit is not None:
        cfg["resources"]["memory_limit_mb"] = limit


def _check_precision(cfg: dict[str, Any], source: str) -> None:
    prec = cfg.get("precision")
    if not prec:
        return
    if prec["min_repeats"] > prec["max_repeats"]:
        raise LabError(
            f"{source}: precision: min_repeats ({prec['min_repeats']}) is above max_repeats ({prec['max_repeats']})"
        )
    runnable = [
        f"{n}/c={c}"
        for n, wl in cfg["workloads"].items()
        if wl["tool"] in ("pgbench", "sysbench")
        for c in wl["clients"]
    ]
    for item in prec.get("cells") or []:
        name, _, clients = item.partition("/c=")
        wl = cfg["workloads"].get(name)
        if wl is None or wl["tool"] not in ("pgbench", "sysbench") or (clients and int(clients) not in wl["clients"]):
            raise LabError(
                f"{source}: precision.cells: {item!r} is not a pgbench or sysbench cell of this study "
                f"(cells: {', '.join(runnable) or 'none'})"
            )
    if not precision_cells(cfg):
        raise LabError(f"{source}: precision: the study has no pgbench or sysbench cell to make precise")
    for name, _ in sorted(precision_cells(cfg)):
        if "repeats" in cfg["workloads"][name]:
            raise LabError(
                f"{source}: workloads.{name}.repeats: the precision target decides this workload's repeats "
                "(precision.min_repeats..max_repeats); remove one of them"
            )


# Keys every workload may have; the others belong to one tool (the schema marks them "(tool)").
COMMON_KEYS = {"tool", "clients", "repeats", "duration_s", "postgres_settings", "os"}
TOOL_KEYS: dict[str, set[str]] = {
    "pgbench": {
        "builtin",
        "scripts",
        "threads",
        "transactions",
        "rate_tps",
        "latency_limit_ms",
        "query_mode",
        "per_statement",
        "log",
        "sampling_rate",
    },
    "sysbench": {"test", "rand_type", "percentile", "histogram"},
    "fsmicro": {
        "op",
        "count",
        "size_bytes",
        "files",
        "bg_files",
        "bg_size_bytes",
        "max_file_bytes",
        "fsync_dir",
        "unlink_open",
        "setup_sync",
        "fill",
    },
    "durability": {"crash_after_s", "crash"},
}
# keys whose schema default is filled in for every workload: not a sign of the wrong tool
_DEFAULTED = {"per_statement", "log", "percentile", "histogram"}


def _check_workload(name: str, wl: dict[str, Any], source: str) -> None:
    tool = wl["tool"]
    where = f"{source}: workloads.{name}"
    foreign = sorted(k for k in wl if k not in COMMON_KEYS | TOOL_KEYS[tool] | _DEFAULTED)
    if foreign:
        owners = {k: t for t, keys in TOOL_KEYS.items() for k in keys}
        raise LabError(f"{where}: {', '.join(f'{k!r} ({owners.get(k)})' for k in foreign)} not valid for tool {tool}")
    if tool == "pgbench" and not (wl.get("builtin") or wl.get("scripts")):
        raise LabError(f"{where}: pgbench needs `builtin` or `scripts`")
    if tool == "pgbench" and wl.get("sampling_rate") and wl.get("log") != "transactions":
        raise LabError(f"{where}: sampling_rate needs log: transactions")
    if tool == "durability" and wl.get("transactions"):
        raise LabError(f"{where}: durability runs until its crash (crash_after_s), not a transaction count")
    if tool == "sysbench" and not wl.get("test"):
        raise LabError(f"{where}: sysbench needs `test` (e.g. oltp_read_write)")
    if tool == "fsmicro":
        if not wl.get("op"):
            raise LabError(f"{where}: fsmicro needs `op` (e.g. create_fsync)")
        if wl["clients"] != [1]:
            raise LabError(f"{where}: fsmicro runs single-threaded: clients must be [1]")
        spec = {k: v for k, v in wl.items() if k in TOOL_KEYS["fsmicro"]}
        spec.setdefault("duration_s", wl.get("duration_s") or 1)
        try:
            fsmicro_spec.resolve(spec)
        except ValueError as exc:
            raise LabError(f"{where}: {exc}") from None


def tools(cfg: dict[str, Any]) -> set[str]:
    return {wl["tool"] for wl in cfg["workloads"].values()}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def dataset_for(cfg: dict[str, Any], target: str, rung: int | None = None) -> dict[str, Any]:
    """The study's dataset with the target's overrides (e.g. a different fillfactor) merged in, at a
    ladder's rung when given (its pgbench scale and sysbench table size)."""
    out = _merge(cfg["dataset"], cfg["targets"][target].get("dataset") or {})
    if rung is not None:
        lad = cfg["ladder"]
        if lad.get("scales"):
            out["scale"] = int(lad["scales"][rung - 1])
        if lad.get("table_sizes"):
            out["sysbench"] = {**(out.get("sysbench") or {}), "table_size": int(lad["table_sizes"][rung - 1])}
        out["rung"] = rung
    return out


def os_for(cfg: dict[str, Any], workload: str) -> dict[str, Any]:
    """OS settings of a workload's runs: the study's `os` with the workload's overrides."""
    return _merge(cfg["os"], cfg["workloads"][workload].get("os") or {})


def pg_settings_for(cfg: dict[str, Any], target: str, workload: str | None = None) -> dict[str, Any]:
    """PostgreSQL settings of a run: the study's, then the target's, then the workload's."""
    out = dict(cfg["postgres"]["settings"])
    out.update(cfg["targets"][target].get("postgres_settings") or {})
    if workload is not None:
        out.update(cfg["workloads"][workload].get("postgres_settings") or {})
    return out


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a study config file (YAML)."""
    p = Path(path)
    if not p.exists():
        raise LabError(f"{p}: config file not found")
    try:
        raw = yaml_text.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise LabError(f"{p}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return resolve(raw, str(p), p.parent)


def resolve(raw: Any, source: str, base: Path) -> dict[str, Any]:
    """Validate a config (as read, or as Snakemake merged it) and make the files it names absolute: custom
    pgbench scripts are named relative to the config file's folder `base`."""
    cfg = validate(raw, source)
    for wl in cfg["workloads"].values():
        for item in wl.get("scripts") or []:
            if not Path(item["file"]).is_absolute():
                item["file"] = str((base / item["file"]).resolve())
    return cfg


def precision_cells(cfg: dict[str, Any]) -> set[tuple[str, int]]:
    """The (workload, clients) cells whose repeats the precision target decides (empty without `precision`)."""
    prec = cfg.get("precision")
    if not prec:
        return set()
    cells = {
        (name, c)
        for name, wl in cfg["workloads"].items()
        if wl["tool"] in ("pgbench", "sysbench")
        for c in wl["clients"]
    }
    named = prec.get("cells")
    if not named:
        return cells
    out: set[tuple[str, int]] = set()
    for item in named:
        name, _, clients = item.partition("/c=")
        out |= {(w, c) for w, c in cells if w == name and (not clients or c == int(clients))}
    return out


def repeats_for(cfg: dict[str, Any], workload: str, clients: int) -> int:
    if (workload, clients) in precision_cells(cfg):
        return int(cfg["precision"]["max_repeats"])
    reps = cfg["workloads"][workload].get("repeats", cfg["run"]["repeats"])
    if isinstance(reps, dict):
        return int(reps.get(str(clients), cfg["run"]["repeats"]))
    return int(reps)


def run_id(target: str, workload: str, clients: int, repeat: int, rung: int | None = None) -> str:
    """<target>.<workload>[.d<rung>].c<clients>.r<repeat>"""
    return f"{target}.{workload}{'' if rung is None else f'.d{rung}'}.c{clients}.r{repeat}"


def ladder_rungs(cfg: dict[str, Any]) -> list[int]:
    """The ladder's rungs, 1-based (empty without a ladder)."""
    lad = cfg.get("ladder") or {}
    return list(range(1, len(lad.get("scales") or lad.get("table_sizes") or []) + 1))


def rungs_for(cfg: dict[str, Any], workload: str) -> list[int | None]:
    """The rungs a workload's cells run at: every rung for pgbench and sysbench in a ladder study."""
    if cfg["workloads"][workload]["tool"] in ("pgbench", "sysbench") and ladder_rungs(cfg):
        return list(ladder_rungs(cfg))
    return [None]


def database_for(rung: int | None) -> str:
    """The database holding a rung's data set (the default `postgres` without a ladder)."""
    return "postgres" if rung is None else f"pgfslab_d{rung}"


def plan(cfg: dict[str, Any]) -> list[RunSpec]:
    """Expand the config into runs, interleaved: repeat r of every cell (and ladder rung) and target
    before r+1."""
    cells = [
        (wl_name, rung, clients, repeats_for(cfg, wl_name, clients))
        for wl_name, wl in cfg["workloads"].items()
        for rung in rungs_for(cfg, wl_name)
        for clients in wl["clients"]
    ]
    max_rep = max(n for *_, n in cells)
    precise = precision_cells(cfg)
    min_rep = int(cfg["precision"]["min_repeats"]) if precise else 0
    runs: list[RunSpec] = []
    for rep in range(1, max_rep + 1):
        for wl_name, rung, clients, n in cells:
            if rep > n:
                continue
            for target in cfg["targets"]:
                optional = (wl_name, clients) in precise and rep > min_rep
                rid = run_id(target, wl_name, clients, rep, rung) + host_suffix(cfg)
                runs.append(RunSpec(rid, len(runs), target, wl_name, clients, rep, optional, rung))
    return runs


def snapshot_targets(cfg: dict[str, Any]) -> list[str]:
    """Targets that get periodic snapshots (and so a btrfs data subvolume at creation)."""
    return list((cfg.get("snapshots") or {}).get("targets", []))


def find_run(cfg: dict[str, Any], run_id: str) -> tuple[RunSpec, int]:
    runs = plan(cfg)
    for spec in runs:
        if spec.run_id == run_id:
            return spec, len(runs)
    raise LabError(f"run {run_id!r} is not in the plan of study {cfg['study']!r}")


# Data paths are relative to the working directory (the repo root under `make`; a temporary
# directory in the integration tests), so a study never writes outside the tree it runs in.


def workdir(cfg: dict[str, Any]) -> Path:
    """Images and mount points of this study (absolute); a host's own under <workdir>/<study>/<host>/."""
    base = Path(cfg["workdir"]) / cfg["study"]
    return (base / cfg["host"] if cfg.get("host") else base).absolute()


def raw_dir(study: str, host: str | None = None) -> Path:
    """data/raw/<study>/: every raw output of the study, untouched, with provenance; a study run on several
    machines has one such folder per host key, data/raw/<study>/<host>/."""
    base = Path("data") / "raw" / study
    return base / host if host else base


def raw_dir_of(cfg: dict[str, Any]) -> Path:
    """The raw folder this config's runs write (data/raw/<study>/ or data/raw/<study>/<host>/)."""
    return raw_dir(cfg["study"], cfg.get("host"))


def host_suffix(cfg: dict[str, Any]) -> str:
    """What a run id ends in: `@<host>` for a study with a host key (run ids stay unique when the raw
    folders of several hosts meet in one database), nothing on a single machine."""
    return f"@{cfg['host']}" if cfg.get("host") else ""


def run_fingerprint(cfg: dict[str, Any], r: RunSpec) -> str:
    """Everything a run's result depends on, as one text: Snakemake re-runs a run when it changes (and only
    then: a copied raw folder with arbitrary file times is never re-measured)."""
    return json.dumps(
        {
            "target": cfg["targets"][r.target],
            "workload": cfg["workloads"][r.workload],
            "clients": r.clients,
            "dataset": cfg["dataset"] if r.rung is None else dataset_for(cfg, r.target, r.rung),
            "run": cfg["run"],
            "sampler": cfg["sampler"],
            "postgres": cfg["postgres"],
            "os": cfg["os"],
            "resources": cfg["resources"],
            "snapshots": cfg.get("snapshots"),
            # only an optional round depends on the precision target (whether it runs at all); the key is
            # absent otherwise, so adding `precision` to a study never re-measures its fixed rounds
            **({"precision": cfg["precision"]} if r.optional else {}),
        },
        sort_keys=True,
    )


def target_fingerprint(cfg: dict[str, Any], target: str) -> str:
    """Everything a prepared target (file system, cluster, loaded data) depends on."""
    return json.dumps(
        {
            "target": cfg["targets"][target],
            "dataset": cfg["dataset"],
            "postgres": cfg["postgres"],
            "tools": sorted(tools(cfg)),
            "snapshots": target in snapshot_targets(cfg),
            **({"wal_on": cfg["targets"][wal]} if (wal := cfg["targets"][target].get("wal_on")) else {}),
            **({"ladder": cfg["ladder"]} if cfg.get("ladder") else {}),
        },
        sort_keys=True,
    )


def wal_target_inputs(cfg: dict[str, Any], study: str, target: str) -> list[str]:
    """The prepared-target record of the target that holds `target`'s WAL (none when WAL stays in PGDATA)."""
    wal = cfg["targets"][target].get("wal_on")
    return [str(raw_dir(study, cfg.get("host")) / "_setup" / wal / "target.json")] if wal else []


def baseline_enabled(cfg: dict[str, Any]) -> bool:
    conf = cfg.get("device_baseline")
    return bool(conf) and conf.get("enabled", True) is not False


def baseline_fingerprint(cfg: dict[str, Any], target: str) -> str:
    """Everything a target's device baseline depends on: its spec and the baseline settings."""
    return json.dumps({"target": cfg["targets"][target], "device_baseline": cfg.get("device_baseline")}, sort_keys=True)


def baseline_inputs(cfg: dict[str, Any], study: str, target: str) -> list[str]:
    """The device baseline a target's runs wait for (none when the study has no baseline)."""
    setup = raw_dir(study, cfg.get("host")) / "_setup" / target
    return [str(setup / "device" / "baseline.json")] if baseline_enabled(cfg) else []
