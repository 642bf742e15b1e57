"""What a verdict says: direction and magnitude apart, equivalence against a stated band, the A/A
band, interactions as ratios of ratios, preconditions measured per cell, and claims checked at load. Every
expected number here is computed by hand from the inputs, never read back from the code under test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pgfslab.analysis.stats.series import mser_null_rate, mser_truncation
from pgfslab.analysis.verdicts import claims, evaluate, facts, regime
from pgfslab.analysis.verdicts import ratio as R
from pgfslab.analysis.verdicts.claims import Claim
from pgfslab.analysis.verdicts.ratio import RatioCI, interaction_ci, judge
from pgfslab.errors import LabError
from pgfslab.records.run_record import RunRecord, parse


def rec_of(data: dict[str, object]) -> RunRecord:
    """A run record from run.json's mapping, as the analysis reads it."""
    return parse(data)[0]


STUDIES = Path(__file__).parent / "data" / "studies"


def ci(est: float, lo: float, hi: float) -> RatioCI:
    return RatioCI(est, lo, hi, 6, 6, 0.95)


# ------------------------------------------------------------------ direction and magnitude apart


def test_an_exact_replication_reads_holds_with_the_seeds_number_inside() -> None:
    v = judge(ci(1.45, 1.20, 1.60), "greater", seed_range=(1.45, 1.45))
    assert v.category == R.HOLDS and v.direction == "agrees" and v.magnitude == "inside"
    assert v.text == "holds: the seed's 1.45 is inside [1.20, 1.60]"


def test_a_smaller_effect_in_the_same_direction_is_never_a_refutation() -> None:
    # the seed's 10k deletes: zfs at 0.46 of ext4; the lab's zfs at 0.85 [0.80, 0.90] is slower too, less so
    v = judge(ci(0.85, 0.80, 0.90), "less", seed_range=(0.46, 0.46))
    assert v.category == R.SMALLER and v.direction == "agrees" and v.magnitude == "smaller"
    assert v.text == "same direction, smaller effect: 0.85 [0.80, 0.90] against the seed's 0.46"
    assert "not hold" not in v.text and v.category not in (R.OPPOSITE, R.DIFFERS)
    up = judge(ci(1.25, 1.10, 1.40), "greater", seed_range=(1.66, 1.66))  # create+fsync: zfs faster, by less
    assert up.category == R.SMALLER


def test_a_larger_effect_and_the_opposite_direction() -> None:
    assert judge(ci(3.0, 2.5, 3.6), "greater", seed_range=(2.0, 2.0)).category == R.LARGER
    assert judge(ci(0.2, 0.15, 0.3), "less", seed_range=(0.46, 0.46)).category == R.LARGER
    opp = judge(ci(0.7, 0.6, 0.8), "greater", seed_range=(1.45, 1.45))
    assert opp.category == R.OPPOSITE and opp.text == "opposite direction: 0.70 [0.60, 0.80] against the seed's 1.45"


def test_an_interval_covering_one_is_not_resolved_at_its_precision() -> None:
    v = judge(ci(0.97, 0.90, 1.06), "greater", seed_range=(1.05, 1.05))  # the seed's 1.05 is inside: nothing ruled out
    half = 100 * (1.06 - 0.90) / 2 / 0.97  # 8.2 %
    assert v.category == R.UNRESOLVED and v.text == f"not resolved at ±{half:.0f} %: 0.97 [0.90, 1.06] covers 1"
    assert judge(ci(0.97, 0.90, 1.06), "greater").category == R.UNRESOLVED  # no size: nothing to rule out


def test_an_interval_covering_one_that_rules_out_the_seeds_size_says_so() -> None:
    """Direction and magnitude apart: sysbench-fillfactor's read-write σ² ratio 2.29 [0.96, 3.06] covers 1, so no
    direction, and lies wholly above the seed's 0.38 (fillfactor 70 cutting the variance to 38 %): an effect of the
    seed's size is ruled out, which "not resolved" hid."""
    v = judge(ci(2.29, 0.96, 3.06), "less", seed_range=(0.38, 0.38))
    assert v.category == R.SMALLER_ANY and v.direction == "unresolved" and v.magnitude == "smaller"
    assert v.text == "smaller effect, direction not resolved: 2.29 [0.96, 3.06] covers 1 and rules out the seed's 0.38"
    # a range open above ("more", 1.25 or more): [0.90, 1.20] stops short of it, [0.99, 1.52] reaches into it
    assert judge(ci(1.05, 0.90, 1.20), "greater", seed_range=(1.25, math.inf)).category == R.SMALLER_ANY
    assert judge(ci(1.20, 0.99, 1.52), "greater", seed_range=(1.25, math.inf)).category == R.UNRESOLVED
    # an equivalence claim is judged against its band, never this way
    assert judge(ci(1.0, 0.8, 1.2), "same", band_range=(0.9, 1.1)).category == R.UNRESOLVED


def test_a_verbal_claim_is_tested_for_its_direction_only() -> None:
    v = judge(ci(0.5, 0.4, 0.6), "less")  # "much slower": no number, so no edge either
    assert v.category == R.DIRECTION_ONLY and v.magnitude is None
    assert v.text.startswith("holds (direction only") and "0.50 [0.40, 0.60] lies below 1" in v.text


def test_the_same_is_an_equivalence_test_against_the_stated_band() -> None:
    assert judge(ci(1.02, 0.95, 1.08), "same", band_range=(0.9, 1.1)).category == R.HOLDS
    assert judge(ci(1.3, 1.15, 1.45), "same", band_range=(0.9, 1.1)).category == R.DIFFERS
    straddle = judge(ci(0.97, 0.90, 1.06), "same", band_range=(0.95, 1.05))
    assert straddle.category == R.UNRESOLVED and "[0.95, 1.05] (the band from the seed's words)" in straddle.text
    with pytest.raises(ValueError):
        judge(ci(1.0, 0.9, 1.1), "same")


def test_a_range_from_the_seed_is_met_where_the_interval_reaches_it() -> None:
    """A seed that gave a range (a saving of 60-80 %, 53-93x): the interval overlapping it holds, nearer 1 is a
    smaller effect, beyond it a larger one; the same for a claim that B/A is less than 1."""
    assert judge(ci(1.7, 1.5, 1.9), "greater", seed_range=(1.8, 2.5)).category == R.HOLDS
    assert judge(ci(1.3, 1.2, 1.4), "greater", seed_range=(1.8, 2.5)).category == R.SMALLER
    assert judge(ci(3.0, 2.6, 3.4), "greater", seed_range=(1.8, 2.5)).category == R.LARGER
    # "a bit slower" as B/A in [0.8, 1): 0.44 [0.38, 0.53] is far slower than a bit
    assert judge(ci(0.44, 0.38, 0.53), "less", seed_range=(0.8, 1.0)).category == R.LARGER
    assert judge(ci(0.9, 0.85, 0.95), "less", seed_range=(0.8, 1.0)).category == R.HOLDS
    # an asymmetric band (seed 003's 2-3 / 20-30 / 200-300 ms: linear within 0.67-1.5)
    assert judge(ci(1.3, 1.1, 1.45), "same", band_range=(0.67, 1.5)).category == R.HOLDS
    assert judge(ci(1.3, 1.1, 1.6), "same", band_range=(0.67, 1.5)).category == R.UNRESOLVED


def test_the_twin_is_a_second_reference_and_the_interval_spans_both() -> None:
    """B against A and against A's twin, each with its interval; one interval from the lower of the lower ends
    to the higher of the upper ends (intersection-union: B must differ from both to get a direction)."""
    to_a, to_twin = RatioCI(1.20, 1.10, 1.30, 6, 6, 0.95), RatioCI(1.10, 1.02, 1.19, 6, 6, 0.96)
    both = R.both_references(to_a, to_twin)
    assert (both.lo, both.hi) == (1.02, 1.30)
    assert both.ratio == pytest.approx(math.sqrt(1.20 * 1.10))
    assert (both.n_a, both.n_b, both.confidence) == (12, 6, 0.95)
    # a twin that reads higher than B: no direction, whatever B/A alone says
    fails = R.both_references(to_a, RatioCI(0.95, 0.88, 1.03, 6, 6, 0.95))
    assert judge(fails, "greater").category == R.UNRESOLVED


def test_the_twin_used_once_keeps_the_level_and_decides_more_than_the_band_did() -> None:
    """An independent simulation: A, its twin and B drawn alike (no effect), the joined interval gives a
    direction in at most alpha of the repeats; with B 12 % above both, it decides far more often than the old
    rule (B/A's interval clear of the symmetric A/A band [1/h, h], the noise counted twice)."""
    rng = np.random.default_rng(7)

    def decides(effect: float) -> tuple[float, float]:
        new = old = 0
        for _ in range(300):
            a, twin = rng.lognormal(0, 0.05, 6), rng.lognormal(0, 0.05, 6)
            b = effect * rng.lognormal(0, 0.05, 6)
            to_a, to_twin, aa = R.ratio_ci(a, b), R.ratio_ci(twin, b), R.ratio_ci(a, twin)
            both = R.both_references(to_a, to_twin)
            new += both.lo > 1 or both.hi < 1
            h = max(aa.hi, 1 / aa.lo)
            old += to_a.lo > h or to_a.hi < 1 / h
        return new / 300, old / 300

    null_new, null_old = decides(1.0)
    assert null_new <= 0.05 + 0.03 and null_old <= null_new
    power_new, power_old = decides(1.12)
    assert power_new > 0.8 and power_new > power_old + 0.2


def test_one_measurement_per_load_has_no_interval() -> None:
    v = R.judge_once(1.43, "greater", (2.1, 2.1), None)
    assert v.category == R.ONCE and v.magnitude == "smaller" and "no interval" in v.text


# ------------------------------------------------------------------ runs: cells, interactions, the A/A twin


def claim(**kw) -> Claim:
    base = dict(
        id="c", seed="004", claim="x", where="-", seed_number=None, quantity="ratio", a={"fs": "ext4"},
        b={"fs": "btrfs"}, workload="-", expect="greater", match={"tool": "pgbench", "kinds": ["tpcb-like"]},
    )  # fmt: skip
    return Claim(**{**base, **kw})


def runs(target: str, fs: str, values: list[float], **extra) -> list[dict]:
    base = {
        "tool": "pgbench", "kind": "tpcb-like", "op": None, "workload": "w", "clients": 8, "rung": None,
        "regime": "exceeds_ram", "compression": "none", "fillfactor": 100, "snapshots": False, "aa_twin_of": None,
        **dict.fromkeys(facts.PG_KEYS), **dict.fromkeys(facts.FS_KEYS), "dirty_background_bytes": None,
    }  # fmt: skip
    tag = "".join(f"{v}" for v in extra.values())
    return [
        {**base, "target": target, "target_label": target, "fs": fs, "value": v, "run_id": f"{target}{tag}{i}", **extra}
        for i, v in enumerate(values)
    ]


def test_an_interaction_is_the_ratio_of_two_ratios_computed_by_hand() -> None:
    """The seed 004 control: btrfs/ext4 is 2 with fsync on and 1 with fsync off, so the change is 0.5."""
    pattern = [100.0, 101.0, 102.0, 103.0, 104.0]
    rows = (
        runs("ext4", "ext4", pattern, fsync="on")
        + runs("btrfs", "btrfs", [2 * x for x in pattern], fsync="on")
        + runs("ext4", "ext4", [3 * x for x in pattern], fsync="off")
        + runs("btrfs", "btrfs", [3 * x for x in pattern], fsync="off")
    )
    c = claim(expect="less", interaction={"key": "fsync", "from": "on", "to": "off"})
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), c)
    assert out.height == 1
    row = out.row(0, named=True)
    # B = k A with the same pattern: every Hodges-Lehmann ratio is exactly k, so (1 / 1) / (2 / 1) = 0.5
    assert row["estimate"] == pytest.approx(0.5)
    assert row["lo"] <= 0.5 <= row["hi"] < 1 and row["verdict"] == R.DIRECTION_ONLY
    assert "fsync off / on" in row["cell"] and row["test"].startswith("ratio of ratios")
    # a plain ratio at fsync off would have said "no gain" and missed the change entirely
    assert (row["n_a"], row["n_b"]) == (10, 10)


def test_interaction_interval_covers_the_hand_ratio() -> None:
    rng = np.random.default_rng(1)
    a0, a1 = 100 * np.exp(rng.normal(0, 0.02, 8)), 100 * np.exp(rng.normal(0, 0.02, 8))
    b0, b1 = 150 * np.exp(rng.normal(0, 0.02, 8)), 75 * np.exp(rng.normal(0, 0.02, 8))
    r = interaction_ci(a0, b0, a1, b1)
    hand = (75 / 100) / (150 / 100)
    assert r.lo < hand < r.hi and r.hi < 1 and r.confidence == pytest.approx(0.95)
    few = interaction_ci(a0[:2], b0[:2], a1[:2], b1[:2])
    assert math.isinf(few.hi) and judge(few, "less").category == R.UNRESOLVED


def test_the_interaction_interval_is_welchs_t_interval_worked_by_hand() -> None:
    # logs of each group: a0 (0, .1, .2), b0 (.5, .6, .7), a1 (0, .2, .4), b1 (.3, .4, .5)
    # change = (.4 - .2) - (.6 - .1) = -.3; variances .01, .01, .04, .01, over n = 3: se^2 = .07 / 3
    # Welch-Satterthwaite df = (.07/3)^2 / ((.01/3)^2 * 3 + (.04/3)^2) / 2 = .0049 / ((.0003 + .0016) / 2) = 5.1579
    a0, b0 = np.exp([0.0, 0.1, 0.2]), np.exp([0.5, 0.6, 0.7])
    a1, b1 = np.exp([0.0, 0.2, 0.4]), np.exp([0.3, 0.4, 0.5])
    r = interaction_ci(a0, b0, a1, b1, 0.05)
    half = 2.5419 * math.sqrt(0.07 / 3)  # t(.975, 5.1579), scipy.stats.t.ppf
    assert r.ratio == pytest.approx(math.exp(-0.3))
    assert (r.lo, r.hi) == pytest.approx((math.exp(-0.3 - half), math.exp(-0.3 + half)), rel=1e-3)


@pytest.mark.parametrize(("runs_a_group", "alpha"), [(5, 0.025), (3, 0.05)])
def test_the_interaction_interval_covers_at_its_stated_level(runs_a_group: int, alpha: float) -> None:
    """The seed studies run 5 a group, judged at 97.5 % where a claim has two cells: the interval must cover a known
    change at least that often there, and with 3 a group (the percentile bootstrap it replaced covered 95.6 % and
    89.5 % in a simulation like this one)."""
    rng = np.random.default_rng(7)
    trials, hits = 2000, 0
    for _ in range(trials):
        a0, b0, a1 = (100 * np.exp(rng.normal(0, 0.1, runs_a_group)) for _ in range(3))
        b1 = 80 * np.exp(rng.normal(0, 0.1, runs_a_group))
        r = interaction_ci(a0, b0, a1, b1, alpha)
        hits += r.lo <= 0.8 <= r.hi
    assert 1 - alpha - 0.012 <= hits / trials <= 1 - alpha / 4


def test_an_interaction_in_a_study_paired_by_round_reads_each_rounds_own_change() -> None:
    """Every run of round i shares that round's host speed (a factor drawn per round): the rounds' own changes
    cancel it, and the paired interval is the one-sample t interval of those changes, the unpaired one beside it."""
    rng = np.random.default_rng(3)
    host = np.exp(rng.normal(0, 0.3, 6))  # the rounds' shared speed, far larger than the runs' own noise
    own = lambda: np.exp(rng.normal(0, 0.01, 6))  # noqa: E731
    on_a, on_b, off_a, off_b = 100 * host * own(), 200 * host * own(), 300 * host * own(), 300 * host * own()

    def side(target: str, values: np.ndarray, fsync: str) -> list[dict]:
        return [r | {"repeat": i + 1} for i, r in enumerate(runs(target, target, list(values), fsync=fsync))]

    rows = (
        side("ext4", on_a, "on") + side("btrfs", on_b, "on") + side("ext4", off_a, "off") + side("btrfs", off_b, "off")
    )
    c = claim(expect="less", interaction={"key": "fsync", "from": "on", "to": "off"})
    row = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), c, 0.05, "rounds-t").row(0, named=True)
    d = (np.log(off_b) - np.log(off_a)) - (np.log(on_b) - np.log(on_a))
    want = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (row["lo"], row["hi"]) == pytest.approx((math.exp(want.low), math.exp(want.high)))
    assert row["estimate"] == pytest.approx(math.exp(d.mean())) and row["hi"] < 1
    assert "Student's t" in row["test"] and "the runs unpaired:" in row["unchecked"]
    assert row["n_a"] == 6  # the rounds


def test_the_aa_twin_is_a_second_reference_and_never_a_side() -> None:
    # constant runs: every pairwise ratio is the same, so each interval is a point, worked by hand:
    # B/A = 120/100 = 1.2, B/twin = 120/110 = 1.0909, twin/A = 1.1
    rows = runs("ext4", "ext4", [100.0] * 6) + runs("xfs", "xfs", [120.0] * 6)
    rows += [r | {"aa_twin_of": "ext4", "target_label": "ext4-twin"} for r in runs("ext4-twin", "ext4", [110.0] * 6)]
    c = claim(b={"fs": "xfs"}, expect="greater", seed_value=1.45)
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), c)
    assert out.height == 1 and out["b"][0] == "xfs"  # ext4-twin is no side
    row = out.row(0, named=True)
    assert (row["lo"], row["hi"]) == pytest.approx((120 / 110, 1.2))
    assert row["estimate"] == pytest.approx(math.sqrt(1.2 * 120 / 110))
    assert row["verdict"] == R.SMALLER  # above 1 against both references, below the seed's 1.45
    assert (row["aa_lo"], row["aa_hi"]) == pytest.approx((1.1, 1.1))  # the A/A control itself, shown
    assert "against A's A/A twin" in row["unchecked"]
    # a twin that reads above B: B differs from A but not from A's identical twin, so no direction
    rows = runs("ext4", "ext4", [100.0] * 6) + runs("xfs", "xfs", [120.0] * 6)
    rows += [r | {"aa_twin_of": "ext4", "target_label": "ext4-twin"} for r in runs("ext4-twin", "ext4", [130.0] * 6)]
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), c)
    # [120/130, 1.2] = [0.92, 1.2] covers 1 and stops short of the seed's 1.45: no direction, the seed's size ruled out
    assert out["verdict"][0] == R.SMALLER_ANY
    plain = claim(b={"fs": "xfs"}, expect="greater")  # no size from the seed: nothing to rule out
    assert evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), plain)["verdict"][0] == R.UNRESOLVED


def test_a_claims_primary_cells_share_its_error_rate() -> None:
    """Two primary cells (client counts 4 and 8, both the seed's condition): each interval at 1 - 0.05 / 2.
    With 6+6 runs the exact 97.5 % interval drops the most extreme pairwise ratio one further than the 95 %
    one: B = 1.1 A exactly, plus a small spread, covers 1 at 97.5 % and not at 95 % (checked by hand below)."""
    a = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]
    b = [101.0, 106.0, 107.0, 108.0, 109.0, 110.0]
    rows = runs("ext4", "ext4", a) + runs("xfs", "xfs", b)
    rows += [r | {"clients": 4, "run_id": r["run_id"] + "c4"} for r in runs("ext4", "ext4", a) + runs("xfs", "xfs", b)]
    # the 36 pairwise ratios b_j / a_i sorted: the exact 95 % interval of 6+6 drops the 5 lowest (U critical
    # value 5), the 97.5 % one the 3 lowest (critical value 3). The lowest are 101/105, 101/104, 101/103,
    # 101/102, 101/101 = 1.0 and then 106/105 > 1: the 95 % lower end is 106/105 > 1, the 97.5 % one 101/102 < 1
    one = claim(b={"fs": "xfs"}, match={"tool": "pgbench", "kinds": ["tpcb-like"], "clients": 8})
    alone = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), one).row(0, named=True)
    assert alone["lo"] == pytest.approx(106 / 105) and alone["verdict"] == R.DIRECTION_ONLY
    both = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), claim(b={"fs": "xfs"}))
    assert both.height == 2 and set(both["role"]) == {"primary"}
    assert both["lo"].to_list() == pytest.approx([101 / 102] * 2) and set(both["verdict"]) == {R.UNRESOLVED}
    assert "Bonferroni over the claim's 2 primary cells" in both["test"][0]


# ------------------------------------------------------------------ preconditions, measured


def cell(**cols) -> pl.DataFrame:
    return pl.DataFrame({k: v for k, v in cols.items()})


def test_a_cell_off_the_seeds_regime_says_what_was_measured() -> None:
    a = cell(device_busy=[0.10, 0.12, 0.14], steady=[False, False, True], steady_n=[118] * 3,
             randread_qd1_iops=[12000.0] * 3, snapshots_alive=[2, 2, 2], checkpoints=[0, 0, 1])  # fmt: skip
    b = cell(device_busy=[0.80, 0.85, 0.90], steady=[True, True, True], steady_n=[118] * 3,
             randread_qd1_iops=[11000.0] * 3, snapshots_alive=[2, 2, 2], checkpoints=[0, 0, 0])  # fmt: skip
    # 2 of 3 flagged where a stationary run of 118 samples is flagged with rate r: P(X >= 2) = 3r^2(1-r) + r^3
    r = mser_null_rate(118)
    p2 = 3 * r**2 * (1 - r) + r**3
    miss, unchecked = regime.check(["io_bound", "steady", "magnetic_device", "snapshots_alive", "checkpoints"], a, b)
    assert unchecked == []
    assert miss == [
        "not I/O-bound: the data device busy 12% of side A's run (median; the lab calls >= 50% I/O-bound)",
        "not steady: 2 of 3 runs of side A found no steady state (MSER-5), where stationary runs of their length "
        f"and autocorrelation (118 samples) are flagged {r:.0%} of the time (Poisson-binomial p = {p2:.3f})",
        "not a magnetic-class device: the data device does 12,000 random 8 kB reads/s at QD1 (device baseline; a "
        "magnetic disk does 100-200)",
        "at most 2 snapshots alive at once (the talk kept 3 alive)",
        "side A's runs span no checkpoint (median 0 started or completed per run)",
    ]
    # the same cell with the sides swapped: B's idle device and unsteady runs are the response under test,
    # and do not silence a reference side that was I/O-bound and steady
    assert regime.check(["io_bound", "steady"], b, a)[0] == []
    slow = cell(device_busy=[0.9], randread_qd1_iops=[150.0], file_bytes=[16384])
    assert regime.check(["io_bound", "magnetic_device"], slow, slow) == ([], [])
    # one side on a throttled (magnetic-class) device, the other on the real one: not the seed's set-up
    fast = cell(device_busy=[0.9], randread_qd1_iops=[12000.0])
    assert regime.check(["magnetic_device"], slow, fast)[0] == [
        "not a magnetic-class device: the data device does 12,000 random 8 kB reads/s at QD1 (device baseline; a "
        "magnetic disk does 100-200)"
    ]
    assert regime.check(["files_2mb"], slow, slow)[0] == ["files of 16 KiB were deleted, the seed's were 2 MB"]
    none = cell(value=[1.0])
    # a precondition that cannot be checked at all is not taken as met: no verdict, and the reason why
    assert regime.check(["io_bound"], none, none) == (
        ["I/O-bound could not be checked: the data device's diskstats were not sampled"],
        [],
    )
    assert regime.check(["magnetic_device"], none, none) == (
        ["the device class could not be checked: no device baseline (the study ran none)"],
        [],
    )


def test_reads_held_at_their_own_throttle_budget_cannot_be_starved_by_writes() -> None:
    """Seed 004's crossover: checkpoint writes starve the reads of one disk. A blkio throttle gives reads
    and writes separate budgets; reads running at theirs measure reads per transaction, not contention."""
    limits = {"read_iops": 150, "write_iops": 150, "read_bps": 100_000_000, "write_bps": 100_000_000}
    assert regime.read_budget(rec_of({"cgroup": {"limits": limits}})) == 150.0
    assert regime.read_budget(rec_of({"cgroup": {"limits": {"read_iops": 150}}})) is None  # one direction: no budgets
    assert regime.read_budget(rec_of({})) is None  # a real device
    pinned = cell(
        reads_per_s=[150.2, 149.8, 151.0],
        read_budget_share=[150.2 / 150, 149.8 / 150, 151.0 / 150],
        read_iops_budget=[150.0, 150.0, 150.0],  # the budget as run.json recorded it, quoted as such
    )
    assert regime.check(["reads_compete"], pinned, pinned)[0] == [
        "reads and writes do not compete for the data device: its throttle gives them separate budgets "
        "(blkio, cgroup v1), and side A's reads ran at 100% of theirs (median 150 reads/s of 150 allowed), so "
        "checkpoint writes could not take time from them as on the seed's one disk"
    ]
    # reads below their budget (something else held them), or a real disk: the mechanism can act
    below = cell(reads_per_s=[60.0, 70.0, 65.0], read_budget_share=[0.4, 0.47, 0.43])
    real = cell(reads_per_s=[900.0], read_budget_share=[None])
    assert regime.check(["reads_compete"], below, below) == ([], [])
    assert regime.check(["reads_compete"], real, real) == ([], [])
    # B's reads at their budget are B's response, not the condition: only the reference side A decides
    assert regime.check(["reads_compete"], below, pinned) == ([], [])


def test_a_small_data_set_read_from_the_device_is_not_one_held_in_memory() -> None:
    """Seed 004's "below the memory threshold" means the data set in memory: runs from dropped caches that
    read a block or two per transaction measure a cache filling, whatever the data set's size."""
    cold = cell(reads_per_tx=[1.8, 2.0, 2.2])
    warm = cell(reads_per_tx=[0.0, 0.02, 0.01])
    assert regime.check(["from_memory"], warm, cold) == ([], [])  # B's reads are its response, not the condition
    assert regime.check(["from_memory"], cold, warm)[0] == [
        "the data set was not served from memory: side A's data device read 2.0 blocks per transaction (median), "
        "so the runs measured a cache filling from the device, not a data set held in memory"
    ]
    assert regime.check(["from_memory"], warm, warm) == ([], [])
    assert "could not be checked" in regime.check(["from_memory"], cell(value=[1.0]), warm)[0][0]


def test_mser_flags_stationary_short_runs_often_so_the_cell_rule_allows_for_it() -> None:
    # an independent simulation of the same definition (other seed): stationary series, MSER-5's verdict
    rng = np.random.default_rng(1)
    for n, tol in ((18, 0.04), (40, 0.03), (118, 0.01)):
        mine = np.mean([not mser_truncation(rng.normal(100, 10, n))[1] for _ in range(3000)])
        assert mser_null_rate(n) == pytest.approx(mine, abs=tol)
    assert mser_null_rate(10) == 1.0  # two batches: MSER-5 can never call it steady
    # 7 of 12 runs of 18 samples flagged is what stationary runs do (r ~ 0.46): steady, no miss
    flagged = cell(steady=[False] * 7 + [True] * 5, steady_n=[18] * 12)
    assert regime.check(["steady"], flagged, flagged)[0] == []
    # 4 of 4 flagged: P = r^4 < 0.05: not steady
    warm = cell(steady=[False] * 4, steady_n=[18] * 4)
    assert regime.check(["steady"], warm, flagged)[0][0].startswith("not steady: 4 of 4 runs of side A")
    assert regime.check(["steady"], flagged, warm)[0] == []  # B unsettled is the finding, not a miss
    short = cell(steady=[False] * 4, steady_n=[12] * 4)
    assert "too few for MSER-5" in regime.check(["steady"], short, short)[0][0]


def test_a_cell_that_misses_a_precondition_gets_no_verdict() -> None:
    rows = runs("ext4", "ext4", [100.0, 101, 102, 103, 104, 105], device_busy=0.12)
    rows += runs("btrfs", "btrfs", [200.0, 201, 202, 203, 204, 205], device_busy=0.10)
    c = claim(seed_value=2.0, preconditions=("io_bound",))
    row = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), c).row(0, named=True)
    assert row["verdict"] == R.NOT_IN_REGIME and row["direction"] is None
    assert row["verdict_text"] == (
        "not tested in the seed's regime: not I/O-bound: the data device busy 12% of side A's run (median; the "
        "lab calls >= 50% I/O-bound)"
    )


def test_device_measures_from_diskstats_samples_by_hand() -> None:
    # three 1-s samples: io_ms +600 then +700 over 2 s -> busy 0.65; 40 reads in 200 ms -> 5 ms; per-second
    # awaits 100/10 = 10 and 100/30 = 3.33 -> their variance; 2,000 sectors written -> 1,024,000 bytes
    s = pl.DataFrame({
        "run_id": ["r"] * 3, "epoch_s": [10.0, 11.0, 12.0], "reads_completed": [0, 10, 40],
        "read_ms": [0, 100, 200], "io_ms": [1000, 1600, 2300], "sectors_written": [0, 500, 2000],
    })  # fmt: skip
    m = regime.device_measures(s).row(0, named=True)
    assert m["device_busy"] == pytest.approx(1300 / 2000)
    assert m["read_await_ms"] == pytest.approx(200 / 40)
    assert m["read_await_var"] == pytest.approx(np.var([10.0, 100 / 30], ddof=1))
    assert m["written_bytes"] == 2000 * 512


def test_snapshots_alive_at_once_from_the_schedule() -> None:
    # one every 10 s kept 30 s over 25 s: creates at 0, 10, 20, deletes at 30...: three alive from 20 s on;
    # over a 15 s run (creates at 0 and 10 only) two at most, as fs-compare's runs before 2026-11-27
    ev = pl.DataFrame({"run_id": ["long"] * 4 + ["short"] * 2, "epoch_s": [0.0, 10.0, 20.0, 30.0, 0.0, 10.0],
                       "action": ["create", "create", "create", "delete", "create", "create"]})  # fmt: skip
    got = dict(regime.alive_at_once(ev).iter_rows())
    assert got == {"long": 3, "short": 2}


def test_within_run_variance_is_sigma_squared_of_per_second_throughput() -> None:
    tps = [0.0, 900.0, 1000.0, 1100.0, 1000.0, 950.0]  # the first second is the warm-up, trimmed
    series = pl.DataFrame({"run_id": ["r"] * 6, "t_s": [1.0, 2, 3, 4, 5, 6], "tps": tps,
                           "latency_ms": [9.0, 4, 4, 5, 4, 6]})  # fmt: skip
    row = facts.within_run(series, trim_s=1.0).row(0, named=True)
    kept = np.array(tps[1:])
    assert row["variance"] == pytest.approx(np.var(kept, ddof=1))
    assert row["cv"] == pytest.approx(np.std(kept, ddof=1) / kept.mean())


def test_run_measures_from_a_study_database_with_the_real_schema(tmp_path) -> None:
    """Synthetic rows in the lab's own schema: a run's run.json and its data device's diskstats samples."""
    from tests.labdb import new_db

    rec = {
        "target": "ext4", "mount": {"device": "/dev/loop3"},
        "postgres_before": {"database_stats": {"xact_commit": 100, "blks_hit": 1000, "blks_read": 500},
                            "bgwriter": {"checkpoints_timed": 1, "checkpoints_req": 0}},
        "postgres": {"database_stats": {"xact_commit": 2100, "blks_hit": 10000, "blks_read": 1500},
                     "bgwriter": {"checkpoints_timed": 2, "checkpoints_req": 2}},
    }  # fmt: skip
    db = tmp_path / "s.duckdb"
    con = new_db(db)
    con.execute(
        "INSERT INTO runs (run_id, study, status, target, plan_index, run_json) VALUES ('r1', 's', 'ok', 'ext4', 0, ?)",
        [json.dumps(rec)],
    )
    for t, reads, read_ms, io_ms, sectors in ((0, 0, 0, 0, 0), (2, 100, 300, 1500, 8000)):
        for dev in ("loop3", "loop4"):  # loop4 is another target's device: not this run's
            con.execute(
                "INSERT INTO diskstats (run_id, ts, device, reads_completed, read_ms, io_ms, sectors_written) "
                "VALUES ('r1', to_timestamp(?), ?, ?, ?, ?, ?)",
                [1000.0 + t, dev, reads * (1 if dev == "loop3" else 9), read_ms, io_ms, sectors],
            )
    con.close()
    m = regime.run_measures(str(db), "s", 0.0, pl.DataFrame()).row(0, named=True)
    assert m["device_busy"] == pytest.approx(1500 / 2000)
    assert m["read_await_ms"] == pytest.approx(300 / 100)
    assert m["written_bytes"] == 8000 * 512 and m["commits"] == 2000
    assert m["hit_ratio"] == pytest.approx(9000 / (9000 + 1000)) and m["checkpoints"] == 3


def test_run_measures_of_a_recorded_study_match_its_raw_diskstats(tmp_path) -> None:
    from tests.recorded import ingest

    db = tmp_path / "dirty-bytes.duckdb"
    ingest(STUDIES / "dirty-bytes", db)
    got = {r["run_id"]: r for r in facts.run_facts(db, "dirty-bytes").iter_rows(named=True)}
    for d in sorted((STUDIES / "dirty-bytes").glob("ext4.*")):
        rec = json.loads((d / "run.json").read_text())
        dev = rec["mount"]["device"].rsplit("/", 1)[-1]
        samples, ts = [], None
        for line in (d / "diskstats.log").read_text().splitlines():
            if line.startswith("@"):
                ts = float(line.split()[1])
            elif line.split()[2:3] == [dev]:
                p = line.split()
                samples.append((ts, int(p[3]), int(p[6]), int(p[9]), int(p[12])))  # reads, read_ms, sectors, io_ms
        (t0, r0, rm0, s0, io0), (t1, r1, rm1, s1, io1) = samples[0], samples[-1]
        commits = (
            rec["postgres"]["database_stats"]["xact_commit"] - rec["postgres_before"]["database_stats"]["xact_commit"]
        )
        row = got[d.name]
        assert row["device_busy"] == pytest.approx((io1 - io0) / (1000 * (t1 - t0)), rel=1e-6)
        assert row["read_await_ms"] == pytest.approx((rm1 - rm0) / (r1 - r0), rel=1e-6)
        assert row["written_per_tx"] == pytest.approx((s1 - s0) * 512 / commits, rel=1e-6)
        assert row["reads_per_tx"] == pytest.approx((r1 - r0) / (t1 - t0) / row["value"], rel=1e-6)


# ------------------------------------------------------------------ the crash check and the rank-test floor


def test_durability_claims_read_the_crash_check() -> None:
    rows = pl.DataFrame({
        "run_id": ["a", "b", "c", "d"], "target": ["ext4"] * 4, "crash": ["power-loss"] * 3 + ["kill"],
        "synchronous_commit": ["off", "off", "on", "on"], "lost_ids": [3, 5, 0, 0],
        "lost_within_window": [3, 5, 0, 0], "violations": [0, 0, 0, 0],
    })  # fmt: skip
    async_claim = claim(
        quantity="durability", expect=None, b={"synchronous_commit": "off"}, match={"tool": "durability"}
    )
    out = evaluate.durability(async_claim, rows).row(0, named=True)
    assert out["verdict"] == R.HOLDS and out["role"] == "primary"
    assert out["verdict_text"] == (
        "holds: 2 crashes lost 8 committed transactions, each committed within the documented window "
        "(3 x wal_writer_delay) before the crash; a stack that breaks it in more than 78 % of crashes is ruled out "
        "at 95 %"
    )
    bad = rows.with_columns(pl.Series("violations", [0, 1, 0, 0]))
    assert evaluate.durability(async_claim, bad)["verdict"][0] == R.VIOLATED
    sync_claim = claim(quantity="durability", expect=None, b={"synchronous_commit": "on"}, match={"tool": "durability"})
    by = {r["cell"]: r for r in evaluate.durability(sync_claim, rows).iter_rows(named=True)}
    assert by["power-loss, synchronous_commit=on"]["role"] == "primary"
    assert by["kill, synchronous_commit=on"]["role"] == "context"
    assert by["power-loss, synchronous_commit=on"]["verdict_text"] == (
        "holds: 1 crash, no committed transaction lost; a stack that breaks it in more than 95 % of crashes is "
        "ruled out at 95 %"
    )


@pytest.mark.parametrize(("n", "bound"), [(3, 0.6316), (10, 0.2589), (59, 0.0495)])
def test_a_clean_crash_check_rules_out_what_its_crashes_can(n: int, bound: float) -> None:
    # no event in n trials: P(none | p) = (1 - p)^n = 0.05 at the bound (the "rule of three": about 3 / n)
    assert evaluate.crash_bound(n) == pytest.approx(bound, abs=1e-4)
    assert (1 - evaluate.crash_bound(n)) ** n == pytest.approx(0.05)


def test_three_runs_against_three_cannot_reach_p_005() -> None:
    c = next(c for c in claims.claims() if c.id == "s003-three-runs-cannot-reach-p05")
    row = evaluate.rank_test_floor(c).row(0, named=True)
    assert row["estimate"] == pytest.approx(2 / math.comb(6, 3)) and row["verdict"] == R.HOLDS


# ------------------------------------------------------------------ the claims file: nothing silently dropped


def write(tmp_path: Path, **changes) -> Path:
    item = {
        "id": "x", "seed": "004", "claim": "c", "where": "-", "seed_number": "-", "quantity": "ratio",
        "a": {"fs": "ext4"}, "b": {"fs": "ext4"}, "workload": "-", "expect": "greater",
        "match": {"tool": "pgbench"}, "no_preconditions_why": "w",
    }  # fmt: skip
    item.update(changes)
    p = tmp_path / "claims.yaml"
    p.write_text(json.dumps([item]))
    return p


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"b": {"fs": "ext4", "mount_options": ["data=writeback"]}}, "side b: keys mount_options are not facts"),
        ({"threshold": 2.0}, "unknown keys threshold"),
        ({"expect": "same"}, "needs its band .* and band_why"),
        ({"expect": "same", "band": [1.1, 1.5], "band_why": "w"}, "needs its band .* around 1"),
        ({"size": "hugely"}, "size 'hugely' is not one of"),
        (
            {"expect": "same", "band": 0.1, "band_why": "w", "size": "much"},
            "size .* belongs to a claim that B is greater",
        ),
        ({"seed_value": [2.0, 1.5]}, "a range \\[lo, hi\\] with lo < hi"),
        ({"seed_value": [0.8, 1.5]}, "contradicts expect: greater"),
        ({"lab_own": " "}, "lab_own says why"),
        ({"seed_value": 0.5}, "seed_value 0.5 contradicts expect: greater"),
        ({"match": {}}, "needs match, or figure"),
        ({"preconditions": ["hot"]}, "preconditions: unknown hot"),
        ({"b": {"fs": "ext4", "device": "Intel P4610"}}, "side b: keys device"),
        ({"no_preconditions_why": None}, "name its preconditions, or no_preconditions_why"),
        ({"preconditions": ["steady"]}, "names preconditions and no_preconditions_why"),
        ({"primary": {"regime": ["fits_ram", "exceeds_memory"]}}, "primary: unknown regime exceeds_memory"),
        ({"beyond_here": " "}, "beyond_here says why"),
        ({"beyond_here": "w", "reproducible_here": False, "why_not": "w"}, "not reproducible here at all says why_not"),
    ],
)
def test_a_claim_the_lab_cannot_read_exactly_is_an_error_naming_it(tmp_path, changes, message) -> None:
    path = write(tmp_path, **changes)
    with pytest.raises(LabError, match=message) as err:
        claims.claims(path)
    assert str(path) in str(err.value) and "'x'" in str(err.value)


def test_the_seeds_own_hardware_is_allowed_only_where_nothing_is_matched(tmp_path) -> None:
    path = write(tmp_path, b={"device": "Intel P4610"}, reproducible_here=False, why_not="the drive", match={})
    assert claims.claims(path)[0].b == {"device": "Intel P4610"}


def test_a_cell_the_seed_never_ran_is_context_only() -> None:
    """fsync=off runs inside a claim about the seed's fsync-on runs: shown, never its verdict."""
    rows = runs("ext4", "ext4", [100.0, 101, 102, 103, 104], fsync="on")
    rows += runs("btrfs", "btrfs", [150.0, 151, 152, 153, 154], fsync="on")
    rows += runs("ext4", "ext4", [100.0, 101, 102, 103, 104], fsync="off")
    rows += runs("btrfs", "btrfs", [60.0, 61, 62, 63, 64], fsync="off")
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), claim())
    role = {r["cell"]: (r["role"], r["verdict"]) for r in out.iter_rows(named=True)}
    assert role == {
        "tpcb-like, c=8, exceeds ram": ("primary", R.DIRECTION_ONLY),
        "tpcb-like, c=8, exceeds ram, fsync=off": ("context", R.OPPOSITE),
    }
    assert evaluate.summary(out)["overall"].to_list() == [R.DIRECTION_ONLY]


def test_read_wait_in_checkpoint_seconds_against_the_others_by_hand() -> None:
    # per second: 10 reads in 10 ms twice (no checkpoint writes), then 20 reads in 80 ms twice while
    # buffers_checkpoint rises: 160 ms / 40 reads = 4 ms against 20 ms / 20 reads = 1 ms
    disk = pl.DataFrame({
        "run_id": ["r"] * 5, "epoch_s": [10.0, 11.0, 12.0, 13.0, 14.0], "reads_completed": [0, 10, 20, 40, 60],
        "read_ms": [0, 10, 20, 100, 180],
    })  # fmt: skip
    pgstat = pl.DataFrame({"run_id": ["r"] * 4, "epoch_s": [11.02, 12.01, 13.0, 13.99],
                           "buffers_checkpoint_delta": [0, 0, 50, 30]})  # fmt: skip
    row = regime.checkpoint_read_wait(disk, pgstat).row(0, named=True)
    assert (row["read_await_ckpt"], row["read_await_quiet"]) == (pytest.approx(4.0), pytest.approx(1.0))
    # the same seconds from the server log, where the checkpoint outlasted the run (no end, no counter rise):
    # PostgreSQL 15 counts a checkpoint once it completes, so pg_stat alone sees nothing
    flat = pgstat.with_columns(pl.lit(0).alias("buffers_checkpoint_delta"))
    quiet = regime.checkpoint_read_wait(disk, flat).row(0, named=True)
    assert quiet["read_await_ckpt"] is None and quiet["read_await_quiet"] == pytest.approx(180 / 60)
    log = pl.DataFrame({"run_id": ["r"], "start_s": [12.5], "end_s": [None]}, schema_overrides={"end_s": pl.Float64})
    row = regime.checkpoint_read_wait(disk, flat, log).row(0, named=True)
    assert (row["read_await_ckpt"], row["read_await_quiet"]) == (pytest.approx(4.0), pytest.approx(1.0))
    # the claim sets each run's checkpoint seconds (side B) against its other seconds (side A)
    rows = [
        r | {"read_await_ckpt": 4.0 + i / 10, "read_await_quiet": 1.0 + i / 10}
        for i, r in enumerate(runs("ext4", "ext4", [100.0] * 5))
    ]
    c = next(c for c in claims.claims() if c.id == "s004-ext4-read-wait-rises-at-checkpoints")
    out = evaluate.evaluate(
        pl.DataFrame(rows, infer_schema_length=None), c.__class__(**{**c.__dict__, "preconditions": ()})
    )
    assert out.height == 1 and out["verdict"][0] == R.DIRECTION_ONLY and out["lo"][0] > 1
    # a checkpoint writing through every second of every run leaves no other seconds: the primary cell says so
    # (btrfs-compression, 2026-11-29: 20 s runs with max_wal_size 48 MB), where it had vanished from the table
    busy = [r | {"read_await_ckpt": 4.0, "read_await_quiet": None} for r in runs("ext4", "ext4", [100.0] * 5)]
    out = evaluate.evaluate(
        pl.DataFrame(busy, infer_schema_length=None), c.__class__(**{**c.__dict__, "preconditions": ()})
    )
    row = out.row(0, named=True)
    assert out.height == 1 and row["role"] == "primary" and row["verdict"] == R.UNRESOLVED and row["n_a"] == 0
    assert row["verdict_text"].startswith("not resolved: none of side A's 5 runs here measured it (it needs seconds")


def test_a_throughput_claim_without_the_steady_precondition_notes_an_unsteady_side() -> None:
    # side B's four runs of 18 samples all flagged: more than stationary runs would be (P = r^4 < 0.05)
    rows = runs("ext4", "ext4", [100.0, 101, 102, 103], steady=True, steady_n=18)
    rows += runs("btrfs", "btrfs", [200.0, 201, 202, 203], steady=False, steady_n=18)
    row = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), claim(seed_value=2.0)).row(0, named=True)
    assert row["verdict"] == R.HOLDS  # the claim does not need steady runs: a verdict, with the note beside it
    assert row["unchecked"].startswith("not steady: 4 of 4 runs of side B")
    short = runs("ext4", "ext4", [100.0, 101, 102, 103], steady=False, steady_n=6)
    short += runs("btrfs", "btrfs", [200.0, 201, 202, 203], steady=True, steady_n=18)
    row = evaluate.evaluate(pl.DataFrame(short, infer_schema_length=None), claim(seed_value=2.0)).row(0, named=True)
    assert row["verdict"] == R.HOLDS
    assert row["unchecked"] == (
        "the steady state of side A could not be checked: 6 samples per run, too few for MSER-5 ever to find "
        "a steady state (15 at least)"
    )


# ------------------------------------------------------------------ the steady-state null, autocorrelated


def ar1(rng: np.random.Generator, phi: float, n: int) -> np.ndarray:
    """One stationary AR(1) series, written here independently of the code under test."""
    x = np.empty(n)
    x[0] = rng.standard_normal() / math.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + rng.standard_normal()
    return x


def test_poisson_binomial_by_hand_and_by_enumeration() -> None:
    from itertools import product

    from pgfslab.analysis.stats import poisson_binomial_sf

    assert poisson_binomial_sf(1, [0.5, 0.5]) == pytest.approx(0.75)
    # (0.2, 0.5, 0.9): P(X >= 2) = .2*.5*.1 + .2*.5*.9 + .8*.5*.9 + .2*.5*.9 = 0.01 + 0.09 + 0.36 + 0.09 = 0.55
    assert poisson_binomial_sf(2, [0.2, 0.5, 0.9]) == pytest.approx(0.55)
    p = [0.1, 0.45, 0.3, 0.8, 0.6]
    for k in range(6):
        brute = sum(
            math.prod(q if hit else 1 - q for q, hit in zip(p, hits))
            for hits in product([0, 1], repeat=5)
            if sum(hits) >= k
        )
        assert poisson_binomial_sf(k, p) == pytest.approx(brute)


def test_the_null_rate_of_autocorrelated_series_against_an_independent_simulation() -> None:
    rng = np.random.default_rng(11)
    mine = np.mean([not mser_truncation(ar1(rng, 0.8, 20))[1] for _ in range(3000)])
    assert mser_null_rate(20, 0.8) == pytest.approx(mine, abs=0.04)
    assert mser_null_rate(20, 0.8) > mser_null_rate(20) + 0.03  # autocorrelated runs are flagged more often


def test_phi_from_differences_is_not_raised_by_a_warm_up() -> None:
    from pgfslab.analysis.stats import ar1_phi

    rng = np.random.default_rng(5)
    for phi in (0.0, 0.5, 0.8):
        est = np.median([ar1_phi(ar1(rng, phi, 60)) for _ in range(400)])
        assert est == pytest.approx(phi, abs=0.12)
    # a warm-up ramp over the first 10 of 40 seconds, 6 noise SDs high: the plain lag-1 autocorrelation of the
    # series rises to ~0.8, the estimate from differences stays near the noise's own 0
    ramp = np.r_[np.linspace(-6, 0, 10), np.zeros(30)]
    warm = [ar1_phi(ar1(rng, 0.0, 40) + ramp) for _ in range(400)]
    plain = [np.corrcoef(x[1:], x[:-1])[0, 1] for x in (ar1(rng, 0.0, 40) + ramp for _ in range(400))]
    assert np.median(warm) < 0.2 < 0.6 < np.median(plain)


def test_autocorrelated_runs_are_not_called_unsteady_for_what_stationary_ones_do() -> None:
    # 4 of 4 runs of 17 samples flagged: against independent noise (rate r0) p = r0^4 < 0.05; against AR(1)
    # at 0.8 (rate r1, the runs' own coefficient) p = r1^4 > 0.05
    r0, r1 = mser_null_rate(17), mser_null_rate(17, 0.8)
    tail = lambda r: r**4  # noqa: E731
    assert tail(r0) < 0.05 < tail(r1)
    side = cell(steady=[False] * 4, steady_n=[17] * 4, steady_phi=[0.8] * 4)
    t = regime.steady_test("A", side)
    assert t.p == pytest.approx(tail(r1)) and regime.steady_check("A", side) == []
    iid = side.with_columns(pl.lit(0.0).alias("steady_phi"))
    assert regime.steady_test("A", iid).p == pytest.approx(tail(r0))
    assert regime.steady_check("A", iid)[0].startswith("not steady: 4 of 4 runs of side A")


def test_a_claims_cells_share_the_steady_checks_error_rate() -> None:
    """Holm over the claim's cells: two cells whose reference sides have the same p between 0.025 and 0.05; one
    cell alone is flagged at 0.05, two must pass 0.05 / 2 at Holm's first step, and neither does."""
    r = mser_null_rate(18)
    p = r**4  # 4 of 4 runs flagged
    assert 0.025 < p < 0.05
    rows = runs("ext4", "ext4", [100.0, 101, 102, 103], steady=False, steady_n=18)
    rows += runs("btrfs", "btrfs", [200.0, 201, 202, 203], steady=True, steady_n=18)
    one = pl.DataFrame(rows, infer_schema_length=None)
    c = claim(seed_value=2.0, preconditions=("steady",))
    assert evaluate.evaluate(one, c)["verdict"][0] == R.NOT_IN_REGIME
    two = pl.concat([one, one.with_columns(pl.lit(4, pl.Int64).alias("clients"), pl.col("run_id") + "c4")])
    out = evaluate.evaluate(two, c)
    assert out.height == 2 and R.NOT_IN_REGIME not in out["verdict"].to_list()


# ------------------------------------------------------------------ the seed's size as it said it


def test_the_seeds_words_of_size_and_ranges_as_ranges_of_b_over_a() -> None:
    # one rule: small words reach an effect factor of 1.25, large words start there; for a claim that B is
    # less than A the factor is A/B, so "a bit slower" is B/A in [1/1.25, 1) = [0.8, 1)
    assert claim(expect="less", size="a bit").seed_range == pytest.approx((0.8, 1.0))
    assert claim(expect="greater", size="much").seed_range == (1.25, math.inf)
    assert claim(expect="less", size="substantially").seed_range == (0.0, 0.8)
    assert claim(expect="greater", seed_value=[52.7, 93.4], size="much").seed_range == (52.7, 93.4)  # a number wins
    assert claim(expect="greater").seed_range is None
    assert claim(expect="same", band=[0.67, 1.5], band_why="w").band_range == (0.67, 1.5)
    assert claim(expect="same", band=0.1, band_why="w").band_range == pytest.approx((0.9, 1.1))
    # zfs at 0.44 [0.38, 0.53] against the talk's "a bit slower": far more than a bit
    v = judge(ci(0.44, 0.38, 0.53), "less", claim(expect="less", size="a bit").seed_range)
    assert v.category == R.LARGER and "against the seed's 0.80–1.00" in v.text


def test_a_crash_check_of_the_labs_own_stack_is_never_the_seeds_verdict() -> None:
    from pgfslab.analysis.verdicts import table

    c = claim(id="own", quantity="durability", expect=None, match={"tool": "durability"}, lab_own="another stack",
              b={"synchronous_commit": "on"}, no_preconditions_why="w")  # fmt: skip
    crashes = pl.DataFrame({"target": ["ext4"] * 2, "crash": ["power-loss"] * 2, "synchronous_commit": ["on"] * 2,
                            "violations": [0, 0], "lost_ids": [0, 0], "lost_within_window": [0, 0]})  # fmt: skip
    res = evaluate.evaluate_all(pl.DataFrame(), [c], durability_runs=crashes)
    assert res["role"].to_list() == [evaluate.OWN_ROLE] and res["verdict"][0] == R.HOLDS
    assert table.claim_status(res, [c])["status"].to_list() == [table.OWN_STATUS]
    assert table.status_counts(res, [c]).height == 0  # not counted among the seed's verdicts
    assert table.findings_table(res, [c])["here (the seed's own condition)"][0].startswith(
        "the lab's own finding, on its own stack: holds"
    )


def test_on_the_emulated_disk_reads_compete_where_writes_held_its_one_head() -> None:
    # the daemon's counters: writes held the head 1.27 s of a 20.3 s window (a real check run's numbers)
    rec = {"disk": {"counters": {"measured": {"write_busy_ns": 1_274_633_468, "uptime_ns": 20_341_953_560}}}}
    assert regime.write_busy_share(rec_of(rec)) == pytest.approx(1_274_633_468 / 20_341_953_560)
    assert (
        regime.write_busy_share(rec_of({"cgroup": {"limits": {"read_iops": 150}}})) is None
    )  # a throttle, not the disk
    busy = cell(write_busy_share=[0.20, 0.30, 0.25], device_profile=["hdd"] * 3)
    quiet = cell(write_busy_share=[0.01, 0.02, 0.03], device_profile=["hdd"] * 3)
    assert regime.check(["reads_compete"], busy, quiet) == (
        [],
        ["reads competed with writes for the emulated disk's one head: writes held it A 25%, B 2% of the runs "
         "(median, the daemon's counters)"],
    )  # fmt: skip
    assert regime.check(["reads_compete"], quiet, busy)[0] == [
        "reads had the emulated disk's one head to themselves: writes held it 2.0% of side A's runs (median; the "
        "lab asks >= 5% for reads and writes to compete)"
    ]
    # its diskstats are the emulated disk's own: a read-await claim is in its regime there, not under a throttle
    assert regime.throttled_await("read_await_variance", busy, busy) == []
    throttle = cell(write_busy_share=[None], device_profile=["hdd-throttle"])
    assert "hdd-throttle" in regime.throttled_await("read_await_variance", throttle, throttle)[0]


def test_commit_delay_is_tested_only_where_a_flush_is_slow_against_it() -> None:
    """Group commit pays where the delay is about half a flush (PostgreSQL's documentation); sync-commit's 1 ms
    against ext4's 150 us flush read "opposite direction" where the mechanism could not act. The check reads
    the setting and the device baseline (conditions), never the throughput."""
    a = cell(commit_delay=["0"] * 3, fdatasync_p50_us=[150.0] * 3, value=[1.0, 2.0, 3.0])
    ok = cell(commit_delay=["50"] * 3, fdatasync_p50_us=[150.0] * 3, value=[9.0] * 3)
    assert regime.check(["slow_flush"], a, ok) == ([], [])
    long = ok.with_columns(pl.lit("1000").alias("commit_delay"))
    assert regime.check(["slow_flush"], a, long)[0] == [
        "commit_delay 1,000 µs is more than half the WAL device's flush (150 µs, median fdatasync of an 8 kB write "
        "at QD1, device baseline): PostgreSQL's documentation sets it at about half a flush; a longer delay holds "
        "each commit longer than the flush it would share"
    ]
    # a slow device (an emulated disk's 8 ms flush) gives a 1 ms delay room to gather commits
    assert regime.check(["slow_flush"], a.with_columns(pl.lit(8000.0).alias("fdatasync_p50_us")),
                        long.with_columns(pl.lit(8000.0).alias("fdatasync_p50_us"))) == ([], [])  # fmt: skip
    assert regime.check(["slow_flush"], a.drop("fdatasync_p50_us"), long.drop("fdatasync_p50_us"))[0] == [
        "the WAL device's flush time could not be checked: no device baseline (the study ran none)"
    ]
