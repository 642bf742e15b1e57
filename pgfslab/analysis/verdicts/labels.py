"""How a verdict's rows are labelled: a side's value in the facts' terms, which runs a side names, and the
words for a cell and for what was compared ("xfs / ext4", "ext4: write_size 100 MB / 10 MB")."""

from __future__ import annotations

from typing import Any

import polars as pl

from pgfslab.analysis.verdicts.claims import RUN_KEYS, SIDE_KEYS, Claim
from pgfslab.analysis.verdicts.facts import FS_KEYS, PG_DEFAULTS, PG_KEYS
from pgfslab.config.vm_settings import parse_bytes


def _normal(key: str, value: Any) -> Any:
    """A side's value in the facts' terms (settings as lower-case text, byte counts as bytes)."""
    if key == "dirty_background_bytes":
        return parse_bytes(value)
    if key in PG_KEYS:
        return {True: "on", False: "off"}.get(value, str(value).lower())
    if key in FS_KEYS:
        return int(value)
    if key == "clients":
        return int(value)
    return value


def side_filter(side: dict[str, Any]) -> pl.Expr:
    """Rows whose facts match every key the side names (a list: any of its values; null: not set). The
    claims file admits only keys the facts know (`claims.SIDE_KEYS`), so nothing is silently dropped here."""
    expr = pl.lit(True)
    for key, value in side.items():
        if key not in SIDE_KEYS:
            raise KeyError(f"side key {key!r} is not a run fact ({', '.join(SIDE_KEYS)})")
        if value is None:
            expr = expr & pl.col(key).is_null()
        elif isinstance(value, list):
            expr = expr & pl.col(key).is_in([_normal(key, v) for v in value])
        else:
            expr = expr & (pl.col(key) == _normal(key, value))
    return expr


def _count(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def _size(n: int) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("GB", 10**9)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n / 1e6:g} MB"


def setting_value(key: str, value: Any) -> str:
    """A run setting's value as a reader reads it: 10k files, 100 MB writes, 32 MiB, off."""
    if key in ("files", "directory_files"):
        return _count(int(value))
    if key == "write_size":
        return f"{int(value) / 1e6:g} MB"
    if key == "dirty_background_bytes":
        return _size(int(_normal(key, value)))
    return str(_normal(key, value))


def setting_text(key: str, value: Any) -> str:
    """`files=10k`, `directory_files=100k`, `write_size=10 MB`, `dirty_background_bytes=32 MiB`,
    `synchronous_commit=off`."""
    return f"{key}={setting_value(key, value)}"


def _cell_label(group: dict[str, Any], shared: dict[str, Any] | None = None) -> str:
    parts = [str(group.get("kind"))]
    if group.get("clients") is not None:
        parts.append(f"c={group['clients']}")
    if group.get("rung") is not None:
        parts.append(f"d{group['rung']}")
    if group.get("regime"):
        parts.append(str(group["regime"]).replace("_", " "))
    # the settings both sides of the claim name alike (the claim's own condition, e.g. files=10k), then the
    # settings the cell shares that are not PostgreSQL's defaults (a default says nothing of the cell)
    parts += [setting_text(k, v) for k, v in (shared or {}).items()]
    parts += [
        setting_text(k, v) for k, v in group.items() if k in RUN_KEYS and v is not None and v != PG_DEFAULTS.get(k)
    ]
    return ", ".join(parts)


def _named_settings(claim: Claim) -> tuple[dict[str, Any], list[str]]:
    """The run settings the claim names: those both sides name alike (a condition of every cell) and those
    that tell the sides apart (part of each side's label, so a claim comparing one target with itself says
    what differs: `ext4 (write_size=100 MB) / ext4 (write_size=10 MB)`)."""
    keys = [k for k in dict.fromkeys([*claim.a, *claim.b]) if k in (*RUN_KEYS, "clients")]
    shared = {
        k: claim.a[k]
        for k in keys
        if k in claim.a and k in claim.b and _normal(k, claim.a[k]) == _normal(k, claim.b[k])
    }
    return shared, [k for k in keys if k not in shared]


def _side_label(target: str, side: dict[str, Any], differ: list[str]) -> str:
    text = ", ".join(setting_text(k, side[k]) for k in differ if k in side)
    return f"{target} ({text})" if text and target else target


def _compared(claim: Claim, ta: str, tb: str, differ: list[str]) -> str:
    """B against A in a few words: `xfs / ext4`; one target against itself by the settings that differ,
    `ext4: write_size 100 MB / 10 MB`, `ext4: full_page_writes, wal_init_zero, wal_recycle off / on`; a
    saving, B alone."""
    if claim.quantity == "saving":
        return tb
    if ta != tb or not differ:
        return f"{_side_label(tb, claim.b, differ)} / {_side_label(ta, claim.a, differ)}"
    va = {setting_value(k, claim.a[k]) for k in differ if k in claim.a}
    vb = {setting_value(k, claim.b[k]) for k in differ if k in claim.b}
    if len(va) == len(vb) == 1 and all(k in claim.a and k in claim.b for k in differ):
        return f"{ta}: {', '.join(differ)} {vb.pop()} / {va.pop()}"
    side = lambda s: ", ".join(setting_text(k, s[k]) for k in differ if k in s)  # noqa: E731
    return f"{ta}: {side(claim.b)} / {side(claim.a)}"
