"""`python -m pgfslab export --db X.duckdb --parquet DIR`: every documented table of a study database
as one Parquet file, DIR/<table>.parquet, written by DuckDB's COPY.

Tables produced from logs keep their `run_id` (and `file_id`, `source_file`), and `runs.parquet`,
`files.parquet`, `run_params.parquet`, `targets.parquet` and `study.parquet` are written too, so that
any table joins its run metadata by `run_id` (and its file's origin, 'local' or 'published', by
`file_id`) in whatever reads Parquet. A compact table (pgbench_txlog) is written through its view,
with the link columns. `DIR/_tables.json` lists each file with its rows and columns. Each file is
written to a temporary name and renamed into place: an interrupted export leaves whole files.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pgfslab.errors import LabError
from pgfslab.ingest.schema import all_tables


@dataclass
class Exported:
    table: str
    path: Path
    rows: int
    columns: list[str]


def export_parquet(db: Path, out_dir: Path) -> list[Exported]:
    """Write every table of the lab's schema that the database has to `out_dir`."""
    if not Path(db).exists():
        raise LabError(f"{db}: no such database")
    out_dir.mkdir(parents=True, exist_ok=True)
    done: list[Exported] = []
    with duckdb.connect(str(db), read_only=True) as con:
        present = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
                "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
        missing = [t for t in ("runs", "files") if t not in present]
        if missing:
            raise LabError(f"{db}: not a pgfs-lab database (no {', '.join(missing)} table)")
        for table in all_tables():
            if table not in present:
                continue
            target = out_dir / f"{table}.parquet"
            tmp = out_dir / f".{table}.parquet.tmp"
            quoted = str(tmp).replace("'", "''")
            con.execute(f"COPY (SELECT * FROM \"{table}\") TO '{quoted}' (FORMAT parquet, COMPRESSION zstd)")
            os.replace(tmp, target)
            rows = int(con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0])
            cols = [r[0] for r in con.execute(f'DESCRIBE SELECT * FROM "{table}"').fetchall()]
            done.append(Exported(table, target, rows, cols))
    index = {
        "database": str(db),
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "join": "every table with a run_id joins runs.parquet on run_id; file_id joins files.parquet",
        "tables": {e.table: {"file": e.path.name, "rows": e.rows, "columns": e.columns} for e in done},
    }
    tmp = out_dir / "._tables.json.tmp"
    tmp.write_text(json.dumps(index, indent=2) + "\n")
    os.replace(tmp, out_dir / "_tables.json")
    return done
