"""Result tables of file-system micro-benchmarks in the layout of cockroach's `workload` tool (seed
003; the lab's own fs micro-benchmark runner prints the same): a header of underscore-joined
column names, then one whitespace-separated row per operation type.

    ____optype__elapsed_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)
    create_emp   600.0s         386438          644.1      1.6      1.6      2.0      2.5     67.1

go to `fs_ops` (the end-of-run totals, one row per operation type and table), and the per-second
progress tables

    ____optype__elapsed__ops/sec(inst)___ops/sec(cum)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)
    delete_100       1s            3.0         2559.9      0.4      0.9      1.1    104.9

go to `fs_ops_interval`. Columns are found by their names in the header, so a header may add
`errors` (`__errors`, cockroach's own layout) or order the columns otherwise; `optype` is cut to 10
characters by the tool. A file holds any number of tables: a table is a header and the rows that
follow it up to a blank line, another header or the end. `table_no` numbers the tables of a kind
in the file (1-based): several runs printed one after the other are tables 1, 2, 3. `pMax` is the
largest latency: `max_ms`.

Between tables, run numbers (`1.`), `Running benchmark: ...`, `Description: ...` and benchstat
summary lines (`fsbench/x  100000 1814.5 ops/sec`) are ignored; other lines give a warning. A row
that does not parse inside a table raises ParseError (a torn last row, cut by a kill, is dropped
with a warning), as does a file without any header, a header with an unknown column or without
the columns its kind needs, and counts beyond 64-bit integers.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    NUM,
    ParseError,
    Schema,
    check_finite,
    check_int64,
    conform,
    decode,
    empty,
    excerpt,
    first_true,
    read_bytes,
    result,
    split_lines,
    torn_warning,
)

NAME = "fs-ops"
DESCRIPTION = "file-system micro-benchmark result tables (cockroach `workload` layout): ops, ops/s, latency pcts"

SCHEMA: Schema = {
    "table_no": pl.Int64,
    "optype": pl.String,
    "elapsed_s": pl.Float64,
    "ops": pl.Int64,
    "ops_per_s": pl.Float64,
    "avg_ms": pl.Float64,
    "p50_ms": pl.Float64,
    "p95_ms": pl.Float64,
    "p99_ms": pl.Float64,
    "max_ms": pl.Float64,
    "errors": pl.Int64,
}
INTERVAL_SCHEMA: Schema = {
    "table_no": pl.Int64,
    "optype": pl.String,
    "elapsed_s": pl.Float64,
    "ops_per_s": pl.Float64,
    "ops_per_s_cum": pl.Float64,
    "p50_ms": pl.Float64,
    "p95_ms": pl.Float64,
    "p99_ms": pl.Float64,
    "max_ms": pl.Float64,
    "errors": pl.Int64,
}
TABLES: dict[str, Schema] = {"fs_ops": SCHEMA, "fs_ops_interval": INTERVAL_SCHEMA}

# the headline of an fsmicro run (pgfslab.analysis.queries.headline): its operations per second, summed over the
# result tables' rows (one per operation kind), the operations done, the errors, and the longest time measured
HEADLINE = (
    "fsmicro",
    "fs_ops",
    """SELECT run_id, sum(ops_per_s) AS value, sum(ops) AS transactions, sum(coalesce(errors, 0)) AS failed,
              max(elapsed_s) AS elapsed_s
       FROM fs_ops GROUP BY run_id""",
)

# header name -> (column, kind of value)
COLUMNS: dict[str, tuple[str, str]] = {
    "optype": ("optype", "word"),
    "elapsed": ("elapsed_s", "seconds"),
    "errors": ("errors", "count"),
    "ops(total)": ("ops", "count"),
    "ops/sec(inst)": ("ops_per_s_inst", "number"),
    "ops/sec(cum)": ("ops_per_s_cum", "number"),
    "avg(ms)": ("avg_ms", "number"),
    "p50(ms)": ("p50_ms", "number"),
    "p95(ms)": ("p95_ms", "number"),
    "p99(ms)": ("p99_ms", "number"),
    "pMax(ms)": ("max_ms", "number"),
}
TOTALS_NEED = {
    "optype",
    "elapsed",
    "ops(total)",
    "ops/sec(cum)",
    "avg(ms)",
    "p50(ms)",
    "p95(ms)",
    "p99(ms)",
    "pMax(ms)",
}
INTERVAL_NEED = {"optype", "elapsed", "ops/sec(inst)", "ops/sec(cum)", "p50(ms)", "p95(ms)", "p99(ms)", "pMax(ms)"}

HEADER = r"^_*[A-Za-z][A-Za-z0-9()/]*(?:_+[A-Za-z][A-Za-z0-9()/]*)+_*$"
_VALUE = {"word": r"\S+", "seconds": rf"{NUM}s", "count": r"\d+", "number": NUM}
IGNORED = (
    r"^\s*$|^\d+\.$|^Running benchmark: |^Description: |"
    rf"^\S+\s+\d+\s+{NUM} ops/sec$"
)

_SNIFF = re.compile(r"^_*optype_+elapsed_+(?:ops\(total\)|ops/sec\(inst\))_", re.M)


def sniff(head: str, path: Path) -> bool:
    return _SNIFF.search(head) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    frame = lines.frame
    torn = lines.torn
    if frame.height == 0 and torn is None:
        raise ParseError(path, 1, "empty file; expected a '____optype__elapsed___...' header and result rows")
    text = pl.col("text")
    frame = frame.with_columns(
        (text.str.contains(HEADER) & text.str.contains("elapsed")).alias("is_header"),
        (text.str.strip_chars() == "").alias("is_blank"),
    ).with_columns(
        pl.col("is_header").cum_sum().cast(pl.Int64).alias("block"),
        (pl.col("is_header") | pl.col("is_blank")).cum_sum().alias("para"),
    )
    headers = frame.filter(pl.col("is_header"))
    if headers.height == 0:
        first = frame.filter(~pl.col("is_blank")).head(1)
        line_no = int(first["line"][0]) if first.height else 1
        shown = first["text"][0] if first.height else (torn[1] if torn else "")
        raise ParseError(
            path,
            line_no,
            "not a result table: expected a header like '____optype__elapsed_____ops(total)"
            f"___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)', found {excerpt(shown)}",
        )
    # a row belongs to the table whose header opened its paragraph (no blank line in between)
    para_of_header = headers.select("para", "block")
    frame = frame.join(para_of_header.rename({"block": "owner"}), on="para", how="left", maintain_order="left")
    in_table = ~pl.col("is_header") & ~pl.col("is_blank") & pl.col("owner").is_not_null()
    outside = frame.filter(
        ~pl.col("is_header") & ~pl.col("is_blank") & pl.col("owner").is_null() & ~text.str.contains(IGNORED)
    )
    for r in outside.iter_rows(named=True):
        warnings.append((int(r["line"]), f"unrecognised line ignored: {excerpt(r['text'])}"))
    if torn is not None:
        warnings.append(torn_warning(*torn))

    totals: list[pl.DataFrame] = []
    intervals: list[pl.DataFrame] = []
    counters = {"totals": 0, "interval": 0}
    layouts: dict[str, list[int]] = {}
    for h in headers.iter_rows(named=True):  # one iteration per table (a handful per file), not per line
        layouts.setdefault(h["text"], []).append(h["block"])
    kinds: dict[int, tuple[str, int]] = {}
    for h in headers.iter_rows(named=True):
        names = [t for t in h["text"].split("_") if t]
        kind = _kind(path, h["line"], names)
        counters[kind] += 1
        kinds[h["block"]] = (kind, counters[kind])
    for header_text, blocks in layouts.items():
        names = [t for t in header_text.split("_") if t]
        rows = frame.filter(in_table & pl.col("owner").is_in(blocks))
        if rows.height == 0:
            continue
        kind = kinds[blocks[0]][0]
        table_no = pl.col("owner").replace_strict({b: kinds[b][1] for b in blocks}, return_dtype=pl.Int64)
        pattern = r"^\s*" + r"\s+".join(f"({_VALUE[COLUMNS[n][1]]})" for n in names) + r"\s*$"
        ok = rows.select(text.str.contains(pattern)).to_series()
        bad = first_true(~ok)
        if bad is not None:
            row = rows.row(bad, named=True)
            raise ParseError(
                path,
                row["line"],
                f"expected a result row of {len(names)} columns "
                f"({' '.join(names)}) under the header of line "
                f"{_header_line(headers, row['owner'])}, found {excerpt(row['text'])}",
            )
        cols = [text.str.extract(pattern, i + 1).alias(COLUMNS[n][0]) for i, n in enumerate(names)]
        raw = rows.select("line", "text", table_no.alias("table_no"), *cols)
        counts = [COLUMNS[n][0] for n in names if COLUMNS[n][1] == "count"]
        numbers = [COLUMNS[n][0] for n in names if COLUMNS[n][1] in ("number", "seconds")]
        check_int64(path, raw, counts)
        values = raw.with_columns(
            [pl.col(c).cast(pl.Int64) for c in counts]
            + [pl.col(c).str.strip_suffix("s").cast(pl.Float64) for c in numbers]
        )
        check_finite(path, values, numbers)
        nans = first_true(values.select(pl.any_horizontal([pl.col(c).is_nan() for c in numbers])).to_series())
        if nans is not None:
            raise ParseError(path, int(values["line"][nans]), f"not a number: {excerpt(values['text'][nans])}")
        if kind == "totals":
            totals.append(conform(values.rename({"ops_per_s_cum": "ops_per_s"}), SCHEMA))
        else:
            intervals.append(conform(values.rename({"ops_per_s_inst": "ops_per_s"}), INTERVAL_SCHEMA))
    out_totals = pl.concat(totals).sort("table_no", maintain_order=True) if totals else empty(SCHEMA)
    out_intervals = pl.concat(intervals).sort("table_no", maintain_order=True) if intervals else empty(INTERVAL_SCHEMA)
    if out_totals.height == 0 and out_intervals.height == 0:
        raise ParseError(path, int(headers["line"][-1]), "result table header(s) without any result row")
    return result({"fs_ops": out_totals, "fs_ops_interval": out_intervals}, warnings)


def _header_line(headers: pl.DataFrame, block: int) -> int:
    return int(headers.filter(pl.col("block") == block)["line"][0])


def _kind(path: Path, line: int, names: list[str]) -> str:
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise ParseError(path, line, f"unknown column {unknown[0]!r} in the header (known: {', '.join(COLUMNS)})")
    if len(set(names)) != len(names):
        raise ParseError(path, line, "a column repeated in the header")
    have = set(names)
    if TOTALS_NEED <= have and "ops/sec(inst)" not in have:
        return "totals"
    if INTERVAL_NEED <= have and "ops(total)" not in have:
        return "interval"
    missing = sorted((TOTALS_NEED if "ops(total)" in have else INTERVAL_NEED) - have)
    raise ParseError(path, line, f"header without the column(s) {', '.join(missing)}")
