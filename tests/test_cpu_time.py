"""CPU time per run from /proc/stat samples (cpu_time.cpu_measures), the CPU-bound / I/O-bound
preconditions that use it, and CPU steal as a measured limit of the instrument (the paper's sentence, the
precision benchmark): shares computed by hand from small sample frames and plain readings of a captured file."""

from __future__ import annotations

import polars as pl
import pytest

from pgfslab.analysis import cpu_time
from pgfslab.analysis.verdicts import regime

STATES = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


def samples(run_id: str, rows: list[tuple[float, list[int | None]]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"run_id": run_id, "epoch_s": t, **dict(zip(STATES, v, strict=True))} for t, v in rows],
        schema={"run_id": pl.Utf8, "epoch_s": pl.Float64, **{s: pl.Int64 for s in STATES}},
    )


def test_shares_over_the_runs_sampled_interval() -> None:
    # run r1: between its first and last sample 400 ticks pass: user +200, system +60, idle +80,
    # iowait +40, softirq +4, steal +16 (the middle sample does not matter)
    r1 = samples(
        "r1",
        [
            (10.0, [1000, 5, 300, 9000, 100, 0, 10, 50]),
            (11.0, [1100, 5, 330, 9040, 120, 0, 12, 58]),
            (12.0, [1200, 5, 360, 9080, 140, 0, 14, 66]),
        ],
    )
    # run r2 on a 2.4 kernel (no iowait, no steal: null) — idle 300 of 400 ticks
    r2 = samples(
        "r2", [(5.0, [10, 0, 10, 100, None, None, None, None]), (6.0, [90, 0, 30, 400, None, None, None, None])]
    )
    # run r3: one sample only, no interval
    r3 = samples("r3", [(1.0, [1, 1, 1, 1, 1, 1, 1, 1])])
    out = cpu_time.cpu_measures(pl.concat([r3, r2, r1]))
    got = {r["run_id"]: r for r in out.iter_rows(named=True)}
    assert set(got) == {"r1", "r2"}
    assert got["r1"]["cpu_idle"] == pytest.approx(80 / 400)
    assert got["r1"]["cpu_iowait"] == pytest.approx(40 / 400)
    assert got["r1"]["cpu_steal"] == pytest.approx(16 / 400)
    assert got["r1"]["cpu_busy"] == pytest.approx(1 - 120 / 400)
    assert got["r2"]["cpu_idle"] == pytest.approx(300 / 400)
    assert got["r2"]["cpu_iowait"] == 0 and got["r2"]["cpu_steal"] == 0
    assert got["r2"]["cpu_busy"] == pytest.approx(100 / 400)
    assert cpu_time.cpu_measures(pl.DataFrame()).columns == [
        "run_id",
        "cpu_busy",
        "cpu_idle",
        "cpu_iowait",
        "cpu_steal",
    ]


def cell(**cols: list[object]) -> pl.DataFrame:
    return pl.DataFrame(cols)


def test_cpu_bound_needs_busy_cpus_where_sampled() -> None:
    quiet_busy = cell(device_busy=[0.05, 0.06, 0.07], cpu_busy=[0.95, 0.92, 0.90], cpu_idle=[0.04, 0.07, 0.09],
                      cpu_iowait=[0.01, 0.01, 0.01], cpu_steal=[0.03, 0.03, 0.03])  # fmt: skip
    assert regime.check(["cpu_bound"], quiet_busy, quiet_busy) == ([], [])
    # the device is quiet, but the reference side's CPUs idle half the time: something else holds the clients
    # back; the same idle CPUs on side B are its response, not the condition
    idle = cell(device_busy=[0.05, 0.06, 0.07], cpu_busy=[0.40, 0.50, 0.60], cpu_idle=[0.55, 0.45, 0.30],
                cpu_iowait=[0.05, 0.05, 0.10], cpu_steal=[0.0, 0.0, 0.0])  # fmt: skip
    assert regime.check(["cpu_bound"], idle, quiet_busy) == (
        [
            "not CPU-bound: the data device busy 6% of the run, the CPUs busy 50% of their time (idle 45%, I/O "
            "wait 5%) (medians of A's runs; the lab calls CPU-bound a device busy <= 20% and the CPUs busy >= 80%)"
        ],
        [],
    )
    assert regime.check(["cpu_bound"], quiet_busy, idle) == ([], [])
    # a busy device misses whatever the CPUs do; the CPU numbers are given beside it
    loud = cell(device_busy=[0.6], cpu_busy=[0.85], cpu_idle=[0.10], cpu_iowait=[0.05], cpu_steal=[0.0])
    assert regime.check(["cpu_bound"], loud, quiet_busy)[0] == [
        "not CPU-bound: the data device busy 60% of the run, the CPUs busy 85% of their time (idle 10%, I/O wait "
        "5%) (medians of A's runs; the lab calls CPU-bound a device busy <= 20% and the CPUs busy >= 80%)"
    ]


def test_without_cpu_samples_the_device_decides_and_says_so() -> None:
    old_quiet, old_loud = cell(device_busy=[0.1]), cell(device_busy=[0.3])
    note = "cpu-bound: CPU time was not sampled (no /proc/stat samples, stat.log): the data device alone decided"
    assert regime.check(["cpu_bound"], old_quiet, old_quiet) == ([], [note])
    assert regime.check(["cpu_bound"], old_loud, old_quiet) == (
        ["not CPU-bound: the data device busy 30% of the run (median of A's runs; the lab calls <= 20% CPU-bound)"],
        [note],
    )
    # the reference side not sampled: not checked from the CPUs, whatever B's samples say
    new = cell(device_busy=[0.1], cpu_busy=[0.3], cpu_idle=[0.6], cpu_iowait=[0.1], cpu_steal=[0.0])
    assert regime.check(["cpu_bound"], old_quiet, new) == ([], [note])


def test_io_bound_gives_iowait_as_evidence() -> None:
    a = cell(device_busy=[0.2, 0.3, 0.4], cpu_iowait=[0.10, 0.12, 0.30], cpu_busy=[0.5] * 3, cpu_idle=[0.3] * 3,
             cpu_steal=[0.0] * 3)  # fmt: skip
    b = cell(device_busy=[0.7, 0.8, 0.9], cpu_iowait=[0.40, 0.45, 0.50], cpu_busy=[0.4] * 3, cpu_idle=[0.1] * 3,
             cpu_steal=[0.0] * 3)  # fmt: skip
    assert regime.check(["io_bound"], a, b) == (
        [
            "not I/O-bound: the data device busy 30% of side A's run (median; the lab calls >= 50% I/O-bound); the "
            "CPUs in I/O wait 12% of their time"
        ],
        [],
    )
    assert regime.check(["io_bound"], b, b) == ([], [])  # the device decides: I/O wait is evidence only
    assert regime.check(["io_bound"], cell(device_busy=[0.1]), cell(device_busy=[0.9]))[0] == [
        "not I/O-bound: the data device busy 10% of side A's run (median; the lab calls >= 50% I/O-bound)"
    ]


def test_run_measures_read_the_aggregate_cpu_line_of_the_study_database(tmp_path) -> None:
    """Rows in the lab's own schema: the aggregate `cpu` line counts, a per-CPU line does not."""
    import json

    from tests.labdb import new_db

    db = tmp_path / "s.duckdb"
    con = new_db(db)
    for rid in ("r1", "r2"):
        con.execute(
            "INSERT INTO runs (run_id, study, status, target, plan_index, run_json) VALUES (?, 's', 'ok', 'ext4', 0, ?)",
            [rid, json.dumps({"target": "ext4"})],
        )
    # r1: 200 ticks between its samples: idle 30, iowait 10, steal 20 -> busy 160/200
    for t, cpu, user, idle, iowait, steal in ((0, "cpu", 100, 500, 50, 10), (2, "cpu", 240, 530, 60, 30),
                                              (0, "cpu0", 0, 0, 0, 0), (2, "cpu0", 1, 900, 0, 0)):  # fmt: skip
        con.execute(
            "INSERT INTO cpu_stat (run_id, ts, cpu, user, nice, system, idle, iowait, irq, softirq, steal, guest, "
            "guest_nice) VALUES ('r1', to_timestamp(?), ?, ?, 0, 7, ?, ?, 0, 0, ?, 0, 0)",
            [1000.0 + t, cpu, user, idle, iowait, steal],
        )
    con.close()
    rows = {r["run_id"]: r for r in regime.run_measures(str(db), "s", 0.0, pl.DataFrame()).iter_rows(named=True)}
    assert rows["r1"]["cpu_idle"] == pytest.approx(30 / 200)
    assert rows["r1"]["cpu_iowait"] == pytest.approx(10 / 200)
    assert rows["r1"]["cpu_steal"] == pytest.approx(20 / 200)
    assert rows["r1"]["cpu_busy"] == pytest.approx(160 / 200)
    assert rows["r2"]["cpu_busy"] is None  # no stat.log: not sampled


def test_steal_sentence_by_hand() -> None:
    assert cpu_time.steal_sentence([0.01, 0.03, None, 0.02], 4) == (
        "CPU steal: 2.0 % of the CPUs' time over the runs (median of 3 of 4 runs, at most 3.0 %; /proc/stat): "
        "the hypervisor gave it to other guests"
    )
    assert "(median of 4 runs, at most 10.0 %" in cpu_time.steal_sentence([0.10, 0.01, 0.04, 0.02], 4)
    assert cpu_time.steal_sentence([0.10, 0.01, 0.04, 0.02], 4).startswith("CPU steal: 3.0 % ")
    assert cpu_time.steal_sentence([None, None], 2).startswith("CPU steal: not sampled")


def test_bench_precision_reads_steal_from_the_raw_stat_logs(tmp_path) -> None:
    import json
    import shutil
    from pathlib import Path

    from benchmarks import precision

    captured = Path(__file__).parent / "data" / "captured" / "proc_stat" / "local" / "stat_kernel6.18_2cpu.log"
    for rid, log in (("a.tpcb.c1.r1", captured), ("a.tpcb.c1.r2", None)):
        (tmp_path / rid).mkdir()
        (tmp_path / rid / "run.json").write_text(json.dumps({"run_id": rid}))
        if log is not None:
            shutil.copy(log, tmp_path / rid / "stat.log")
    # plain reading: the aggregate line's first and last sample, steal over the sum of the first 8 counters
    cpu = [[int(x) for x in ln.split()[1:]] for ln in captured.read_text().splitlines() if ln.startswith("cpu ")]
    first, last = cpu[0], cpu[-1]
    want = (last[7] - first[7]) / sum(b - a for a, b in zip(first[:8], last[:8], strict=True))
    got = precision.cpu_steal(tmp_path, ["a.tpcb.c1.r1", "a.tpcb.c1.r2"])
    assert got[0] == pytest.approx(want) and got[1] is None


def test_steal_against_throughput_by_hand() -> None:
    # two targets at different levels, four runs each (medians 1050 and 500, which no run equals). Against its
    # target's median a run is at ext4: 1.143 1.048 0.952 0.857, xfs: 1.2 1.04 0.96 0.8; the steal rises in
    # exactly the order those fall (xfs 1.2 least, xfs 0.8 most), so the ranks are opposite: rho = -1
    runs = pl.DataFrame(
        {
            "run_id": [f"e{i}" for i in range(4)] + [f"x{i}" for i in range(4)],
            "target": ["ext4"] * 4 + ["xfs"] * 4,
            "value": [1200.0, 1100.0, 1000.0, 900.0, 600.0, 520.0, 480.0, 400.0],
        }
    )
    order = ["x0", "e0", "e1", "x1", "x2", "e2", "e3", "x3"]
    steal = pl.DataFrame({"run_id": order, "cpu_steal": [0.01 * (k + 1) for k in range(8)]})
    rho, p, n = cpu_time.steal_and_throughput(runs, steal)  # type: ignore[misc]
    assert (rho, n) == (pytest.approx(-1.0), 8) and p < 0.01
    assert "falls as the steal rises (Spearman ρ = -1.00, p < 0.001, 8 runs)" in cpu_time.steal_effect_sentence(
        (rho, 0.0001, n), "tpcb, 4 clients"
    )
    # too few runs that sampled /proc/stat: nothing to say
    assert cpu_time.steal_and_throughput(runs, steal.head(5)) is None
    assert cpu_time.steal_effect_sentence(None, "tpcb") == ""


def test_cpu_per_transaction_counts_the_machines_work_not_idle_wait_or_steal() -> None:
    """Two samples 10 s apart: user +300, system +100, softirq +50, nice/irq 0 ticks of USER_HZ (100/s): 4.5 CPU s
    over 10 s = 0.45 CPU s per second; idle, iowait and steal ticks add nothing. At 150 tps: 0.45 / 150 s =
    3.0 ms per transaction."""
    base = {"user": 1000, "nice": 0, "system": 500, "idle": 9000, "iowait": 10, "irq": 0, "softirq": 20, "steal": 5}
    later = base | {"user": 1300, "system": 600, "softirq": 70, "idle": 9900, "iowait": 400, "steal": 300}
    samples = pl.DataFrame([{"run_id": "r", "epoch_s": 100.0, **base}, {"run_id": "r", "epoch_s": 110.0, **later}])
    out = cpu_time.cpu_per_transaction(samples, pl.DataFrame({"run_id": ["r", "q"], "value": [150.0, 90.0]}))
    assert out["run_id"].to_list() == ["r"]  # q has no CPU samples
    assert out["cpu_ms_per_tx"][0] == pytest.approx(1000 * 4.5 / 10 / 150)
