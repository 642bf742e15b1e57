"""ZFS dataset properties: the table of this implementation's properties (read from what `zfs get` prints
with its usage), and a target's requested properties checked against it; the lab's own marker properties."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pgfslab.errors import LabError
from pgfslab.host.zfs import commands as zfs_commands

# the lab marks every pool it creates (set locally, so not inherited) and when; a target may not set these
OWNER_PROPERTY = "pgfslab:created-by"
OWNER_VALUE = "pgfslab"
CREATED_AT_PROPERTY = "pgfslab:created-at"
_RESERVED = {OWNER_PROPERTY, CREATED_AT_PROPERTY}
_USER_PROP_RE = re.compile(r"^[a-z0-9_.+-]+:[a-z0-9_.:+-]+$")


# properties that people ask for but that an implementation may lack, with the reason
_HINTS = {
    "sync": "zfs-fuse (pool version 23) has no 'sync' property: synchronous semantics are fixed "
    "(fsync/O_DSYNC go through the ZIL; logbias=latency|throughput is the only knob)",
    "logicalused": "read-only, and absent before pool version 5000 (zfs-fuse has version 23)",
    "logicalreferenced": "read-only, and absent before pool version 5000 (zfs-fuse has version 23)",
    "redundant_metadata": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "dnodesize": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "special_small_blocks": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
}


@dataclass(frozen=True)
class PropertySpec:
    name: str
    editable: bool
    inherit: bool
    values: str


_TABLES: dict[str, dict[str, PropertySpec]] = {}


def property_table() -> dict[str, PropertySpec]:
    """Dataset properties of this implementation, read from the table `zfs get` prints with its usage
    (both OpenZFS and zfs-fuse print it; zfs-fuse needs the daemon running)."""
    impl = zfs_commands.implementation()
    if impl in _TABLES:
        return _TABLES[impl]
    r = zfs_commands.zfs("get", check=False)
    text = (r.stderr or "") + (r.stdout or "")
    table: dict[str, PropertySpec] = {}
    started = False
    for line in text.splitlines():
        if re.match(r"^\s*PROPERTY\s+EDIT\s+INHERIT\s+VALUES", line):
            started = True
            continue
        if not started:
            continue
        m = re.match(r"^\s+(\S+)\s+(YES|NO)\s+(YES|NO)\s+(.*\S)\s*$", line)
        if m:
            table[m.group(1)] = PropertySpec(m.group(1), m.group(2) == "YES", m.group(3) == "YES", m.group(4))
        elif table and not line.strip():
            continue
        elif table and line.strip() and not line.startswith(("\t", " ")):
            break
    if not table:
        raise LabError(f"zfs: cannot read the property table from `zfs get` ({zfs_commands.tail(r)})")
    _TABLES[impl] = table
    return table


def _size_ok(v: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)?[KMGTPEZ]?B?", v, re.IGNORECASE) is not None


def _to_bytes(v: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTPEZ]?)B?", v, re.IGNORECASE)
    if not m:
        raise ValueError(v)
    return int(float(m.group(1)) * 1024 ** "_KMGTPEZ".index((m.group(2) or "_").upper()))


def _value_ok(spec: PropertySpec, value: str) -> bool | None:
    """True/False when the table says enough to decide; None when only zfs can tell."""
    vals = spec.values
    m = re.fullmatch(r"(\d+[KMG]?) to (\d+[KMG]?), power of 2", vals, re.IGNORECASE)
    if m:
        if not _size_ok(value):
            return False
        b = _to_bytes(value)
        return _to_bytes(m.group(1)) <= b <= _to_bytes(m.group(2)) and b & (b - 1) == 0
    alts = [a.strip() for a in vals.split("|")]
    decided = True
    for alt in alts:
        if alt == value:
            return True
        if alt == "<size>" and _size_ok(value):
            return True
        if re.fullmatch(r"[a-z0-9]+-\[\d-\d\]", alt):  # gzip-[1-9] is a regular expression as printed
            if re.fullmatch(alt, value):
                return True
            continue
        if re.fullmatch(r"[a-z0-9_-]+", alt):
            continue
        decided = False  # <path>, <snapshot>, 'share(1M) options', 'sha256[,verify]', ...
    return False if decided else None


def validate_properties(properties: Mapping[str, Any]) -> dict[str, str]:
    """Check dataset properties against this implementation's table; return them as zfs strings
    (True/False -> on/off). LabError naming the property, the implementation and the allowed values."""
    impl = zfs_commands.implementation()
    table = property_table()
    out: dict[str, str] = {}
    for name, raw in properties.items():
        value = ("on" if raw else "off") if isinstance(raw, bool) else str(raw)
        if name in _RESERVED:
            raise LabError(f"zfs: property {name!r} is set by the lab itself")
        if ":" in name:
            if not _USER_PROP_RE.match(name):
                raise LabError(f"zfs: bad user property name {name!r} (lowercase 'module:property')")
            out[name] = value
            continue
        spec = table.get(name)
        if spec is None:
            hint = f": {_HINTS[name]}" if name in _HINTS else ""
            settable = ", ".join(sorted(n for n, s in table.items() if s.editable and "@" not in n))
            raise LabError(f"zfs ({impl}): unknown property {name!r}{hint}. Settable properties: {settable}")
        if not spec.editable:
            raise LabError(f"zfs ({impl}): property {name!r} is read-only")
        ok = _value_ok(spec, value)
        if ok is False:
            extra = " (no lz4/zstd: pool version 23)" if impl == "zfs-fuse" and name == "compression" else ""
            raise LabError(f"zfs ({impl}): {name}={value!r} is not allowed; allowed: {spec.values}{extra}")
        out[name] = value
    return out
