"""What a study's `os` section may set: the vm.* sysctls the lab changes (an allowlist), byte sizes as
written in a config, and the settings one run applies (pgfslab.host.sysctl applies them).

Config validation uses this module alone: it touches nothing on the machine.
"""

from __future__ import annotations

import re

from pgfslab.config.model import OsSettings
from pgfslab.errors import LabError

ALLOWED = frozenset(
    {
        "dirty_background_bytes",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_ratio",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
        "dirtytime_expire_seconds",
        "swappiness",
        "vfs_cache_pressure",
        "page-cluster",
        "min_free_kbytes",
        "watermark_scale_factor",
        "overcommit_memory",
        "overcommit_ratio",
        "zone_reclaim_mode",
    }
)
PAIRS = {
    "dirty_bytes": "dirty_ratio",
    "dirty_ratio": "dirty_bytes",
    "dirty_background_bytes": "dirty_background_ratio",
    "dirty_background_ratio": "dirty_background_bytes",
}
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "k": 1024,
    "m": 1024**2,
    "g": 1024**3,
}


def key(name: str) -> str:
    """`vm.dirty_bytes` or `dirty_bytes` -> `dirty_bytes`, if it is on the allowlist."""
    k = name.removeprefix("vm.")
    if k not in ALLOWED:
        raise LabError(f"vm.{k} is not a setting the lab changes (allowed: {', '.join(sorted(ALLOWED))})")
    return k


def parse_bytes(value: int | str) -> int:
    """1048576, "32MB", "1 GB", "64MiB" -> bytes (kB/MB/GB are powers of 1000, KiB/MiB/GiB and
    PostgreSQL-style k/M/G of 1024)."""
    if isinstance(value, bool):
        raise LabError(f"not a byte count: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise LabError(f"byte count must not be negative: {value}")
        return value
    m = re.fullmatch(r"\s*([0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise LabError(f'not a byte count: {value!r} (write e.g. 33554432, "32MB" or "32MiB")')
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def settings_from_config(settings: OsSettings) -> dict[str, int]:
    """The `os` config section (of a study, or of a workload's runs) -> {vm key: value}; refuses a bytes/ratio
    pair set together."""
    out: dict[str, int] = {}
    for name, given in (
        ("dirty_background_bytes", settings.vm_dirty_background_bytes),
        ("dirty_bytes", settings.vm_dirty_bytes),
    ):
        if given is not None:
            out[name] = parse_bytes(given)
    for name, value in (settings.vm or {}).items():
        k = key(name)
        if k in out:
            raise LabError(f"os: vm.{k} is given twice (as vm_{k} and in vm)")
        if k.endswith("_bytes"):
            out[k] = parse_bytes(value)
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[k] = value
        else:
            raise LabError(f"os: vm.{k} must be a non-negative integer, not {value!r}")
    for k in out:
        if PAIRS.get(k) in out:
            raise LabError(
                f"os: vm.{k} and vm.{PAIRS[k]} cannot both be set: the kernel keeps only one of "
                "them (writing one zeroes the other)"
            )
    return out
