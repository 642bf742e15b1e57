"""Published results that exist only as tables (in whitepapers, blog posts, benchstat output),
curated as CSV files under data/external/ (see its README.md for the source of each file). The
header line names the table: it must be exactly one of the headers below, in this column order.

=========================== ============================================================================
table                       columns
=========================== ============================================================================
published_sysbench_variance seed, workload, fillfactor, device, threads, tps_avg, tps_variance
                            (sysbench TPS mean and variance, (transactions/s)², per thread count)
published_space             seed, device, fillfactor, rows_per_table, tables, avg_table_size_mb,
                            database_size_gb, partition_used_tb, device_physical_used_gb,
                            compression_ratio (logical / physical, `1.23:1` -> 1.23)
published_compression       seed, fs, mount_options, workload, scale, logical_gb, physical_gb,
                            space_savings_min_pct, space_savings_max_pct, note
published_benchstat         seed, benchmark, fs_a, ops_per_s_a, variation_pct_a, n_a, fs_b,
                            ops_per_s_b, variation_pct_b, n_b, delta, p_value
=========================== ============================================================================

Sizes keep the unit they were published in (MB, GB, TB as printed, which for PostgreSQL's
pg_size_pretty and df -h are powers of 1024). An empty field is null. A value that does not fit its
column's type (text in a number column, an integer beyond 64 bits, inf/nan) raises ParseError with
its line; so do a file whose header is none of the above, a row with the wrong number of fields
and a file without rows. The parser returns every table of this format; the file's fills one.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    ParseError,
    Schema,
    decode,
    empty,
    excerpt,
    first_true,
    read_bytes,
    result,
    split_lines,
    torn_warning,
)

NAME = "published-table"
DESCRIPTION = "curated CSV of published results (data/external/): sysbench variance, space, compression, benchstat"

TABLES: dict[str, Schema] = {
    "published_sysbench_variance": {
        "seed": pl.String,
        "workload": pl.String,
        "fillfactor": pl.Int64,
        "device": pl.String,
        "threads": pl.Int64,
        "tps_avg": pl.Float64,
        "tps_variance": pl.Float64,
    },
    "published_space": {
        "seed": pl.String,
        "device": pl.String,
        "fillfactor": pl.Int64,
        "rows_per_table": pl.Int64,
        "tables": pl.Int64,
        "avg_table_size_mb": pl.Float64,
        "database_size_gb": pl.Float64,
        "partition_used_tb": pl.Float64,
        "device_physical_used_gb": pl.Float64,
        "compression_ratio": pl.Float64,
    },
    "published_compression": {
        "seed": pl.String,
        "fs": pl.String,
        "mount_options": pl.String,
        "workload": pl.String,
        "scale": pl.Int64,
        "logical_gb": pl.Float64,
        "physical_gb": pl.Float64,
        "space_savings_min_pct": pl.Float64,
        "space_savings_max_pct": pl.Float64,
        "note": pl.String,
    },
    "published_benchstat": {
        "seed": pl.String,
        "benchmark": pl.String,
        "fs_a": pl.String,
        "ops_per_s_a": pl.Float64,
        "variation_pct_a": pl.Float64,
        "n_a": pl.Int64,
        "fs_b": pl.String,
        "ops_per_s_b": pl.Float64,
        "variation_pct_b": pl.Float64,
        "n_b": pl.Int64,
        "delta": pl.String,
        "p_value": pl.Float64,
    },
}
HEADERS = {",".join(schema): table for table, schema in TABLES.items()}

# a CSV field: quoted (doubled quotes inside) or plain
_FIELD = r'(?:"(?:[^"]|"")*"|[^",]*)'


def sniff(head: str, path: Path) -> bool:
    first = head.split("\n", 1)[0].rstrip("\r")
    return first in HEADERS


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame
    if frame.height == 0:
        raise ParseError(path, 1, "empty file; expected a CSV header naming a published table")
    header = frame["text"][0]
    table = HEADERS.get(header)
    if table is None:
        raise ParseError(
            path,
            1,
            f"unknown CSV header {excerpt(header)}; expected one of: "
            + "; ".join(f"{t} ({h})" for h, t in HEADERS.items()),
        )
    schema = TABLES[table]
    names = list(schema)
    rows = frame.slice(1).filter(pl.col("text").str.strip_chars() != "")
    if rows.height == 0:
        raise ParseError(path, 2, f"no rows after the header of {table}")
    pattern = "^" + ",".join(f"({_FIELD})" for _ in names) + "$"
    ok = rows.select(pl.col("text").str.contains(pattern)).to_series()
    bad = first_true(~ok)
    if bad is not None:
        r = rows.row(bad, named=True)
        raise ParseError(
            path,
            r["line"],
            f"expected {len(names)} comma-separated fields ({', '.join(names)}), found {excerpt(r['text'])}",
        )
    raw = rows.select(
        "line", "text", *[pl.col("text").str.extract(pattern, i + 1).alias(n) for i, n in enumerate(names)]
    )
    unquote = [
        pl.when(pl.col(n).str.starts_with('"'))
        .then(pl.col(n).str.slice(1).str.strip_suffix('"').str.replace_all('""', '"', literal=True))
        .otherwise(pl.col(n))
        .replace("", None)
        .alias(n)
        for n in names
    ]
    raw = raw.with_columns(unquote)
    typed = raw.with_columns(
        [pl.col(n).str.strip_chars().cast(t, strict=False) for n, t in schema.items() if t != pl.String]
    )
    for n, t in schema.items():
        if t == pl.String:
            continue
        broken = raw[n].is_not_null() & (
            typed[n].is_null()
            | (typed[n].is_infinite() | typed[n].is_nan() if t == pl.Float64 else pl.Series([False] * raw.height))
        )
        i = first_true(broken)
        if i is not None:
            kind = "an integer that fits 64 bits" if t == pl.Int64 else "a finite number"
            raise ParseError(
                path, int(raw["line"][i]), f"column {n}: {raw[n][i]!r} is not {kind}: {excerpt(raw['text'][i])}"
            )
    out = {t: empty(s) for t, s in TABLES.items()}
    out[table] = typed.select([pl.col(n).cast(t) for n, t in schema.items()])
    return result(out, warnings)
