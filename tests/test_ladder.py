"""The data-set ladder (config `ladder`): rungs in the plan and run ids, each rung's data set, refusals."""

from __future__ import annotations

import pytest

from pgfslab.config.study import Study, database_for, validate
from pgfslab.errors import LabError
from pgfslab.runners import pgbench, sysbench


def cfg(**ladder) -> dict:
    return validate(
        {
            "study": "lad",
            "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
            "workloads": {
                "rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8], "repeats": 2},
                "micro": {"tool": "fsmicro", "op": "statfs", "clients": [1], "repeats": 1},
            },
            "ladder": {"scales": [2, 30, 120], **ladder},
        }
    )


def test_every_pgbench_cell_runs_at_every_rung_interleaved():
    plan = Study.from_dict(cfg()).runs
    ids = [r.run_id for r in plan]
    assert "ext4.rw.d1.c1.r1" in ids and "btrfs.rw.d3.c8.r2" in ids
    assert "ext4.micro.c1.r1" in ids  # fsmicro has no data set: no rung
    assert len([r for r in plan if r.workload == "rw"]) == 2 * 3 * 2 * 2  # targets x rungs x clients x repeats
    # every rung of repeat 1 before any run of repeat 2
    first_r2 = min(r.plan_index for r in plan if r.repeat == 2)
    assert {r.rung for r in plan if r.plan_index < first_r2 and r.workload == "rw"} == {1, 2, 3}


def test_a_rungs_data_set_and_database():
    c = Study.from_dict(cfg())
    view = c.run_view(c.find_run("ext4.rw.d2.c1.r1"))
    assert view.dataset.scale == 30 and view.dataset_record()["rung"] == 2 and view.postgres.database == "pgfslab_d2"
    assert c.dataset_for("ext4").scale == 20  # the study's own without a rung
    assert database_for(2) == "pgfslab_d2" and database_for(None) == "postgres"
    cmd = pgbench.init_command("pgbench", ["-h", "/tmp"], view.dataset, view.postgres.database)
    assert cmd[-1] == "pgfslab_d2" and cmd[cmd.index("-s") + 1] == "30"


def test_rung_fingerprints_differ_and_memory_limit_becomes_the_cgroup_limit():
    c = cfg(memory_limit_mb=1024)
    assert c["resources"]["memory_limit_mb"] == 1024
    study = Study.from_dict(c)
    a = study.find_run("ext4.rw.d1.c1.r1")
    b = study.find_run("ext4.rw.d2.c1.r1")
    assert study.run_fingerprint(a) != study.run_fingerprint(b)


def test_sysbench_rungs_are_table_sizes():
    c = validate(
        {
            "study": "sb",
            "targets": {"x": {"fs": "xfs"}},
            "workloads": {"ro": {"tool": "sysbench", "test": "oltp_read_only", "clients": [4], "repeats": 1}},
            "ladder": {"table_sizes": [1000, 50000]},
        }
    )
    study = Study.from_dict(c)
    assert study.dataset_for("x", 2).sysbench.table_size == 50000
    view = study.run_view(study.find_run("x.ro.d2.c4.r1"))
    assert view.postgres.database == "pgfslab_d2" and view.duration_s == 20
    cmd = sysbench.run_command(
        "/tmp", 5432, view.workload, 4, view.duration_s, view.run, view.dataset, view.postgres.database
    )
    assert "--pgsql-db=pgfslab_d2" in cmd and "--table-size=50000" in cmd


@pytest.mark.parametrize(
    ("ladder", "words"),
    [
        ({"scales": [30, 2]}, "ladder.scales: rungs climb"),
        ({"scales": None, "table_sizes": [10, 20]}, "the study runs pgbench: give `scales`"),
        ({"table_sizes": [10]}, "scales \\(3\\) and table_sizes \\(1\\) differ in length"),
    ],
)
def test_bad_ladders_are_refused(ladder, words):
    lad = {"scales": [2, 30, 120], **ladder}
    lad = {k: v for k, v in lad.items() if v is not None}
    raw = {
        "study": "lad",
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like"}},
        "ladder": lad,
    }
    with pytest.raises(LabError, match=words):
        validate(raw)


def test_ladder_and_resources_must_agree_on_the_memory_limit():
    raw = {
        "study": "lad",
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like"}},
        "ladder": {"scales": [1, 2], "memory_limit_mb": 512},
        "resources": {"memory_limit_mb": 256},
    }
    with pytest.raises(LabError, match="disagree"):
        validate(raw)
