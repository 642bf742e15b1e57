"""Raw logs -> DuckDB: `parsers/` (one module per log format), `schema` (the lab's tables and their DDL),
`load` (one file into the database, in one transaction), `run_rows` (run.json and target.json as rows),
`published` (data/external/'s reference results), `study` (a study folder into a new database, atomically),
`merge` (several hosts' folders of one study), `store` (how a file is stored, shared with `fast`), `fast`
(the ingest command's start for plain per-transaction logs, without polars: with `scan` and `txlog_direct`,
outside `parsers/`, whose import loads every parser), `export` (every documented table as Parquet).
"""
