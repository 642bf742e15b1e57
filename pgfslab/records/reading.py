"""What every record shares: its base model (typed fields and nothing else, written as the keys that were set), a
JSON object read from its file, and a model validated from it with the keys the model does not know set apart
(reported by the ingest, never dropped silently)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from pgfslab.errors import LabError

M = TypeVar("M", bound=BaseModel)


class Record(BaseModel):
    """A record a stage writes as JSON: a key it does not define, or a value of the wrong type, fails where it is
    set, not where a later stage reads it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: int

    def to_json(self) -> dict[str, Any]:
        """The record as its file holds it: the keys that were set, in the model's order, and its version."""
        return self.model_dump(mode="json", exclude_unset=True) | {"schema_version": self.schema_version}


def json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in `path`; a file that is not JSON, or not an object, is refused naming it."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise LabError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabError(f"{path}: not a readable {what} ({exc})") from None
    if not isinstance(data, dict):
        raise LabError(f"{path}: not a {what} (a JSON object)")
    return data


def validated(model: type[M], data: dict[str, Any], where: str) -> tuple[M, list[str]]:
    """`model` from `data`'s keys it knows, and the keys it does not; a value of the wrong type is refused,
    naming `where` and the key."""
    unknown = sorted(k for k in data if k not in model.model_fields)
    try:
        return model.model_validate({k: v for k, v in data.items() if k in model.model_fields}), unknown
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise LabError(f"{where}: `{key}`: {first['msg']} (got {first.get('input')!r})") from None


def upgraded(data: dict[str, Any], known: tuple[int, ...], where: str) -> dict[str, Any]:
    """A record whose versions differ only in their number (1, or none, and the current one: the same keys) at
    the current version; a version this lab does not read is refused."""
    version = data.get("schema_version", 1)
    if version not in known:
        raise LabError(f"{where}: schema_version {version!r} is not one this lab reads ({known})")
    return data | {"schema_version": max(known)}


def not_understood(path: Path, unknown: list[str]) -> list[str]:
    """The warning for a record's keys its model does not know (`validated`): none when there are none."""
    return [f"{path}: keys not understood, left out of the record: {', '.join(unknown)}"] if unknown else []
