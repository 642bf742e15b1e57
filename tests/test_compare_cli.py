"""`python -m pgfslab compare` on a small study database built here (no PostgreSQL involved)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pgfslab.cli.main import main
from pgfslab.ingest.schema import create_schema

# tps per repeat: ext4 vs xfs; tpcb at 1 client differs clearly (xfs 20 % slower), at 4 clients not
TPS = {
    ("ext4", "tpcb", 1): [100.0, 101, 99, 102, 98, 100.5],
    ("xfs", "tpcb", 1): [80.0, 81, 79, 82, 78, 80.5],
    ("ext4", "tpcb", 4): [300.0, 310, 290, 305, 295, 301],
    ("xfs", "tpcb", 4): [301.0, 309, 291, 304, 296, 300],
    ("ext4", "select", 4): [900.0, 910, 890, 905, 895, 901],
    ("xfs", "select", 4): [950.0, 960, 940, 955, 945, 951],
}


def build_db(
    path: Path, tps: dict[tuple[str, str, int], list[float]] = TPS, study: str = "s1", failed_run: bool = True
) -> Path:
    con = duckdb.connect(str(path))
    try:
        create_schema(con)
        i = 0
        for (target, workload, clients), values in tps.items():
            for repeat, v in enumerate(values):
                i += 1
                run_id = f"{study}-{target}-{workload}-c{clients}-r{repeat}"
                con.execute(
                    "INSERT INTO runs (run_id, study, status, target, target_label, fs, fallback, workload, builtin,"
                    " clients, repeat, plan_index) VALUES (?, ?, 'ok', ?, ?, ?, false, ?, ?, ?, ?, ?)",
                    [run_id, study, target, target, target, workload, workload, clients, repeat, i],
                )
                con.execute(
                    "INSERT INTO pgbench_summary (run_id, tps, latency_avg_ms) VALUES (?, ?, ?)",
                    [run_id, v, 1000.0 * clients / v],
                )
        if failed_run:  # a failed run without a summary must be ignored, not counted as a repeat
            con.execute(
                "INSERT INTO runs (run_id, study, status, target, workload, clients, repeat, plan_index)"
                " VALUES (?, ?, 'failed', 'xfs', 'tpcb', 1, 99, 999)",
                [f"{study}-failed", study],
            )
    finally:
        con.close()
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_db(tmp_path / "study.duckdb")


def rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines() if line.split()}


def test_compare_prints_benchstat_table(db, capsys):
    assert main(["compare", "--db", str(db), "--baseline", "ext4", "--candidate", "xfs"]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    # medians 100.25 -> 80.25 (-19.95 %), 6 + 6 repeats fully separated: p = 2 / C(12, 6) = 0.00216,
    # Holm over 3 cells: 3 x 0.00216 = 0.0065; n = 6: the CI is (min, max): 98..102 -> ±2 %,
    # 78..82 around 80.25 -> ±3 %
    assert table["tpcb/c=1"][1:] == ["100", "±", "2%", "80", "±", "3%", "-19.95%", "(p=0.006", "n=6+6)"]
    assert table["tpcb/c=4"][7] == "~"
    assert table["select/c=4"][7] == "+5.55%"  # medians 900.5 -> 950.5
    assert "geomean" in table
    assert "significant regressions of xfs vs ext4: tpcb/c=1 (-19.95%)" in out
    assert "Holm-Bonferroni-adjusted over 3 comparisons" in out


def test_fail_on_regression_exit_code(db, capsys):
    assert main(["compare", "--db", str(db), "--baseline", "ext4", "--candidate", "xfs", "--fail-on-regression"]) == 1
    # the other way round xfs -> ext4 at 1 client is an improvement; select gets slower: regression
    assert main(["compare", "--db", str(db), "--baseline", "xfs", "--candidate", "ext4", "--fail-on-regression"]) == 1
    # without the regressing cells there is nothing to fail on
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--workload",
                "select",
                "--fail-on-regression",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "tpcb/c=1" not in out.split("study s1")[-1]


def test_latency_metric_lower_is_better(db, capsys):
    # latency = 1000 * clients / tps: xfs at 1 client has the higher latency -> regression
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--metric",
                "latency_avg_ms",
                "--fail-on-regression",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "latency_avg_ms (lower is better)" in out
    assert rows(out)["tpcb/c=1"][7].startswith("+")


def test_small_samples_never_significant(tmp_path, capsys):
    tps = {("ext4", "tpcb", 1): [100.0, 101, 99], ("xfs", "tpcb", 1): [50.0, 51, 49]}
    db = build_db(tmp_path / "small.duckdb", tps)
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--adjust",
                "none",
                "--fail-on-regression",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "~" in rows(out)["tpcb/c=1"] and "(p=0.100" in rows(out)["tpcb/c=1"]
    assert "need >= 4 samples to detect a difference at alpha level 0.05" in out


def test_adjust_none_vs_holm(tmp_path, capsys):
    # three cells, 4 + 4 repeats fully separated: p = 0.029 each; significant alone, never after Holm
    sep = ([100.0, 101, 102, 103], [90.0, 91, 92, 93])
    tps = {(t, "tpcb", c): sep[i] for c in (1, 2, 4) for i, t in enumerate(("ext4", "xfs"))}
    db = build_db(tmp_path / "three.duckdb", tps)
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--adjust",
                "none",
                "--fail-on-regression",
            ]
        )
        == 1
    )
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--adjust",
                "holm",
                "--fail-on-regression",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "compare",
                "--db",
                str(db),
                "--baseline",
                "ext4",
                "--candidate",
                "xfs",
                "--adjust",
                "bh",
                "--fail-on-regression",
            ]
        )
        == 1
    )  # BH: 3 x 0.029 / 3 = 0.029 < 0.05
    capsys.readouterr()


def test_errors_are_one_line_exit_2(tmp_path, db, capsys):
    assert main(["compare", "--db", str(db), "--baseline", "ext4", "--candidate", "zfs"]) == 2
    assert "no successful runs of target 'zfs'" in capsys.readouterr().err
    assert main(["compare", "--db", str(tmp_path / "missing.duckdb"), "--baseline", "a", "--candidate", "b"]) == 2
    assert "no such database" in capsys.readouterr().err
    assert main(["compare", "--db", str(db), "--baseline", "ext4", "--candidate", "xfs", "--metric", "nope"]) == 2
    assert "--metric 'nope'" in capsys.readouterr().err


def test_several_studies_need_study_option(tmp_path, capsys):
    path = tmp_path / "two.duckdb"
    build_db(path, study="s1")
    build_db(path, study="s2", failed_run=False)
    assert main(["compare", "--db", str(path), "--baseline", "ext4", "--candidate", "xfs"]) == 2
    assert "choose one with --study" in capsys.readouterr().err
    assert main(["compare", "--db", str(path), "--study", "s2", "--baseline", "ext4", "--candidate", "xfs"]) == 0
    assert "study s2" in capsys.readouterr().out
