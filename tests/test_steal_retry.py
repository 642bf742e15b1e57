"""run.steal_retry: a run the hypervisor took more than a stated share of the wanted CPU time from is measured
again (pgfslab.run.execute), the steal read from the machine's own counters (pgfslab.host.cpu_ticks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgfslab.config.model import StealRetry
from pgfslab.config.study import Study, validate
from pgfslab.errors import LabError
from pgfslab.host import cpu_ticks
from pgfslab.records.run_record import RunRecord
from pgfslab.run import execute


def test_the_share_is_of_the_time_wanted_not_of_all_time(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu  100 0 50 1000 10 0 0 0 0 0\ncpu0 50 0 25 500 5 0 0 0 0 0\nintr 1\n")
    before = cpu_ticks.read(stat)
    # over the interval: 60 user, 20 system, 900 idle, 20 steal: 20 of the 100 ticks wanted were stolen (20 %),
    # though only 2 % of all ticks
    stat.write_text("cpu  160 0 70 1900 10 0 0 20 0 0\n")
    assert cpu_ticks.steal_share(before, cpu_ticks.read(stat)) == pytest.approx(0.20)
    # nothing wanted, nothing to share
    assert cpu_ticks.steal_share(before, before) is None
    # an old kernel's shorter line: the missing states are 0
    stat.write_text("cpu  1 2 3 4\n")
    assert cpu_ticks.read(stat)["steal"] == 0
    stat.write_text("intr 1\n")
    with pytest.raises(ValueError, match="no aggregate cpu line"):
        cpu_ticks.read(stat)


def test_this_machines_counters_move() -> None:
    a = cpu_ticks.read()
    sum(i * i for i in range(300_000))  # some CPU time wanted
    share = cpu_ticks.steal_share(a, cpu_ticks.read())
    assert share is None or 0.0 <= share <= 1.0


def test_which_attempt_is_measured_again() -> None:
    retry = StealRetry(above=0.05, attempts=3)
    busy, quiet = RunRecord(host_steal=0.12), RunRecord(host_steal=0.05)
    said = execute._measure_again(retry, busy, None, 1)
    assert said is not None and "12.0 %" in said and "attempt 2 of 3" in said
    assert execute._measure_again(retry, busy, None, 2) is not None
    assert execute._measure_again(retry, busy, None, 3) is None  # the last attempt is kept whatever its steal
    assert execute._measure_again(retry, quiet, None, 1) is None  # at the limit is within it
    assert execute._measure_again(retry, busy, "pgbench exited 1", 1) is None  # a failure is kept as it failed
    assert execute._measure_again(None, busy, None, 1) is None  # the study asked for no retry
    assert execute._measure_again(retry, RunRecord(), None, 1) is None  # steal not measured


def test_an_attempt_is_set_aside_whole(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "ext4.tpcb.c4.r1").mkdir(parents=True)
    (raw / "ext4.tpcb.c4.r1" / "run.json").write_text(json.dumps({"host_steal": 0.3}))
    first = execute.set_aside(raw, "ext4.tpcb.c4.r1")
    (raw / "ext4.tpcb.c4.r1").mkdir()
    (raw / "ext4.tpcb.c4.r1" / "run.json").write_text("{}")
    second = execute.set_aside(raw, "ext4.tpcb.c4.r1")  # within the same second: its own folder
    assert first != second and first.parent == second.parent == raw / "_attempts"
    assert json.loads((first / "run.json").read_text()) == {"host_steal": 0.3}
    assert not (raw / "ext4.tpcb.c4.r1").exists()


def _cfg(**run: object) -> dict:
    return {
        "study": "t",
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "run": run,
    }


def test_the_key_is_read_and_checked() -> None:
    study = Study.from_dict(validate(_cfg(steal_retry={"above": 0.03, "attempts": 3}), "t.yaml"))
    assert study.run_view(study.runs[0]).run.steal_retry == StealRetry(above=0.03, attempts=3)
    assert Study.from_dict(validate(_cfg(), "t.yaml")).run_view(study.runs[0]).run.steal_retry is None
    for bad in ({"above": 0, "attempts": 3}, {"above": 0.03, "attempts": 1}, {"above": 0.03}):
        with pytest.raises(LabError, match="steal_retry"):
            validate(_cfg(steal_retry=bad), "t.yaml")
