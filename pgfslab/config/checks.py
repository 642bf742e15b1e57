"""Validating a study config: the JSON schema (workflow/schemas/config.schema.yaml) with its defaults filled
in, then every rule the schema cannot say (a target's spec, WAL targets, OS settings, snapshots, the
precision target, the ladder, each workload's keys), each refused with the file and the key.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

from pgfslab import paths, yaml_text
from pgfslab.config import device_profiles, disk_model, pg_settings, targets, versions, vm_settings
from pgfslab.config.model import Dataset, StudyConfig, Workload
from pgfslab.errors import LabError
from pgfslab.tools import PG_TOOLS, RATIO_TOOLS, TOOLS, data_sets

SCHEMA_PATH = paths.SCHEMA


@functools.lru_cache(maxsize=2)
def _schema_of(stamp: tuple[int, int]) -> tuple[dict[str, Any], jsonschema.Draft202012Validator]:
    schema = yaml_text.safe_load(SCHEMA_PATH.read_text())
    return schema, jsonschema.Draft202012Validator(schema)


def schema() -> tuple[dict[str, Any], jsonschema.Draft202012Validator]:
    """The config schema and its validator, parsed once per version of the file (every command, run and
    notebook validates a config)."""
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
    """Validate a config mapping and return it with defaults filled in (the mapping a
    pgfslab.config.study.Study is built from).

    Raises LabError naming the file and the offending key.
    """
    if not isinstance(raw, dict):
        raise LabError(f"{source}: a study config must be a mapping, got {type(raw).__name__}")
    sch, validator = schema()
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
    cfg = _fill_defaults(json.loads(json.dumps(raw)), sch)
    crossed = versions.cross_targets(cfg, source)
    _resolve_drop_caches(raw, cfg, source)
    _resolve_memory_limit(cfg, source)
    _check_dataset_overrides(cfg, source)
    check(StudyConfig.from_dict(cfg), source, crossed)
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


def _resolve_memory_limit(cfg: dict[str, Any], source: str) -> None:
    """A ladder's memory limit is the cgroup's: said once, it becomes resources.memory_limit_mb."""
    limit = (cfg.get("ladder") or {}).get("memory_limit_mb")
    res = cfg["resources"].get("memory_limit_mb")
    if limit is not None and res is not None and limit != res:
        raise LabError(
            f"{source}: ladder.memory_limit_mb ({limit}) and resources.memory_limit_mb ({res}) disagree; give one"
        )
    if limit is not None:
        cfg["resources"]["memory_limit_mb"] = limit


def _check_dataset_overrides(cfg: dict[str, Any], source: str) -> None:
    """A target's `dataset` overrides the study's: it has the study dataset's keys (the schema leaves it open)."""
    for name, spec in cfg["targets"].items():
        if spec.get("dataset"):
            try:
                Dataset.from_dict(spec["dataset"], "dataset")
            except LabError as exc:
                raise LabError(f"{source}: targets.{name}.{exc}") from None


def check(study: StudyConfig, source: str, crossed: Mapping[str, str] | None = None) -> None:
    """Every rule of a study the schema cannot say. `crossed`: each copy of a target made by postgres.versions
    and the target the config names (versions.cross_targets), for the key paths of the messages."""
    crossed = crossed or {}
    _check_targets(study, source)
    for name in [None, *study.workloads]:
        try:
            vm_settings.settings_from_config(study.os if name is None else study.os_for(name))
        except LabError as exc:
            where = "os" if name is None else f"workloads.{name}.os"
            raise LabError(f"{source}: {where}: {str(exc).removeprefix('os: ')}") from None
    if study.resources.blkio:
        for name, spec in study.targets.items():
            if targets.kind(spec) in ("tmpfs", "dir"):
                raise LabError(f"{source}: resources.blkio: target {name} ({spec.fs}) has no block device to throttle")
    _check_device_profiles(study, source)
    _check_aa_twins(study, source)
    _check_cache(study, source)
    _check_snapshots(study, source)
    _check_restore(study, source)
    _check_reload(study, source)
    _check_pg_settings(study, source, crossed)
    _check_builds(study, source, crossed)
    _check_precision(study, source)
    _check_ladder(study, source)
    for name, wl in study.workloads.items():
        _check_workload(name, wl, source)
        _check_workload_scope(study, name, wl, source)
        if isinstance(wl.repeats, dict):
            unknown = sorted(set(int(k) for k in wl.repeats) - set(wl.clients))
            if unknown:
                raise LabError(
                    f"{source}: workloads.{name}.repeats: client counts {unknown} are not in clients {list(wl.clients)}"
                )


def _check_targets(study: StudyConfig, source: str) -> None:
    """Each target's spec, no device twice, and WAL targets that exist and do not chain."""
    devices: dict[str, str] = {}
    for name, spec in study.targets.items():
        for problem in targets.spec_problems(spec):
            raise LabError(f"{source}: targets.{name}: {problem}")
        if spec.device:
            if spec.device in devices:
                raise LabError(
                    f"{source}: targets.{name}: device {spec.device} is also target {devices[spec.device]}'s"
                )
            devices[spec.device] = name
    for name, spec in study.targets.items():
        wal = spec.wal_on
        if wal is None:
            continue
        where = f"{source}: targets.{name}.wal_on"
        if wal == name:
            raise LabError(f"{where}: a target cannot hold its own WAL on itself; name another target")
        if wal not in study.targets:
            raise LabError(f"{where}: {wal!r} is not a target (targets: {', '.join(study.targets)})")
        if study.targets[wal].wal_on:
            raise LabError(f"{where}: target {wal} keeps its own WAL on another target; WAL targets do not chain")
        if targets.kind(spec) == "existing" or targets.kind(study.targets[wal]) == "existing":
            raise LabError(f"{where}: WAL on another target needs targets the lab prepares (not fs: existing)")


def _check_device_profiles(study: StudyConfig, source: str) -> None:
    """A slow-device profile is the data device of a file system the kernel runs: an emulated disk (`hdd`)
    under the loop device of an ext4, xfs or btrfs image target, its `device_model` a possible one; a
    throttle (`hdd-throttle`) on the image's loop device or the device target's disk, for processes in the
    run's cgroup only (not fsmicro's). Never beside resources.blkio (two slow devices in one), and always with
    the study's device baseline (the paper and the verdicts read the device class from it)."""
    for name, spec in study.targets.items():
        if spec.device_model is not None and not device_profiles.is_disk(spec.device_profile):
            raise LabError(
                f"{source}: targets.{name}.device_model: only with an emulated disk "
                f"(device_profile: {', '.join(device_profiles.DISKS)})"
            )
        if spec.device_profile is None:
            continue
        where = f"{source}: targets.{name}.device_profile"
        disk = device_profiles.is_disk(spec.device_profile)
        kinds = ("image",) if disk else ("image", "device")
        if spec.fs not in ("ext4", "xfs", "btrfs") or targets.kind(spec) not in kinds:
            raise LabError(
                f"{where}: {spec.fs} ({targets.kind(spec)}) cannot have it: "
                + (
                    "the emulated disk serves an ext4, xfs or btrfs image target's image"
                    if disk
                    else "the profile needs an ext4, xfs or btrfs image or device target (a zfs pool's I/O is "
                    "issued by its own threads or daemon, outside the run's cgroup)"
                )
            )
        if disk and spec.direct_io is False:
            raise LabError(f"{where}: the emulated disk's loop device uses direct I/O; remove direct_io: false")
        if disk:
            try:
                bad = disk_model.problems(device_profiles.drive(spec.device_profile, spec.device_model))
            except (LabError, TypeError) as exc:
                raise LabError(f"{source}: targets.{name}.{str(exc).removeprefix('device_model: ')}") from None
            if bad:
                raise LabError(f"{source}: targets.{name}.device_model.{'; '.join(bad)}")
        if study.resources.blkio:
            raise LabError(f"{where}: the study also sets resources.blkio; give one of them")
        if study.device_baseline is None or study.device_baseline.enabled is False:
            raise LabError(
                f"{where}: an emulated device needs the study's device_baseline (e.g. `device_baseline: "
                "{duration_s: 2}`): it measures the device as the runs have it, the paper shows it beside the "
                "real one, and the verdicts read the device class from it"
            )
        fsmicro = sorted(w for w, wl in study.workloads.items() if wl.tool == "fsmicro")
        if fsmicro and not disk:
            raise LabError(
                f"{where}: fsmicro workloads ({', '.join(fsmicro)}) do not run in the target's cgroup, so the "
                "throttle would not apply to them; run them in a study without it (or with device_profile: hdd, "
                "which is below the file system)"
            )


def _check_aa_twins(study: StudyConfig, source: str) -> None:
    """An A/A twin names a target of the study that is no twin itself, and has its spec exactly (the key aside):
    anything that separates the two would be measured as the machine's noise."""
    for name, spec in study.targets.items():
        base = spec.aa_twin_of
        if base is None:
            continue
        where = f"{source}: targets.{name}.aa_twin_of"
        if base == name:
            raise LabError(f"{where}: a target cannot be its own A/A twin; name the baseline target")
        if base not in study.targets:
            raise LabError(f"{where}: {base!r} is not a target (targets: {', '.join(study.targets)})")
        if study.targets[base].aa_twin_of is not None:
            raise LabError(
                f"{where}: {base} is itself an A/A twin (of {study.targets[base].aa_twin_of}); name the baseline"
            )
        mine = {k: v for k, v in spec.to_dict().items() if k != "aa_twin_of"}
        theirs = study.targets[base].to_dict()
        if mine != theirs:
            differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise LabError(
                f"{where}: an A/A twin has its baseline's exact spec; {name} and {base} differ in "
                + ", ".join(f"{k} ({mine.get(k)!r} vs {theirs.get(k)!r})" for k in differ)
            )


def _check_cache(study: StudyConfig, source: str) -> None:
    """run.cache says the cache state; run.drop_caches and run.prewarm, when given beside it, must agree."""
    run = study.run
    if run.cache is None:
        return
    if not run.drop_caches:
        raise LabError(
            f"{source}: run.cache: {run.cache} starts every run from dropped caches; "
            "run.drop_caches (or os.drop_caches) false contradicts it: remove one"
        )
    own = sorted(name for name, wl in study.workloads.items() if wl.prewarm is not None)
    if own:
        raise LabError(
            f"{source}: run.cache: {run.cache} says every run's cache state; the workloads' own prewarm "
            f"({', '.join(own)}) contradicts it: remove one"
        )
    if run.prewarm is not None and run.prewarm != (run.cache == "warm"):
        raise LabError(
            f"{source}: run.cache: {run.cache} and run.prewarm: {str(run.prewarm).lower()} disagree; "
            "run.cache says it (warm: a verified pg_prewarm pass), remove run.prewarm"
        )


def _check_snapshots(study: StudyConfig, source: str) -> None:
    for name in study.snapshot_targets():
        if name not in study.targets:
            raise LabError(
                f"{source}: snapshots.targets: {name!r} is not a target (targets: {', '.join(study.targets)})"
            )
        spec = study.targets[name]
        if spec.fs not in ("btrfs", "zfs") or targets.kind(spec) not in ("image", "device"):
            raise LabError(
                f"{source}: snapshots.targets: {name} is {spec.fs} ({targets.kind(spec)}): "
                "the lab snapshots btrfs image or device targets and zfs targets only (LVM thin "
                "snapshots would need device-mapper)"
            )


def _check_restore(study: StudyConfig, source: str) -> None:
    """run.restore copies a cluster whose WAL is inside PGDATA: a WAL on another target would be left as the
    previous run wrote it, out of step with the data files put back."""
    if not study.run.restore:
        return
    split = sorted(name for name, spec in study.targets.items() if spec.wal_on)
    if split:
        raise LabError(
            f"{source}: run.restore puts each target's cluster back as loaded, and {', '.join(split)} keep their "
            "WAL on another target (wal_on), which it would leave as the previous run wrote it: remove one"
        )


def _check_reload(study: StudyConfig, source: str) -> None:
    """run.reload loads each run's data set anew: with run.restore the copy put back would be loaded over, and a
    study without a PostgreSQL workload has no data set to load."""
    if not study.run.reload:
        return
    if study.run.restore:
        raise LabError(f"{source}: run.reload and run.restore both set: a run starts from its own load or from the "
                       "loaded copy, not both")  # fmt: skip
    if not study.tools() & PG_TOOLS:
        raise LabError(f"{source}: run.reload loads a PostgreSQL data set before every run, and no workload runs "
                       "PostgreSQL")  # fmt: skip


def _check_workload_scope(study: StudyConfig, name: str, wl: Workload, source: str) -> None:
    """A workload's `targets` are targets of the study, its `rungs` rungs of its ladder, its context cells its own."""
    for t in wl.targets or ():
        if t not in study.targets:
            raise LabError(
                f"{source}: workloads.{name}.targets: {t!r} is not a target (targets: {', '.join(study.targets)})"
            )
    if wl.rungs:
        rungs = study.ladder_rungs()
        wrong = [r for r in wl.rungs if r not in rungs]
        if wrong:
            have = f"rungs 1-{len(rungs)}" if rungs else "no ladder"
            raise LabError(f"{source}: workloads.{name}.rungs: {wrong} not rungs of this study ({have})")
    if wl.context is not None and wl.context.clients:
        wrong = [c for c in wl.context.clients if c not in wl.clients]
        if wrong:
            raise LabError(
                f"{source}: workloads.{name}.context.clients: {wrong} not among the workload's clients {list(wl.clients)}"
            )


def _settings_given(study: StudyConfig, target: str, crossed: Mapping[str, str]) -> list[tuple[str, Any]]:
    """Where a target's cluster gets PostgreSQL settings from, by key path, in the order they apply (a later one
    wins): the study's, the target's (a copy made by postgres.versions has the settings of the target the
    config names), then each workload's that runs on it."""
    given = [
        ("postgres.settings", study.postgres.settings),
        (f"targets.{crossed.get(target, target)}.postgres_settings", study.targets[target].postgres_settings),
    ]
    return given + [
        (f"workloads.{w}.postgres_settings", wl.postgres_settings)
        for w, wl in study.workloads.items()
        if wl.targets is None or target in wl.targets
    ]


def _check_pg_settings(study: StudyConfig, source: str, crossed: Mapping[str, str]) -> None:
    """Every PostgreSQL setting a target's cluster gets (the study's, the target's, each workload's) is one its
    major has (pgfslab.config.pg_settings); a target of no named major is left to its server."""
    for name in study.targets:
        major = study.pg_version_of(name)
        if major is None:
            continue
        for where, settings in _settings_given(study, name, crossed):
            for key in settings or {}:
                why = pg_settings.problem(key, major)
                if why:
                    raise LabError(f"{source}: {where}.{key}: {why} (target {name} runs PostgreSQL {major})")


def _in_force(layers: list[tuple[str, Any]], key: str) -> tuple[str, Any] | None:
    """(key path, value) of the layer whose `key` a server started with `layers` runs with (the last that sets
    it), None when none sets it."""
    found = None
    for where, settings in layers:
        if key in (settings or {}):
            found = (where, settings[key])
    return found


def _check_builds(study: StudyConfig, source: str, crossed: Mapping[str, str]) -> None:
    """Every target's PostgreSQL major is one the lab can run (the distribution's, else a pinned build; any with
    a bindir), and io_method = io_uring only where the build has liburing (no pinned one has)."""
    asked = list(study.postgres.versions or ())
    for name, spec in study.targets.items():
        major = study.pg_version_of(name)
        if major is None or study.bindir_of(name) is not None:
            continue  # the default build, or the user's own binaries (any build, checked when they run)
        # a copy and a target naming its own major take no postgres.bindir (Study.bindir_of), so each is told
        # the remedy its own key has
        if name in crossed:
            where = f"postgres.versions[{asked.index(major)}]"
            remedy = f"remove it, or add a target with postgres_version: {major} and the postgres_bindir of a build"
        elif spec.postgres_version is not None:
            where = f"targets.{name}.postgres_version"
            remedy = "give the target a postgres_bindir"
        else:
            where = "postgres.version"
            remedy = "give postgres.bindir"
        if not versions.available(major):
            pinned = ", ".join(map(str, versions.PINNED_VERSIONS))
            raise LabError(
                f"{source}: {where}: PostgreSQL {major} has no pinned build (pinned: {pinned}) and is not installed "
                f"under {versions.DISTRIBUTION}; {remedy}"
            )
        # the distribution's build is what build_for picks when there is one; what it was built with is not
        # recorded here, so its server decides at its first start
        if versions.installed_here(major) or major in versions.PINNED_WITH_LIBURING:
            continue
        given = _settings_given(study, name, crossed)
        # the preparation's server has the study's and the target's settings, each run's its workload's over them
        starts = [given[:2], *(given[:2] + [w] for w in given[2:])]
        for layers in starts:
            found = _in_force(layers, "io_method")
            if found is not None and str(found[1]).lower() == "io_uring":  # PostgreSQL ignores an enum's case
                raise LabError(
                    f"{source}: {found[0]}.io_method: io_uring needs a build with liburing; the pinned PostgreSQL "
                    f"{major} build (target {name}) has none: use worker or sync, or give the target a "
                    "postgres_bindir built with liburing"
                )


def _check_ladder(study: StudyConfig, source: str) -> None:
    """A ladder's lists match the tools, climb and have one length."""
    lad = study.ladder
    if not lad:
        return
    used = study.tools()
    fixed = sorted(t for t in used if TOOLS[t].loads and not TOOLS[t].has_ladder)
    if fixed:  # it loads a data set once (the durability check): no database per rung
        raise LabError(f"{source}: ladder: a {fixed[0]} check does not climb a ladder; give it a study of its own")
    scales, sizes = lad.scales, lad.table_sizes
    if not scales and not sizes:
        raise LabError(f"{source}: ladder: give `scales` (pgbench) or `table_sizes` (sysbench)")
    if "pgbench" in data_sets(used) and not scales:
        raise LabError(f"{source}: ladder: the study runs pgbench: give `scales`, one per rung")
    if "sysbench" in data_sets(used) and not sizes:
        raise LabError(f"{source}: ladder: the study runs sysbench: give `table_sizes`, one per rung")
    if scales and sizes and len(scales) != len(sizes):
        raise LabError(f"{source}: ladder: scales ({len(scales)}) and table_sizes ({len(sizes)}) differ in length")
    for key, values in (("scales", scales), ("table_sizes", sizes)):
        if values and list(values) != sorted(values):
            raise LabError(f"{source}: ladder.{key}: rungs climb: {list(values)} is not ascending")


def _check_precision(study: StudyConfig, source: str) -> None:
    prec = study.precision
    if not prec:
        return
    if prec.min_repeats > prec.max_repeats:
        raise LabError(
            f"{source}: precision: min_repeats ({prec.min_repeats}) is above max_repeats ({prec.max_repeats})"
        )
    runnable = [f"{n}/c={c}" for n, wl in study.workloads.items() if wl.tool in RATIO_TOOLS for c in wl.clients]
    for item in prec.cells or ():
        name, _, clients = item.partition("/c=")
        wl = study.workloads.get(name)
        if wl is None or wl.tool not in RATIO_TOOLS or (clients and int(clients) not in wl.clients):
            raise LabError(
                f"{source}: precision.cells: {item!r} is not a pgbench or sysbench cell of this study "
                f"(cells: {', '.join(runnable) or 'none'})"
            )
    cells = study.precision_cells()
    if not cells:
        raise LabError(f"{source}: precision: the study has no pgbench or sysbench cell to make precise")
    for name, _ in sorted(cells):
        if "repeats" in study.workloads[name].keys:
            raise LabError(
                f"{source}: workloads.{name}.repeats: the precision target decides this workload's repeats "
                "(precision.min_repeats..max_repeats); remove one of them"
            )


# Keys every workload may have; the others belong to one tool (the schema marks them "(tool)").
COMMON_KEYS = {"tool", "clients", "repeats", "duration_s", "postgres_settings", "os", "targets"}
TOOL_KEYS: dict[str, set[str]] = {name: set(t.keys) for name, t in TOOLS.items()}  # each tool's own keys
# keys whose schema default is filled in for every workload: not a sign of the wrong tool
_DEFAULTED = {"per_statement", "log", "percentile", "histogram"}


def _check_workload(name: str, wl: Workload, source: str) -> None:
    tool = wl.tool
    where = f"{source}: workloads.{name}"
    foreign = sorted(k for k in wl.keys if k not in COMMON_KEYS | TOOL_KEYS[tool] | _DEFAULTED)
    if foreign:
        owners = {k: t for t, keys in TOOL_KEYS.items() for k in keys}
        raise LabError(f"{where}: {', '.join(f'{k!r} ({owners.get(k)})' for k in foreign)} not valid for tool {tool}")
    problems = wl.options.problems(wl.clients, wl.duration_s)
    if problems:
        raise LabError(f"{where}: {'; '.join(problems)}")
