"""A study ingested into a new database stores its rows in batches (pgfslab.ingest.batch): every table must
hold what the file-by-file ingest (one transaction per file) stores, row for row and in the same order,
also with a log given twice in one run (the second copy replaces the first) and with a per-transaction log
that DuckDB's direct loader reads in a transaction of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import yaml

from pgfslab.ingest import load
from pgfslab.ingest.published import EXTERNAL_DIR, ingest_external
from pgfslab.ingest.schema import STUDY, create_schema
from pgfslab.ingest.study import StudySummary, ingest_folder, ingest_study

DATA = Path(__file__).resolve().parent / "data"
TXLOG = DATA / "captured" / "pgbench" / "built" / "pg8.4_txlog" / "pgbench_log.24464"


def _file_by_file(raw: Path, db: Path) -> None:
    """The database as the ingest built it before batches: the same steps, each file in its own transaction."""
    cfg = yaml.safe_load((raw / "study.yaml").read_text())
    con = duckdb.connect(str(db))
    try:
        create_schema(con)
        row = {"study": cfg["study"], "title": cfg.get("title"), "authors": json.dumps(cfg.get("authors", []))}
        load.insert(
            con, "study", pl.DataFrame([{**row, "config_yaml": (raw / "study.yaml").read_text()}], schema=STUDY)
        )
        ingest_external(con, EXTERNAL_DIR)
        ingest_folder(con, raw, cfg["study"], StudySummary(), progress=False)
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _tables(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        out = {}
        for t in names:
            cols = [c[0] for c in con.execute(f'DESCRIBE "{t}"').fetchall() if c[0] != "ingested_at"]
            sel = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in cols)
            out[t] = [tuple(cols), *con.execute(f'SELECT {sel} FROM "{t}"').fetchall()]  # as stored, in order
        return out


def test_batched_study_ingest_stores_what_the_file_by_file_ingest_stores(tmp_path: Path) -> None:
    study = "dirty-bytes"  # runs, device-less; its logs in every time-series format the samplers write
    raw = tmp_path / study
    shutil.copytree(DATA / "studies" / study, raw)
    run = next(d for d in sorted(raw.iterdir()) if (d / "run.json").exists())
    shutil.copy(run / "pgbench.stdout", run / "pgbench.stdout.again")  # the same log twice in one run
    shutil.copy(TXLOG, run / TXLOG.name)  # a per-transaction log: DuckDB's direct loader
    ingest_study(raw, tmp_path / "batched.duckdb", progress=False)
    _file_by_file(raw, tmp_path / "one-by-one.duckdb")
    batched, one_by_one = _tables(tmp_path / "batched.duckdb"), _tables(tmp_path / "one-by-one.duckdb")
    assert sorted(batched) == sorted(one_by_one)
    for table, rows in one_by_one.items():
        assert batched[table] == rows, table
    # the cases above were met: both copies' content stored once, the direct loader's rows there
    assert len(one_by_one["pgbench_txlog_rows"]) > 100
    with duckdb.connect(str(tmp_path / "batched.duckdb"), read_only=True) as con:
        copies = con.execute(
            "SELECT count(*) FROM files WHERE source_file LIKE ? AND format = 'pgbench-summary'",
            [f"%/{run.name}/pgbench.stdout%"],
        ).fetchone()
    assert copies == (1,)
