"""Runs that each start from a load of their own (study key `run.reload`): just before every run the run's
database is dropped, created and bulk-loaded again as the preparation loaded it (pgfslab.run.load, with the
target's settings, not the workload's), then settled (vacuumed, analysed, checkpointed, autovacuum quiet). What a
load leaves on disk, its footprint and its compression, then comes from as many independent loads as the target
has runs, and the verdicts compare those with an interval; with one load per target every run re-reads the same
load, one measurement whatever the number of runs.

The load's logs go to the run folder's `reload/` (records of the load, never ingested as the run's logs); its
timing and what it loaded into run.json (`reloaded`). The load is not timed as part of the run's tool phase.
"""

from __future__ import annotations

import time
from pathlib import Path

from pgfslab.config.study import RunView
from pgfslab.errors import LabError
from pgfslab.host import pg_install, postgres
from pgfslab.records.run_record import Reloaded
from pgfslab.run import start_state
from pgfslab.run.load import bulk_load

FOLDER = "reload"  # <run folder>/reload/: the load's own logs


def load_again(view: RunView, pgdata: Path, rdir: Path) -> Reloaded:
    """The run's data set loaded anew into its database (dropped and created first) on the target's cluster,
    settled as after the preparation; the server stopped again. Raises LabError naming the run when it fails."""
    pg = view.load_postgres
    if pg is None or not (pgdata / "PG_VERSION").exists():
        raise LabError(f"{view.run_id}: run.reload needs the target's prepared cluster, {pgdata} has none")
    out = rdir / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    bindir = pg_install.build_for(pg.version, pg.bindir).bindir
    rec = Reloaded(database=pg.database)
    t0 = time.monotonic()
    with postgres.running(pgdata, pg.port, bindir, pg.user, run_settings=pg.settings) as cl:
        cl.dbname = "template1"  # the run's database may be `postgres`: dropped from another one
        cl.query(f'DROP DATABASE IF EXISTS "{pg.database}"')
        cl.query(f'CREATE DATABASE "{pg.database}"')
        bulk_load(
            view.target.name, cl, out, bindir, set(view.load_tools), view.dataset, view.label, rec, view.spec.rung
        )
        cl.dbname = "postgres"
        rec.settled = start_state.settle_after_load(cl, [pg.database])
        cl.dbname = pg.database
        rec.database_bytes = int(cl.query("SELECT pg_database_size(current_database())")[0][0])
    rec.wall_s = round(time.monotonic() - t0, 3)
    return rec
