"""Each seed's run length beside the study's own, in the paper's methodology."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl

from pgfslab.analysis.verdicts.claims import seed_runs
from pgfslab.paper.methodology import seed_lengths


def test_every_seed_says_how_long_it_ran() -> None:
    runs = {r["seed"]: r for r in seed_runs()}
    assert sorted(runs) == ["000", "001", "002", "003", "004"]
    assert runs["000"]["seconds"] == 2 * 3600  # the talk's "two hour run"
    assert runs["001"]["length"].startswith("100,000 transactions per client")


def test_the_methodology_sets_the_seeds_lengths_beside_the_studys() -> None:
    runs = pl.DataFrame({"status": ["ok", "ok", "skipped", "ok"], "duration_s": [15.0, 20.0, 60.0, 15.0]})
    ctx = SimpleNamespace(runs=runs, cfg=SimpleNamespace(seeds=("004", "000")))
    out = seed_lengths(ctx)  # type: ignore[arg-type]
    assert out["seed"].to_list() == ["000", "004"]  # the seeds the study names, in the seeds' order
    assert set(out["this study's runs"]) == {"15–20 s"}  # the skipped round ran nothing
    assert out["its runs"][0] == "two hours per run"


def test_the_lengths_the_seeds_state_in_their_text() -> None:
    runs = {r["seed"]: r for r in seed_runs()}
    # 003: "The benchmark was run for 600 seconds on each run"; 002: its charts' x range is [0:1800]
    assert (runs["003"]["seconds"], runs["002"]["seconds"]) == (600, 1800)
