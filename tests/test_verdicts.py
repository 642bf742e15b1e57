"""The seeds' claims and their verdicts (pgfslab.analysis.verdicts): the ratio interval, the verdict rules,
which runs a claim compares, and the claims file itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from pgfslab.analysis.verdicts import claims, evaluate, facts, table
from pgfslab.analysis.verdicts import ratio as R
from pgfslab.analysis.verdicts.claims import Claim
from pgfslab.analysis.verdicts.ratio import judge, ratio_ci
from pgfslab.config import run_copies
from pgfslab.config.model import Workload
from pgfslab.records.run_record import RunRecord, parse


def rec_of(data: dict[str, object]) -> RunRecord:
    """A run record from run.json's mapping, as the analysis reads it."""
    return parse(data)[0]


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
    assert judge(ci, "greater", (2.0, 2.0)).category == R.UNRESOLVED
    assert judge(ci, "greater", (2.0, 2.0), level=0.9).category == R.HOLDS  # the seed's 2.0 inside [1.73, 2.33]
    one = ratio_ci([1.0], [2.0], 0.05)  # a single pair: no interval at all
    assert one.lo == 0.0 and math.isinf(one.hi)


def claim(**kw) -> Claim:
    base = dict(
        id="c", seed="000", claim="x", where="-", seed_number=None, quantity="ratio", a={"fs": "ext4"}, b={"fs": "xfs"},
        workload="-", expect="same", band=0.1, band_why="the lab's", reproducible_here=True,
        match={"tool": "pgbench", "kinds": ["tpcb-like"]},
    )  # fmt: skip
    return Claim(**{**base, **kw})


def facts_frame(rows: list[dict]) -> pl.DataFrame:
    defaults = {
        "run_id": None, "tool": "pgbench", "kind": "tpcb-like", "op": None, "workload": "w", "clients": 4,
        "rung": None, "regime": "fits_ram", "compression": "none", "fillfactor": 100, "snapshots": False,
        "dirty_background_bytes": None, "cv": None, "saving": None,
        **dict.fromkeys(facts.PG_KEYS), **dict.fromkeys(facts.FS_KEYS),
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
    assert set(out["verdict"]) == {R.HOLDS}  # 1.02 with spread well inside 1 +- 0.1


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
    c = claim(a={"synchronous_commit": "on"}, b={"synchronous_commit": "off"}, expect="greater", band=None)
    out = evaluate.evaluate(facts_frame(rows), c)
    # one target against itself: each side's label names the setting that differs
    assert sorted(zip(out["a"], out["b"])) == [
        ("ext4 (synchronous_commit=on)", "ext4 (synchronous_commit=off)"),
        ("xfs (synchronous_commit=on)", "xfs (synchronous_commit=off)"),
    ]
    assert set(out["verdict"]) == {R.DIRECTION_ONLY}  # 4x, and the claim gave no number: direction only


def test_the_seeds_own_cell_is_primary_the_others_context():
    """The claim's primary cell (here: beyond RAM) gives the verdict; the cell within RAM is shown as context and
    never pooled in; clients=max keeps only the largest client count."""
    rows = []
    for t, fs, gain in (("ext4", "ext4", 1.0), ("btrfs", "btrfs", 1.5)):
        for rung, regime, g in ((1, "fits_ram", 1 / gain), (2, "exceeds_ram", gain)):
            for clients in (1, 8):
                for i in range(6):
                    rows.append(
                        {"target": t, "target_label": t, "fs": fs, "rung": rung, "regime": regime,
                         "clients": clients, "value": (100.0 + i) * g, "run_id": f"{t}{rung}{clients}{i}"}
                    )  # fmt: skip
    c = claim(
        b={"fs": "btrfs", "compression": "none"}, expect="greater", band=None, primary={"regime": "exceeds_ram"},
        match={"tool": "pgbench", "clients": "max"},
    )  # fmt: skip
    out = evaluate.evaluate(facts_frame(rows), c)
    assert out.height == 2 and all("c=8" in cell for cell in out["cell"])
    prim = out.filter(pl.col("role") == "primary").row(0, named=True)
    assert "exceeds ram" in prim["cell"] and prim["verdict"] == R.DIRECTION_ONLY
    ctx = out.filter(pl.col("role") == "context").row(0, named=True)
    assert "fits ram" in ctx["cell"] and ctx["verdict"] == R.OPPOSITE  # the context disagrees...
    summ = evaluate.summary(out).row(0, named=True)
    assert summ["overall"] == R.DIRECTION_ONLY and summ["context_cells"] == 1  # ...and is never pooled in


def test_a_primary_regime_given_as_a_list_takes_each_of_them() -> None:
    """Seed 000's cached case is both regimes below memory: each is primary and they share alpha; the rung
    beyond memory is context."""
    rows = [
        {"target": t, "target_label": t, "fs": t, "rung": rung, "regime": regime, "kind": "select-only",
         "value": 100.0 + i, "run_id": f"{t}{rung}{i}"}
        for t in ("ext4", "xfs")
        for rung, regime in ((1, "fits_shared_buffers"), (2, "fits_ram"), (3, "exceeds_ram"))
        for i in range(6)
    ]  # fmt: skip
    c = claim(primary={"kind": "select-only", "regime": ["fits_shared_buffers", "fits_ram"]},
              match={"tool": "pgbench", "kinds": ["select-only"]})  # fmt: skip
    out = evaluate.evaluate(facts_frame(rows), c)
    prim, ctx = out.filter(pl.col("role") == "primary"), out.filter(pl.col("role") == "context")
    assert prim.height == 2 and not prim["cell"].str.contains("exceeds ram").any()
    assert ctx["cell"].str.contains("exceeds ram").to_list() == [True]
    assert all("Bonferroni over the claim's 2" in t for t in prim["test"])


def test_a_cell_the_study_keeps_as_context_is_never_primary():
    """workloads.<name>.context (copied into the facts as `context_cell`): the seed's own condition, but the study
    said the cell cannot decide; it is shown as context and the claim's alpha is not split over it."""
    rows = []
    for t, fs, v in (("ext4", "ext4", 100.0), ("xfs", "xfs", 100.0)):
        for clients, kept in ((1, "3 runs: shown only"), (4, None)):
            for i in range(6):
                rows.append(
                    {"target": t, "target_label": t, "fs": fs, "clients": clients, "context_cell": kept,
                     "value": v + i, "run_id": f"{t}{clients}{i}"}
                )  # fmt: skip
    out = evaluate.evaluate(facts_frame(rows), claim())
    roles = dict(zip((c.split("c=")[1][0] for c in out["cell"]), out["role"]))
    assert roles == {"1": "context", "4": "primary"}
    prim = out.filter(pl.col("role") == "primary").row(0, named=True)
    assert "Bonferroni" not in prim["test"]  # one primary cell: judged at alpha itself
    kept = out.filter(pl.col("role") == "context").row(0, named=True)
    assert kept["test"].endswith("kept as context by the study: 3 runs: shown only")
    only = evaluate.evaluate(facts_frame([r for r in rows if r["clients"] == 1]), claim())
    assert evaluate.summary(only)["overall"].to_list() == [
        "no primary cell (none in the seed's condition, or each kept as context by the study)"
    ]
    # without the mark, both cells are the seed's condition and share alpha
    both = evaluate.evaluate(facts_frame([{**r, "context_cell": None} for r in rows]), claim())
    assert set(both["role"]) == {"primary"} and all("Bonferroni over the claim's 2" in t for t in both["test"])


def test_the_facts_read_a_context_cell_from_the_workload_the_run_copied():
    def copied(spec: dict[str, object]) -> Workload:
        wl = run_copies.workload(RunRecord(run_id="ext4.w.c1.r1", workload_spec=spec))
        assert wl is not None
        return wl

    wl = copied({"tool": "pgbench", "builtin": "tpcb-like", "context": {"why": "shown only", "clients": [1]}})
    assert wl.context_why(1) == "shown only" and wl.context_why(4) is None
    assert copied({"tool": "pgbench", "context": {"why": "every cell"}}).context_why(8) == "every cell"
    assert copied({"tool": "pgbench"}).context_why(1) is None


def test_untested_and_figure_only_claims_say_so():
    empty = facts_frame([{"target": "ext4", "target_label": "ext4", "fs": "ext4", "value": 1.0}])
    res = evaluate.evaluate_all(
        empty,
        [
            claim(),
            claim(id="q", quantity="qualitative", expect=None, band=None, match={}, figure="fs_micro's statfs figure"),
            claim(id="n", reproducible_here=False, why_not="LVM"),
        ],
    )
    assert dict(zip(res["claim"], res["verdict"])) == {
        "c": "not tested in this study",
        "q": "only a figure: fs_micro's statfs figure",
    }
    # a finding the study's runs do not reach is neither a row nor a count: one sentence says which
    cs = [
        claim(),
        claim(id="q", quantity="qualitative", expect=None, band=None, match={}, figure="fs_micro's statfs figure"),
    ]
    assert table.findings_table(res, cs)["claim"].to_list() == ["q"]
    assert "not tested in this study" not in table.status_counts(res, cs)["status"].to_list()
    assert table.untested_sentence(res) == (
        "1 of the seeds' findings need runs this study does not make, and are neither counted nor listed above: `c`."
    )


def test_the_shipped_claims_are_well_formed():
    cs = claims.claims()
    assert len(cs) >= 70 and {c.seed for c in cs} == {"000", "001", "002", "003", "004"}
    for c in cs:
        if c.reproducible_here and c.quantity != "qualitative":
            assert c.match or c.figure, c.id  # a verdict, or the reason only a figure can speak
        if c.match and c.quantity not in claims.SPECIAL:
            assert c.quantity in evaluate.VALUE and c.expect in ("greater", "less", "same"), c.id
        if c.expect == "same":
            assert c.band and c.band_why, c.id
    text = claims.CLAIMS.read_text()
    assert "threshold:" not in text and "direction:" not in text  # no edge anywhere
    ids = {c.id for c in cs}
    # findings a reread of the seeds found missing
    assert {
        "s000-zfs-throughput-very-stable", "s000-zfs-latency-better-than-btrfs-snapshots", "s000-fs-matters-only-io-bound",
        "s001-async-losses-within-window", "s001-stack-honours-fsync", "s002-variance-grows-with-threads",
        "s003-three-runs-cannot-reach-p05", "s003-zfs-heavier-tails", "s004-btrfs-writes-more",
        "s004-ext4-read-wait-rises-at-checkpoints", "s004-select-btrfs-ahead",
    } <= ids  # fmt: skip
    by = {c.id: c for c in cs}
    # seed 002's σ² table compared as σ² (ScaleFlux/Intel at 64 threads: 5,540 / 35,942), the fsync=off control
    # as a change between fsync on and off, the post's service-time variance as I/O wait
    assert by["s002-rw-ff70-variance-lower"].quantity == "variance_ratio"
    assert by["s002-rw-ff70-variance-lower"].seed_value == pytest.approx(5540 / 35942, rel=0.01)
    assert by["s004-fsync-off-removes-crossover"].interaction == {"key": "fsync", "from": "on", "to": "off"}
    assert by["s004-ext4-io-service-time-variance"].quantity == "read_await_variance"


def test_regime_of_a_data_set():
    mib = 2**20
    assert facts.regime(100 * mib, 128 * mib, 1024 * mib) == "fits_shared_buffers"
    assert facts.regime(500 * mib, 128 * mib, 1024 * mib) == "fits_ram"
    assert facts.regime(2000 * mib, 128 * mib, 1024 * mib) == "exceeds_ram"
    assert facts.regime(None, 128 * mib, 1024 * mib) is None


def test_compression_of_a_target():
    def btrfs(*options: str) -> dict[str, object]:
        return {"target_spec": {"fs": "btrfs", "mount_options": list(options)}}

    assert facts.compression(rec_of(btrfs("noatime", "compress=zstd:3"))) == "zstd"
    assert facts.compression(rec_of(btrfs("compress-force=lzo"))) == "lzo"
    assert facts.compression(rec_of(btrfs())) == "none"
    zfs = {"target_spec": {"fs": "zfs", "zfs": {"compression": "gzip", "recordsize": "8K"}}}
    assert (facts.compression(rec_of(zfs)), facts.recordsize(rec_of(zfs))) == ("gzip", "8k")


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
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "cell": "tpcb-like, c=4", "a": "ext4", "b": "xfs"}
    row |= {"compared": "xfs / ext4", "role": "primary"}
    row |= {"n_a": 3, "n_b": 3, "test": "Hodges-Lehmann ratio, exact rank interval", "verdict": R.UNRESOLVED}
    few = row | {"estimate": 1.05, "lo": 0.9, "hi": 1.2, "coverage": 0.9, "verdict_text": "not resolved: 3+3"}
    many = row | {"n_a": 6, "n_b": 6, "estimate": 1.05, "lo": 0.99, "hi": 1.1, "coverage": 0.9589}
    res = pl.DataFrame([few, many], schema=evaluate.RESULT_SCHEMA)
    t = table.verdict_table(res, list(claims.claims()))
    assert t["here [interval]"].to_list() == ["1.05 [0.90, 1.20] (90 % interval)", "1.05 [0.99, 1.10]"]
    assert t["runs"].to_list() == ["3+3", "6+6"]
    # what the claim expects is said once per claim, in the findings table
    assert "expects" not in t.columns
    found = table.findings_table(res, list(claims.claims()))
    expects = found.filter(pl.col("claim") == "s000-ext4-xfs-close")["expects"][0]
    assert expects.startswith("B/A within [0.90, 1.10] (band: the talk itself calls")


def test_the_answers_table_gives_one_short_row_per_judged_finding() -> None:
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "a": "ext4", "b": "xfs", "compared": "xfs / ext4"}
    row |= {"n_a": 6, "n_b": 6, "quantity": "throughput", "verdict": R.UNRESOLVED, "verdict_text": "not resolved"}
    first = row | {
        "role": "primary",
        "cell": "tpcb-like, c=4",
        "estimate": 1.02,
        "lo": 0.66,
        "hi": 1.67,
        "coverage": 0.95,
    }
    second = row | {
        "role": "primary",
        "cell": "tpcb-like, c=1",
        "estimate": 0.9,
        "lo": 0.8,
        "hi": 1.1,
        "coverage": 0.95,
    }
    context = row | {"role": "context", "cell": "select-only, c=4", "estimate": 0.79, "lo": 0.55, "hi": 1.16}
    untested = dict.fromkeys(evaluate.RESULT_SCHEMA) | {
        "claim": "s000-bulkload-zfs-slower",
        "verdict": table.NOT_IN_STUDY,
    }
    res = pl.DataFrame([first, second, context, untested], schema=evaluate.RESULT_SCHEMA)
    t = table.answers_table(res, list(claims.claims()))
    assert t.rows() == [("s000-ext4-xfs-close", t["seed"][0], "1.02 [0.66, 1.67] (+1 cells)", R.UNRESOLVED)]
    assert "10 %" in t["seed"][0]  # the seed's own words of size


def test_the_forest_draws_the_aa_band_and_leaves_cells_outside_the_regime_hollow() -> None:
    """A cell not in the seed's regime was drawn as strongly as a judged one, and the A/A band was only in
    the table: a reader of the figure could take an estimate inside the noise, or never judged, as a finding."""
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "a": "ext4", "b": "xfs", "compared": "xfs / ext4"}
    row |= {"role": "primary", "n_a": 4, "n_b": 4, "test": "Hodges-Lehmann", "coverage": 0.95}
    rows = [
        row
        | {"cell": "c=4 judged", "estimate": 1.2, "lo": 0.9, "hi": 1.5, "verdict": R.UNRESOLVED}
        | {"aa_lo": 0.6, "aa_hi": 1.7},
        row | {"cell": "c=4 unsteady", "estimate": 0.5, "lo": 0.4, "hi": 0.6, "verdict": R.NOT_IN_REGIME},
    ]
    spec = table.forest(pl.DataFrame(rows, schema=evaluate.RESULT_SCHEMA), list(claims.claims())).to_dict()
    data = {r["cell"]: r for rows_ in spec["datasets"].values() for r in rows_ if "cell" in r}
    noise = [lay for lay in spec["layer"] if lay.get("encoding", {}).get("x", {}).get("field") == "aa_lo"]
    assert len(noise) == 1 and noise[0]["encoding"]["x2"]["field"] == "aa_hi"
    # the band is drawn from the cell's own aa_lo/aa_hi, and only where the cell has one
    assert (data["c=4 judged"]["aa_lo"], data["c=4 judged"]["aa_hi"]) == (0.6, 1.7)
    assert data["c=4 unsteady"]["aa_lo"] is None
    dots = next(lay for lay in spec["layer"] if "fill" in lay.get("encoding", {}))
    fill = dots["encoding"]["fill"]
    assert fill["value"] == "white" and fill["condition"]["test"] == "datum.judged"
    assert (data["c=4 judged"]["judged"], data["c=4 unsteady"]["judged"]) == (True, False)


def test_one_wide_interval_does_not_stretch_the_forests_axis() -> None:
    """One interval reaching 100 ran the axis to 100 and squeezed every other cell into its left corner: the axis
    covers the marks and the intervals near them, and cuts (clamps) one that runs far beyond."""
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "a": "ext4", "b": "xfs", "compared": "xfs / ext4"}
    row |= {"role": "primary", "n_a": 4, "n_b": 4, "coverage": 0.95, "verdict": R.UNRESOLVED}
    rows = [
        row | {"cell": "near", "estimate": 0.9, "lo": 0.7, "hi": 1.2},
        row | {"cell": "wide", "estimate": 1.4, "lo": 0.95, "hi": 100.0},
    ]
    spec = table.forest(pl.DataFrame(rows, schema=evaluate.RESULT_SCHEMA), list(claims.claims())).to_dict()
    scales = [
        enc["scale"] for lay in spec["layer"] for enc in lay.get("encoding", {}).values()
        if isinstance(enc, dict) and "scale" in enc and enc.get("type") == "quantitative"
    ]  # fmt: skip
    assert scales and all(sc == scales[0] for sc in scales), "every layer on the same axis"
    lo, hi = scales[0]["domain"]
    assert scales[0]["clamp"] is True and scales[0]["type"] == "log"
    assert lo < 0.7 and 1.4 < hi < 10  # the marks and the near interval shown; the 100 cut at the edge
    # no interval beyond the reach: the axis ends at the intervals' own ends (with a margin)
    rows[1] = rows[1] | {"hi": 1.6}
    spec = table.forest(pl.DataFrame(rows, schema=evaluate.RESULT_SCHEMA), list(claims.claims())).to_dict()
    dots = next(lay for lay in spec["layer"] if "fill" in lay.get("encoding", {}))
    assert dots["encoding"]["x"]["scale"]["domain"][1] < 1.6 * 1.2


def test_the_charts_legends_list_only_the_verdicts_drawn() -> None:
    """A legend of all sixteen categories was wider than the chart and shrank the figure on the page."""
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "cell": "tpcb-like, c=4", "a": "ext4", "b": "xfs"}
    row |= {"compared": "xfs / ext4", "role": "primary", "n_a": 6, "n_b": 6, "test": "Hodges-Lehmann"}
    rows = [
        row | {"estimate": 1.05, "lo": 0.99, "hi": 1.1, "coverage": 0.95, "verdict": R.UNRESOLVED},
        row
        | {"cell": "tpcb-like, c=8", "estimate": 0.5, "lo": 0.4, "hi": 0.6, "coverage": 0.95, "verdict": R.OPPOSITE},
    ]
    res = pl.DataFrame(rows, schema=evaluate.RESULT_SCHEMA)
    shipped = list(claims.claims())
    forest = table.forest(res, shipped).to_dict()
    scales = [layer["encoding"]["color"]["scale"] for layer in forest["layer"] if "color" in layer.get("encoding", {})]
    assert scales and all(sorted(s["domain"]) == sorted([R.UNRESOLVED, R.OPPOSITE]) for s in scales)
    assert all(s["range"] == [table.VERDICT_COLORS[d] for d in s["domain"]] for s in scales)
    chart = table.status_chart(res, shipped).to_dict()
    # a claim whose two primary cells disagree is one "mixed" category, after the others, and the bar's
    # segments follow the legend's order
    assert chart["encoding"]["color"]["scale"]["domain"] == ["not reproducible here", table.MIXED_STATUS]
    assert chart["encoding"]["order"]["field"] == "rank"
    data = pl.DataFrame(next(iter(chart["datasets"].values())))
    ranks = dict(zip(data["status"], data["rank"], strict=True))
    assert ranks["not reproducible here"] < ranks[table.MIXED_STATUS]
    assert data.filter(pl.col("status") == table.MIXED_STATUS)["findings"].to_list() == [1]


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

    c = claim(a={"fs": "ext4"}, b={"fs": "zfs"}, expect="less", band=None)
    out = evaluate.evaluate(facts_frame(runs("ext4", "on", 100.0) + runs("zfs", "off", 50.0)), c)
    assert out.height == 1 and out["a"][0] == "ext4" and out["b"][0] == "zfs"
    assert out["verdict"][0] == R.DIRECTION_ONLY  # 50..55 against 100..105: the whole interval is below 1
    varied = runs("ext4", "on", 100.0) + runs("ext4", "off", 80.0) + runs("zfs", "off", 50.0)
    out = evaluate.evaluate(facts_frame(varied), c)
    assert out.height == 1 and "full_page_writes=off" in out["cell"][0]
    assert out["estimate"][0] == pytest.approx(50 / 80, rel=0.05)


def fs_rows(target: str, fs: str, values: dict[tuple[str, int | None, int | None], list[float]]) -> list[dict]:
    """fsmicro facts: per (kind, files, directory_files) the repeats' timed ops/s."""
    return [
        {
            "target": target, "target_label": target, "fs": fs, "tool": "fsmicro", "kind": kind,
            "op": {"delete_in_dir": "delete_small_dir" if bg == 1000 else "delete_large_dir"}.get(kind, kind),
            "clients": 1, "regime": None, "files": files, "directory_files": bg, "value": v,
            "run_id": f"{target}.{kind}.{files}.{bg}.{i}",
        }
        for (kind, files, bg), vs in values.items()
        for i, v in enumerate(vs)
    ]  # fmt: skip


def fs_facts() -> pl.DataFrame:
    ext4 = {
        ("delete", 10_000, None): [5000.0, 5100, 5200, 5300, 5400],
        ("delete", 100_000, None): [30000.0, 30100, 30200, 30300, 30400],
        ("delete_in_dir", None, 1000): [15000.0, 15500, 16000, 16500, 17000],
        ("delete_in_dir", None, 100_000): [30000.0, 31000, 32000, 33000, 34000],
    }
    zfs = {k: [v / (2 if k[1] == 10_000 else 20) for v in vs] for k, vs in ext4.items()}
    return facts_frame(fs_rows("ext4", "ext4", ext4) + fs_rows("zfs", "zfs", zfs))


def test_fsmicro_claims_pick_their_file_counts():
    # zfs deletes 10k files at half ext4's rate and 100k (and everything else) at a twentieth
    ten_k = claim(
        a={"fs": "ext4", "files": 10000}, b={"fs": "zfs", "files": 10000}, expect="less", band=None, seed_value=0.5,
        match={"tool": "fsmicro", "ops": ["delete"]},
    )  # fmt: skip
    out = evaluate.evaluate(fs_facts(), ten_k)
    # files named alike on both sides: the claim's condition, said in the cell; not a side's label
    assert out.height == 1 and out["cell"][0] == "delete, c=1, files=10k"
    assert (out["a"][0], out["b"][0]) == ("ext4", "zfs")
    assert out["estimate"][0] == pytest.approx(0.5) and out["verdict"][0] == R.HOLDS  # the seed's 0.5, exactly
    hundred_k = claim(
        a={"fs": "ext4", "files": 100000}, b={"fs": "zfs", "files": 100000}, expect="less", band=None,
        seed_value=0.5, match={"tool": "fsmicro", "ops": ["delete"]},
    )  # fmt: skip
    out = evaluate.evaluate(fs_facts(), hundred_k)
    # zfs at a twentieth where the (pretend) seed said a half: a larger effect, never a refutation
    assert out.height == 1 and out["estimate"][0] == pytest.approx(0.05) and out["verdict"][0] == R.LARGER
    # without naming the count, each count is its own cell
    both = claim(
        a={"fs": "ext4"}, b={"fs": "zfs"}, expect="less", band=None, match={"tool": "fsmicro", "ops": ["delete"]}
    )
    assert sorted(evaluate.evaluate(fs_facts(), both)["cell"]) == [
        "delete, c=1, files=100k",
        "delete, c=1, files=10k",
    ]


def test_a_directory_size_claim_compares_one_target_with_itself():
    # ext4 in a 100k-file directory against ext4 in a 1k-file one: medians 32,000 / 16,000 = 2
    c = claim(
        a={"fs": "ext4", "directory_files": 1000}, b={"fs": "ext4", "directory_files": 100000},
        expect="greater", band=None, match={"tool": "fsmicro", "ops": ["delete_small_dir", "delete_large_dir"]},
    )  # fmt: skip
    out = evaluate.evaluate(fs_facts(), c)
    assert out.height == 1
    assert (out["a"][0], out["b"][0]) == ("ext4 (directory_files=1k)", "ext4 (directory_files=100k)")
    assert out["compared"][0] == "ext4: directory_files 100k / 1k"
    # the Hodges-Lehmann ratio is the median of the 25 pairwise ratios (30..34k) / (15..17k): by hand
    pair = sorted(b / a for a in (15000, 15500, 16000, 16500, 17000) for b in (30000, 31000, 32000, 33000, 34000))
    assert out["estimate"][0] == pytest.approx(pair[12]) and out["verdict"][0] == R.DIRECTION_ONLY


def test_footprints_are_one_measurement_per_load_without_an_interval():
    """Four runs re-read one load per target: the compression ratio and the footprint are one measurement per
    load (the median of the re-readings), reported without an interval over the repeats."""
    rows = []
    for t, ff, ratio, size in (("zstd-ff100", 100, 1.2, 600.0), ("zstd-ff70", 70, 2.4, 850.0)):
        for i in range(4):
            rows.append(
                {
                    "target": t, "target_label": t, "fs": "btrfs", "compression": "zstd", "tool": "sysbench",
                    "kind": "oltp_read_write", "fillfactor": ff, "value": 100.0, "run_id": f"{t}{i}",
                    "compress_ratio": ratio + i / 100, "database_bytes": size + i, "bytes_per_s": None,
                }
            )  # fmt: skip
    f = facts_frame(rows)
    comp = claim(
        quantity="compression_ratio", a={"compression": "zstd", "fillfactor": 100},
        b={"compression": "zstd", "fillfactor": 70}, expect="greater", band=None, seed_value=1.98,
        match={"tool": "sysbench"},
    )  # fmt: skip
    out = evaluate.evaluate(f, comp).row(0, named=True)
    assert (out["n_a"], out["n_b"]) == (1, 1)  # one load per side, whatever the runs
    assert out["estimate"] == pytest.approx(2.415 / 1.215)  # the loads' medians (2.40..2.43, 1.20..1.23)
    assert out["verdict"] == R.ONCE and out["test"] == "one measurement per load"
    assert out["verdict_text"].startswith("measured once, same direction") and "no interval" in out["verdict_text"]
    size = claim(
        quantity="footprint", a={"fillfactor": 100}, b={"fillfactor": 70}, expect="greater", band=None,
        seed_value=2.1, match={"tool": "sysbench"},
    )  # fmt: skip
    out = evaluate.evaluate(f, size).row(0, named=True)
    assert out["estimate"] == pytest.approx(851.5 / 601.5) and out["magnitude"] == "smaller"


def test_fsmicro_facts_fill_the_runners_defaults():
    def fsmicro(**keys: object) -> Workload:
        return Workload.from_dict({"tool": "fsmicro", **keys})

    assert facts.fsmicro_facts(fsmicro(op="delete_large_dir", size_bytes=2_000_000)) == {
        "op": "delete_large_dir", "kind": "delete_in_dir", "files": None, "directory_files": 100_000,
        "write_size": None, "file_bytes": 2_000_000,
    }  # fmt: skip
    assert facts.fsmicro_facts(fsmicro(op="delete", files=100_000, size_bytes=4096, repeats=5))["files"] == 100_000
    assert facts.fsmicro_facts(fsmicro(op="write_fsync", size_bytes=10**8))["write_size"] == 10**8
    assert facts.fsmicro_facts(fsmicro(op="nonsense"))["kind"] == "nonsense"
    assert facts.fsmicro_facts(Workload.from_dict({"tool": "pgbench", "builtin": "tpcb-like"}))["op"] is None


STUDIES = Path(__file__).parent / "data" / "studies"


def test_run_facts_of_recorded_studies(tmp_path):
    """fsmicro runs: kind, write size and the timed rate from fsmicro_ops.csv; sysbench runs: compression ratio
    and database size from run.json; all read here with plain code."""
    from pgfslab.ingest.study import ingest_study

    for study in ("fs-micro", "sysbench-fillfactor"):
        db = tmp_path / f"{study}.duckdb"
        ingest_study(STUDIES / study, db, progress=False, external=None)
        got = {r["run_id"]: r for r in facts.run_facts(db, study).iter_rows(named=True)}
        runs = [d for d in (STUDIES / study).iterdir() if (d / "run.json").exists()]
        assert len(got) == len(runs) > 0
        for d in runs:
            rec, row = json.loads((d / "run.json").read_text()), got[d.name]
            if study == "fs-micro":
                lines = (d / "fsmicro_ops.csv").read_text().splitlines()[1:]
                lat_ns = [int(ln.split(",")[2]) for ln in lines]
                op = rec["workload_spec"]["op"]
                assert row["kind"] == op and row["files"] is None and row["directory_files"] is None
                assert row["value"] == pytest.approx(1e9 * len(lat_ns) / sum(lat_ns), rel=1e-9)
                if op == "write_fsync":
                    assert row["write_size"] == rec["workload_spec"]["size_bytes"] == 1_000_000
                    assert row["bytes_per_s"] == pytest.approx(1e6 * row["value"])
                else:
                    assert row["write_size"] is None and row["bytes_per_s"] is None
            else:
                assert row["kind"] == "oltp_read_write" and row["files"] is None
                assert row["database_bytes"] == rec["postgres"]["database_bytes"]
                if rec["fs"] == "btrfs":
                    comp = rec["compsize"]
                    assert row["compress_ratio"] == pytest.approx(comp["uncompressed_bytes"] / comp["disk_bytes"])
                else:
                    assert "compsize" not in rec and row["compress_ratio"] is None
                assert row["fillfactor"] == (70 if "ff70" in d.name else 100)


def test_a_saving_is_the_compressed_targets_own_one_measurement_per_load() -> None:
    # the seed gives btrfs-zlib's saving; ext4 (side A) has no compsize measurement and must not empty the
    # comparison; the runs re-read one load, so the saving is the load's (their median), said once
    rows = [
        {"target": "ext4", "target_label": "ext4", "fs": "ext4", "value": 100.0, "run_id": f"e{i}"} for i in range(4)
    ]
    for i, s in enumerate([0.71, 0.74, 0.77, 0.85]):
        rows.append({"target": "btrfs-zlib", "target_label": "btrfs-zlib", "fs": "btrfs", "compression": "zlib",
                     "value": 90.0, "saving": s, "run_id": f"z{i}"})  # fmt: skip
    c = claim(a={"fs": "ext4"}, b={"fs": "btrfs", "compression": "zlib"}, quantity="saving", expect="greater",
              band=None, seed_value=0.8)  # fmt: skip
    out = evaluate.evaluate(facts_frame(rows), c)
    assert out.height == 1
    row = out.row(0, named=True)
    assert (row["a"], row["b"], row["n_b"]) == ("", "btrfs-zlib", 1)
    assert row["estimate"] == pytest.approx(0.755) and row["verdict"] == R.ONCE
    assert row["verdict_text"] == "measured once per load: saving 76 %, smaller than the seed's 80 %"
    shown = table.verdict_table(out, [c]).row(0, named=True)
    assert shown["compared here"] == "btrfs-zlib" and shown["cell"] == out["cell"][0] and shown["runs"] == "1"


def test_a_setting_reads_as_a_reader_reads_it() -> None:
    assert evaluate.setting_text("write_size", 100_000_000) == "write_size=100 MB"
    assert evaluate.setting_text("write_size", 1_000_000) == "write_size=1 MB"
    assert evaluate.setting_text("dirty_background_bytes", "32MB") == "dirty_background_bytes=32 MB"
    assert evaluate.setting_text("dirty_background_bytes", 2**30) == "dirty_background_bytes=1 GiB"
    assert evaluate.setting_text("dirty_background_bytes", "1GB") == "dirty_background_bytes=1 GB"  # not 1000 MB
    assert evaluate.setting_text("directory_files", 1500) == "directory_files=1,500"
    assert evaluate.setting_text("synchronous_commit", False) == "synchronous_commit=off"


def test_a_sync_size_claim_names_the_write_sizes_on_its_sides() -> None:
    """seed 003's sync linearity: ext4 at 100 MB against ext4 at 10 MB; the second setting both sides share
    (commit_delay here) is part of every cell."""
    rows = [
        {
            "target": "ext4", "target_label": "ext4", "fs": "ext4", "tool": "fsmicro", "kind": "write_fsync",
            "op": "write_fsync", "clients": 1, "regime": None, "write_size": size, "fsync": "on", "bytes_per_s": v + i,
            "value": 1.0, "run_id": f"{size}.{i}",
        }
        for size, v in ((10_000_000, 100.0), (100_000_000, 300.0))
        for i in range(5)
    ]  # fmt: skip
    c = claim(
        a={"write_size": 10_000_000, "fsync": "on"}, b={"write_size": 100_000_000, "fsync": "on"},
        expect="same", band=0.25, quantity="bandwidth", match={"tool": "fsmicro", "ops": ["write_fsync"]},
    )  # fmt: skip
    out = evaluate.evaluate(facts_frame(rows), c)
    assert out.height == 1
    assert (out["a"][0], out["b"][0]) == ("ext4 (write_size=10 MB)", "ext4 (write_size=100 MB)")
    assert out["compared"][0] == "ext4: write_size 100 MB / 10 MB"
    assert out["cell"][0] == "write_fsync, c=1, fsync=on"
    assert out["estimate"][0] == pytest.approx(3.0, rel=0.02) and out["verdict"][0] == R.DIFFERS


def test_settings_compared_on_one_target_read_as_one_phrase() -> None:
    """seed 001's copy-on-write WAL settings: three settings off against on, on each target."""
    rows = [
        {"target": t, "target_label": t, "fs": t, "full_page_writes": v, "wal_init_zero": v, "wal_recycle": v,
         "value": base + i, "run_id": f"{t}{v}{i}"}
        for t in ("ext4", "btrfs")
        for v, base in (("on", 100.0), ("off", 110.0))
        for i in range(5)
    ]  # fmt: skip
    on = {"full_page_writes": "on", "wal_init_zero": "on", "wal_recycle": "on"}
    off = dict.fromkeys(on, "off")
    out = evaluate.evaluate(facts_frame(rows), claim(a=on, b=off, expect="greater", band=None))
    assert out["compared"].to_list() == [
        "ext4: full_page_writes, wal_init_zero, wal_recycle off / on",
        "btrfs: full_page_writes, wal_init_zero, wal_recycle off / on",
    ]
    shown = table.verdict_table(out, [claim(a=on, b=off)])
    assert shown["compared here"][0] == "ext4: full_page_writes, wal_init_zero, wal_recycle off / on"
    assert shown["cell"][0] == "tpcb-like, c=4, fits ram"


def test_the_tally_counts_each_finding_once() -> None:
    """The closing sentence read "2 were set against this study's runs. In the seed's own condition: 4 only a
    figure, 2 not reproducible here, 1 holds, ..." (8 statuses after "2"): each finding is now counted once, as
    having a status here, of which some were set against the runs, or as needing runs the study does not make."""
    c000 = [c for c in claims.claims() if c.seed == "000"]
    gone = sum(not c.reproducible_here for c in c000)
    row = dict.fromkeys(evaluate.RESULT_SCHEMA)
    row |= {"claim": "s000-ext4-xfs-close", "seed": "000", "a": "ext4", "b": "xfs", "compared": "xfs / ext4"}
    row |= {"role": "primary", "cell": "tpcb-like, c=4", "n_a": 6, "n_b": 6, "estimate": 1.03, "lo": 0.98}
    row |= {"hi": 1.08, "coverage": 0.95, "verdict": R.HOLDS, "verdict_text": "holds"}
    untested = dict.fromkeys(evaluate.RESULT_SCHEMA) | {
        "claim": "s000-bulkload-zfs-slower",
        "verdict": table.NOT_IN_STUDY,
    }
    res = pl.DataFrame([row, untested], schema=evaluate.RESULT_SCHEMA)
    text = table.tally_sentence(res, c000, ["000"])
    assert text == (
        f"Of {len(c000)} findings of seed(s) 000, {1 + gone} have a status here ({gone} not reproducible here, "
        f"1 {R.HOLDS}); 1 of them were set against this study's runs, the others only from a figure or not on this "
        f"kind of machine; {len(c000) - 1 - gone} need runs this study does not make."
    )
    assert gone >= 2  # seed 000 has findings no machine of this kind can test (more than holds: listed first)


def test_both_sides_too_short_for_the_steady_check_are_said_once() -> None:
    from pgfslab.analysis.verdicts import regime

    def side(n: int) -> pl.DataFrame:
        return pl.DataFrame({"steady": [True] * 3, "steady_n": [n] * 3, "steady_phi": [0.1] * 3})

    out = evaluate._steady_notes((("A", side(2)), ("B", side(1))))
    assert len(out) == 1 and out[0].startswith(
        "the steady state of neither side could be checked: 2 (A) and 1 (B) samples per run, too few"
    )
    a = regime.steady_test("A", side(2)).message
    same = evaluate._steady_notes((("A", side(2)), ("B", side(2))))
    assert same == [a.replace("of side A could not be checked", "of neither side could be checked")]
    assert evaluate._steady_notes((("A", side(2)),)) == [a]  # one side: as it was
    # a side whose runs carry no per-second series says nothing here (the regime's checks say it)
    assert evaluate._steady_notes((("A", side(2)), ("B", side(30).drop("steady")))) == [a]


def test_a_userspace_zfs_against_a_kernel_file_system_gives_a_direction_never_a_size() -> None:
    """zfs-fuse pays a FUSE round trip per call that kernel ZFS does not: against ext4 its size is not the seed's
    kind of ZFS's, so the seed's size is not judged (it is named in the notes) and an equivalence is not tested."""
    rows = [
        {"target": t, "target_label": label, "fs": fs, "value": v * (1 + 0.01 * i), "run_id": f"{t}{i}"}
        for t, label, fs, v in (("ext4", "ext4", "ext4", 100.0), ("zfs", "zfs (zfs-fuse)", "zfs", 40.0))
        for i in range(6)
    ]
    sized = claim(b={"fs": "zfs"}, expect="less", band=None, seed_value=0.44)
    row = evaluate.evaluate(facts_frame(rows), sized).row(0, named=True)
    assert row["verdict"] == R.DIRECTION_ONLY and row["estimate"] < 0.44  # a larger effect, never said so
    assert (
        "zfs (zfs-fuse) (userspace) against ext4 (kernel): direction only, the seed's size (0.44)" in (row["unchecked"])
    )
    # zfs-fuse slower than ext4 is what FUSE's round trip per call does by itself: the notes say so
    assert "FUSE's cost moves B/A the claim's way here: a direction found could be FUSE's" in row["unchecked"]
    faster = claim(b={"fs": "zfs"}, expect="greater")  # zfs faster: FUSE works against it
    assert (
        "against the claim here: a direction found holds despite it"
        in (evaluate.evaluate(facts_frame(rows), faster)["unchecked"][0])
    )
    swapped = claim(a={"fs": "zfs"}, b={"fs": "ext4"}, expect="greater")  # ext4 over zfs-fuse: FUSE raises B/A
    assert "the claim's way here" in evaluate.evaluate(facts_frame(rows), swapped)["unchecked"][0]
    same = evaluate.evaluate(facts_frame(rows), claim(b={"fs": "zfs"})).row(0, named=True)
    assert same["verdict"] == R.NOT_IN_REGIME and "an equivalence is a statement of size" in same["verdict_text"]
    # the same runs with a kernel ZFS label: the seed's size is judged
    kernel = [{**r, "target_label": r["target"]} for r in rows]
    assert evaluate.evaluate(facts_frame(kernel), sized)["verdict"].to_list() == [R.LARGER]
