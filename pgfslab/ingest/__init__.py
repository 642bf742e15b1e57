"""Raw logs -> DuckDB: `parsers/` (one module per log format), `load` (a file or a study folder into the
database, one transaction per file), `store` (how a file is stored, shared with `fast`), `fast` (the
ingest command's start for plain per-transaction logs, without polars: with `scan` and
`txlog_direct`, outside `parsers/`, whose import loads every parser), `export` (every documented
table as Parquet).
"""
