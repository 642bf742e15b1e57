"""Where this study measured something a seed document also reports, how do the numbers compare
(notebook local_vs_published)?

Each `*_items` function gives the rows of one comparable measure, this lab's (`source` "this lab") and
the published ones ("published"), with the columns of `ITEM_SCHEMA`: kind (the measure), item (what was
measured, readable), source, value, unit and a note. `comparable` keeps the measures both sides have.
Absolute numbers come from different machines; the notebook says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from pgfslab.analysis import stats
from pgfslab.analysis.queries import SIZE_SUFFIX

LAB, PUB = "this lab", "published"
ITEM_SCHEMA = {
    "kind": pl.Utf8,
    "item": pl.Utf8,
    "source": pl.Utf8,
    "value": pl.Float64,
    "unit": pl.Utf8,
    "note": pl.Utf8,
}
PGBENCH = "pgbench tps (seed 001)"
SYSBENCH = "sysbench CV of per-second tps (seed 002)"
FS = "fs micro-benchmark ops/s (seed 003)"
SPACE = "space savings % (seeds 002, 004)"


def _base(df: pl.DataFrame) -> pl.Expr:
    """The config's workload of a run (a ladder's `tpcb.d2` is `tpcb` at rung 2)."""
    return pl.coalesce("base_workload", "workload") if "base_workload" in df.columns else pl.col("workload")


def _text(c: str) -> pl.Expr:
    """A column as Python's str() writes it in an f-string (null: "None")."""
    return pl.col(c).cast(pl.Utf8).fill_null("None")


def _fixed(e: pl.Expr, digits: int) -> pl.Expr:
    """A number as Python's f"{x:.{digits}f}" writes it (formatting text, not computing)."""
    return e.map_elements(lambda v: f"{v:.{digits}f}", return_dtype=pl.Utf8)


def _items(
    df: pl.DataFrame, kind: str, source: str, item: pl.Expr, value: pl.Expr, unit: str, note: pl.Expr
) -> pl.DataFrame:
    return df.select(
        pl.lit(kind).alias("kind"),
        item.alias("item"),
        pl.lit(source).alias("source"),
        value.cast(pl.Float64).alias("value"),
        pl.lit(unit).alias("unit"),
        note.alias("note"),
    )


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=ITEM_SCHEMA)


def family(benchmark: pl.Expr) -> pl.Expr:
    """A micro-benchmark's name without its size (`delete_small_dir_2MB` -> `delete_small_dir`), as
    `queries.benchmark_family`."""
    return benchmark.str.strip_prefix("fsbench/").str.replace(SIZE_SUFFIX.pattern, "")


def pgbench_items(
    runs: pl.DataFrame, published: pl.DataFrame, workloads: Mapping[str, dict[str, Any] | None], scale: Any
) -> pl.DataFrame:
    """Seed 001: pgbench tps by built-in script. Ours: the median over repeats per workload (its built-in
    script from the config's `workloads`), target and client count of the runs' tps (`queries.headline`),
    never pooled across workloads (sync on, sync off and each WAL setting are workloads of their own);
    theirs: every published run of a script we ran (`queries.published_pgbench`), with its
    synchronous_commit."""
    pgb = runs.filter((pl.col("tool") == "pgbench") & pl.col("value").is_not_null())
    if not (pgb.height and published.height):
        return _empty()
    builtins = {w: (s or {}).get("builtin") for w, s in workloads.items()}
    ours = (
        pgb.with_columns(
            _base(runs).alias("base"),
            _base(runs).replace_strict(builtins, default=None, return_dtype=pl.Utf8).alias("builtin"),
        )
        .group_by("builtin", "base", "target_label", "clients")
        .agg(pl.col("value").median().alias("tps"), pl.len().alias("n"))
        .sort("builtin", "clients", "target_label", "base")
    )
    theirs = published.filter(pl.col("builtin").is_in(ours["builtin"].drop_nulls().implode()))
    sync = (
        pl.when(pl.col("settings").str.contains("synchronous_commit=off", literal=True))
        .then(pl.lit(" · sync off"))
        .when(pl.col("settings").str.contains("synchronous_commit=on", literal=True))
        .then(pl.lit(" · sync on"))
        .otherwise(pl.lit(""))
    )
    return pl.concat(
        [
            _items(
                ours,
                PGBENCH,
                LAB,
                pl.format(
                    "{} · {} · c={} · {}", _text("builtin"), _text("target_label"), _text("clients"), _text("base")
                ),
                pl.col("tps"),
                "tps",
                pl.format("median of {} runs, scale {}", _text("n"), pl.lit(str(scale))),
            ),
            _items(
                theirs,
                PGBENCH,
                PUB,
                pl.format("{} · {} · c={}{}", _text("builtin"), _text("target"), _text("clients"), sync),
                pl.col("tps"),
                "tps",
                pl.format(
                    "{}, scale {}, PG {}; {}", _text("fs"), _text("scale"), _text("pg_version"), _text("settings")
                ),
            ),
        ]
    )


def sysbench_items(
    progress: pl.DataFrame, published: pl.DataFrame, workloads: Mapping[str, dict[str, Any] | None], trim_s: float
) -> pl.DataFrame:
    """Seed 002: the CV (σ / mean) of sysbench's per-second tps, scale-free. Ours: per sysbench test (from
    the config's `workloads`), target and thread count, the medians over runs of each run's CV, mean and
    variance after the first `trim_s` seconds (seed 002 measured single runs: CV within a run); theirs:
    the published average and variance per test, device, fillfactor and thread count."""
    sbr = progress.filter(pl.col("tool") == "sysbench") if progress.height else progress
    if not (sbr.height and published.height):
        return _empty()
    tests = {w: (s or {}).get("test") for w, s in workloads.items()}
    per_run = stats.stability_table(
        stats.trim_warmup(sbr, trim_s).with_columns(
            _base(progress).replace_strict(tests, default=None, return_dtype=pl.Utf8).alias("test")
        ),
        "tps",
        ["test", "target_label", "clients", "run_id"],
    )
    ours = (
        per_run.group_by("test", "target_label", "clients")
        .agg(pl.col("cv").median(), pl.col("mean").median(), pl.col("variance").median(), pl.len().alias("runs"))
        .sort("test", "clients", "target_label")
    )
    theirs = published.filter(pl.col("workload").is_in(ours["test"].drop_nulls().implode()))
    return pl.concat(
        [
            _items(
                ours,
                SYSBENCH,
                LAB,
                pl.format("{} · {} · {} thr", _text("test"), _text("target_label"), _text("clients")),
                100 * pl.col("cv"),
                "%",
                pl.format(
                    "avg {} tps, σ² {} (medians of {} runs)",
                    _fixed(pl.col("mean"), 0),
                    _fixed(pl.col("variance"), 0),
                    _text("runs"),
                ),
            ),
            _items(
                theirs,
                SYSBENCH,
                PUB,
                pl.format(
                    "{} · {} ff{} · {} thr", _text("workload"), _text("device"), _text("fillfactor"), _text("threads")
                ),
                100 * pl.col("tps_variance").pow(0.5) / pl.col("tps_avg"),
                "%",
                pl.format("avg {} tps, σ² {}", _fixed(pl.col("tps_avg"), 0), _fixed(pl.col("tps_variance"), 0)),
            ),
        ]
    )


def fs_items(ops: pl.DataFrame, published: pl.DataFrame) -> pl.DataFrame:
    """Seed 003: file-system micro-benchmark ops/s, matched by benchmark family (the name without its
    size). Ours (`queries.fs_ops`) and theirs (`queries.published_fs_ops`): the median over repeats per
    benchmark and target (theirs: file system) of the families we ran."""
    if not (ops.height and published.height):
        return _empty()
    ours = ops.with_columns(family(pl.col("benchmark")).alias("family"))
    theirs = published.with_columns(family(pl.col("benchmark")).alias("family")).filter(
        pl.col("family").is_in(ours["family"].unique().implode())
    )

    def medians(df: pl.DataFrame, by: str) -> pl.DataFrame:
        return (
            df.group_by("benchmark", "family", by)
            .agg(pl.col("ops_per_s").median(), pl.len().alias("n"))
            .sort("family", by, "benchmark")
        )

    return pl.concat(
        [
            _items(
                medians(ours, "target_label"),
                FS,
                LAB,
                pl.format("{} · {}", _text("benchmark"), _text("target_label")),
                pl.col("ops_per_s"),
                "ops/s",
                pl.format("median of {} repeats", _text("n")),
            ),
            _items(
                medians(theirs, "fs"),
                FS,
                PUB,
                pl.format("{} · {}", _text("benchmark"), _text("fs")),
                pl.col("ops_per_s"),
                "ops/s",
                pl.format("median of {} published runs", _text("n")),
            ),
        ]
    )


def compression_items(storage: pl.DataFrame, compression: pl.DataFrame, space: pl.DataFrame) -> pl.DataFrame:
    """Seeds 002 and 004: space savings = 1 - physical / logical, in %. Ours: compsize after each
    target's last run (`queries.storage`); theirs: the published savings range (its middle; or from the
    logical and physical GB when no range was published) and the published compression ratios."""
    stg = storage.filter(pl.col("compsize_disk_bytes").is_not_null()) if storage.height else storage
    if not (stg.height and (compression.height or space.height)):
        return _empty()
    last = (
        stg.sort("plan_index")
        .group_by("target", maintain_order=True)
        .last()
        .with_columns(*stats.compression_exprs("compsize_uncompressed_bytes", "compsize_disk_bytes"))
    )
    compress_opts = (
        pl.col("mount_options")
        .fill_null("")
        .str.split(",")
        .list.eval(pl.element().filter(pl.element().str.starts_with("compress")))
        .list.join(",")
    )
    parts = [
        _items(
            last,
            SPACE,
            LAB,
            pl.format("{} ({} {})", _text("target"), _text("fs"), compress_opts).str.replace_all(
                " )", ")", literal=True
            ),
            100 * pl.col("space_savings"),
            "%",
            pl.format("compsize ratio {}:1", _fixed(pl.col("ratio"), 2)),
        )
    ]
    if compression.height:
        lo, hi = pl.col("space_savings_min_pct"), pl.col("space_savings_max_pct")
        logical, physical = pl.col("logical_gb"), pl.col("physical_gb")
        derived = pl.when((logical.fill_null(0) != 0) & (physical.fill_null(0) != 0)).then(
            100 * (1 - physical / logical)
        )
        ranged = compression.with_columns(
            pl.when(lo.is_null()).then(derived).otherwise(lo).alias("_lo"),
            pl.when(lo.is_null()).then(derived).otherwise(hi).alias("_hi"),
        ).filter(pl.col("_lo").is_not_null())
        parts.append(
            _items(
                ranged,
                SPACE,
                PUB,
                pl.format("{} {} · {}", _text("fs"), _text("mount_options"), _text("workload")),
                (pl.col("_lo") + pl.col("_hi")) / 2,
                "%",
                pl.when(pl.col("_lo") != pl.col("_hi"))
                .then(pl.format("published {}–{} %", _fixed(pl.col("_lo"), 0), _fixed(pl.col("_hi"), 0)))
                .otherwise(pl.lit("from logical/physical GB")),
            )
        )
    if space.height:
        parts.append(
            _items(
                space.filter(pl.col("compression_ratio").is_not_null()),
                SPACE,
                PUB,
                pl.format("{} · fillfactor {}", _text("device"), _text("fillfactor")),
                100 * (1 - 1 / pl.col("compression_ratio")),
                "%",
                pl.format("compression ratio {}:1", _fixed(pl.col("compression_ratio"), 2)),
            )
        )
    return pl.concat(parts)


def comparable(items: list[pl.DataFrame]) -> pl.DataFrame:
    """All `items`, only of the measures (kinds) that both this lab and the published results have."""
    table = pl.concat([_empty(), *items])
    both = table.group_by("kind").agg(pl.col("source").n_unique().alias("_sides")).filter(pl.col("_sides") == 2)
    return table.filter(pl.col("kind").is_in(both["kind"].implode()))


def ranges(table: pl.DataFrame) -> pl.DataFrame:
    """Per measure (in the table's order): its unit and the range of this lab's and of the published values
    (`lab_min`, `lab_max`, `pub_min`, `pub_max`)."""
    v, src = pl.col("value"), pl.col("source")
    return table.group_by("kind", maintain_order=True).agg(
        pl.col("unit").first(),
        v.filter(src == LAB).min().alias("lab_min"),
        v.filter(src == LAB).max().alias("lab_max"),
        v.filter(src == PUB).min().alias("pub_min"),
        v.filter(src == PUB).max().alias("pub_max"),
    )
