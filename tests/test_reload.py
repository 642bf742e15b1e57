"""run.reload: every run starts from a load of its own. The config's checks and fingerprints, the data sets a
target's preparation loads (only its workloads'), the verdicts' per-load grouping and the saving's interval over
loads, and on a real PostgreSQL a `fs: dir` target loaded again: what a run wrote (pgbench's history rows) is gone,
the load's logs are kept apart from the run's."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import machine_can_run_studies

from pgfslab.analysis import design
from pgfslab.analysis.verdicts import evaluate
from pgfslab.analysis.verdicts import ratio as R
from pgfslab.config.checks import validate
from pgfslab.config.study import Study, load_study
from pgfslab.errors import LabError
from pgfslab.host import postgres
from pgfslab.host.targets import mount as target_mount
from pgfslab.paths import LAB
from pgfslab.run import reload
from pgfslab.run.prepare import prepare_target

PORT = 26960  # a port of its own: test files run side by side


def config(**run: Any) -> dict[str, Any]:
    return {
        "study": "reloaded",
        "targets": {"d": {"fs": "dir"}},
        "postgres": {"port_base": PORT, "settings": {"shared_buffers": "16MB"}},
        "dataset": {"scale": 1},
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "run": {"repeats": 1, "duration_s": 2, **run},
    }


def test_reload_and_restore_together_are_refused() -> None:
    with pytest.raises(LabError, match=r"run.reload and run.restore both set"):
        Study.from_dict(validate(config(reload=True, restore=True)))


def test_reload_without_a_postgres_workload_is_refused() -> None:
    cfg = config(reload=True)
    cfg["workloads"] = {"create": {"tool": "fsmicro", "op": "create_fsync", "files": 10}}
    with pytest.raises(LabError, match=r"run.reload loads a PostgreSQL data set .* no workload runs PostgreSQL"):
        Study.from_dict(validate(cfg))


def test_the_key_changes_the_runs_not_the_preparation() -> None:
    before, on = (Study.from_dict(validate(c)) for c in (config(), config(reload=True)))
    run = before.runs[0]
    assert "reload" not in before.run_fingerprint(run)
    assert on.run_fingerprint(run) != before.run_fingerprint(run)  # measured again: another starting state
    assert on.target_fingerprint("d") == before.target_fingerprint("d")  # the preparation's load is the same


def test_a_target_loads_only_the_data_sets_of_its_workloads() -> None:
    cfg = config()
    cfg["targets"] = {"a": {"fs": "dir"}, "b": {"fs": "dir"}}
    cfg["dataset"] = {"scale": 1, "sysbench": {"tables": 1, "table_size": 1000}}
    cfg["workloads"] = {
        "tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1], "targets": ["a"]},
        "wo": {"tool": "sysbench", "test": "oltp_write_only", "clients": [1], "targets": ["b"]},
    }
    study = Study.from_dict(validate(cfg))
    assert study.tools_for("a") == {"pgbench"} and study.tools_for("b") == {"sysbench"}
    assert '"tools": ["pgbench"]' in study.target_fingerprint("a")
    views = {study.run_view(r).target.name: study.run_view(r) for r in study.runs}
    assert views["b"].load_tools == frozenset({"sysbench"})


def per_load_facts(loads: list[str], savings: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"target_label": ["z"] * len(loads), "rung": [1] * len(loads), "load": loads, "saving": savings}
    )


def test_runs_of_one_load_are_one_measurement_and_each_reloaded_run_its_own() -> None:
    once = per_load_facts(["z/1"] * 4, [0.80, 0.82, 0.81, 0.83])
    assert evaluate._values(once, "z", "saving", per_load=True).tolist() == [0.815]  # their median, once
    own = per_load_facts(["r1", "r2", "r3", "r4"], [0.80, 0.82, 0.81, 0.83])
    assert sorted(evaluate._values(own, "z", "saving", per_load=True).tolist()) == [0.80, 0.81, 0.82, 0.83]
    old = once.drop("load")  # facts made before the column: by target and rung
    assert evaluate._values(old, "z", "saving", per_load=True).tolist() == [0.815]


def test_a_saving_over_six_loads_has_an_interval_and_five_say_why_not() -> None:
    six = np.array([0.84, 0.81, 0.83, 0.82, 0.86, 0.85])
    ci = evaluate._saving_ci(six, 0.05)
    assert (ci.lo, ci.hi, ci.n_b) == (0.81, 0.86, 6) and ci.confidence == pytest.approx(1 - 2 / 64)
    v = evaluate._saving(ci, (0.6, 0.8), 0.95)
    assert v.category == R.LARGER and "saving 84 % [81 %, 86 %] (the median of 6 loads)" in v.text
    inside = evaluate._saving(evaluate._saving_ci(six - 0.05, 0.05), (0.6, 0.8), 0.95)
    assert inside.category == R.HOLDS  # [76 %, 81 %] overlaps 60-80 %
    five = evaluate._saving(evaluate._saving_ci(six[:5], 0.05), (0.6, 0.8), 0.95)
    assert five.category == R.ONCE and "measured on 5 loads" in five.text and "6 loads give one" in five.text


ok, why = machine_can_run_studies()


@pytest.fixture(scope="module")
def prepared() -> Iterator[Study]:
    if not ok:
        pytest.skip(why)
    work = Path(tempfile.mkdtemp(prefix="pgfslab-reload-"))
    work.chmod(0o755)  # the server's user walks into it
    cwd = Path.cwd()
    os.chdir(work)
    try:
        study = Study.from_dict(validate(config(reload=True)))
        prepare_target(study, "d")
        yield study
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


def history_rows(pgdata: Path) -> int:
    with postgres.running(pgdata, PORT, postgres.bindir(), "postgres") as cl:
        return int(cl.query("SELECT count(*) FROM pgbench_history")[0][0])


@pytest.mark.slow
def test_a_run_starts_from_a_load_of_its_own(prepared: Study, tmp_path: Path) -> None:
    view = prepared.run_view(prepared.runs[0])
    tv = view.target
    with target_mount.mounted(tv.workdir, "d", tv.spec, "postgres", study=prepared.study) as mnt:
        pgdata = mnt.path / "pgdata"
        with postgres.running(pgdata, PORT, postgres.bindir(), "postgres") as cl:  # what a run leaves behind
            cl.query("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT 1, 1, g, 1, now() "
                     "FROM generate_series(1, 500) g")  # fmt: skip
        assert history_rows(pgdata) == 500
        rec = reload.load_again(view, pgdata, tmp_path)
        assert history_rows(pgdata) == 0  # pgbench -i leaves the history empty
    assert rec.database == "postgres" and rec.load is not None and rec.load.scale == 1
    assert rec.database_bytes is not None and rec.database_bytes > 10 * 2**20  # scale 1 is about 16 MB of tables
    assert rec.settled is not None and "checkpoint" in rec.settled
    assert (tmp_path / "reload" / "pgbench_init.stderr").exists()  # the load's log, apart from the run's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reload"]


def test_the_plan_says_whether_a_claims_loads_give_an_interval() -> None:
    study = load_study(LAB / "config" / "space.yaml")  # the module fixture may have moved the working directory
    rows = {r["claim"]: r for r in design.load_claims(study, design.cells(study)).iter_rows(named=True)}
    assert (rows["s004-zlib-space-saving"]["loads"], rows["s004-zlib-space-saving"]["interval"]) == ("6", True)
    assert (rows["s002-ff70-space-2x-uncompressed"]["loads"], rows["s002-ff70-space-2x-uncompressed"]["interval"]) == (
        "5 and 5",
        True,
    )
    once = dataclasses.replace(study, run=dataclasses.replace(study.run, reload=None))  # each target loaded once
    rows = {r["claim"]: r for r in design.load_claims(once, design.cells(once)).iter_rows(named=True)}
    assert (rows["s004-zlib-space-saving"]["loads"], rows["s004-zlib-space-saving"]["interval"]) == ("1", False)
    assert "CANNOT give (needs 6 loads a side)" in design.report(once)
