"""Frozen objects built from a validated mapping and giving it back key for key: the config's objects
(pgfslab.config.model) and each workload tool's options (pgfslab.tools) are built this way, so the frozen
study.yaml, run.json's copies of the spec and every fingerprint read back as they were written.

A property the mapping did not give is None (the schema allows no null, so None always means absent). A
field whose metadata says `{"key": False}` holds no key of the mapping (a part built by its owner's own
`from_dict`).
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Self, TypeVar

from pgfslab.errors import LabError


@dataclass(frozen=True)
class Node:
    """What every config object shares: building from a mapping and giving it back."""

    # the keys in the order the mapping gave them (not a config property: to_dict keeps the order)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    @classmethod
    def from_dict(cls, data: typing.Mapping[str, Any], where: str = "") -> Self:
        return build(cls, data, where)

    def to_dict(self) -> dict[str, Any]:
        """The mapping this object was built from (its keys, in their order); a field set since
        (dataclasses.replace) follows them when it differs from its default."""
        names = {f.name for f in config_fields(type(self))}
        out = {k: plain(getattr(self, k)) for k in self.keys if k in names and getattr(self, k) is not None}
        for f in config_fields(type(self)):
            value = getattr(self, f.name)
            if f.name not in out and value is not None and value != field_default(f):
                out[f.name] = plain(value)
        return out


def field_default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else MISSING


def config_fields(cls: type) -> list[Any]:
    """The fields of a config object that are properties of the schema (keys of its mapping)."""
    return [f for f in fields(cls) if f.name != "keys" and f.metadata.get("key", True)]


def without_none(hint: Any) -> Any:
    """X for X | None (the hint itself otherwise)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return hint


def node_type(hint: Any) -> type[Node] | None:
    """The config-object class a field holds directly (X or X | None), else None."""
    hint = without_none(hint)
    return hint if isinstance(hint, type) and is_dataclass(hint) and issubclass(hint, Node) else None


Convert = typing.Callable[[Any, str], Any]


def _converter(hint: Any) -> Convert:
    """How a field's value is built from the mapping's (decided once per field, from its type)."""
    hint = without_none(hint)
    node = node_type(hint)
    if node is not None:
        return lambda value, where: node.from_dict(value, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    item = node_type(args[-1]) if args else None
    if origin is dict and item is not None:
        return lambda value, where: {k: item.from_dict(v, f"{where}.{k}") for k, v in value.items()}
    node_item = node_type(args[0]) if origin is tuple else None
    if node_item is not None:
        return lambda value, where: tuple(node_item.from_dict(v, f"{where}.{i}") for i, v in enumerate(value))
    if origin is tuple:
        return lambda value, where: tuple(_copy(v) for v in value)
    return lambda value, where: _copy(value)


@functools.cache
def _fields_of(cls: type) -> tuple[tuple[str, bool, Convert], ...]:
    """(name, required, converter) of each config field of a class."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (f.name, f.default is MISSING and f.default_factory is MISSING, _converter(hints[f.name]))
        for f in config_fields(cls)
    )


def _copy(value: Any) -> Any:
    """A value as given (no int turned float: fingerprints compare the config's text), its containers copied."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


def plain(value: Any) -> Any:
    if isinstance(value, Node):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


N = TypeVar("N", bound=Node)


def build(cls: type[N], data: typing.Mapping[str, Any], where: str) -> N:
    """An object of `cls` from a mapping of its keys (unknown keys refused, naming them and `where`)."""
    if not isinstance(data, typing.Mapping):
        raise LabError(f"{where or 'config'}: a mapping expected, got {type(data).__name__}")
    known = _fields_of(typing.cast(type, cls))  # a class is hashable; mypy sees type[N] of a dataclass as not
    kwargs: dict[str, Any] = {}
    for name, required, convert in known:
        value = data.get(name)
        if value is not None:
            kwargs[name] = convert(value, f"{where}.{name}" if where else name)
        elif required:
            raise LabError(f"{where or 'config'}: {name} missing (is the config validated?)")
    if len(kwargs) < len(data):
        unknown = sorted(set(data) - {name for name, *_ in known})
        if unknown:
            raise LabError(f"{where or 'config'}: unknown key(s) {', '.join(unknown)}")
    return cls(**kwargs, keys=tuple(data))
