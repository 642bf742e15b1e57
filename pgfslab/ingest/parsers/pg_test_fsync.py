"""pg_test_fsync's report (PostgreSQL 9.x-17; layout of src/bin/pg_test_fsync/pg_test_fsync.c, C locale).

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

One row per result line: ``section`` (the header without its colon, e.g. "Compare file sync methods using
one 8kB write"), ``method`` (the label, stripped: "open_datasync", "1 * 16kB open_sync write", "write, fsync,
close"), ``ops_per_s``, ``usecs_per_op`` (as printed: rounded to whole µs), ``status``:

* ``ok``: numbers present;
* ``n/a``: not available on this platform (fsync_writethrough on Linux): numbers null;
* ``n/a*``: the open with O_DIRECT failed (the file system does not support direct I/O): numbers null;
* ``incomplete``: the file's last line is a label without a result (run interrupted, output cut off):
  numbers null. A label without a result elsewhere is an unrecognised line.

``note`` explains the null ones; ``secs_per_test`` and ``platform`` (the O_DIRECT/F_NOCACHE line) repeat the
header on every row. Lines that are none of these nor pg_test_fsync's known explanatory text are returned
in ``pg_test_fsync_unrecognised`` (line, text) and counted in one warning; none is dropped silently.
Lines ``pg_test_fsync: error: ...`` (stderr captured with stdout) give a warning each.
A file without the ``seconds per test`` header and without any result line raises ParseError.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.ingest.parsers._common import ParseError

NAME = "pg-test-fsync"
DESCRIPTION = "pg_test_fsync stdout: ops/s and µs/op per wal_sync_method and write pattern"
WARNINGS_KEY = "_warnings"

SCHEMA: dict[str, Any] = {
    "line": pl.Int64,
    "section": pl.String,
    "method": pl.String,
    "ops_per_s": pl.Float64,
    "usecs_per_op": pl.Float64,
    "status": pl.String,
    "note": pl.String,
    "secs_per_test": pl.Int64,
    "platform": pl.String,
}
UNRECOGNISED_SCHEMA: dict[str, Any] = {"line": pl.Int64, "text": pl.String}
WARNINGS_SCHEMA: dict[str, Any] = {"line": pl.Int64, "message": pl.String}
TABLES = {"pg_test_fsync": SCHEMA, "pg_test_fsync_unrecognised": UNRECOGNISED_SCHEMA}

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf|-?nan"
RESULT_RE = re.compile(rf"^ {{8}}(?P<label>\S.*?|\s\S.*?)\s+(?P<ops>{NUM}) ops/sec\s+(?P<us>{NUM}) usecs/op\s*$")
NA_RE = re.compile(r"^ {8}(?P<label>\S.*?|\s\S.*?)\s+(?P<na>n/a\*?)\s*$")
LABEL_ONLY_RE = re.compile(r"^ {8}(?P<label>\s?\S.*?)\s*$")
SECS_RE = re.compile(r"^(?P<n>\d+) seconds? per test\s*$")
PLATFORM_RE = re.compile(
    r"^(O_DIRECT supported on this platform for open_datasync and open_sync\.|"
    r"F_NOCACHE supported on this platform for open_datasync and open_sync\.|"
    r"Direct I/O is not supported on this platform\.)\s*$"
)
SECTION_RE = re.compile(r"^(?P<title>(?:Compare|Test|Non-sync)\S*(?: .*)?):\s*$")
ERROR_RE = re.compile(r"^pg_test_fsync: (?:error|fatal|detail|hint): ")
KNOWN_TEXT = {
    "(in wal_sync_method preference order, except fdatasync is Linux's default)",
    "(in wal_sync_method preference order, except fdatasync is Linux's default",  # defensive: cut line
    "(This is designed to compare the cost of writing 16kB in different write",
    "open_sync sizes.)",
    "(If the times are similar, fsync() can sync data written on a different",
    "descriptor.)",
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
    return bool(re.search(r"^\d+ seconds? per test$", head, re.M)) or "Compare file sync methods" in head


def _num(tok: str) -> float | None:
    x = float(tok)
    return None if math.isnan(x) else x


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
    section: str | None = None
    secs: int | None = None
    platform: str | None = None
    all_lines = text.splitlines()
    last = max((i for i, ln in enumerate(all_lines, start=1) if ln.strip()), default=0)
    for no, raw in enumerate(all_lines, start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if (m := SECS_RE.match(line)) and secs is None:
            secs = int(m.group("n"))
            continue
        if m := PLATFORM_RE.match(line):
            platform = m.group(1)
            continue
        if m := SECTION_RE.match(line):
            section = m.group("title")
            continue
        if line.strip() in KNOWN_TEXT:
            continue
        if ERROR_RE.match(line):
            warnings.append((no, f"pg_test_fsync reported: {line.strip()}"))
            continue
        m = RESULT_RE.match(line)
        status = "ok"
        if m is None and (m := NA_RE.match(line)):
            status = m.group("na")
        elif m is None and section is not None and no == last and (m := LABEL_ONLY_RE.match(line)):
            status = "incomplete"
            warnings.append((no, f"no result after {m.group('label').strip()!r}: interrupted or cut off"))
        if m is None:
            unrecognised.append((no, line))
            continue
        if section is None:
            warnings.append((no, "result line before any section header"))
        rows.append(
            {
                "line": no,
                "section": section,
                "method": m.group("label").strip(),
                "ops_per_s": _num(m.group("ops")) if status == "ok" else None,
                "usecs_per_op": _num(m.group("us")) if status == "ok" else None,
                "status": status,
                "note": NOTES.get(status),
            }
        )
    if secs is None and not rows:
        first = next(i for i, ln in enumerate(text.splitlines(), start=1) if ln.strip())
        raise ParseError(path, first, "not pg_test_fsync output: no 'N seconds per test' header and no result line")
    if secs is None:
        warnings.append((None, "no 'N seconds per test' header"))
    for r in rows:
        r["secs_per_test"] = secs
        r["platform"] = platform
    if unrecognised:
        warnings.append(
            (
                None,
                f"{len(unrecognised)} unrecognised line(s), returned in pg_test_fsync_unrecognised "
                f"(first at line {unrecognised[0][0]})",
            )
        )
    out = {
        "pg_test_fsync": pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA),
        "pg_test_fsync_unrecognised": pl.DataFrame(
            {"line": [u[0] for u in unrecognised], "text": [u[1] for u in unrecognised]}, schema=UNRECOGNISED_SCHEMA
        ),
    }
    if warnings:
        out[WARNINGS_KEY] = pl.DataFrame(
            {"line": [w[0] for w in warnings], "message": [w[1] for w in warnings]}, schema=WARNINGS_SCHEMA
        )
    return out
