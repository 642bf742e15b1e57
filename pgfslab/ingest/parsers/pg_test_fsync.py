"""pg_test_fsync's report (PostgreSQL 9.1-17; layout of src/bin/pg_test_fsync/pg_test_fsync.c, C locale).

    2 seconds per test
    O_DIRECT supported on this platform for open_datasync and open_sync.

    Compare file sync methods using one 8kB write:
    (in wal_sync_method preference order, except fdatasync is Linux's default)
            open_datasync                      7018.375 ops/sec     142 usecs/op
            fdatasync                          6141.754 ops/sec     163 usecs/op
            fsync_writethrough                              n/a
            ...
    * This file system and its mount options do not support direct
      I/O, e.g. ext4 in journaled mode.

Versions: 9.3 and later print ``NNNN.NNN ops/sec  NNN usecs/op``; 9.1 and 9.2 print ``NNNN.NNN ops/sec``
alone (``usecs_per_op`` is then null: not printed, and not derived here), 9.1 heads the report with
``2000 operations per test`` (``ops_per_test``) where 9.2 and later print ``N seconds per test``
(``secs_per_test``), and 9.1 writes ``Non-Sync'ed``. Result lines pasted without their 8-space indentation
(a copy from a web page or a terminal that lost it) are read the same. A second ``N seconds per test`` (or
``operations``) header starts a new run in the same file: ``run`` numbers them from 1.

One row per result line: ``section`` (the header without its colon, e.g. "Compare file sync methods using
one 8kB write"), ``method`` (the label, stripped: "open_datasync", "1 * 16kB open_sync write", "write, fsync,
close"), ``ops_per_s`` (1/s), ``usecs_per_op`` (µs, as printed: rounded to whole µs), ``status``:

* ``ok``: numbers present;
* ``n/a``: not available on this platform (fsync_writethrough on Linux): numbers null;
* ``n/a*``: the open with O_DIRECT failed (the file system does not support direct I/O): numbers null;
* ``incomplete``: the file's last line is an indented label without a result (run interrupted, output cut
  off): numbers null. A label without a result elsewhere is an unrecognised line.

``note`` explains the null ones; ``secs_per_test``/``ops_per_test`` and ``platform`` (the O_DIRECT/F_NOCACHE
line) repeat the run's header on every row. Consistency: the file states each result twice (ops/sec and
usecs/op, both from one measured time), so ``ops_per_s × usecs_per_op ≈ 10⁶`` (within the rounding of the
printed µs); a row that fails it keeps its values, says so in ``check`` and gives a warning naming its line.

Line accounting (``_lines``): a result line that made a row is parsed, so is a header whose value rows
carry (the run header, the platform line, a section title); blank lines, pg_test_fsync's explanatory text
and ``pg_test_fsync: error: ...`` lines (each also a warning) are noise; every other line is not
understood, and is returned in ``pg_test_fsync_unrecognised`` (line, text) and counted in one warning.
A file without a run header and without any result line raises ParseError.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.ingest.parsers._common import LINES_SCHEMA, NOISE, NOT_UNDERSTOOD, PARSED, ParseError, result

NAME = "pg-test-fsync"
DESCRIPTION = "pg_test_fsync stdout (9.1-17): ops/s and µs/op per wal_sync_method and write pattern"
WARNINGS_KEY = "_warnings"

SCHEMA: dict[str, Any] = {
    "line": pl.Int64,
    "run": pl.Int64,  # 1, 2, ...: a new run header starts the next
    "section": pl.String,
    "method": pl.String,
    "ops_per_s": pl.Float64,
    "usecs_per_op": pl.Float64,  # null before 9.3 (not printed)
    "status": pl.String,
    "note": pl.String,
    "secs_per_test": pl.Int64,  # 9.2+
    "ops_per_test": pl.Int64,  # 9.1
    "platform": pl.String,
    "check": pl.String,  # null, or why ops/sec x usecs/op is not 1e6
}
UNRECOGNISED_SCHEMA: dict[str, Any] = {"line": pl.Int64, "text": pl.String}
WARNINGS_SCHEMA: dict[str, Any] = {"line": pl.Int64, "message": pl.String}
TABLES = {"pg_test_fsync": SCHEMA, "pg_test_fsync_unrecognised": UNRECOGNISED_SCHEMA}
UNITS = {
    "pg_test_fsync": {
        "line": "line number",
        "run": "count",
        "ops_per_s": "1/s (operations per second, as printed)",
        "usecs_per_op": "µs (as printed, whole µs; not printed before 9.3)",
        "secs_per_test": "s",
        "ops_per_test": "count (9.1)",
    },
    "pg_test_fsync_unrecognised": {"line": "line number"},
}

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf|-?nan"
# the label: indented by pg_test_fsync's LABEL_FORMAT ("        %-32s" / "%-30s"), or pasted without the
# indentation, then a method's label (letters, digits, `_`, `*`, `,`, spaces: "write, fsync, close")
_LABEL = r"^(?: {8}(?P<label>\S.*?|\s\S.*?)|(?P<bare>[\w*][\w*, ]*?))"
RESULT_RE = re.compile(rf"{_LABEL}\s+(?P<ops>{NUM}) ops/sec(?:\s+(?P<us>{NUM}) usecs/op)?\s*$")
NA_RE = re.compile(rf"{_LABEL}\s+(?P<na>n/a\*?)\s*$")
LABEL_ONLY_RE = re.compile(r"^ {8}(?P<label>\s?\S.*?)\s*$")
RUN_HEADER_RE = re.compile(r"^(?P<n>\d+) (?P<what>seconds?|operations) per test\s*$")
PLATFORM_RE = re.compile(
    r"^(O_DIRECT supported on this platform for open_datasync and open_sync\.|"
    r"F_NOCACHE supported on this platform for open_datasync and open_sync\.|"
    r"Direct I/O is not supported on this platform\.)\s*$"
)
SECTION_RE = re.compile(r"^(?P<title>(?:Compare|Test|Non-[Ss]ync)\S*(?: .*)?):\s*$")
ERROR_RE = re.compile(r"^pg_test_fsync: (?:error|fatal|detail|hint): ")
KNOWN_TEXT = {
    "(in wal_sync_method preference order, except fdatasync is Linux's default)",
    '(in "wal_sync_method" preference order, except fdatasync is Linux\'s default)',
    "(in wal_sync_method preference order, except fdatasync is Linux's default",  # defensive: cut line
    # 9.1 wraps these two explanations differently
    "(in wal_sync_method preference order, except fdatasync",
    "is Linux's default)",
    "(This is designed to compare the cost of writing 16kB in different write",
    "open_sync sizes.)",
    "(This is designed to compare the cost of writing 16kB",
    "in different write open_sync sizes.)",
    "(If the times are similar, fsync() can sync data written on a different",
    "descriptor.)",
    "(If the times are similar, fsync() can sync data written",
    "on a different descriptor.)",
    "* This file system and its mount options do not support direct",
    "I/O, e.g. ext4 in journaled mode.",
}
NOTES = {
    "n/a": "not available on this platform (printed 'n/a')",
    "n/a*": "the open with O_DIRECT failed: this file system and its mount options do not support direct I/O "
    "(printed 'n/a*')",
    "incomplete": "the label was printed but no result: the run was interrupted or the output is cut off",
}


def sniff(head: str, path: str | Path | None = None) -> bool:
    return bool(re.search(r"^\d+ (?:seconds?|operations) per test$", head, re.M)) or (
        "Compare file sync methods" in head
    )


def _num(tok: str | None) -> float | None:
    if tok is None:
        return None
    x = float(tok)
    return None if math.isnan(x) else x


def consistency(ops: float | None, us: float | None) -> str | None:
    """Why `ops` ops/sec (printed %.3f) and `us` usecs/op (printed %.0f) do not describe one time, or None
    when they do (or one is missing): pg_test_fsync prints both from one measured time, so 10⁶/ops, for
    any ops that rounds to the printed one, rounds to `us`."""
    if ops is None or us is None or ops <= 0.0005:
        return None
    lo, hi = 1e6 / (ops + 0.0005), 1e6 / (ops - 0.0005)
    if lo - 0.5 - 1e-9 * lo <= us <= hi + 0.5 + 1e-9 * hi:
        return None
    return f"ops/sec x usecs/op = {ops * us:.6g}, not 1e6 (1e6 / {ops:g} ops/sec = {1e6 / ops:.1f} usecs/op, printed {us:g})"


def _label(m: re.Match[str]) -> str:
    return (m.group("label") or m.group("bare") or "").strip()


def parse(path: str | Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(path, data[: exc.start].count(b"\n") + 1, "not UTF-8 text") from None
    if not text.strip():
        raise ParseError(path, None, "empty file")
    rows: list[dict[str, Any]] = []
    unrecognised: list[tuple[int, str]] = []
    warnings: list[tuple[int | None, str]] = []
    kinds: list[str] = []
    # the header lines of the run in force, whose values the rows carry: parsed once a row took them
    headers: dict[str, int | None] = {"run": None, "platform": None, "section": None}
    used: set[int] = set()
    section: str | None = None
    run, secs, ops_per_test, platform = 0, None, None, None
    all_lines = text.split("\n")  # the lines the ingest counts (a last line without newline included)
    if all_lines[-1] == "":
        all_lines.pop()
    last = max((i for i, ln in enumerate(all_lines, start=1) if ln.strip()), default=0)
    for no, raw in enumerate(all_lines, start=1):
        line = raw.rstrip("\r")
        kinds.append(NOISE)
        if not line.strip() or line.strip() in KNOWN_TEXT:
            continue
        if m := RUN_HEADER_RE.match(line):
            run += 1
            n = int(m.group("n"))
            secs, ops_per_test = (None, n) if m.group("what") == "operations" else (n, None)
            platform, section = None, None
            headers = {"run": no, "platform": None, "section": None}
            continue
        if m := PLATFORM_RE.match(line):
            platform = m.group(1)
            headers["platform"] = no
            continue
        if m := SECTION_RE.match(line):
            section = m.group("title")
            headers["section"] = no
            continue
        if ERROR_RE.match(line):
            warnings.append((no, f"pg_test_fsync reported: {line.strip()}"))
            continue
        m = RESULT_RE.match(line)
        status = "ok"
        if m is None and (m := NA_RE.match(line)):
            status = m.group("na")
        elif (
            m is None
            and section is not None
            and no == last
            and (m := LABEL_ONLY_RE.match(line))
            and "ops/sec" not in line
        ):
            status = "incomplete"
            warnings.append((no, f"no result after {m.group('label').strip()!r}: interrupted or cut off"))
        if m is None:
            unrecognised.append((no, line))
            kinds[-1] = NOT_UNDERSTOOD
            continue
        if section is None:
            warnings.append((no, "result line before any section header"))
        ops = _num(m.group("ops")) if status == "ok" else None
        us = _num(m.group("us")) if status == "ok" else None
        check = consistency(ops, us)
        if check is not None:
            warnings.append((no, f"inconsistent report: {check}"))
        kinds[-1] = PARSED
        used.update(h for h in headers.values() if h is not None)
        rows.append(
            {
                "line": no,
                "run": max(run, 1),
                "section": section,
                "method": _label(m),
                "ops_per_s": ops,
                "usecs_per_op": us,
                "status": status,
                "note": NOTES.get(status),
                "secs_per_test": secs,
                "ops_per_test": ops_per_test,
                "platform": platform,
                "check": check,
            }
        )
    if run == 0 and not rows:
        first = next(i for i, ln in enumerate(all_lines, start=1) if ln.strip())
        raise ParseError(path, first, "not pg_test_fsync output: no 'N seconds per test' header and no result line")
    if run == 0:
        warnings.append((None, "no 'N seconds per test' header"))
    for i in used:
        kinds[i - 1] = PARSED
    if unrecognised:
        warnings.append(
            (
                None,
                f"{len(unrecognised)} unrecognised line(s), returned in pg_test_fsync_unrecognised "
                f"(first at line {unrecognised[0][0]})",
            )
        )
    accounting = pl.DataFrame(
        {
            "line": list(range(1, len(all_lines) + 1)),
            "kind": kinds,
            "text": [ln.rstrip("\r") for ln in all_lines],
        },
        schema=LINES_SCHEMA,
    )
    tables = {
        "pg_test_fsync": pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA),
        "pg_test_fsync_unrecognised": pl.DataFrame(
            {"line": [u[0] for u in unrecognised], "text": [u[1] for u in unrecognised]}, schema=UNRECOGNISED_SCHEMA
        ),
    }
    return result(tables, warnings, accounting)
