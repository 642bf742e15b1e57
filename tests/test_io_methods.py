"""The io_methods answer (PostgreSQL 18's asynchronous I/O against sync): families of workloads that differ only
in their postgres_settings, their variants' names, and each variant against sync with its interval and words,
checked by hand on small configs and frames; and when the registry schedules the notebook."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from pgfslab.analysis import registry
from pgfslab.analysis.answers import io_methods as io
from pgfslab.analysis.verdicts.ratio import RatioCI
from pgfslab.config.study import Study, load, validate

REPO = Path(__file__).resolve().parent.parent


def aio() -> Study:
    return Study.from_dict(load(REPO / "config" / "aio.yaml"))


def small(workloads: dict, settings: dict | None = None) -> Study:
    cfg = {
        "study": "t",
        "postgres": {"version": 18, "settings": settings or {}},
        "targets": {"a": {"fs": "ext4"}, "b": {"fs": "xfs"}},
        "workloads": workloads,
    }
    return Study.from_dict(validate(cfg))


def test_the_aio_study_families_and_variant_names() -> None:
    """Read off config/aio.yaml by hand: four families, each named by its sync workload; the debug_io_direct
    cell is a seq-scan variant (it differs only in its settings and its targets)."""
    fam = io.families(aio())
    got = {r["workload"]: (r["family"], r["variant"], r["baseline"]) for r in fam.iter_rows(named=True)}
    assert got == {
        "seq-sync": ("seq-sync", "sync", "seq-sync"),
        "seq-w1": ("seq-sync", "worker, io_workers 1", "seq-sync"),
        "seq-w3": ("seq-sync", "worker, io_workers 3", "seq-sync"),
        "seq-w8": ("seq-sync", "worker, io_workers 8", "seq-sync"),
        "direct": ("seq-sync", "worker, io_workers 3, debug_io_direct data", "seq-sync"),
        "warm-sync": ("warm-sync", "sync", "warm-sync"),
        "warm-w3": ("warm-sync", "worker, io_workers 3", "warm-sync"),
        "bitmap-sync": ("bitmap-sync", "sync", "bitmap-sync"),
        "bitmap-w3-eic1": ("bitmap-sync", "worker, io_workers 3, effective_io_concurrency 1", "bitmap-sync"),
        "bitmap-w3": ("bitmap-sync", "worker, io_workers 3, effective_io_concurrency 16", "bitmap-sync"),
        "bitmap-w3-eic64": ("bitmap-sync", "worker, io_workers 3, effective_io_concurrency 64", "bitmap-sync"),
        "select-sync": ("select-sync", "sync", "select-sync"),
        "select-w3": ("select-sync", "worker, io_workers 3", "select-sync"),
    }
    what = dict(fam.select("family", "what").unique().iter_rows())
    assert what == {
        "seq-sync": "seqscan.sql",
        "warm-sync": "seqscan.sql, prewarm read",
        "bitmap-sync": "bitmapscan.sql",
        "select-sync": "select-only",
    }
    cells = io.cells(aio(), fam)
    # 4 targets each, the direct cell on ext4, xfs and btrfs only; one rung and one client count each
    assert cells.height == 12 * 4 + 3
    assert sorted(cells.filter(pl.col("workload") == "direct")["target"]) == ["btrfs", "ext4", "xfs"]
    assert set(cells.filter(pl.col("workload") == "warm-w3")["rung"]) == {1}


def test_families_of_a_small_config() -> None:
    pg = {"tool": "pgbench", "builtin": "select-only", "clients": [4]}
    st = small(
        {
            "s": {**pg, "postgres_settings": {"io_method": "sync"}},
            "w": {**pg, "postgres_settings": {"io_method": "worker", "io_workers": 3}},
            "d": dict(pg),  # the server's default io_method: a member of the family all the same
            "c1": {**pg, "clients": [1], "postgres_settings": {"io_method": "worker"}},  # other clients: its own family
            "plain": {"tool": "pgbench", "builtin": "tpcb-like"},  # no member sets io_method: not read
            "fs": {"tool": "fsmicro", "op": "statfs"},
        }
    )
    got = {r["workload"]: (r["family"], r["variant"], r["io_method"], r["baseline"]) for r in io.families(st).iter_rows(named=True)}  # fmt: skip
    assert got == {
        "s": ("s", "sync", "sync", "s"),
        "w": ("s", "worker, io_workers 3", "worker", "s"),
        "d": ("s", "io_method default", None, "s"),
        "c1": ("c1", "worker", "worker", None),
    }


def test_study_wide_settings_count_as_the_variants_own() -> None:
    """io_method sync set for the whole study, a workload's worker over it: the plain workload is the sync variant."""
    pg = {"tool": "pgbench", "builtin": "select-only"}
    st = small({"plain": dict(pg), "w": {**pg, "postgres_settings": {"io_method": "worker"}}}, {"io_method": "sync"})
    got = {r["workload"]: (r["variant"], r["baseline"]) for r in io.families(st).iter_rows(named=True)}
    assert got == {"plain": ("sync", "plain"), "w": ("worker", "plain")}


FAMILY = pl.DataFrame(
    {
        "workload": ["s", "w", "w1"],
        "family": ["s", "s", "s"],
        "what": ["x.sql"] * 3,
        "variant": ["sync", "worker", "worker, io_workers 1"],
        "io_method": ["sync", "worker", "worker"],
        "baseline": ["s", "s", "s"],
    }
)


def runs(rows: list[tuple[str, str, float, float | None]]) -> pl.DataFrame:
    """(workload, target, tps, device reads/s) per run, one client, no ladder."""
    return pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(len(rows))],
            "workload": [r[0] for r in rows],
            "target": [r[1] for r in rows],
            "target_label": [r[1] for r in rows],
            "rung": pl.Series([None] * len(rows), dtype=pl.Int64),
            "clients": [1] * len(rows),
            "value": [r[2] for r in rows],
            "reads_per_s": [r[3] for r in rows],
            "pg_reads_per_s": pl.Series([None] * len(rows), dtype=pl.Float64),
            "cpu_busy": [0.5] * len(rows),
            "cpu_iowait": [0.25] * len(rows),
        }
    )


def wanted(pairs: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "workload": [w for w, _ in pairs],
            "target": [t for _, t in pairs],
            "rung": pl.Series([None] * len(pairs), dtype=pl.Int64),
            "clients": [1] * len(pairs),
        }  # fmt: skip
    )


def plain_hl(a: list[float], b: list[float]) -> float:
    """The median of all pairwise ratios b/a (an odd count here: the middle one)."""
    r = sorted(y / x for x in a for y in b)
    return r[len(r) // 2]


def test_gained_lost_and_unresolved_by_hand() -> None:
    sync = [100.0, 110.0, 120.0]
    gain, loss, mixed = [130.0, 140.0, 150.0], [80.0, 85.0, 90.0], [95.0, 105.0, 125.0]
    rows = [("s", t, v, 1000.0 + v) for t in ("a", "b", "c") for v in sync]
    rows += [("w", "a", v, 10.0 * v) for v in gain] + [("w", "b", v, None) for v in loss]
    rows += [("w", "c", v, None) for v in mixed]
    cells = wanted([("s", "a"), ("s", "b"), ("s", "c"), ("w", "a"), ("w", "b"), ("w", "c")])
    comp = io.compare(runs(rows), FAMILY, cells, 0.05)
    by = {(r["workload"], r["target"]): r for r in comp.iter_rows(named=True)}

    a = by[("w", "a")]
    assert a["ratio"] == pytest.approx(140 / 110)  # the middle of the nine pairwise ratios
    assert (a["lo"], a["hi"]) == (pytest.approx(130 / 120), pytest.approx(150 / 100))  # 3+3 runs: the widest
    assert a["coverage"] == pytest.approx(1 - 2 / 20)  # P(U <= 0) = 1 / C(6, 3) on each side
    assert a["finding"] == "gained (90 % interval)"
    assert a["median_tps"] == 140 and a["n"] == 3 and a["reads_per_s"] == 1400
    assert a["cpu_busy"] == 0.5 and a["cpu_iowait"] == 0.25 and a["pg_reads_per_s"] is None

    b = by[("w", "b")]
    assert b["ratio"] == pytest.approx(plain_hl(sync, loss)) and b["hi"] == pytest.approx(90 / 100)
    assert b["finding"] == "lost (90 % interval)" and b["reads_per_s"] is None

    c = by[("w", "c")]
    med, lo, hi = plain_hl(sync, mixed), 95 / 120, 125 / 100
    assert c["ratio"] == pytest.approx(med) and (c["lo"], c["hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert c["finding"] == f"no difference resolved at ±{100 * (hi - lo) / 2 / med:.0f} % (90 % interval)"

    base = by[("s", "a")]
    assert base["is_baseline"] and base["ratio"] is None and base["finding"] == "the baseline (sync)"
    assert base["median_tps"] == 110 and base["reads_per_s"] == 1110


def test_five_runs_a_side_give_a_95_interval_and_no_coverage_note() -> None:
    sync, fast = [100.0, 101, 102, 103, 104], [120.0, 121, 122, 123, 124]
    rows = [("s", "a", v, None) for v in sync] + [("w", "a", v, None) for v in fast]
    comp = io.compare(runs(rows), FAMILY, wanted([("s", "a"), ("w", "a")]), 0.05)
    row = comp.filter(pl.col("workload") == "w").row(0, named=True)
    assert row["coverage"] >= 0.95 and row["finding"] == "gained"
    assert row["ratio"] == pytest.approx(plain_hl(sync, fast))


def test_cells_that_cannot_be_compared_say_why() -> None:
    rows = [("s", "a", v, None) for v in (100.0, 110.0, 120.0)] + [("w", "a", 130.0, None)]
    rows += [("w", "b", v, None) for v in (100.0, 110.0)]
    cells = wanted([("s", "a"), ("w", "a"), ("w", "b"), ("w1", "a")])  # the sync variant does not run on b
    comp = io.compare(runs(rows), FAMILY, cells, 0.05)
    said = {(r["workload"], r["target"]): r["finding"] for r in comp.iter_rows(named=True)}
    assert said[("w", "a")] == "not compared: 1 run(s) against 3 of sync (2 a side needed)"
    assert said[("w", "b")] == "not compared: the sync variant does not run on this target"
    assert said[("w1", "a")] == "not compared: 0 run(s) against 3 of sync (2 a side needed)"  # asked, none succeeded
    assert comp.filter(pl.col("workload") == "w1")["n"].to_list() == [0]

    no_sync = FAMILY.with_columns(pl.lit(None, pl.Utf8).alias("baseline"))
    comp = io.compare(runs(rows), no_sync, wanted([("w", "b")]), 0.05)
    assert comp["finding"].to_list() == ["not compared: no io_method sync variant in this family"]


def test_the_words_for_an_interval() -> None:
    assert io.finding(RatioCI(1.2, 1.1, 1.3, 5, 5, 0.968), 5, 5, 0.05) == "gained"
    assert io.finding(RatioCI(0.8, 0.7, 0.9, 5, 5, 0.968), 5, 5, 0.05) == "lost"
    # covers 1: the half-width in % of the ratio, (1.2 - 0.8) / 2 / 1.0
    assert io.finding(RatioCI(1.0, 0.8, 1.2, 5, 5, 0.968), 5, 5, 0.05) == "no difference resolved at ±20 %"
    assert io.finding(RatioCI(math.nan, 0, math.inf, 1, 3, math.nan), 3, 1, 0.05).startswith("not compared: 1 run(s)")


def test_summary_names_each_target_with_its_interval() -> None:
    sync = [100.0, 110.0, 120.0]
    rows = [("s", t, v, None) for t in ("a", "b") for v in sync]
    rows += [("w", "a", v, None) for v in (130.0, 140.0, 150.0)] + [("w", "b", v, None) for v in (95.0, 105.0, 125.0)]
    comp = io.compare(runs(rows), FAMILY, wanted([("s", "a"), ("s", "b"), ("w", "a"), ("w", "b")]), 0.05)
    text = io.summary(comp)
    assert "worker: gained on a 1.27 [1.08, 1.50]; no difference resolved on b" in text
    assert "90 % coverage" in text


def test_the_registry_schedules_the_notebook_only_where_a_workload_sets_io_method() -> None:
    assert "io_methods" in [j.name for j in registry.jobs(aio())]
    default = Study.from_dict(load(REPO / "config" / "default.yaml"))
    assert "io_methods" not in [j.name for j in registry.jobs(default)]
    pg = {"tool": "pgbench", "builtin": "select-only"}
    only_study_wide = small({"w": dict(pg)}, {"io_method": "worker"})  # no workload varies it: nothing to compare
    assert not registry.sets_io_method(only_study_wide)
