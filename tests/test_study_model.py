"""The typed study (pgfslab.config.model) against the JSON schema it mirrors: one dataclass per object of
workflow/schemas/config.schema.yaml, one field per property, both ways and at every depth, the schema's
defaults as the fields' defaults; and every config of the lab and every recorded raw folder built and given
back unchanged (the frozen study.yaml stays as it was)."""

from __future__ import annotations

import json
import typing
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import pytest
import yaml

from pgfslab.config import checks, model
from pgfslab.config.study import Study, load_study, validate
from pgfslab.errors import LabError
from pgfslab.records import config_node
from pgfslab.tools import TOOLS

REPO = Path(__file__).resolve().parent.parent


def _resolve(schema: dict[str, Any], sub: dict[str, Any]) -> dict[str, Any]:
    """A sub-schema with its $ref (#/$defs/...) merged in."""
    ref = sub.get("$ref")
    if not ref:
        return sub
    target = schema
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return {**_resolve(schema, target), **{k: v for k, v in sub.items() if k != "$ref"}}


def _nested(hint: Any) -> tuple[str, type | None]:
    """How a field holds config objects: ('node', X), ('map', X) for dict[str, X], ('list', X) for
    tuple[X, ...], or ('value', None)."""
    node = config_node.node_type(hint)
    if node is not None:
        return "node", node
    hint = config_node.without_none(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict and args and config_node.node_type(args[1]) is not None:
        return "map", config_node.node_type(args[1])
    if origin is tuple and args and config_node.node_type(args[0]) is not None:
        return "list", config_node.node_type(args[0])
    return "value", None


def _fields_and_hints(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config fields of a class and their types; a workload's are its own and every tool's options' (the
    config gives them flat, the schema has them as one object)."""
    classes = [cls, *(t.options for t in TOOLS.values())] if cls is model.Workload else [cls]
    fields: dict[str, Any] = {}
    hints: dict[str, Any] = {}
    for c in classes:
        types = typing.get_type_hints(c)
        for f in config_node.config_fields(c):
            fields[f.name], hints[f.name] = f, types[f.name]
    return fields, hints


def mismatches(schema: dict[str, Any], sub: dict[str, Any], cls: type, where: str) -> list[str]:
    """Where a dataclass and the schema object it mirrors differ (empty: they agree)."""
    sub = _resolve(schema, sub)
    props: dict[str, Any] = sub.get("properties", {})
    fields, hints = _fields_and_hints(cls)
    out = [f"{where}.{k}: in the schema, no field of {cls.__name__}" for k in sorted(set(props) - set(fields))]
    out += [f"{where}.{k}: a field of {cls.__name__}, not in the schema" for k in sorted(set(fields) - set(props))]
    for name in sorted(set(props) & set(fields)):
        prop, f = _resolve(schema, props[name]), fields[name]
        at = f"{where}.{name}"
        how, inner = _nested(hints[name])
        default = config_node.field_default(f)
        if "default" in prop and config_node.plain(default) != prop["default"]:
            out.append(
                f"{at}: default {config_node.plain(default)!r} in {cls.__name__}, {prop['default']!r} in the schema"
            )
        if "default" not in prop and default is MISSING and name not in sub.get("required", []):
            out.append(f"{at}: optional in the schema, required by {cls.__name__}")
        if "default" not in prop and default is not MISSING and default is not None:
            out.append(f"{at}: no schema default, but {cls.__name__} has {default!r} (to_dict would invent it)")
        extra = prop.get("additionalProperties")
        if how == "node" and inner is not None:
            out += mismatches(schema, prop, inner, at)
        elif how == "map" and inner is not None:
            if not isinstance(extra, dict):
                out.append(f"{at}: a map of {inner.__name__} in the model, no object per key in the schema")
            else:
                out += mismatches(schema, extra, inner, f"{at}.<name>")
        elif how == "list" and inner is not None:
            out += mismatches(schema, prop.get("items", {}), inner, f"{at}[]")
        else:
            nested = [prop, _resolve(schema, extra) if isinstance(extra, dict) else {}, prop.get("items") or {}]
            if any("properties" in _resolve(schema, n) for n in nested):
                out.append(f"{at}: an object with properties in the schema, a plain value in {cls.__name__}")
    return out


def schema() -> dict[str, Any]:
    return yaml.safe_load(checks.SCHEMA_PATH.read_text())


def test_the_dataclasses_mirror_the_schema_both_ways() -> None:
    assert mismatches(schema(), schema(), model.StudyConfig, "config") == []
    # the study adds derived views, no field of its own
    assert [f.name for f in config_node.config_fields(Study)] == [
        f.name for f in config_node.config_fields(model.StudyConfig)
    ]


@pytest.mark.parametrize(
    ("path", "change", "words"),
    [
        (["properties", "run", "properties"], {"new_knob": {"type": "integer"}}, "config.run.new_knob: in the schema"),
        (
            ["properties", "targets", "additionalProperties", "properties"],
            {"label": {"type": "string"}},
            "config.targets.<name>.label: in the schema",
        ),
        (
            ["properties", "workloads", "additionalProperties", "properties", "scripts", "items", "properties"],
            {"args": {"type": "string"}},
            "config.workloads.<name>.scripts[].args",
        ),
        (["properties"], {"notes": {"type": "object", "properties": {"text": {}}}}, "config.notes: in the schema"),
        (["properties", "sampler", "properties", "meminfo_hz"], {"default": 2}, "default 1 in SamplerSettings"),
    ],
)
def test_a_schema_key_without_a_field_is_found(path: list[str], change: dict[str, Any], words: str) -> None:
    """The check above can fail: a property added to the schema at any depth, or a changed default."""
    edited = schema()
    node = edited
    for key in path:
        node = node[key]
    node.update(change)
    found = mismatches(edited, edited, model.StudyConfig, "config")
    assert any(words in m for m in found), found


def test_a_tool_option_without_a_schema_key_is_found() -> None:
    """A workload's keys are checked with its tools' options: one the schema lacks is named with its class."""
    edited = schema()
    del edited["properties"]["workloads"]["additionalProperties"]["properties"]["crash_after_s"]
    assert mismatches(edited, edited, model.StudyConfig, "config") == [
        "config.workloads.<name>.crash_after_s: a field of Workload, not in the schema"
    ]


def test_a_field_without_a_schema_key_is_found() -> None:
    edited = schema()
    del edited["properties"]["analysis"]["properties"]["alpha"]
    assert mismatches(edited, edited, model.StudyConfig, "config") == [
        "config.analysis.alpha: a field of AnalysisSettings, not in the schema"
    ]


CONFIGS = sorted((REPO / "config").glob("*.yaml")) + sorted((REPO / "tests" / "data").rglob("study.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_config_and_raw_folder_is_built_and_given_back_unchanged(path: Path) -> None:
    """The frozen study.yaml of a raw folder (and every config of the lab) is the same text after the typed
    study gave it back: key for key, in its order."""
    raw = yaml.safe_load(path.read_text())
    cfg = validate(raw, str(path))
    study = Study.from_dict(cfg)
    assert yaml.safe_dump(study.to_dict(), sort_keys=False) == yaml.safe_dump(cfg, sort_keys=False)
    assert json.dumps(study.to_dict()) == json.dumps(cfg)
    # postgres.versions crosses the targets that name no build of their own: <target>-pg<major> for each
    # (pgfslab.config.versions); a frozen study.yaml's targets were crossed when it was written and name their major
    majors = (raw.get("postgres") or {}).get("versions") or []
    own = {t for t, spec in raw["targets"].items() if "postgres_version" in spec or "postgres_bindir" in spec}
    crossed = {f"{t}-pg{m}" for t in raw["targets"] if t not in own for m in majors}
    targets = (crossed | own) if majors else set(raw["targets"])
    assert set(study.targets) == targets and set(study.workloads) == set(raw["workloads"])


def test_a_study_reads_as_its_config_says() -> None:
    study = load_study(REPO / "config" / "wal-separate.yaml")
    raw = yaml.safe_load((REPO / "config" / "wal-separate.yaml").read_text())
    for name, spec in raw["targets"].items():
        assert study.targets[name].fs == spec["fs"]
        assert study.targets[name].wal_on == spec.get("wal_on")
    first = study.runs[0]
    view = study.run_view(first)
    assert view.target.name == first.target and view.workload is study.workloads[first.workload]
    assert view.postgres.port == raw["postgres"].get("port_base", 55400) + list(raw["targets"]).index(first.target)


def test_unknown_keys_and_missing_required_ones_are_refused() -> None:
    with pytest.raises(LabError, match=r"targets\.a: unknown key\(s\) colour"):
        model.TargetSpec.from_dict({"fs": "ext4", "colour": "red"}, "targets.a")
    with pytest.raises(LabError, match="fs missing"):
        model.TargetSpec.from_dict({"size_gb": 4}, "targets.a")
    base = {
        "study": "s",
        "targets": {"a": {"fs": "ext4", "dataset": {"scael": 3}}},
        "workloads": {"w": {"tool": "pgbench", "builtin": "tpcb-like"}},
    }
    with pytest.raises(LabError, match=r"targets\.a\.dataset: unknown key\(s\) scael"):
        validate(base, "x.yaml")
