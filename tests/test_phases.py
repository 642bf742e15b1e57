"""A run's phases (run.json `phases_s`) add up to its wall time, and the measuring benchmark's report
reads them. Real runs' phases are checked in tests/test_integration.py."""

from __future__ import annotations

import time

import pytest

from benchmarks.measuring import report
from pgfslab.run import phases
from pgfslab.run.phases import Phases


def test_laps_add_up_to_the_wall_time_and_accumulate_by_name() -> None:
    ph = Phases()
    t0 = time.monotonic()
    time.sleep(0.02)
    ph.lap("mount")
    time.sleep(0.01)
    ph.lap("server_start")
    time.sleep(0.01)
    ph.lap("mount")  # a second lap of the same name adds to it
    wall = time.monotonic() - t0
    rec = ph.record()
    assert set(rec) == {"mount", "server_start"}
    assert rec["mount"] >= 0.03 - 0.002
    assert sum(rec.values()) == pytest.approx(wall, abs=0.005)


def test_a_tools_lap_is_measured_up_to_its_duration_and_overhead_beyond() -> None:
    ph = Phases()
    time.sleep(0.05)
    ph.lap_tool(0.03)
    rec = ph.record()
    assert rec["measured"] == pytest.approx(0.03, abs=1e-3)
    assert rec["tool_overhead"] >= 0.02 - 0.002
    ph2 = Phases()
    time.sleep(0.01)
    ph2.lap_tool(None)  # no configured duration (pgbench -t): all of it is measured
    assert ph2.record()["tool_overhead"] == 0
    assert ph2.record()["measured"] >= 0.009


def test_process_age_is_this_processes_age() -> None:
    age = phases.process_age_s()
    assert age is not None
    assert 0 < age < time.monotonic()  # older than nothing, younger than the boot


def test_report_share_overhead_and_snakemakes_part() -> None:
    runs = [
        {"phases_s": {"process_start": 0.5, "mount": 0.25, "measured": 10.0, "server_stop": 1.25}, "duration_s": 10}
        for _ in range(2)
    ]
    lines = report(runs, stage_s=25.0)
    text = "\n".join(lines)
    assert "Σ measured intervals) 20.0 s" in text
    assert "measuring share: 80.0%" in text
    assert "overhead 2.50 s per run" in text
    # 25 s of stage, 24 s inside the runs' processes: 0.5 s per run is Snakemake's
    assert any(line.split() == ["snakemake", "(between", "runs'", "processes)", "0.50"] for line in lines)
    assert any(line.split() == ["server_stop", "1.25"] for line in lines)
    assert "20 s runs (the default study's) would be 88.9% measuring" in text


def test_report_reads_a_run_without_phases_as_duration_and_rest() -> None:
    lines = report([{"duration_s": 20, "wall_s": 24.0}], stage_s=30.0)
    assert any(line.split() == ["unsplit", "4.00"] for line in lines)
    assert "measuring share: 66.7%" in "\n".join(lines)


def test_report_splits_snakemakes_start_up_from_the_gaps_between_runs() -> None:
    """Two runs' clocks: Snakemake starts its first run's process 2 s into the stage, the second 1 s after the
    first one ended, and ends 3 s after the last: 5 s once per invocation, 0.5 s per run between them."""
    from datetime import UTC, datetime

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")

    def run(launch: float, end: float) -> dict:
        return {
            "phases_s": {"process_start": 0.5, "measured": 10.0, "server_stop": end - launch - 10.5},
            "duration_s": 10,
            "started_at": iso(launch + 0.5),
            "ended_at": iso(end),
        }

    runs = [run(1_000_002.0, 1_000_014.0), run(1_000_015.0, 1_000_027.0)]
    lines = report(runs, stage_s=30.0, stage_start=1_000_000.0)
    text = "\n".join(lines)
    assert "start-up and wind-down, once per invocation: 5.0 s; per run without it 2.50 s" in text
    assert any(line.split() == ["snakemake", "(between", "runs'", "processes)", "0.50"] for line in lines)
    assert "20 s runs (the default study's) would be 88.9% measuring (Snakemake's start-up aside)" in text
