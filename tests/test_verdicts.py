"""The seeds' claims and their verdicts (pgfslab.analysis.verdicts): the ratio interval, the verdict rules,
which runs a claim compares, and the claims file itself."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pgfslab.analysis.verdicts import claims, evaluate, facts
from pgfslab.analysis.verdicts.claims import Claim
from pgfslab.analysis.verdicts.ratio import RatioCI, ratio_ci, verdict


def test_ratio_interval_is_the_order_statistics_of_pairwise_ratios():
    # A = 100 x (1..5), B = 2 x A: every pairwise log-ratio is log(2 j / i); 25 of them. For 5 vs 5 the exact
    # two-sided 5 % critical U is 2, so the interval is the 3rd smallest and 3rd largest pairwise ratio.
    a = [100.0, 200.0, 300.0, 400.0, 500.0]
    b = [2 * x for x in a]
    pair = sorted(2 * j / i for i in range(1, 6) for j in range(1, 6))
    ci = ratio_ci(a, b, 0.05)
    assert ci.ratio == pytest.approx(2.0)  # the median pairwise ratio: 2 x (j/i) has median 1
    assert (ci.lo, ci.hi) == pytest.approx((pair[2], pair[-3]))
    # P(U <= 2) for 5 vs 5: arrangements with U = 0, 1, 2 number 1, 1, 2 of C(10, 5) = 252
    assert ci.confidence == pytest.approx(1 - 2 * 4 / 252)


def test_too_few_runs_give_the_widest_interval_with_its_coverage_and_no_verdict():
    # 3 vs 3: no 95 % interval exists; the widest runs from the smallest pairwise ratio 1.9 / 1.1 to the
    # largest 2.1 / 0.9, and covers 1 - 2 / C(6, 3) = 0.9. It lies above 1.5, yet resolves nothing at 95 %.
    ci = ratio_ci([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], 0.05)
    assert (ci.lo, ci.hi) == pytest.approx((1.9 / 1.1, 2.1 / 0.9))
    assert ci.confidence == pytest.approx(0.9)
    assert verdict(ci, "greater", 1.5) == "not resolved"
    assert verdict(ci, "greater", 1.5, level=0.9) == "holds"
    one = ratio_ci([1.0], [2.0], 0.05)  # a single pair: no interval at all
    assert one.lo == 0.0 and math.isinf(one.hi)


@pytest.mark.parametrize(
    ("lo", "hi", "direction", "t", "expected"),
    [
        (0.95, 1.04, "within", 0.1, "holds"),
        (1.15, 1.30, "within", 0.1, "does not hold"),
        (0.85, 1.05, "within", 0.1, "not resolved"),
        (2.1, 3.0, "greater", 2.0, "holds"),
        (1.2, 1.9, "greater", 2.0, "does not hold"),
        (1.5, 2.5, "greater", 2.0, "not resolved"),
        (0.3, 0.45, "less", 0.5, "holds"),
        (0.6, 0.9, "less", 0.5, "does not hold"),
    ],
)
def test_verdict_rules(lo, hi, direction, t, expected):
    ci = RatioCI((lo + hi) / 2, lo, hi, 6, 6, 0.95)
    assert verdict(ci, direction, t) == expected


def claim(**kw) -> Claim:
    base = dict(
        id="c", seed="000", claim="x", where="-", seed_number=None, quantity="ratio", a={"fs": "ext4"}, b={"fs": "xfs"},
        workload="-", regime="any", direction="within", threshold=0.1, reproducible_here=True,
        match={"tool": "pgbench", "kinds": ["tpcb-like"]},
    )  # fmt: skip
    return Claim(**{**base, **kw})


def facts_frame(rows: list[dict]) -> pl.DataFrame:
    defaults = {
        "run_id": None, "tool": "pgbench", "kind": "tpcb-like", "op": None, "workload": "w", "clients": 4,
        "rung": None, "regime": "fits_ram", "compression": "none", "fillfactor": 100, "snapshots": False,
        "dirty_background_bytes": None, "cv": None, "saving": None,
        **dict.fromkeys(facts.PG_KEYS),
    }  # fmt: skip
    return pl.DataFrame([{**defaults, **r} for r in rows], infer_schema_length=None)


def test_targets_are_compared_within_each_cell_and_regime():
    rows = []
    for t, fs, scale in (("ext4", "ext4", 1.0), ("xfs", "xfs", 1.02), ("btrfs", "btrfs", 0.5)):
        for clients in (1, 4):
            for i, v in enumerate([100.0, 101.0, 99.0, 100.5, 99.5, 100.2]):
                rows.append(
                    {
                        "target": t,
                        "target_label": t,
                        "fs": fs,
                        "clients": clients,
                        "value": v * scale,
                        "run_id": f"{t}{clients}{i}",
                    }
                )
    out = evaluate.evaluate(facts_frame(rows), claim())
    assert out.height == 2 and set(out["b"]) == {"xfs"} and set(out["a"]) == {"ext4"}
    assert out["estimate"].to_list() == pytest.approx([1.02, 1.02])
    assert set(out["verdict"]) == {"holds"}  # 1.02 with spread well inside 1 +- 0.1


def test_a_settings_claim_compares_on_one_target_never_across():
    rows = []
    for t, fs in (("ext4", "ext4"), ("xfs", "xfs")):
        for sync, v in (("on", 100.0), ("off", 400.0)):
            for i in range(6):
                rows.append(
                    {
                        "target": t,
                        "target_label": t,
                        "fs": fs,
                        "synchronous_commit": sync,
                        "value": v + i,
                        "run_id": f"{t}{sync}{i}",
                    }
                )
    c = claim(
        a={"synchronous_commit": "on"}, b={"synchronous_commit": True and "off"}, direction="greater", threshold=2.0
    )
    out = evaluate.evaluate(facts_frame(rows), c)
    assert sorted(zip(out["a"], out["b"])) == [("ext4", "ext4"), ("xfs", "xfs")]
    assert set(out["verdict"]) == {"holds"}


def test_regime_and_client_filters():
    rows = []
    for t, fs in (("ext4", "ext4"), ("btrfs", "btrfs")):
        for rung, regime in ((1, "fits_ram"), (2, "exceeds_ram")):
            for clients in (1, 8):
                for i in range(6):
                    rows.append(
                        {
                            "target": t,
                            "target_label": t,
                            "fs": fs,
                            "rung": rung,
                            "regime": regime,
                            "clients": clients,
                            "value": 100.0 + i,
                            "run_id": f"{t}{rung}{clients}{i}",
                        }
                    )
    c = claim(
        b={"fs": "btrfs", "compression": "none"}, regime="exceeds_ram", match={"tool": "pgbench", "clients": "max"}
    )
    out = evaluate.evaluate(facts_frame(rows), c)
    assert out.height == 1 and "c=8" in out["cell"][0] and "d2" in out["cell"][0]


def test_untested_and_unreproducible_claims_say_so():
    empty = facts_frame([{"target": "ext4", "target_label": "ext4", "fs": "ext4", "value": 1.0}])
    res = evaluate.evaluate_all(
        empty,
        [
            claim(),
            claim(id="q", quantity="qualitative", match={}),
            claim(id="n", reproducible_here=False, why_not="LVM"),
        ],
    )
    assert dict(zip(res["claim"], res["verdict"])) == {
        "c": "not tested in this study",
        "q": "judged from the figures (qualitative)",
    }


def test_the_shipped_claims_are_well_formed():
    cs = claims.claims()
    assert len(cs) >= 40 and {c.seed for c in cs} == {"000", "001", "002", "003", "004"}
    known = {*evaluate.TARGET_KEYS, *evaluate.RUN_KEYS}
    for c in cs:
        if c.match:  # a claim the lab evaluates must tell its sides apart by keys the facts know
            assert (set(c.a) | set(c.b)) & known, c.id
            assert c.quantity in ("ratio", "variance_ratio", "saving"), c.id
            assert c.direction in ("within", "greater", "less") and isinstance(c.threshold, (int, float)), c.id


def test_regime_of_a_data_set():
    mib = 2**20
    assert facts.regime(100 * mib, 128 * mib, 1024 * mib) == "fits_shared_buffers"
    assert facts.regime(500 * mib, 128 * mib, 1024 * mib) == "fits_ram"
    assert facts.regime(2000 * mib, 128 * mib, 1024 * mib) == "exceeds_ram"
    assert facts.regime(None, 128 * mib, 1024 * mib) is None


def test_compression_of_a_target():
    assert facts.compression({"target_spec": {"mount_options": ["noatime", "compress=zstd:3"]}}) == "zstd"
    assert facts.compression({"target_spec": {"mount_options": ["compress-force=lzo"]}}) == "lzo"
    assert facts.compression({"target_spec": {"mount_options": []}}) == "none"


def test_a_setting_a_run_left_at_its_default_is_that_default(tmp_path) -> None:
    """Runs record only PostgreSQL's non-default settings (pg_settings' source): the recorded dirty-bytes
    study's runs list shared_buffers and max_wal_size but not synchronous_commit or full_page_writes, so a
    claim's side `synchronous_commit: on` must still find them (PostgreSQL's documented defaults)."""
    from tests.recorded import STUDIES, ingest

    db = tmp_path / "dirty-bytes.duckdb"
    ingest(STUDIES / "dirty-bytes", db)
    f = facts.run_facts(db, "dirty-bytes")
    assert f.height == 4
    assert f["synchronous_commit"].to_list() == ["on"] * 4
    assert f["full_page_writes"].to_list() == ["on"] * 4
    assert f["commit_delay"].to_list() == ["0"] * 4
    on = f.filter(evaluate.side_filter({"synchronous_commit": True}))
    assert on.height == 4


def test_the_verdict_table_says_the_coverage_of_an_interval_below_95_percent() -> None:
    from pgfslab.analysis.verdicts import table

    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "cell": "tpcb-like, c=4", "a": "ext4", "b": "xfs"}
    row |= {"n_a": 3, "n_b": 3, "test": "Hodges-Lehmann ratio, exact rank interval", "verdict": "not resolved"}
    few = row | {"estimate": 1.05, "lo": 0.9, "hi": 1.2, "coverage": 0.9}
    many = row | {"n_a": 6, "n_b": 6, "estimate": 1.05, "lo": 0.99, "hi": 1.1, "coverage": 0.9589}
    res = pl.DataFrame([few, many], schema=evaluate.RESULT_SCHEMA)
    t = table.verdict_table(res, list(claims.claims()))
    assert t["here [interval]"].to_list() == ["1.05 [0.90, 1.20] (90 % interval)", "1.05 [0.99, 1.10]"]
    assert t["runs"].to_list() == ["3+3", "6+6"]


def test_a_cell_is_labelled_by_the_settings_it_does_not_leave_at_their_default() -> None:
    group = {"kind": "tpcb-like", "clients": 8, "rung": None, "regime": "fits_ram"}
    group |= {"synchronous_commit": "on", "full_page_writes": "on", "commit_delay": "1000", "fsync": None}
    assert evaluate._cell_label(group) == "tpcb-like, c=8, fits ram, commit_delay=1000"


def test_a_setting_a_target_keeps_for_all_its_runs_is_part_of_the_target() -> None:
    """zfs runs with full_page_writes off for all its runs (the target's setting, the talk's advice), ext4
    at the default: the targets are compared as they run. Where the study varies the setting within a
    target (ext4 on and off), targets are compared only at the same value."""

    def runs(t: str, fpw: str, v: float) -> list[dict]:
        return [
            {"target": t, "target_label": t, "fs": t, "full_page_writes": fpw, "value": v + i, "run_id": f"{t}{fpw}{i}"}
            for i in range(6)
        ]

    c = claim(a={"fs": "ext4"}, b={"fs": "zfs"}, direction="less", threshold=1.0)
    out = evaluate.evaluate(facts_frame(runs("ext4", "on", 100.0) + runs("zfs", "off", 50.0)), c)
    assert out.height == 1 and out["a"][0] == "ext4" and out["b"][0] == "zfs"
    assert out["verdict"][0] == "holds"  # 50..55 against 100..105: the whole interval is below 1
    varied = runs("ext4", "on", 100.0) + runs("ext4", "off", 80.0) + runs("zfs", "off", 50.0)
    out = evaluate.evaluate(facts_frame(varied), c)
    assert out.height == 1 and "full_page_writes=off" in out["cell"][0]
    assert out["estimate"][0] == pytest.approx(50 / 80, rel=0.05)
