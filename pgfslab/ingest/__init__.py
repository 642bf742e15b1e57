"""Raw logs -> DuckDB: `parsers/` (one module per log format), `load` (a file or a study folder into the
database, one transaction per file), `export` (every documented table as Parquet).
"""
