"""The lab's database schema: the tables the lab itself defines (runs, targets, study, files, ...) beside
each parser's own (its module's TABLES), their DuckDB types and documentation, and the statements that
create them (`create_schema`; `schema_sql` writes them to pgfslab/ingest/schema.sql for the ingest
command's fast start, pgfslab.ingest.fast).

The tables of big per-transaction logs are stored compactly (pgfslab.ingest.store's `COMPACT`:
`pgbench_txlog_rows` keyed by `files.file_no`, and a view `pgbench_txlog` with the usual columns).
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from pgfslab.ingest import parsers
from pgfslab.ingest.store import (
    COMPACT,
    COMPACT_OK,
    COMPACT_TYPES,
    storage_table,
)

# Tables the lab itself defines (parsers define theirs in their module's TABLES).
RUNS: dict[str, Any] = {
    "run_id": pl.Utf8,
    "study": pl.Utf8,
    "host": pl.Utf8,
    "origin": pl.Utf8,
    "status": pl.Utf8,
    "error": pl.Utf8,
    "target": pl.Utf8,
    "target_label": pl.Utf8,
    "fs_label": pl.Utf8,
    "fs": pl.Utf8,
    "fallback": pl.Boolean,
    "mount_options": pl.Utf8,
    "device": pl.Utf8,
    "direct_io": pl.Boolean,
    "workload": pl.Utf8,
    "base_workload": pl.Utf8,
    "tool": pl.Utf8,
    "builtin": pl.Utf8,
    "clients": pl.Int64,
    "threads": pl.Int64,
    "repeat": pl.Int64,
    "plan_index": pl.Int64,
    "position": pl.Int64,  # the target's place in its round (run.order decides it; null in older raw folders)
    "predecessor": pl.Utf8,  # the target of the run that ran just before (null for the first, and in older ones)
    "host_speed": pl.Float64,  # MiB/s of the CPU probe just before the run (host.cpu_probe; null in older ones)
    "burn_in": pl.Boolean,  # a burn-in round (run.burn_in_rounds): shown, never compared
    "duration_s": pl.Float64,
    "scale": pl.Int64,
    "rung": pl.Int64,  # the data-set ladder's rung (null without a ladder)
    "dataset_bytes": pl.Int64,  # the run's database as loaded (before the run)
    "started_at": pl.Datetime("us", "UTC"),
    "ended_at": pl.Datetime("us", "UTC"),
    "wall_s": pl.Float64,
    "pg_version": pl.Utf8,
    # the PostgreSQL build (run.json's postgres_build): server major and version, its client's (pgbench's own
    # --version), where it came from (debian | wheel | bindir; null: recorded before builds were) and what
    # (the wheel's file name and sha256, or the directory); data checksums as the server reported them
    "pg_major": pl.Int64,
    "pg_server_version": pl.Utf8,
    "pg_client_version": pl.Utf8,
    "pg_source": pl.Utf8,
    "pg_build": pl.Utf8,
    "data_checksums": pl.Boolean,
    "kernel": pl.Utf8,
    "cpu_model": pl.Utf8,
    "cpus": pl.Int64,
    "mem_total_kb": pl.Int64,
    "git_commit": pl.Utf8,
    "database_bytes_end": pl.Int64,
    "fs_used_bytes_end": pl.Int64,
    "checkpoints_timed": pl.Int64,
    "checkpoints_req": pl.Int64,
    "xact_commit": pl.Int64,
    "run_json": pl.Utf8,
}


RUN_PARAMS: dict[str, Any] = {"run_id": pl.Utf8, "key": pl.Utf8, "value": pl.Utf8}


TARGETS: dict[str, Any] = {
    "study": pl.Utf8,
    "host": pl.Utf8,
    "target": pl.Utf8,
    "fs": pl.Utf8,
    "fs_label": pl.Utf8,
    "fallback": pl.Boolean,
    "mount_options": pl.Utf8,
    "mkfs_command": pl.Utf8,
    "image_bytes": pl.Int64,
    "direct_io": pl.Boolean,
    "scale": pl.Int64,
    "load_wall_s": pl.Float64,
    "database_bytes": pl.Int64,
    "fs_used_bytes": pl.Int64,
    "target_json": pl.Utf8,
}


STUDY: dict[str, Any] = {"study": pl.Utf8, "title": pl.Utf8, "authors": pl.Utf8, "config_yaml": pl.Utf8}


DEVICE_BASELINES: dict[str, Any] = {
    "study": pl.Utf8,
    "target": pl.Utf8,
    "baseline_id": pl.Utf8,
    "fs": pl.Utf8,
    "fs_label": pl.Utf8,
    "fs_implementation": pl.Utf8,
    "device": pl.Utf8,
    "fio_version": pl.Utf8,
    "ioengine": pl.Utf8,
    "direct": pl.Boolean,
    "duration_s": pl.Float64,
    "pg_test_fsync_s": pl.Int64,
    "wall_s": pl.Float64,
    "notes": pl.Utf8,
    "baseline_json": pl.Utf8,
}


FILES: dict[str, Any] = {
    "file_id": pl.Utf8,
    "source_file": pl.Utf8,
    "format": pl.Utf8,
    "run_id": pl.Utf8,
    "study": pl.Utf8,
    "bytes": pl.Int64,
    "rows": pl.Int64,
    "warnings": pl.Int64,
    "ingested_at": pl.Datetime("us", "UTC"),
    "origin": pl.Utf8,
    "file_no": pl.Int64,
    "lines": pl.Int64,
    "lines_parsed": pl.Int64,
    "lines_noise": pl.Int64,
    "lines_not_understood": pl.Int64,
}


# the lines of ingested files that no parser understood (files.lines_not_understood counts them)
UNPARSED_LINES: dict[str, Any] = {
    "file_id": pl.Utf8,
    "source_file": pl.Utf8,
    "run_id": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}


LAB_TABLES: dict[str, dict[str, Any]] = {
    "study": STUDY,
    "runs": RUNS,
    "run_params": RUN_PARAMS,
    "targets": TARGETS,
    "files": FILES,
    "device_baselines": DEVICE_BASELINES,
    "unparsed_lines": UNPARSED_LINES,
}


LINK_COLUMNS: dict[str, Any] = {"file_id": pl.Utf8, "source_file": pl.Utf8, "run_id": pl.Utf8}


TABLE_DOCS: dict[str, str] = {
    "study": "one row per study in the database: its name, title, authors and resolved config (YAML)",
    "runs": "one row per run (run.json): target, file system, workload, clients, repeat, timings, server "
    "counters; `origin` is 'local' for this lab's runs and 'published' (with a null `study`) for the "
    "reference results of data/external/; `host` is the host key of a study merged from several machines' "
    "raw folders (null on one machine; see pgfslab.ingest.merge)",
    "run_params": "every configured parameter of a run, flattened (`key` like `run.duration_s`, `value` as text)",
    "targets": "one row per storage target of a study (per target and host in a merged study): file system, "
    "mount options, mkfs command, image size, bulk-load time and sizes",
    "device_baselines": "one row per target measured without PostgreSQL (data/raw/<study>/_setup/<target>/device/): "
    "file system as labelled, fio version and engine; its fio reports are in `fio_job` and its pg_test_fsync "
    "output in `pg_test_fsync`, both with run_id = `baseline_id` (device-baseline:<target>, ending in @<host> in a merge of machines or days)",
    "files": "one row per ingested file: `file_id` (SHA-256 of its bytes), where it came from, its format, "
    "rows and warnings; `origin` 'local' or 'published'; `file_no`, a small number of the file in this "
    "database, keys the rows of the compact tables; `lines` = `lines_parsed` + `lines_noise` + "
    "`lines_not_understood`: what became of every line of the file (noise: blank lines, banners, "
    "`starting vacuum...`; null for files ingested before the accounting existed)",
    "unparsed_lines": "one row per line of an ingested file that its parser did not understand (wrapper headers, "
    "a torn last line, an unknown line inside a report): `line` (1-based) and `text`, never silently dropped",
}


def duck_type(dtype: Any) -> str:
    base = dtype if isinstance(dtype, type) else type(dtype)
    if base is pl.Datetime:
        tz = getattr(dtype, "time_zone", None)
        return "TIMESTAMPTZ" if tz else "TIMESTAMP"
    names = {
        pl.Utf8: "VARCHAR",
        pl.String: "VARCHAR",
        pl.Int64: "BIGINT",
        pl.Int32: "INTEGER",
        pl.Float64: "DOUBLE",
        pl.Float32: "FLOAT",
        pl.Boolean: "BOOLEAN",
        pl.Date: "DATE",
    }
    for k, v in names.items():
        if base is k or dtype == k:
            return v
    raise TypeError(f"no DuckDB type for {dtype}")


def all_tables() -> dict[str, dict[str, Any]]:
    """Every table of the lab's database and its columns (the documented schema)."""
    tables = dict(LAB_TABLES)
    for mod in parsers.FORMATS.values():
        for name, cols in mod.TABLES.items():
            tables[name] = {**LINK_COLUMNS, **cols}
    return tables


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table that is missing, add the columns a table of an older database lacks (new
    columns are null in its old rows), and (re)create the views of the compact tables, moving the
    rows of an older database's plain table into the compact one."""
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND NOT temporary "
            "AND schema_name = current_schema() AND database_name = current_database()"
        ).fetchall()
    }
    existing: dict[str, set[str]] = {t: set() for t in tables}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal "
        "AND schema_name = current_schema() AND database_name = current_database()"
    ).fetchall():
        if table in existing:
            existing[table].add(column)
    con.execute("CREATE SEQUENCE IF NOT EXISTS file_no_seq")

    def ensure(name: str, cols: dict[str, Any], types: dict[str, str] | None = None) -> None:
        if name not in existing:
            body = ", ".join(f'"{c}" {(types or {}).get(c) or duck_type(t)}' for c, t in cols.items())
            con.execute(f'CREATE TABLE "{name}" ({body})')
            existing[name] = set(cols)
            return
        for c, t in cols.items():
            if c not in existing[name]:
                con.execute(f'ALTER TABLE "{name}" ADD COLUMN "{c}" {duck_type(t)}')
                existing[name].add(c)

    for name, cols in all_tables().items():
        if name not in COMPACT:
            ensure(name, cols)
    con.execute("UPDATE files SET file_no = nextval('file_no_seq') WHERE file_no IS NULL")
    for name in sorted(COMPACT):
        cols = {c: t for c, t in all_tables()[name].items() if c not in LINK_COLUMNS}
        ensure(storage_table(name), {"file_no": pl.Int64, **cols}, COMPACT_TYPES.get(name))
        names = ", ".join(f'"{c}"' for c in cols)
        ok_col, ok = COMPACT_OK.get(name, ("", ""))
        if name in existing:  # an older database: a plain table with the link columns on every row
            stored = ", ".join(f"nullif(\"{c}\", '{ok}')" if c == ok_col else f'"{c}"' for c in cols)
            con.execute(
                f'INSERT INTO "{storage_table(name)}" (file_no, {names}) SELECT f.file_no, {stored} '
                f'FROM "{name}" JOIN files f USING (file_id)'
            )
            con.execute(f'DROP TABLE "{name}"')
        picked = ", ".join(
            f'coalesce(r."{c}", \'{ok}\') AS "{c}"'
            if c == ok_col
            else f'r."{c}"::{duck_type(t)} AS "{c}"'
            if c in COMPACT_TYPES.get(name, {})
            else f'r."{c}"'
            for c, t in cols.items()
        )
        con.execute(
            f'CREATE OR REPLACE VIEW "{name}" AS SELECT f.file_id, f.source_file, f.run_id, {picked} '
            f'FROM "{storage_table(name)}" r JOIN files f ON f.file_no = r.file_no'
        )


def schema_markdown() -> str:
    """Every table and column as Markdown (for the README): what fills the table, then its columns."""
    owners = {t: (name, mod) for name, mod in parsers.FORMATS.items() for t in mod.TABLES}
    out = [
        "Every table produced from a log file also has `file_id` (SHA-256 of the file), `source_file` "
        "(`<study>/<run-id>/<file>`, or `external/<path>` for published results) and `run_id` (join with "
        "`runs`). Units are in the column names (`_ms`, `_us`, `_s`, `_kb`, `_gb`, `_pct`, `_per_s`).",
        "",
    ]
    for table, cols in all_tables().items():
        if table in TABLE_DOCS:
            what = TABLE_DOCS[table]
        else:
            name, mod = owners[table]
            what = f"format `{name}`: {mod.DESCRIPTION}"
        if table in COMPACT:
            what += (
                f". A view: the rows are stored in `{storage_table(table)}` (`file_no` and the columns "
                "below), file_id/source_file/run_id come from `files`"
            )
            narrow = ", ".join(f"`{c}` {t}" for c, t in COMPACT_TYPES.get(table, {}).items())
            if narrow:
                what += f"; stored narrower: {narrow}"
            if table in COMPACT_OK:
                what += f"; `{COMPACT_OK[table][0]}` '{COMPACT_OK[table][1]}' is stored as null"
        units = parsers.units_of(table)  # the unit of each numeric column (pgfslab.ingest.parsers._units)
        out += [f"### `{table}`", "", what, "", "| column | type | unit |", "|---|---|---|"]
        out += [
            f"| `{c}` | {duck_type(t)} | {units.get(c) or ''} |"
            for c, t in cols.items()
            if c not in LINK_COLUMNS or table in TABLE_DOCS
        ]
        out.append("")
    return "\n".join(out)


def schema_sql() -> str:
    """The statements `create_schema` runs on an empty database, one per line, as DuckDB writes them
    back: `pgfslab/ingest/schema.sql` (`python -m pgfslab schema --sql`), which the ingest command's
    fast start (pgfslab.ingest.fast) runs without importing the parsers."""
    con = duckdb.connect(":memory:")
    try:
        create_schema(con)
        seqs = con.execute("SELECT sql FROM duckdb_sequences() ORDER BY sequence_name").fetchall()
        tables = con.execute("SELECT sql FROM duckdb_tables() WHERE NOT internal ORDER BY table_oid").fetchall()
        views = con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal ORDER BY view_oid").fetchall()
    finally:
        con.close()
    head = [
        "-- The lab's database schema: the statements pgfslab.ingest.schema.create_schema runs on an empty database.",
        "-- Generated by `python -m pgfslab schema --sql > pgfslab/ingest/schema.sql`; tests/test_fast_ingest.py checks it.",
    ]
    return "\n".join(head + [" ".join(str(r[0]).split("\n")) for r in seqs + tables + views]) + "\n"
