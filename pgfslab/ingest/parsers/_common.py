"""Helpers shared by the log parsers: the error type, text and line handling, torn-line detection,
warnings frames, and the fast reader for big space-separated logs (pgbench's per-transaction and
aggregate logs) with a slow, exact diagnosis pass that runs only when the fast read fails."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import polars as pl

from pgfslab.ingest.scan import FileScan, first_line, scan_file

# re-exported: the parsers and the ingest import them from here
__all__ = ["FileScan", "first_line", "scan_file"]

# A polars dtype as written in TABLES: a class (pl.Int64) or an instance (pl.Datetime("us", "UTC")).
DType: TypeAlias = Any
Schema: TypeAlias = dict[str, DType]

WARNINGS_KEY = "_warnings"
WARNINGS_SCHEMA: Schema = {"line": pl.Int64, "message": pl.String}

# Line accounting: a parser that reads a text file line by line returns, under LINES_KEY, one row
# per line of the file (torn last line included) saying what became of it: PARSED (its values are
# in a table, or it is a header/label of what is), NOISE (recognised and carries nothing to store:
# blank lines, `starting vacuum...end.`, known banners) or NOT_UNDERSTOOD (counted, shown and stored
# by the ingest, never silently dropped). The key is not a table: the ingest pops it.
LINES_KEY = "_lines"
LINES_SCHEMA: Schema = {"line": pl.Int64, "kind": pl.String, "text": pl.String}
PARSED, NOISE, NOT_UNDERSTOOD = "parsed", "noise", "not_understood"
LINE_KINDS = (PARSED, NOISE, NOT_UNDERSTOOD)

# A number as C's printf writes it (%f, %.3f, %.0f), plus the nan/inf spellings of glibc and of PostgreSQL's own
# snprintf (`NaN`, `Infinity`: pgbench 18 prints `stddev NaN` for an interval with one transaction).
NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Infinity))"

INT64_MAX = 2**63 - 1


class ParseError(Exception):
    """A log file could not be parsed. `str(err)` is `path:line: message` (or `path: message`)."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        super().__init__(str(path), line, message)
        self.path = str(path)
        self.line = line
        self.message = message

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


def excerpt(text: str | bytes, limit: int = 80) -> str:
    """A short, printable rendering of a line for error messages."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    shown = text if len(text) <= limit else text[:limit] + "..."
    return repr(shown)


# ----------------------------------------------------------------------------- small text files


def read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None


def decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(path, line, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); expected a text log") from None


@dataclass
class Lines:
    """The complete lines of a small text file as a frame (`line` 1-based, `text` without CR/LF),
    and the torn last line (no newline at the end of the file), which is kept out of `frame`."""

    frame: pl.DataFrame
    torn: tuple[int, str] | None

    @property
    def count(self) -> int:
        return self.frame.height


def split_lines(text: str) -> Lines:
    if text == "":
        return Lines(pl.DataFrame({"line": [], "text": []}, schema={"line": pl.Int64, "text": pl.String}), None)
    parts = text.split("\n")
    torn: tuple[int, str] | None = None
    last = parts.pop()  # "" when the text ends with a newline
    if last != "":
        torn = (len(parts) + 1, last)
    frame = pl.DataFrame(
        {"line": pl.int_range(1, len(parts) + 1, eager=True, dtype=pl.Int64), "text": pl.Series(parts, dtype=pl.String)}
    )
    frame = frame.with_columns(pl.col("text").str.strip_suffix("\r"))
    return Lines(frame, torn)


def torn_warning(line: int, text: str | bytes) -> tuple[int, str]:
    return (line, f"incomplete last line dropped (no newline at end of file: run killed mid-write?): {excerpt(text)}")


def warnings_frame(items: Iterable[tuple[int | None, str]]) -> pl.DataFrame:
    rows = list(items)
    return pl.DataFrame({"line": [r[0] for r in rows], "message": [r[1] for r in rows]}, schema=WARNINGS_SCHEMA)


def result(
    tables: dict[str, pl.DataFrame],
    warnings: Sequence[tuple[int | None, str]],
    lines: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """The parsers' return value: the tables, plus `_warnings` only when there is something to say,
    plus `_lines` (the line accounting, LINES_SCHEMA) when the parser classifies every line."""
    out = dict(tables)
    if warnings:
        out[WARNINGS_KEY] = warnings_frame(warnings)
    if lines is not None:
        out[LINES_KEY] = lines.select(list(LINES_SCHEMA)).cast(LINES_SCHEMA)  # type: ignore[arg-type]
    return out


def classify(frame: pl.DataFrame, parsed: pl.Expr, noise: pl.Expr) -> pl.DataFrame:
    """The line accounting of `frame` (`line`, `text`, any helper columns): PARSED where `parsed`,
    else NOISE where `noise`, else NOT_UNDERSTOOD (nulls count as False)."""
    kind = (
        pl.when(parsed.fill_null(False))
        .then(pl.lit(PARSED))
        .when(noise.fill_null(False))
        .then(pl.lit(NOISE))
        .otherwise(pl.lit(NOT_UNDERSTOOD))
    )
    return frame.select(pl.col("line").cast(pl.Int64), kind.alias("kind"), pl.col("text").cast(pl.String))


def with_torn(kinds: pl.DataFrame, lines: Lines) -> pl.DataFrame:
    """The accounting plus the torn last line (dropped with a warning: not understood)."""
    if lines.torn is None:
        return kinds
    line_no, text = lines.torn
    torn = pl.DataFrame({"line": [line_no], "kind": [NOT_UNDERSTOOD], "text": [text]}, schema=LINES_SCHEMA)
    return pl.concat([kinds.cast(LINES_SCHEMA), torn])  # type: ignore[arg-type]


def read_lines(path: Path) -> Lines:
    """A small text file's lines (UTF-8; ParseError otherwise)."""
    return split_lines(decode(path, read_bytes(path)))


# blank lines, and the prompt line of a pasted terminal session (`user@host:dir$ cmd`, `user@host: ~$ cmd`,
# `# cmd`, `~ $ cmd`)
BLANK = r"^\s*$"


def prompt(command: str) -> str:
    """A regex for the shell prompt line that ran `command` (the line a pasted session starts with)."""
    return rf"^(?:[\w.-]+@[\w.-]+(?::\s*[^\s$#]*)?\s*[$#>]|\S*\s*[$#>%]|\[[^\]]*\][$#])\s*(?:sudo (?:-\S+ )*)?(?:\w+=\S*\s+)*{command}(?:\s|$)"


def conform(frame: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Exactly the schema's columns, in its order, with its dtypes (missing columns are null)."""
    cols = []
    for name, dtype in schema.items():
        if name in frame.columns:
            cols.append(pl.col(name).cast(dtype))
        else:
            cols.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(cols)


def empty(schema: Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def nan_to_null(*names: str) -> list[pl.Expr]:
    return [pl.when(pl.col(n).is_nan()).then(None).otherwise(pl.col(n)).alias(n) for n in names]


def first_true(mask: pl.Series) -> int | None:
    """Index of the first True in a boolean series (nulls count as False)."""
    idx = mask.fill_null(False).arg_true()
    return None if idx.len() == 0 else int(idx[0])


def cast_checked(path: Path, frame: pl.DataFrame, raw: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Cast the string columns of `raw` (one row per line of `frame`, which has `line` and `text`) to
    `schema` (NaN becomes null); a number that does not fit raises ParseError at its line."""
    casts = [pl.col(c).cast(t, strict=False) for c, t in schema.items() if c in raw.columns and t != pl.String]
    values = raw.with_columns(casts)
    over = values.select(
        pl.any_horizontal(
            [
                raw[c].is_not_null() & (pl.col(c).is_null() | (pl.col(c).is_infinite() if t == pl.Float64 else False))
                for c, t in schema.items()
                if c in raw.columns and t != pl.String
            ]
            or [pl.lit(False)]
        )
    ).to_series()
    row = first_true(over)
    if row is not None:
        raise ParseError(path, int(frame["line"][row]), f"number out of range: {excerpt(frame['text'][row])}")
    return values.with_columns(nan_to_null(*[c for c, t in schema.items() if t == pl.Float64 and c in raw.columns]))


# ----------------------------------------------------------------------------- big space-separated logs

Validator = Callable[[bytes], str | None]  # returns None when fine, else what is wrong


def v_uint(tok: bytes) -> str | None:
    if not tok.isdigit():
        return "is not an unsigned integer"
    if len(tok) > 19 or int(tok) > INT64_MAX:
        return "is too large for a 64-bit integer"
    return None


_UNUM = re.compile(rb"\d+(?:\.\d+)?")


def v_unum(tok: bytes) -> str | None:
    if not _UNUM.fullmatch(tok):
        return "is not an unsigned number"
    if len(tok) > 300:
        return "is too large"
    return None


@dataclass(frozen=True)
class Field:
    name: str  # column name in the raw frame
    dtype: DType  # dtype for polars' read_csv
    doc: str  # pgbench's name for the field, for messages
    check: Validator  # exact token check, used only to diagnose a failed fast read


def _newline_count(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 24), b""):
            n += chunk.count(b"\n")
    return n


def _last_line(path: Path, size: int) -> bytes:
    """The bytes after the last newline (the torn tail), or b"" if the file ends with a newline."""
    with open(path, "rb") as fh:
        end = size
        tail = b""
        while end > 0:
            start = max(0, end - (1 << 16))
            fh.seek(start)
            chunk = fh.read(end - start)
            pos = chunk.rfind(b"\n")
            if pos >= 0:
                return chunk[pos + 1 :] + tail
            tail = chunk + tail
            end = start
            if len(tail) > (1 << 20):  # a 1 MiB "line": not a log we know; the reader will say so
                return tail
        return tail


def _line_at(path: Path, number: int) -> bytes:
    with open(path, "rb") as fh:
        for i, raw in enumerate(fh, 1):
            if i == number:
                return raw.rstrip(b"\r\n")
    return b""


def field_problem(tokens: list[bytes], fields: Sequence[Field]) -> str | None:
    names = " ".join(f.doc for f in fields)
    if len(tokens) != len(fields):
        return f"expected {len(fields)} space-separated fields ({names}), found {len(tokens)}"
    for i, (tok, f) in enumerate(zip(tokens, fields, strict=True), 1):
        problem = f.check(tok)
        if problem is not None:
            return f"field {i} ({f.doc}) {excerpt(tok, 40)} {problem}"
    return None


def _diagnose(path: Path, fields: Sequence[Field], n_lines: int | None, exc: Exception) -> ParseError:
    """Find the first bad line the exact (slow) way. Runs only after the fast reader failed."""
    with open(path, "rb") as fh:
        for i, raw in enumerate(fh, 1):
            if n_lines is not None and i > n_lines:
                break
            line = raw.rstrip(b"\n").rstrip(b"\r")
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as ue:
                return ParseError(path, i, f"not UTF-8 text (byte 0x{line[ue.start]:02x}): {excerpt(line)}")
            problem = field_problem(line.split(b" "), fields) if line else "empty line"
            if problem is not None:
                return ParseError(path, i, f"{problem}: {excerpt(line)}")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ParseError(path, None, f"could not read as a space-separated log: {first}")


@dataclass
class Table:
    frame: pl.DataFrame  # raw columns as named by `fields`
    warnings: list[tuple[int | None, str]]


def read_space_separated(path: Path, fields: Sequence[Field], what: str) -> Table:
    """Read a big space-separated log with polars' CSV reader (the fast path), then check that every
    row has all fields. A torn last line (no newline at the end, or missing fields) is dropped with a
    warning; any other bad line raises ParseError with its line number."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if size == 0:
        raise ParseError(path, 1, f"empty file; expected {what}")
    warnings: list[tuple[int | None, str]] = []
    n_rows: int | None = None
    torn = _last_line(path, size)
    if torn:
        n_rows = _newline_count(path)
        if n_rows == 0:
            raise ParseError(path, 1, f"no complete line (no newline at all); expected {what}: {excerpt(torn)}")
        warnings.append(torn_warning(n_rows + 1, torn))
    schema = {f.name: f.dtype for f in fields}
    try:
        frame = pl.read_csv(
            path,
            has_header=False,
            separator=" ",
            quote_char=None,
            schema=schema,
            n_rows=n_rows,
            encoding="utf8",
            raise_if_empty=False,
        )
    except Exception as exc:  # polars raises several types (ComputeError, SchemaError, ...)
        raise _diagnose(path, fields, n_rows, exc) from None
    if frame.height == 0:
        raise ParseError(path, 1, f"no lines; expected {what}")
    # polars fills missing trailing fields (and blank lines) with nulls: every field is required.
    incomplete = pl.any_horizontal([pl.col(c).is_null() for c in frame.columns])
    bad = frame.select(incomplete.alias("bad")).to_series()
    idx = bad.arg_true()
    if idx.len():
        last_row = frame.height - 1
        if int(idx[0]) == last_row:
            # the last line misses fields: torn even though a newline follows it
            line_no = last_row + 1
            warnings.insert(0, torn_warning(line_no, _line_at(path, line_no)))
            frame = frame.head(last_row)
            if frame.height == 0:
                raise ParseError(path, 1, f"no complete line; expected {what}")
        else:
            line_no = int(idx[0]) + 1
            raw = _line_at(path, line_no)
            problem = field_problem(raw.split(b" "), fields) if raw else "empty line"
            raise ParseError(path, line_no, f"{problem or 'missing fields'}: {excerpt(raw)}")
    return Table(frame, warnings)


def check_rows(path: Path, frame: pl.DataFrame, rules: Sequence[tuple[pl.Expr, str]]) -> None:
    """Raise ParseError for the first row (= line, the frames here keep one row per line) where a
    rule's expression is true."""
    if frame.height == 0 or not rules:
        return
    flags = frame.select([expr.fill_null(False).alias(f"r{i}") for i, (expr, _) in enumerate(rules)])
    first: tuple[int, str] | None = None
    for i, (_, message) in enumerate(rules):
        row = first_true(flags.get_column(f"r{i}"))
        if row is not None and (first is None or row < first[0]):
            first = (row, message)
    if first is not None:
        line_no = first[0] + 1
        raise ParseError(path, line_no, f"{first[1]}: {excerpt(_line_at(path, line_no))}")


def read_head(path: Path, limit: int = 1 << 13) -> str:
    with open(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- the lab's /proc sampler layout

SAMPLE_MARKER = r"^@ (\d{1,12})(?:\.(\d{1,9}))?$"
_SNIFF_SAMPLE_MARKER = re.compile(r"@ \d+(?:\.\d+)?")


def sniff_sampler(head: str, entry: re.Pattern[str]) -> bool:
    """Whether `head` starts like a sampler log of /proc file whose lines match `entry`: a marker
    line, then (when there is a second line) an entry."""
    lines = [ln.rstrip("\r") for ln in head.split("\n") if ln.strip()]
    if not lines or not _SNIFF_SAMPLE_MARKER.fullmatch(lines[0]):
        return False
    return len(lines) == 1 or entry.fullmatch(lines[1]) is not None


@dataclass
class Samples:
    """The entry lines of a sampler log: `line`, `text`, `sample` (1-based), `ts` (UTC µs), in file
    order; `sizes` has one row per sample (`sample`, `marker_line`, `n` entry lines)."""

    entries: pl.DataFrame
    sizes: pl.DataFrame
    warnings: list[tuple[int | None, str]]


def read_samples(path: Path, entry: str, what: str, expected: str) -> Samples:
    """Split a sampler log (`@ <epoch seconds>` then the /proc file's lines, per sample) into
    timestamped entry lines. `entry` is the regex every non-marker line must match; `what` names
    the file (for messages), `expected` describes an entry line. A torn last line is dropped with a
    warning; a line that is neither, a first line that is not a marker, or a sample without lines
    (other than the last) raises ParseError."""
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame.filter(pl.col("text").str.strip_chars() != "")
    if frame.height == 0:
        raise ParseError(path, 1, f"empty file; expected '@ <epoch seconds>' followed by {what} lines")
    text = pl.col("text")
    frame = frame.with_columns(
        text.str.extract(SAMPLE_MARKER, 1).alias("_sec"),
        text.str.extract(SAMPLE_MARKER, 2).alias("_frac"),
        text.str.contains(entry).alias("_ok"),
    ).with_columns(pl.col("_sec").is_not_null().alias("_marker"))
    bad = first_true(frame.select(~pl.col("_marker") & ~pl.col("_ok")).to_series())
    if bad is not None:
        row = frame.row(bad, named=True)
        raise ParseError(
            path,
            row["line"],
            f"expected '@ <epoch seconds>' or a {what} line ({expected}), found {excerpt(row['text'])}",
        )
    if not frame["_marker"][0]:
        raise ParseError(
            path,
            int(frame["line"][0]),
            f"expected '@ <epoch seconds>' before the first {what} line, found {excerpt(frame['text'][0])}",
        )
    micros = pl.col("_sec").cast(pl.Int64) * 1_000_000 + pl.col("_frac").fill_null("").str.pad_end(6, "0").str.slice(
        0, 6
    ).cast(pl.Int64)
    frame = frame.with_columns(
        pl.when(pl.col("_marker")).then(micros).alias("_ts_us"),
        pl.col("_marker").cum_sum().cast(pl.Int64).alias("sample"),
    ).with_columns(pl.col("_ts_us").forward_fill())
    sizes = frame.group_by("sample", maintain_order=True).agg(
        pl.col("line").first().alias("marker_line"), (~pl.col("_marker")).sum().cast(pl.Int64).alias("n")
    )
    empty_mid = sizes.head(sizes.height - 1).filter(pl.col("n") == 0)
    if empty_mid.height:
        raise ParseError(path, int(empty_mid["marker_line"][0]), f"sample marker followed by no {what} lines")
    entries = frame.filter(~pl.col("_marker")).select(
        "line", "text", "sample", pl.col("_ts_us").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("ts")
    )
    return Samples(entries, sizes, warnings)


def cut_off_warning(sizes: pl.DataFrame) -> list[tuple[int | None, str]]:
    """A warning when the last sample of a sampler log has fewer lines than the fullest one (the
    sampler was stopped mid-write); its complete lines are kept."""
    last = sizes.row(sizes.height - 1, named=True)
    full = int(sizes["n"].max() or 0)  # type: ignore[arg-type]
    if sizes.height > 1 and last["n"] < full:
        return [(int(last["marker_line"]), f"last sample cut off: {last['n']} of {full} lines, kept")]
    return []


def check_repeated_key(path: Path, entries: pl.DataFrame, key: str, what: str) -> None:
    """ParseError at the first entry whose `key` repeats within its sample (a lost '@' marker)."""
    dup = first_true(entries.select(~pl.struct("sample", key).is_first_distinct()).to_series())
    if dup is not None:
        raise ParseError(
            path,
            int(entries["line"][dup]),
            f"{what} {entries[key][dup]!r} repeated within one sample (missing '@' marker?)",
        )


def check_int64(path: Path, frame: pl.DataFrame, columns: Sequence[str]) -> None:
    """ParseError at the first row of `frame` (one row per line, with `line` and `text`) where one of
    the digit-string `columns` does not fit in a 64-bit integer."""
    if frame.height == 0 or not columns:
        return
    over = frame.select(
        pl.any_horizontal([pl.col(c).is_not_null() & pl.col(c).cast(pl.Int64, strict=False).is_null() for c in columns])
    ).to_series()
    row = first_true(over)
    if row is not None:
        raise ParseError(
            path, int(frame["line"][row]), f"value too large for a 64-bit integer: {excerpt(frame['text'][row])}"
        )


def check_finite(path: Path, frame: pl.DataFrame, columns: Sequence[str]) -> None:
    """ParseError at the first row where one of the Float64 `columns` is infinite (a number too
    large for a double, or printed as inf)."""
    if frame.height == 0 or not columns:
        return
    row = first_true(frame.select(pl.any_horizontal([pl.col(c).is_infinite() for c in columns])).to_series())
    if row is not None:
        raise ParseError(path, int(frame["line"][row]), f"number too large: {excerpt(frame['text'][row])}")
