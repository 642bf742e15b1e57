"""Which PostgreSQL major has which setting: a setting the target's major does not know is refused when the
config is validated, naming the key and the major, rather than by the server at its first start.

The table (pg_settings.tsv beside this module) is what the real servers said: `SELECT name FROM pg_settings`
of a throw-away cluster of every pinned build and of the distribution's (scripts/record_pg_settings.py
writes it; tests/test_pg_settings.py holds it to the binaries installed here). `postgres --describe-config`
would need no cluster but leaves out the developer settings (debug_io_direct among them).

A name with a dot (an extension's, e.g. pg_stat_statements.track) is any server's to accept; a major the
table does not cover (a user's bindir of PostgreSQL 13) is checked by the server itself at start.
"""

from __future__ import annotations

import functools
from pathlib import Path

TABLE = Path(__file__).with_name("pg_settings.tsv")
MAJORS_LINE = "# majors:"


@functools.cache
def table() -> tuple[frozenset[int], dict[str, frozenset[int]]]:
    """(the majors the table covers, {setting: the majors that have it})."""
    majors: frozenset[int] = frozenset()
    out: dict[str, frozenset[int]] = {}
    for line in TABLE.read_text().splitlines():
        if line.startswith(MAJORS_LINE):
            majors = frozenset(int(v) for v in line.removeprefix(MAJORS_LINE).split())
        elif line and not line.startswith("#"):
            name, _, have = line.partition("\t")
            out[name.lower()] = frozenset(int(v) for v in have.split())  # setting names ignore case
    return majors, out


def covered(major: int) -> bool:
    return major in table()[0]


def _span(majors: frozenset[int]) -> str:
    """14, 15 and 16 -> '14-16'; 15 and 17 -> '15, 17'."""
    items = sorted(majors)
    runs: list[list[int]] = []
    for m in items:
        if runs and m == runs[-1][-1] + 1:
            runs[-1].append(m)
        else:
            runs.append([m])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def problem(name: str, major: int) -> str | None:
    """Why PostgreSQL `major` would refuse setting `name` (None: it has it, or the table cannot tell)."""
    if "." in name or not covered(major):
        return None
    majors, have = table()
    found = have.get(name)
    if found and major in found:
        return None
    if not found:
        return f"PostgreSQL {major} has no setting {name!r} (nor has any of PostgreSQL {_span(majors)})"
    return f"PostgreSQL {major} has no setting {name!r} (PostgreSQL {_span(found)} has)"
