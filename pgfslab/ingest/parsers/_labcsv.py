"""Shared reader for the small CSV logs the lab writes itself (pgstat.csv, snapshots.csv,
fsmicro_ops.csv): optional `#` comment lines first, then an exact header line, then rows of plain
comma-separated fields (no quoting: the writers never emit commas or quotes inside a field).

Every field is checked against its column's type; the first bad row raises ParseError with its
line. A torn last line (no newline at the end: the run was killed mid-write) is dropped with a
warning, as in the other parsers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    ParseError,
    decode,
    excerpt,
    first_true,
    read_bytes,
    split_lines,
    torn_warning,
)


@dataclass(frozen=True)
class Column:
    name: str  # column in the file's header
    dtype: object  # polars dtype of the parsed value
    doc: str  # what the field is, for messages ("an epoch time in seconds")
    nullable: bool = False  # an empty field is null (SQL NULL as the writer got it), not an error


def sniff_header(head: str, comment: str | None, header: Sequence[str]) -> bool:
    """The first line is `comment` (when given) and the first non-comment line is the header."""
    lines = [ln.rstrip("\r") for ln in head.split("\n")]
    if comment is not None:
        if not lines or not lines[0].startswith(comment):
            return False
    rest = [ln for ln in lines if not ln.startswith("#")]
    return bool(rest) and rest[0] == ",".join(header)


def read(
    path: Path, columns: Sequence[Column], *, comment: str | None, what: str, allow_empty: bool = False
) -> tuple[pl.DataFrame, list[tuple[int | None, str]]]:
    """The rows of a lab CSV as a frame with `line` and one typed column per `columns` entry, and
    the warnings. `comment`: the required first line's prefix (None: no comment line). An empty
    file or a wrong header raises ParseError; a file with a header and no rows is an empty frame
    (with a warning) when `allow_empty`, else a ParseError."""
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    header = ",".join(c.name for c in columns)
    if lines.torn is not None:
        if lines.count == 0:
            raise ParseError(path, 1, f"incomplete first line {excerpt(lines.torn[1])}; expected {what}")
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame
    if frame.height == 0:
        raise ParseError(path, 1, f"empty file; expected {what}")
    i = 0
    if comment is not None:
        first = frame["text"][0]
        if not first.startswith(comment):
            raise ParseError(path, 1, f"expected the line {comment!r}..., found {excerpt(first)}")
        i = 1
    while i < frame.height and frame["text"][i].startswith("#"):
        i += 1
    if i >= frame.height:
        raise ParseError(path, i, f"no header line; expected {header!r}")
    if frame["text"][i] != header:
        raise ParseError(
            path, int(frame["line"][i]), f"expected the header {header!r}, found {excerpt(frame['text'][i])}"
        )
    body = frame.slice(i + 1).filter(pl.col("text") != "")
    if body.height == 0:
        if not allow_empty:
            raise ParseError(path, int(frame["line"][i]), f"no rows after the header; expected {what}")
        warnings.append((None, "no rows after the header (no samples were taken)"))
    n = len(columns)
    fields = body.with_columns(pl.col("text").str.split(",").alias("_f"))
    wrong = first_true(fields.select(pl.col("_f").list.len() != n).to_series())
    if wrong is not None:
        row = fields.row(wrong, named=True)
        raise ParseError(
            path,
            int(row["line"]),
            f"expected {n} comma-separated fields ({header}), found {len(row['_f'])}: {excerpt(row['text'])}",
        )
    typed = fields.select(
        "line",
        "text",
        *[pl.col("_f").list.get(k).alias(f"_raw{k}") for k in range(n)],
    )
    exprs = []
    for k, c in enumerate(columns):
        raw = pl.col(f"_raw{k}")
        if c.dtype == pl.String:
            exprs.append(raw.alias(c.name))
        else:
            exprs.append(raw.str.strip_chars().cast(c.dtype, strict=False).alias(c.name))  # type: ignore[arg-type]
    out = typed.with_columns(exprs)
    for k, c in enumerate(columns):
        if c.dtype == pl.String:
            bad = out.select((pl.col(c.name) == "") | pl.col(c.name).is_null()).to_series()
        else:
            given = pl.col(f"_raw{k}").str.strip_chars() != ""
            bad = out.select(pl.col(c.name).is_null() & (given if c.nullable else pl.lit(True))).to_series()
            if c.dtype == pl.Float64:
                bad = bad | out.select(~pl.col(c.name).is_finite()).to_series().fill_null(not c.nullable)
        row_i = first_true(bad)
        if row_i is not None:
            row = out.row(row_i, named=True)
            raise ParseError(
                path,
                int(row["line"]),
                f"field {c.name!r} is not {c.doc}: {excerpt(row[f'_raw{k}'])} in {excerpt(row['text'])}",
            )
    return out.select("line", *[c.name for c in columns]), warnings


def epoch_seconds(col: str) -> pl.Expr:
    """A Float64 epoch-seconds column as a UTC timestamp (microseconds)."""
    return (pl.col(col) * 1_000_000).round(0).cast(pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
