"""Footprint and size: compression ratios (seeds 002, 004) and throughput vs data-set size with the
memory thresholds a chart should mark (seeds 000, 004)."""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl
import zstandard

from pgfslab.analysis.stats.cells import cell_summary

# a relation segment in base/<db oid>/: <filenode>[_fsm|_vm|_init][.<segment>]
RELATION_FILE = re.compile(r"^\d+(?:_(?:fsm|vm|init))?(?:\.\d+)?$")


# ---------------------------------------------------------------------------- compression ratio


def compression_exprs(
    logical: str | pl.Expr = "logical_bytes", physical: str | pl.Expr = "physical_bytes"
) -> list[pl.Expr]:
    """Polars expressions `ratio` = logical / physical and `space_savings` = 1 - physical / logical
    (seed 004's formula: 1 - compressed / uncompressed), for `df.with_columns(*compression_exprs())`.
    Null where the denominator is 0 or missing."""
    lg = pl.col(logical) if isinstance(logical, str) else logical
    ph = pl.col(physical) if isinstance(physical, str) else physical
    lg, ph = lg.cast(pl.Float64), ph.cast(pl.Float64)
    return [
        pl.when(ph > 0).then(lg / ph).otherwise(None).alias("ratio"),
        pl.when(lg > 0).then(1 - ph / lg).otherwise(None).alias("space_savings"),
    ]


def compression_ratio(
    logical_bytes: float | Sequence[float] | np.ndarray | pl.Series,
    physical_bytes: float | Sequence[float] | np.ndarray | pl.Series,
) -> pl.DataFrame:
    """Compression ratio (logical / physical, "2.43:1") and space savings (1 - physical / logical),
    element-wise over scalars or equal-length sequences; returns a frame with logical_bytes,
    physical_bytes, ratio, space_savings. Both sizes must be in the same unit: pg_size_pretty's
    "GB" is GiB while drive tools often report 10^9-byte GB (seed 002's ratios only come out with
    the database size in GiB and the drive's physical size in GB)."""

    def as_list(v: float | Sequence[float] | np.ndarray | pl.Series) -> list[float]:
        if isinstance(v, pl.Series):
            return v.cast(pl.Float64).to_list()
        if isinstance(v, int | float):
            return [float(v)]
        return [float(x) for x in v]

    frame = pl.DataFrame(
        {"logical_bytes": as_list(logical_bytes), "physical_bytes": as_list(physical_bytes)},
        schema={"logical_bytes": pl.Float64, "physical_bytes": pl.Float64},
    )
    return frame.with_columns(*compression_exprs())


# ---------------------------------------------------------------------------- page-level estimate


def _zlib_size(page: bytes, level: int) -> int:
    return len(zlib.compress(page, level))


def _zstd_size(compressor: zstandard.ZstdCompressor, page: bytes) -> int:
    return len(compressor.compress(page))


def _compressors(methods: Sequence[str], level: int | None) -> dict[str, Callable[[bytes], int]]:
    out: dict[str, Callable[[bytes], int]] = {}
    for m in methods:
        if m in ("gzip", "zlib"):
            out[m] = functools.partial(_zlib_size, level=6 if level is None else level)
        elif m == "zstd":
            out[m] = functools.partial(_zstd_size, zstandard.ZstdCompressor(level=3 if level is None else level))
        else:
            raise ValueError(f"unknown compression method {m!r} (zstd, gzip)")
    return out


def _relation_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and RELATION_FILE.match(f.name))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return files


def page_compression_estimate(
    path_or_paths: str | Path | Sequence[str | Path],
    page_size: int = 8192,
    methods: Sequence[str] = ("zstd", "gzip"),
    *,
    level: int | None = None,
    sector_size: int = 4096,
    sample_pages: int | None = None,
    seed: int = 0,
    by_file: bool = False,
) -> pl.DataFrame:
    """How well PostgreSQL's pages compress: each `page_size` page of the relation files is
    compressed on its own (what a file system compressing 8 KB blocks independently could store).

    Paths may be files or directories (a data directory's base/<oid>/: relation segments are
    picked by name, <filenode>[_fsm|_vm][.N]). Per method: files, pages, zero_pages, logical_bytes,
    compressed_bytes, ratio = logical / compressed, space_savings = 1 - compressed / logical, and the
    allocation-aware allocated_bytes (each page rounded up to `sector_size`, never more than the page:
    a file system stores incompressible blocks as they are), allocated_ratio, allocated_savings.
    "gzip" is zlib's deflate (level 6), "zstd" the `zstandard` package's (level 3).
    btrfs compresses 128 KiB extents, so it often does better than this per-page estimate on table
    data. `sample_pages` compresses a seeded random sample of pages instead of all.
    """
    paths = [path_or_paths] if isinstance(path_or_paths, (str, Path)) else list(path_or_paths)
    files = _relation_files(paths)
    comps = _compressors(methods, level)
    pages: list[tuple[Path, int]] = []
    for f in files:
        n = math.ceil(f.stat().st_size / page_size)
        pages += [(f, i) for i in range(n)]
    if sample_pages is not None and sample_pages < len(pages):
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(pages), size=sample_pages, replace=False))
        pages = [pages[i] for i in pick]
    # one record per page and method: the loop is over 8 KB pages, each compressed independently
    recs: list[tuple[str, str, int, int, int, bool]] = []
    for f, same_file in itertools.groupby(pages, key=lambda fp: fp[0]):
        with open(f, "rb") as handle:
            for _, i in same_file:
                handle.seek(i * page_size)
                page = handle.read(page_size)
                zero = page.count(0) == len(page)
                for m, comp in comps.items():
                    c = comp(page)
                    alloc = min(len(page), math.ceil(c / sector_size) * sector_size)
                    recs.append((str(f), m, len(page), c, alloc, zero))
    per_page = pl.DataFrame(
        recs,
        schema={
            "file": pl.Utf8,
            "method": pl.Utf8,
            "logical": pl.Int64,
            "compressed": pl.Int64,
            "allocated": pl.Int64,
            "zero": pl.Boolean,
        },
        orient="row",
    )
    keys = ["file", "method"] if by_file else ["method"]
    out = per_page.group_by(keys, maintain_order=True).agg(
        pl.col("file").n_unique().alias("files"),
        pl.len().alias("pages"),
        pl.col("zero").sum().alias("zero_pages"),
        pl.col("logical").sum().alias("logical_bytes"),
        pl.col("compressed").sum().alias("compressed_bytes"),
        pl.col("allocated").sum().alias("allocated_bytes"),
    )
    out = out.with_columns(
        *compression_exprs("logical_bytes", "compressed_bytes"),
        *[
            e.alias("allocated_" + n)
            for e, n in zip(compression_exprs("logical_bytes", "allocated_bytes"), ("ratio", "savings"))
        ],
        pl.lit(None, dtype=pl.Utf8).alias("note"),
        pl.lit(sample_pages is not None).alias("sampled"),
    )
    if by_file:
        out = out.drop("files")
    order = {m: i for i, m in enumerate(methods)}
    return out.sort(
        pl.col("method").replace_strict(order, default=len(order), return_dtype=pl.Int64), maintain_order=True
    )


# ---------------------------------------------------------------------------- scaling


class Scaling(NamedTuple):
    """`table`: throughput per size; `thresholds`: memory sizes to mark on the chart."""

    table: pl.DataFrame
    thresholds: pl.DataFrame


def memory_thresholds(
    shared_buffers_bytes: float | None = None,
    ram_bytes: float | None = None,
    cgroup_limit_bytes: float | None = None,
    bytes_per_size_unit: float | None = None,
) -> pl.DataFrame:
    """Reference lines for a throughput-vs-size chart: shared_buffers, RAM and (when set and lower)
    the cgroup memory limit, the effective page-cache ceiling. `size` converts each to the chart's
    size unit (e.g. pgbench scale: bytes / bytes_per_size_unit; about 15-16 MB per scale step,
    better measured: `bytes_per_size_unit_from`)."""
    items = [("shared_buffers", shared_buffers_bytes), ("RAM", ram_bytes)]
    if cgroup_limit_bytes is not None and (ram_bytes is None or cgroup_limit_bytes < ram_bytes):
        items.append(("cgroup memory limit", cgroup_limit_bytes))
    rows = [
        {"threshold": k, "bytes": float(v), "size": float(v) / bytes_per_size_unit if bytes_per_size_unit else None}
        for k, v in items
        if v is not None
    ]
    return pl.DataFrame(rows, schema={"threshold": pl.Utf8, "bytes": pl.Float64, "size": pl.Float64})


def bytes_per_size_unit_from(df: pl.DataFrame, size_col: str = "scale", bytes_col: str = "database_bytes") -> float:
    """Median bytes per unit of size over measured rows (e.g. the targets table: database_bytes /
    scale after `pgbench -i`), to place memory thresholds on a scale axis."""
    ratio = (
        df.filter((pl.col(size_col) > 0) & pl.col(bytes_col).is_not_null())
        .select((pl.col(bytes_col).cast(pl.Float64) / pl.col(size_col)).median())
        .item()
    )
    return float(ratio) if ratio is not None else math.nan


def scaling_table(
    df: pl.DataFrame,
    size_col: str,
    value_col: str,
    by: list[str],
    *,
    confidence: float = 0.95,
    shared_buffers_bytes: float | None = None,
    ram_bytes: float | None = None,
    cgroup_limit_bytes: float | None = None,
    bytes_per_size_unit: float | None = None,
) -> Scaling:
    """Throughput against data-set size (seed 004's tps vs pgbench scale; seed 000's three sizes):
    per `by` + size, the `cell_summary` of `value_col` over repeats (n, median with its order-statistic
    CI, mean, stdev, ...), `rel_to_smallest` = median / median at the smallest size of the same `by`,
    and, when the memory sizes and bytes_per_size_unit are known, `regime`: "fits shared_buffers",
    "fits RAM" (or the cgroup limit if lower) or "exceeds RAM". The thresholds come back as a second
    frame for the chart (`memory_thresholds`)."""
    table = cell_summary(df, value_col, [*by, size_col], confidence).sort([*by, size_col])
    first = pl.col("median").sort_by(size_col).first().over(by) if by else pl.col("median").sort_by(size_col).first()
    table = table.with_columns((pl.col("median") / first).alias("rel_to_smallest"))
    thresholds = memory_thresholds(shared_buffers_bytes, ram_bytes, cgroup_limit_bytes, bytes_per_size_unit)
    if bytes_per_size_unit:
        size_bytes = pl.col(size_col).cast(pl.Float64) * bytes_per_size_unit
        mem = (
            min(v for v in (ram_bytes, cgroup_limit_bytes) if v is not None)
            if (ram_bytes or cgroup_limit_bytes)
            else None
        )
        regime = pl.lit(None, dtype=pl.Utf8)
        if mem is not None:
            regime = pl.when(size_bytes > mem).then(pl.lit("exceeds RAM")).otherwise(pl.lit("fits RAM"))
        if shared_buffers_bytes is not None:
            regime = pl.when(size_bytes <= shared_buffers_bytes).then(pl.lit("fits shared_buffers")).otherwise(regime)
        table = table.with_columns(size_bytes.alias("size_bytes"), regime.alias("regime"))
    return Scaling(table, thresholds)
