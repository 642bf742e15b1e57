"""`make bench`'s precision per machine-minute (benchmarks/precision.py) on a recorded study, against values
read from its raw files with plain code: the headline cell's interval half-widths (order statistics of the
median), the run-to-run CV of every tpcb cell, and the A/A control's half-width when the study names a twin."""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
from pathlib import Path

import pytest
import yaml
from scipy import stats as sps

from benchmarks import precision

REPO = Path(__file__).resolve().parent.parent
WAL_ZFS = REPO / "tests" / "data" / "studies" / "wal-zfs"


def tps(run_dir: Path) -> float:
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", (run_dir / "pgbench.stdout").read_text())
    assert m, run_dir
    return float(m[1])


def values(raw: Path, target: str, cell: str) -> list[float]:
    return [tps(d) for d in sorted(raw.glob(f"{target}.{cell}.r*"))]


@pytest.fixture
def with_twin(tmp_path: Path) -> Path:
    """wal-zfs with zfs-gzip-walext4 standing in as zfs-gzip's A/A twin and tpcb/c=4 as its headline cell."""
    raw = tmp_path / "wal-zfs"
    shutil.copytree(WAL_ZFS, raw)
    cfg = yaml.safe_load((raw / "study.yaml").read_text())
    cfg["targets"]["zfs-gzip-walext4"]["aa_twin_of"] = "zfs-gzip"
    cfg["precision"] = {"cells": ["tpcb/c=4"], "half_width": 0.05, "budget_min": 15}
    (raw / "study.yaml").write_text(yaml.safe_dump(cfg))
    return raw


def test_headline_cell_half_widths_and_cv(with_twin: Path) -> None:
    s = precision.summarize(with_twin)
    assert s is not None and s.cell == "tpcb/c=4"
    assert set(s.half_widths) == {"btrfs-zlib", "ext4", "zfs-gzip"}  # the twin is no compared target
    for target, half in s.half_widths.items():
        xs = sorted(values(with_twin, target, "tpcb.c4"))
        # 5 runs: the 95 % distribution-free interval of the median is [x(1), x(5)] (coverage 93.75 % < 95 %)
        assert len(xs) == 5 and half is None
    for (cell, target), cv in s.cv.items():
        xs = values(with_twin, target, cell.replace("/c=", ".c"))
        assert cv == pytest.approx(statistics.stdev(xs) / statistics.mean(xs))
    assert {t for _, t in s.cv} == {"btrfs-zlib", "ext4", "zfs-gzip"}
    walls = [json.loads((d / "run.json").read_text())["wall_s"] for d in with_twin.glob("*.tpcb.c4.r*")]
    assert s.machine_min == pytest.approx(sum(walls) / 60)
    # the A/A control: twin/baseline, its interval's half-width
    a, b = values(with_twin, "zfs-gzip", "tpcb.c4"), values(with_twin, "zfs-gzip-walext4", "tpcb.c4")
    ratios = sorted(y / x for x in a for y in b)
    # 5 + 5 runs: the exact two-sided 95 % Mann-Whitney interval runs from the 3rd to the 23rd of the 25
    # pairwise ratios (U <= 2 rejects), around their median (the Hodges-Lehmann ratio)
    assert s.aa["zfs-gzip-walext4"] == pytest.approx((ratios[22] - ratios[2]) / 2 / ratios[12])


def test_half_width_at_lower_confidence(with_twin: Path) -> None:
    cfg = yaml.safe_load((with_twin / "study.yaml").read_text())
    cfg["precision"]["confidence"] = 0.9
    (with_twin / "study.yaml").write_text(yaml.safe_dump(cfg))
    s = precision.summarize(with_twin)
    assert s is not None
    for target, half in s.half_widths.items():
        xs = sorted(values(with_twin, target, "tpcb.c4"))
        assert half == pytest.approx((xs[4] - xs[0]) / 2 / xs[2])
    figs = precision.figures(s)
    assert figs[0].value == f"±{100 * max(s.half_widths.values()):.1f} %"


def test_goals_printed_and_no_raw_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert precision.run(tmp_path / "nothing") == []
    out = capsys.readouterr().out
    assert "no raw folder" in out and "the A/A interval within +-3 %" in out


def test_a_study_paired_by_round_gets_its_a_a_paired_and_its_calibration(with_twin: Path) -> None:
    cfg = yaml.safe_load((with_twin / "study.yaml").read_text())
    cfg["analysis"] = {**(cfg.get("analysis") or {}), "primary": "rounds-t"}
    (with_twin / "study.yaml").write_text(yaml.safe_dump(cfg))
    s = precision.summarize(with_twin)
    assert s is not None and s.primary == "rounds-t"
    by_round = {}
    for target in ("zfs-gzip", "zfs-gzip-walext4"):
        for d in with_twin.glob(f"{target}.tpcb.c4.r*"):
            by_round[(target, json.loads((d / "run.json").read_text())["repeat"])] = tps(d)
    d = [
        math.log(by_round[("zfs-gzip-walext4", r)] / by_round[("zfs-gzip", r)])
        for (t, r) in by_round
        if t == "zfs-gzip"
    ]
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    mean = statistics.mean(d)
    assert s.aa["zfs-gzip-walext4"] == pytest.approx((math.exp(ci.high) - math.exp(ci.low)) / 2 / math.exp(mean))
    c = s.calibration["zfs-gzip-walext4"]
    assert c["rounds"] == 5 and c["pseudo-studies"] == 2000 and 0 <= c["covered %"] <= 100
    names = [f.name for f in precision.figures(s)]
    assert "precision: the primary comparison's coverage on zfs-gzip-walext4" in names
