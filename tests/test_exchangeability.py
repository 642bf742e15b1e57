"""Exchangeability checks, the A/A control and two days: hand-computed cases with the numbers
written out, null calibrations simulated here independently of the code, and the recorded studies
(tests/data/studies/), whose raw files are read here with plain code."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pgfslab.analysis import queries, run_evidence
from pgfslab.analysis.stats import aa, days
from pgfslab.analysis.stats import exchangeability as ex
from pgfslab.ingest import study as ingest_study_mod
from pgfslab.paper import abstract

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "tests" / "data" / "studies"


def cell(values: list[float], target: str = "btrfs", workload: str = "tpcb", clients: int = 4) -> pl.DataFrame:
    """One target-cell's runs in round order, as `queries.headline` gives them."""
    n = len(values)
    return pl.DataFrame(
        {
            "run_id": [f"{target}.{workload}.c{clients}.r{i}" for i in range(1, n + 1)],
            "target": [target] * n,
            "workload": [workload] * n,
            "clients": [clients] * n,
            "repeat": list(range(1, n + 1)),
            "plan_index": [3 * i for i in range(n)],
            "value": [float(v) for v in values],
        }
    )


# ---------------------------------------------------------------------------- the four checks, by hand


def test_trend_of_steady_growth() -> None:
    # +10 % per round: every pair concordant (tau 1); exact p = 2/5! = 1/60; Theil-Sen slope ln 1.1 per round
    t = ex.trend([1, 2, 3, 4, 5], [100, 110, 121, 133.1, 146.41])
    assert t.tau == pytest.approx(1.0)
    assert t.p == pytest.approx(1 / 60)
    assert t.slope_pct == pytest.approx(10.0)


def test_trend_of_mixed_rounds() -> None:
    # 6 concordant and 4 discordant pairs: tau 0.2; S = 2 <=> 5 inversions (22 of 120 permutations have S = 0),
    # p = P(|S| >= 2) = 98/120; the pairwise log slopes' median is (ln(1.1)/4 + ln(13/12)/2)/2 = 0.0319244
    t = ex.trend([1, 2, 3, 4, 5], [100, 120, 90, 130, 110])
    assert t.tau == pytest.approx(0.2)
    assert t.p == pytest.approx(98 / 120)
    assert t.slope_pct == pytest.approx(3.243950, abs=1e-5)


def test_first_round_far_below_the_rest() -> None:
    # the btrfs: 350 tps, then 2,000-2,600. ratio 350/2,350; rest's log median 7.761944, MAD 0.0613015
    fr = ex.first_round([350, 2000, 2600, 2400, 2300])
    assert fr.ratio == pytest.approx(0.148936, abs=1e-6)
    assert fr.distance == pytest.approx(20.94965, abs=1e-4)
    assert fr.outside_range and fr.flagged
    # a first round inside the rest is not flagged
    assert not ex.first_round([2350, 2000, 2600, 2400, 2300]).flagged


def test_gap_ratio_by_hand() -> None:
    # logs 0, .1 | 1.0, 1.2: gap 0.9 over the wider group's range 0.2
    assert ex.gap_ratio(np.exp([0, 0.1, 1.0, 1.2])) == pytest.approx(4.5)
    # logs 0, .1, .2 | 1.0, 1.1: gap 0.8 over 0.2 (the split 0, .1 | .2, 1.0, 1.1 gives 0.1/0.9)
    assert ex.gap_ratio(np.exp([0, 0.1, 0.2, 1.0, 1.1])) == pytest.approx(4.0)
    # the select-only btrfs runs: 772, 1,004 | 4,271, 12,298
    assert ex.gap_ratio([12298, 1004, 772, 4271]) == pytest.approx(1.369016, abs=1e-6)
    assert math.isnan(ex.gap_ratio([1, 2, 3]))


def test_outliers_by_hand() -> None:
    # logs' median ln 1000, scaled MAD 1.4826 x 0.0099503: 500 lies 46.99 MADs off, 990 0.68, 1010 0.67
    values = [1000, 1010, 990, 1005, 500]
    assert ex.outlier_mask(values).tolist() == [False, False, False, False, True]
    assert ex.outlier_mask(values, k=0.6).tolist() == [False, True, True, False, True]
    assert ex.outlier_mask([1000, 1010, 10]).tolist() == [False, False, False]  # three runs: no rule


def _plain_gap_ratio(x: list[float]) -> float:
    s = sorted(x)
    return max((s[i] - s[i - 1]) / max(s[i - 1] - s[0], s[-1] - s[i]) for i in range(2, len(s) - 1))


def _plain_max_distance(x: list[float]) -> float:
    med = statistics.median(x)
    mad = 1.4826 * statistics.median(abs(v - med) for v in x)
    return max(abs(v - med) for v in x) / mad


def test_plain_helpers() -> None:
    assert _plain_gap_ratio([0.0, 1.0, 3.0, 4.0]) == 2.0  # 0, 1 | 3, 4: gap 2 over range 1
    assert _plain_max_distance([0.0, 1.0, 2.0, 10.0]) == pytest.approx(8.5 / 1.4826)  # median 1.5, MAD 1


@pytest.mark.parametrize("n", [5, 8])
def test_critical_values_against_a_plain_simulation(n: int) -> None:
    """The simulated critical values against this test's own simulation (plain Python, another seed); the
    largest MAD distance of five runs is heavy-tailed, hence 20,000 samples and 6 %."""
    rng = np.random.default_rng(7)
    samples = rng.standard_normal((20_000, n)).tolist()
    gap = float(np.quantile([_plain_gap_ratio(s) for s in samples], 0.95))
    dist = float(np.quantile([_plain_max_distance(s) for s in samples], 0.95))
    assert ex.gap_critical(n) == pytest.approx(gap, rel=0.06)
    assert ex.outlier_critical(n) == pytest.approx(dist, rel=0.06)


def test_exchangeable_cells_are_rarely_flagged_and_a_slow_first_round_is() -> None:
    """The checks' false-flag rate on cells drawn from one log-normal distribution is about alpha each."""
    rng = np.random.default_rng(11)
    frames = [
        cell(list(np.exp(7 + 0.1 * rng.standard_normal(6))), target=f"t{i}") for i in range(400)
    ]  # 400 exchangeable cells of 6 runs
    res = ex.exchangeability(pl.concat(frames))
    for flag in ("trend", "first_round_off", "bimodal"):
        assert res[flag].mean() <= 0.09, flag
    assert (res["outliers"] > 0).mean() <= 0.09
    slow = ex.exchangeability(cell([350, 2000, 2600, 2400, 2300]))
    assert slow["first_round_off"].item() and slow["outliers"].item() == 1


def test_reason_and_the_outlier_run_with_its_evidence() -> None:
    runs = cell([350, 2000, 2600, 2400, 2300])
    evidence = pl.DataFrame(
        {"run_id": runs["run_id"], "checkpoints_req": [3, 15, 20, 18, 16], "reads_per_s": [120.0, 8, 9, 7, 10]}
    )
    out = ex.outlier_runs(runs, evidence)
    assert out["run_id"].to_list() == ["btrfs.tpcb.c4.r1"]
    assert out["reason"].item() == (
        "btrfs.tpcb.c4.r1 ran at 350, 0.15x its cell's median 2,300 (round 1): "
        "3 requested checkpoints (others' median 17); device reads 120/s (others' median 8.5/s)"
    )
    # with a second target whose round 1 ran at half its median, the whole round was slow
    both = pl.concat([runs, cell([500, 1000, 1000, 1000, 1000], target="ext4")])
    out = ex.outlier_runs(both, evidence).filter(pl.col("target") == "btrfs").row(0, named=True)
    assert out["same_round_others"] == 0.5
    assert out["reason"].endswith("; the other targets' runs of round 1: 0.50x their medians")
    row = ex.exchangeability(runs, evidence).row(0, named=True)
    assert row["flagged"] and row["outlier_runs"] == "btrfs.tpcb.c4.r1"
    assert row["reason"].startswith("first round 0.15x the median of the rest (20.9 MADs off")
    calm = ex.exchangeability(cell([2350, 2000, 2600, 2400, 2300])).row(0, named=True)
    assert not calm["flagged"] and calm["reason"].startswith("exchangeable")
    few = ex.exchangeability(cell([350, 2000, 2600])).row(0, named=True)
    assert not few["judged"] and not few["flagged"] and few["reason"] == "not judged: 3 runs (the checks need 4)"


# ---------------------------------------------------------------------------- A/A, by hand


def aa_frame(base: list[float], twin: list[float]) -> pl.DataFrame:
    return pl.concat([cell(base, "ext4"), cell(twin, "ext4-aa")])


def test_aa_ratio_and_band_by_hand() -> None:
    # baseline all 100, twin 100 e^{-.03 .. +.03}: the 36 pairwise log-ratios are each twin value 6 times;
    # their median 0; n = 6 + 6 rejects at U <= 5 (19 of 924 tables on each side), so the interval is
    # the 6th smallest and 6th largest: e^{-.03}, e^{.03}, coverage 1 - 38/924
    twin = [100 * math.exp(d) for d in (-0.03, -0.02, -0.01, 0.01, 0.02, 0.03)]
    out = aa.aa_ratios(aa_frame([100.0] * 6, twin), {"ext4-aa": "ext4"}).row(0, named=True)
    assert out["aa_ratio"] == pytest.approx(1.0)
    assert out["aa_lo"] == pytest.approx(0.9704455)
    assert out["aa_hi"] == pytest.approx(1.0304545)
    assert out["aa_coverage"] == pytest.approx(1 - 38 / 924)
    assert out["aa_half_width_pct"] == pytest.approx(3.00045, abs=1e-4)
    assert (out["band_lo"], out["band_hi"]) == pytest.approx((0.9704455, 1.0304545))


def test_band_is_symmetric_and_where_an_effect_lies() -> None:
    assert aa.aa_band(0.98, 1.05) == pytest.approx((1 / 1.05, 1.05))
    assert aa.aa_band(0.90, 1.05) == pytest.approx((0.90, 1 / 0.90))
    assert aa.aa_band(0.0, math.inf) == (0.0, math.inf)
    assert aa.against_noise(0.95, 0.93, 0.965, 0.97, 1.03) == "outside the A/A band"
    assert aa.against_noise(1.01, 0.90, 1.12, 0.97, 1.03) == "inside the A/A band"
    assert aa.against_noise(1.05, 1.02, 1.08, 0.97, 1.03) == "overlaps the A/A band"
    assert aa.against_noise(1.05, 1.02, math.nan, 0.97, 1.03) is None


def test_twins_from_config_and_comparisons_against_the_band() -> None:
    cfg = {"targets": {"ext4": {"fs": "ext4"}, "ext4-aa": {"fs": "ext4", "aa_twin_of": "ext4"}, "xfs": {"fs": "xfs"}}}
    assert aa.twins_from_config(cfg) == {"ext4-aa": "ext4"}
    band = pl.DataFrame({"workload": ["tpcb"], "clients": [4], "band_lo": [0.97], "band_hi": [1.03]})
    comps = pl.DataFrame(
        {"workload": ["tpcb", "tpcb"], "clients": [4, 4], "ratio": [0.80, 1.01], "lo": [0.75, 0.9], "hi": [0.85, 1.1]}
    )
    assert aa.with_noise(comps, band)["noise"].to_list() == ["outside the A/A band", "inside the A/A band"]


def test_the_abstract_reports_the_twin_as_the_noise_floor_by_hand() -> None:
    # the same numbers as test_aa_ratio_and_band_by_hand: 1.00 [0.97, 1.03] at 96 %, band 3 % either way
    twin = [100 * math.exp(d) for d in (-0.03, -0.02, -0.01, 0.01, 0.02, 0.03)]
    text = abstract._noise_floor(aa_frame([100.0] * 6, twin), {"ext4-aa": "ext4"}, 0.05)
    assert "ext4-aa against its identical twin ext4" in text
    assert "1.00 [0.97, 1.03] (96 % interval, 6+6 runs)" in text
    assert "differ by 3 %" in text
    assert abstract._noise_floor(aa_frame([100.0] * 6, twin), {}, 0.05) == ""


def test_the_abstract_quotes_the_studys_primary_comparison_by_hand() -> None:
    # rounds-t: per-round log-ratios xfs (.08, .10, .12): mean .10, SD .02, t(.975, 2) = 4.302653, half-width
    # 4.302653 * .02 / sqrt 3 = .049683, so e^.1 = 1.105 [e^.0503, e^.1497] = [1.05, 1.16], which excludes 1;
    # btrfs (-.05, 0, .05): mean 0, half-width .124206, [0.88, 1.13], which covers it
    runs = pl.concat(
        [
            cell([100.0] * 3, "ext4"),
            cell([100 * math.exp(d) for d in (0.08, 0.10, 0.12)], "xfs"),
            cell([100 * math.exp(d) for d in (-0.05, 0.0, 0.05)], "btrfs"),
        ]
    ).with_columns(pl.col("target").alias("target_label"))
    text = abstract._primary_comparisons(runs, "ext4", 0.05, "rounds-t")
    assert "paired by round, the mean log-ratio with Student's t interval, 95 % intervals" in text
    assert "xfs/ext4 1.11 [1.05, 1.16]; btrfs/ext4 1.00 [0.88, 1.13]; 1 of 2 exclude 1" in text
    # unpaired (the Hodges-Lehmann ratio): 3 + 3 runs give at most a 90 % interval (2 of 20 tables), none counted
    assert (
        "xfs/ext4 1.11 (no 95 % interval from 3 runs); btrfs/ext4 1.00 (no 95 % interval from 3 runs); 0 of 2"
        in abstract._primary_comparisons(runs, "ext4", 0.05, "runs")
    )
    assert abstract._primary_comparisons(runs.filter(pl.col("target") == "ext4"), "ext4", 0.05, "runs") == ""


# ---------------------------------------------------------------------------- two days, by hand


def test_blocked_interval_with_one_day_inverts_the_normal_mann_whitney() -> None:
    """With one day van Elteren is the Mann-Whitney test (normal, no continuity correction, no ties): its
    inverted interval is every shift of B's logs that test does not reject, found here on a fine grid with
    the U statistic counted pair by pair, and checked with scipy's test just inside and outside."""
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(7, 0.1, 12), rng.lognormal(7.1, 0.1, 12)
    bl = days.blocked_ratio(a, np.zeros(12), b, np.zeros(12))
    la, lb = np.log(a), np.log(b)
    grid = np.linspace(-0.2, 0.4, 60001)
    u = ((lb[None, :, None] - grid[None, None, :]) > la[:, None, None]).sum(axis=(0, 1))
    z = (u - 72) / math.sqrt(144 * 25 / 12)
    kept = grid[np.abs(z) <= sps.norm.ppf(0.975)]
    assert bl.lo == pytest.approx(math.exp(kept.min()), abs=2e-5)
    assert bl.hi == pytest.approx(math.exp(kept.max()), abs=2e-5)
    for shift, rejected in ((kept.min() + 1e-4, False), (kept.min() - 1e-4, True), (kept.max() + 1e-4, True)):
        p = sps.mannwhitneyu(lb - shift, la, method="asymptotic", use_continuity=False).pvalue
        assert (p < 0.05) == rejected
    assert bl.ratio == pytest.approx(math.exp(np.median((lb[None, :] - la[:, None]).ravel())))


def test_days_differ_by_hand() -> None:
    # day 1: B = A exactly; day 2: B = 1.5 A. Each day's pairwise log-ratios are the differences of
    # {0, .01, ..., .05} (+ ln 1.5 on day 2): 6th smallest/largest -+.03, so day 1 is 1 [e^-.03, e^.03]
    # and day 2 1.5 times that; blocked: the median of the 72 within-day log-ratios is halfway between
    # .05 and ln 1.5 - .05, i.e. sqrt(1.5). The baseline did the same on both days (day share 0); the
    # candidate's ANOVA: MS_between 0.4932, MS_within 0.00035, n0 = 6, share 0.995757.
    a = [1000 * math.exp(x) for x in (0, 0.01, 0.02, 0.03, 0.04, 0.05)]
    d1 = pl.concat([cell(a, "ext4"), cell(a, "xfs")])
    d2 = pl.concat([cell(a, "ext4"), cell([1.5 * v for v in a], "xfs")])
    row = days.days_agreement(days.by_day(d1, d2), "ext4").row(0, named=True)
    assert (row["ratio_day_1"], row["lo_day_1"], row["hi_day_1"]) == pytest.approx((1.0, 0.9704455, 1.0304545))
    assert (row["ratio_day_2"], row["lo_day_2"], row["hi_day_2"]) == pytest.approx((1.5, 1.4556683, 1.5456818))
    assert row["coverage_day_1"] == pytest.approx(1 - 38 / 924)
    assert row["ratio_blocked"] == pytest.approx(1.2247449)
    assert row["day_share_baseline"] == pytest.approx(0.0)
    assert row["day_share_target"] == pytest.approx(0.995757, abs=1e-6)
    assert not row["agree"]
    assert row["verdict"] == (
        "days differ: day 1 1 [0.97, 1.03], day 2 1.5 [1.46, 1.55] do not overlap; "
        "the day itself moved xfs (100 % of its variance lies between days)"
    )
    assert not row["covers_other"]
    same = days.days_agreement(days.by_day(d1, d1), "ext4").row(0, named=True)
    assert same["agree"] and same["covers_other"] and same["verdict"] == "days agree"
    # B = 1.04 A on day 2: its interval 1.04 x [0.970, 1.030] = [1.009, 1.072] overlaps day 1's and misses its
    # estimate 1 (agree, not the strict reading); at 1.02, [0.990, 1.051] covers 1 and day 1's covers 1.02
    for factor, covers in ((1.04, False), (1.02, True)):
        d2 = pl.concat([cell(a, "ext4"), cell([factor * v for v in a], "xfs")])
        near = days.days_agreement(days.by_day(d1, d2), "ext4").row(0, named=True)
        assert near["agree"] and near["covers_other"] is covers
    # two runs a side give no 95 % interval (0 to infinity): the strict reading has nothing to say
    few = days.days_agreement(days.by_day(d1.filter(pl.col("repeat") <= 2), d2.filter(pl.col("repeat") <= 2)), "ext4")
    assert few.row(0, named=True)["covers_other"] is None


def test_a_study_paired_by_round_is_compared_paired_on_each_day() -> None:
    # day 1's B is A's round times e^d with d the rounds' own changes; a study stating `rounds-t` reads each day's
    # ratio as its verdicts do: the mean log-ratio with Student's t interval of the six rounds (scipy's, by hand)
    a = [1000 * math.exp(x) for x in (0, 0.08, 0.02, 0.11, 0.04, 0.06)]
    d = np.array([0.01, -0.01, 0.02, 0.0, 0.015, -0.005])
    d1 = pl.concat([cell(a, "ext4"), cell([v * math.exp(x) for v, x in zip(a, d)], "xfs")])
    row = days.days_agreement(days.by_day(d1, d1), "ext4", primary="rounds-t").row(0, named=True)
    lo, hi = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert (row["ratio_day_1"], row["lo_day_1"], row["hi_day_1"]) == pytest.approx(
        (math.exp(d.mean()), math.exp(lo), math.exp(hi))
    )
    unpaired = days.days_agreement(days.by_day(d1, d1), "ext4").row(0, named=True)
    assert unpaired["hi_day_1"] - unpaired["lo_day_1"] > 2 * (row["hi_day_1"] - row["lo_day_1"])


# ---------------------------------------------------------------------------- recorded studies


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("exch")
    raws = {"wal-zfs": STUDIES / "wal-zfs", "h1": STUDIES / "two-hosts" / "h1", "h2": STUDIES / "two-hosts" / "h2"}
    for name, raw in raws.items():
        ingest_study_mod.ingest_study(raw, base / f"{name}.duckdb", progress=False, external=None)
    return {name: base / f"{name}.duckdb" for name in raws}


def raw_tps(run_dir: Path) -> float:
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", (run_dir / "pgbench.stdout").read_text())
    assert m, run_dir
    return float(m[1])


def raw_units(study: Path) -> dict[tuple[str, str], list[tuple[int, float, str]]]:
    """(target, cell) -> [(round, tps, run folder)] in round order, from run.json and pgbench.stdout."""
    units: dict[tuple[str, str], list[tuple[int, float, str]]] = {}
    for d in sorted(study.iterdir()):
        if not (d / "run.json").exists():
            continue
        rec = json.loads((d / "run.json").read_text())
        units.setdefault((rec["target"], f"{rec['workload']}/c{rec['clients']}"), []).append(
            (rec["repeat"], raw_tps(d), d.name)
        )
    return {k: sorted(v) for k, v in units.items()}


def test_recorded_outliers_are_the_runs_far_off_their_cell(dbs: dict[str, Path]) -> None:
    """wal-zfs: the runs whose log tps (read from pgbench.stdout) lie further from their cell's median than
    the 95 % quantile of a plain simulation of five normal runs are exactly the ones flagged."""
    rng = np.random.default_rng(3)
    k5 = float(np.quantile([_plain_max_distance(list(rng.standard_normal(5))) for _ in range(4000)], 0.95))
    expected = set()
    for runs in raw_units(STUDIES / "wal-zfs").values():
        logs = [math.log(v) for _, v, _ in runs]
        med = statistics.median(logs)
        mad = 1.4826 * statistics.median(abs(x - med) for x in logs)
        expected |= {name for (_, _, name), x in zip(runs, logs) if abs(x - med) / mad > k5 * 1.05}
        near = {name for (_, _, name), x in zip(runs, logs) if k5 * 0.95 <= abs(x - med) / mad <= k5 * 1.05}
        assert not near, f"a run on the edge of the rule, this test cannot decide it: {near}"
    head = queries.headline(dbs["wal-zfs"], "wal-zfs")
    flagged = ex.outlier_runs(head, run_evidence.run_evidence(dbs["wal-zfs"], "wal-zfs"))
    assert set(flagged["run_id"]) == expected and "ext4.tpcb.c4.r4" in expected
    assert flagged.filter(pl.col("run_id") == "ext4.tpcb.c4.r4")["value"].item() == pytest.approx(870.433766)


def plain_reads_per_s(run_dir: Path, device: str) -> float:
    """(reads completed at the last sample - at the first) / seconds between them, from diskstats.log."""
    samples, ts = [], None
    for line in (run_dir / "diskstats.log").read_text().splitlines():
        if line.startswith("@"):
            ts = float(line[1:])
        elif line.split()[2:3] == [device]:
            samples.append((ts, int(line.split()[3])))
    (t0, r0), (t1, r1) = samples[0], samples[-1]
    return (r1 - r0) / (t1 - t0)


def test_recorded_evidence_matches_the_raw_files(dbs: dict[str, Path]) -> None:
    ev = run_evidence.run_evidence(dbs["wal-zfs"], "wal-zfs")
    for name in ("ext4.tpcb.c4.r4", "btrfs-zlib.tpcb.c1.r5", "zfs-gzip.tpcb.c4.r2"):
        d = STUDIES / "wal-zfs" / name
        rec = json.loads((d / "run.json").read_text())
        row = ev.filter(pl.col("run_id") == name).row(0, named=True)
        before, after = rec["postgres_before"]["bgwriter"], rec["postgres"]["bgwriter"]
        assert row["checkpoints_req"] == after["checkpoints_req"] - before["checkpoints_req"]
        assert row["checkpoints_timed"] == after["checkpoints_timed"] - before["checkpoints_timed"]
        dev = rec["mount"]["device"].removeprefix("/dev/")
        assert row["reads_per_s"] == pytest.approx(plain_reads_per_s(d, dev))


def plain_progress(run_dir: Path) -> list[float]:
    """pgbench's per-second tps after the first second (the study's trim), zero seconds left out."""
    out = []
    for line in (run_dir / "pgbench.stderr").read_text().splitlines():
        m = re.match(r"progress: ([0-9.]+) s, ([0-9.]+) tps", line)
        if m and float(m[1]) > 1 and float(m[2]) > 0:
            out.append(float(m[2]))
    return out


def test_recorded_true_aa_is_rejected_at_most_alpha() -> None:
    """Each wal-zfs target's runs of a cell (5 rounds) split into two pseudo-targets: alternating rounds, and
    2,000 random balanced splits, the units' log tps (from pgbench.stdout) centered and pooled (24 against 16
    runs). The lab's comparison must reject this true A/A at no more than alpha. The same harness on the
    runs' per-second samples, each second taken as a unit (the pseudo-replication the lab avoids), must
    reject far more often: the harness can see an invalid comparison."""
    alpha, splits = 0.05, 2000
    units = raw_units(STUDIES / "wal-zfs")
    assert len(units) == 8 and all(len(u) == 5 for u in units.values())
    values = [list(aa.centered_logs([v for _, v, _ in u])) for u in units.values()]
    res = aa.pseudo_aa(values, lambda a, b: aa.lab_rejects(np.exp(a), np.exp(b), alpha), splits=splits)
    print(f"lab's comparison, true A/A on recorded runs: {res.rejections}/{res.splits} = {res.rate:.3f} rejected")
    assert (res.n_a, res.n_b) == (24, 16)
    assert res.rate <= alpha + 2.33 * math.sqrt(alpha * (1 - alpha) / splits)

    seconds = []
    for u in units.values():
        logs = [np.log(plain_progress(STUDIES / "wal-zfs" / name)) for _, _, name in u]
        m = float(np.mean(np.concatenate(logs)))
        seconds.append([x - m for x in logs])

    def per_second(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
        return bool(sps.ttest_ind(np.concatenate(a), np.concatenate(b), equal_var=False).pvalue < alpha)

    bad = aa.pseudo_aa(seconds, per_second, splits=500)
    print(f"seconds as units, true A/A: {bad.rejections}/{bad.splits} = {bad.rate:.3f} rejected")
    assert bad.rate > 3 * alpha


def test_recorded_two_hosts_as_two_days(dbs: dict[str, Path]) -> None:
    """two-hosts (one machine, two sittings) read as two days: each day's xfs/ext4 ratio is the median of the
    nine pairwise ratios of its runs (pgbench.stdout), and with 3 + 3 runs the widest interval (smallest to
    largest pairwise ratio, 90 % coverage)."""
    frame = days.by_day(
        queries.headline(dbs["h1"], "two-hosts"), queries.headline(dbs["h2"], "two-hosts"), ("h1", "h2")
    )
    row = days.days_agreement(frame, "ext4").row(0, named=True)
    plain = {}
    for host in ("h1", "h2"):
        tps = {
            t: [raw_tps(STUDIES / "two-hosts" / host / f"{t}.tpcb.c2.r{i}@{host}") for i in (1, 2, 3)]
            for t in ("ext4", "xfs")
        }
        ratios = sorted(b / a for a in tps["ext4"] for b in tps["xfs"])
        plain[host] = (statistics.median(ratios), ratios[0], ratios[-1])
    assert (row["ratio_day_1"], row["lo_day_1"], row["hi_day_1"]) == pytest.approx(plain["h1"])
    assert (row["ratio_day_2"], row["lo_day_2"], row["hi_day_2"]) == pytest.approx(plain["h2"])
    overlap = not (plain["h1"][1] > plain["h2"][2] or plain["h2"][1] > plain["h1"][2])
    assert row["agree"] == overlap
    assert row["verdict"].startswith("days agree" if overlap else "days differ: ")


@pytest.mark.slow  # executes a notebook
def test_notebook_on_a_recorded_study(dbs: dict[str, Path], tmp_path: Path) -> None:
    """The notebook on wal-zfs with zfs-gzip-walext4 standing in as zfs-gzip's twin: its table has every
    target-cell with the run count and CV of the raw files, the figure is written, and the A/A band and the
    comparisons against it are in the paper's blocks."""
    import papermill as pm

    pm.execute_notebook(
        str(REPO / "notebooks" / "exchangeability.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters={
            "db": str(dbs["wal-zfs"]),
            "study": "wal-zfs",
            "figures_dir": str(tmp_path / "figs"),
            "tables_dir": str(tmp_path / "tables"),
            "alpha": 0.05,
            "trim_s": 1,
            "aa_twins": {"zfs-gzip-walext4": "zfs-gzip"},
        },
        kernel_name="python3",
        progress_bar=False,
        cwd=str(REPO / "notebooks"),
    )
    table = pl.read_parquet(tmp_path / "tables" / "exchangeability.parquet")
    for (target, c), runs in raw_units(STUDIES / "wal-zfs").items():
        row = table.filter(pl.col("target") == target, pl.col("clients") == int(c.rsplit("c", 1)[1])).row(0, named=True)
        tps = [v for _, v, _ in runs]
        assert row["n"] == len(tps)
        assert row["cv"] == pytest.approx(statistics.stdev(tps) / statistics.mean(tps))
    assert (tmp_path / "figs" / "exchangeability.svg").stat().st_size > 1000
    blocks = json.loads((tmp_path / "tables" / "exchangeability.json").read_text())["blocks"]
    text = " ".join(b.get("markdown", "") + b.get("caption", "") for b in blocks)
    assert "A/A band" in text and "zfs-gzip-walext4" in text


def test_carry_over_groups_a_targets_runs_by_the_target_before_it() -> None:
    """Target x after a: 100, 101, 102; after b: 120, 121, 122 (ranks 1-3 against 4-6). Kruskal-Wallis by hand:
    H = 12 / (6 * 7) * (6^2 / 3 + 15^2 / 3) - 3 * 7 = 3.857, p = P(chi2_1 > H) = 0.0495; x's median over its six
    runs is (102 + 120) / 2 = 111."""
    from scipy.stats import chi2

    from pgfslab.analysis.answers import exchangeability as ex

    rows = []
    for i, (before, v) in enumerate(zip("abababab", (100, 120, 101, 121, 102, 122, 90, 90))):
        rows.append({"target": before, "value": 50.0, "plan_index": 2 * i, "predecessor": None})
        rows.append({"target": "x", "value": float(v), "plan_index": 2 * i + 1, "predecessor": before})
    frame = pl.DataFrame(rows).with_columns(
        pl.col("target").alias("target_label"), pl.lit("w").alias("workload"), pl.lit(4).alias("clients"),
        pl.lit(None, pl.Utf8).alias("host"), (pl.col("plan_index") >= 12).alias("burn_in"),
    )  # fmt: skip
    out = ex.carry_over(frame, 0.05).filter(pl.col("target") == "x").sort("after")
    h = 12 / (6 * 7) * (6**2 / 3 + 15**2 / 3) - 3 * 7
    assert out["after"].to_list() == ["a", "b"] and out["runs"].to_list() == [3, 3]  # burn-in rounds left out
    assert out["carry_over_p"].to_list() == pytest.approx([chi2.sf(h, 1)] * 2, rel=1e-6)
    assert out["median_over_target"].to_list() == pytest.approx([101 / 111, 121 / 111])
    assert out["flagged"].to_list() == [True, True]
    # an older raw folder records no predecessor: the previous run in plan order on the host stands in
    older = frame.with_columns(pl.lit(None, pl.Utf8).alias("predecessor"))
    assert ex.carry_over(older, 0.05).filter(pl.col("target") == "x").sort("after")["runs"].to_list() == [3, 3]


def test_a_comparison_reads_b_against_the_baseline_and_its_twin() -> None:
    # constant runs, so every interval is a point worked by hand: B/A = 1.2, B/twin = 1.2 / 1.1; one interval
    # spanning both; a twin reading above B leaves B unresolved
    from pgfslab.analysis.answers import exchangeability as ex

    def frame(twin: float) -> pl.DataFrame:
        rows = [{"target": t, "value": v} for t, v in (("a", 100.0), ("twin", twin), ("b", 120.0)) for _ in range(6)]
        return pl.DataFrame(rows).with_columns(pl.lit("w").alias("workload"), pl.lit(4).alias("clients"))

    row = ex.against_baseline_and_twin(frame(110.0), "a", "twin", 0.05).row(0, named=True)
    assert row["target"] == "b" and row["n"] == "6+6+6"
    assert (row["lo"], row["hi"]) == pytest.approx((120 / 110, 1.2)) and row["resolved"]
    assert not ex.against_baseline_and_twin(frame(130.0), "a", "twin", 0.05)["resolved"][0]
