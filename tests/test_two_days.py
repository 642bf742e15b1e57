"""Two days of one study in one database (`make analyse STUDY=x DAY2=<earlier raw folder>`,
pgfslab.ingest.days) and burn-in rounds in the ingest (runs.burn_in, left out of the comparisons), on the
recorded studies of tests/data/studies/. Expected values are read from the raw files with plain code."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
import yaml

from pgfslab.analysis import queries
from pgfslab.analysis.answers import exchangeability as ex
from pgfslab.config.study import load_study
from pgfslab.errors import LabError
from pgfslab.ingest import days
from pgfslab.ingest.study import StudySummary, ingest_folder, ingest_study, new_study_database
from pgfslab.records.run_record import parse

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "tests" / "data" / "studies"
H1, H2 = STUDIES / "two-hosts" / "h1", STUDIES / "two-hosts" / "h2"


def raw_tps(run_dir: Path) -> float:
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", (run_dir / "pgbench.stdout").read_text())
    assert m, run_dir
    return float(m[1])


def run_dirs(raw: Path) -> list[Path]:
    return sorted(d for d in raw.iterdir() if (d / "run.json").exists())


@pytest.fixture(scope="module")
def two_days_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("days") / "two-hosts.duckdb"
    days.ingest_days(H1, H2, db, progress=False, external=None)
    return db


def test_each_day_is_a_host_key_with_all_its_runs(two_days_db: Path) -> None:
    with duckdb.connect(str(two_days_db), read_only=True) as con:
        got = dict(con.execute("SELECT host, count(*) FROM runs GROUP BY host").fetchall())
        ids = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
        sources = [
            r[0] for r in con.execute("SELECT DISTINCT source_file FROM files WHERE origin = 'local'").fetchall()
        ]
    # the days are keyed in the order they ran: the folder whose first run started first is day1
    first = {h: min(json.loads((d / "run.json").read_text())["started_at"] for d in run_dirs(h)) for h in (H1, H2)}
    early, late = sorted((H1, H2), key=first.__getitem__)
    assert got == {"day1": len(run_dirs(early)), "day2": len(run_dirs(late))}
    assert {d.name + "@day1" for d in run_dirs(early)} | {d.name + "@day2" for d in run_dirs(late)} == ids
    # every file keeps its real path under data/raw/ (here: outside it, so the folder's name)
    assert {s.split("/", 1)[0] for s in sources} == {"h1", "h2"}


def test_the_paper_says_per_comparison_whether_the_days_agree(two_days_db: Path) -> None:
    runs = queries.headline(two_days_db, "two-hosts", burn_in=True)
    table = ex.two_days(runs, "ext4", 0.05)
    assert table.height == 1
    row = table.row(0, named=True)
    plain = {}
    for raw in (H1, H2):
        tps = {t: [raw_tps(d) for d in run_dirs(raw) if d.name.startswith(f"{t}.")] for t in ("ext4", "xfs")}
        ratios = sorted(b / a for a in tps["ext4"] for b in tps["xfs"])
        plain[raw.name] = statistics.median(ratios)
    # h2's runs started first (run.json started_at), so h2 is day 1
    assert (row["ratio_day_1"], row["ratio_day_2"]) == pytest.approx((plain["h2"], plain["h1"]))
    assert row["verdict"].startswith("days agree" if row["agree"] else "days differ")
    # a study of one day: nothing to say
    assert ex.two_days(runs.filter(pl.col("host") == "day1"), "ext4", 0.05).height == 0


def test_day2_refused_when_not_the_same_study_or_the_same_folder(tmp_path: Path) -> None:
    with pytest.raises(
        LabError, match=r"(?s)DAY2=.*not a raw folder of the same study.*wal-zfs differs from .*h1 in analysis.trim_s"
    ):
        days.ingest_days(H1, STUDIES / "wal-zfs", tmp_path / "x.duckdb", progress=False, external=None)
    with pytest.raises(LabError, match="DAY2=.*the study's own raw folder"):
        days.ingest_days(H1, H1, tmp_path / "x.duckdb", progress=False, external=None)
    with pytest.raises(LabError, match="several hosts"):
        days.ingest_days(H1, STUDIES / "two-hosts", tmp_path / "x.duckdb", progress=False, external=None)
    assert not (tmp_path / "x.duckdb").exists()


def test_a_kept_copy_named_like_the_study_folder_keeps_every_file_of_both_days(tmp_path: Path) -> None:
    # day 2 is a copy kept elsewhere under the study folder's own name (as a user keeps data/raw/<study>/ aside):
    # its files have day 1's names, and every run of both days must still get its throughput from its own
    # pgbench.stdout (read here with plain code)
    raw, kept = tmp_path / "day1" / "wal-zfs", tmp_path / "kept" / "wal-zfs"
    shutil.copytree(STUDIES / "wal-zfs", raw)
    shutil.copytree(STUDIES / "wal-zfs", kept)
    db = tmp_path / "d.duckdb"
    days.ingest_days(raw, kept, db, progress=False, external=None)
    study = yaml.safe_load((raw / "study.yaml").read_text())["study"]
    got = queries.headline(db, study, None, burn_in=True).filter(pl.col("host").is_not_null())
    assert got.height == 2 * len(run_dirs(raw))
    assert got["value"].null_count() == 0
    want = [raw_tps(d) for d in run_dirs(raw)] * 2
    assert sorted(got["value"].to_list()) == pytest.approx(sorted(want))


def test_a_kept_copy_named_like_the_study_folder_keeps_both_days_device_baselines(tmp_path: Path) -> None:
    # the device baselines' fio reports were named after the folder alone: day 2's replaced day 1's rows
    raw, kept = tmp_path / "day1" / "wal-zfs", tmp_path / "kept" / "wal-zfs"
    shutil.copytree(STUDIES / "wal-zfs", raw)
    shutil.copytree(STUDIES / "wal-zfs", kept)
    reports = sorted(f for f in raw.glob("_setup/*/device/*.json") if f.name not in ("baseline.json", "manifest.json"))
    assert reports
    db = tmp_path / "d.duckdb"
    days.ingest_days(raw, kept, db, progress=False, external=None)
    with duckdb.connect(str(db), read_only=True) as con:
        names = {r[0] for r in con.execute("SELECT source_file FROM files").fetchall()}
    stored = [n for n in names if "/_setup/" in n and n.endswith(".json")]
    assert len(stored) == 2 * len(reports)


def test_two_files_of_one_build_under_one_name_are_refused(tmp_path: Path) -> None:
    # the guard beneath the names days.py chooses: one build never stores two files under one source_file name
    one, two = tmp_path / "a" / "wal-zfs", tmp_path / "b" / "wal-zfs"
    shutil.copytree(STUDIES / "wal-zfs", one)
    shutil.copytree(STUDIES / "wal-zfs", two)
    study = load_study(one / "study.yaml")
    summary, db = StudySummary(), tmp_path / "g.duckdb"
    with pytest.raises(LabError, match=r"would be stored as wal-zfs/.*(?s:.*)one file's rows would replace"):
        with new_study_database(db, study, "", None, summary) as con:
            for folder in (one, two):
                ingest_folder(con, folder, study.study, summary, progress=False, host=folder.parent.name)
    assert not db.exists()  # a failed ingest leaves no database behind


def test_ingest_study_command_takes_day2(tmp_path: Path) -> None:
    db = tmp_path / "d.duckdb"
    res = subprocess.run(
        [sys.executable, "-m", "pgfslab", "ingest-study", "--raw", str(H1), "--db", str(db), "--day2", str(H2)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert {r[0] for r in con.execute("SELECT DISTINCT host FROM runs WHERE origin = 'local'").fetchall()} == {
            "day1",
            "day2",
        }


def test_burn_in_runs_are_ingested_shown_and_never_compared(tmp_path: Path) -> None:
    """A copy of a recorded study whose first round is marked burn-in (as run.burn_in_rounds: 1 records it)."""
    raw = tmp_path / "two-hosts"
    shutil.copytree(H1, raw)
    marked = []
    for d in run_dirs(raw):
        rec = json.loads((d / "run.json").read_text())
        if rec["repeat"] == 1:
            rec.update(burn_in=True, repeat=0)
            (d / "run.json").write_text(json.dumps(rec))
            marked.append(d.name)
    assert len(marked) == 2
    db = tmp_path / "b.duckdb"
    ingest_study(raw, db, progress=False, external=None)
    with duckdb.connect(str(db), read_only=True) as con:
        flagged = {r[0] for r in con.execute("SELECT run_id FROM runs WHERE burn_in").fetchall()}
    assert flagged == set(marked)
    compared = queries.headline(db, "two-hosts")
    assert set(compared["run_id"]) == {d.name for d in run_dirs(raw)} - set(marked)
    every = queries.headline(db, "two-hosts", burn_in=True)
    assert set(every["run_id"]) == {d.name for d in run_dirs(raw)}
    assert ex.counted(every)["run_id"].sort().to_list() == compared["run_id"].sort().to_list()
    table = ex.burn_in_table(every)
    assert set(table["run_id"]) == set(marked)
    for row in table.iter_rows(named=True):
        rest = [raw_tps(d) for d in run_dirs(raw) if d.name.startswith(row["target"] + ".") and d.name not in marked]
        assert row["over_median"] == pytest.approx(raw_tps(raw / row["run_id"]) / statistics.median(rest))
    # the per-second series the comparisons read leave them out too
    series = queries.throughput(db, "two-hosts")
    assert not set(series["run_id"]) & set(marked)


@pytest.mark.slow  # executes a notebook
def test_exchangeability_notebook_says_whether_two_days_agree(two_days_db: Path, tmp_path: Path) -> None:
    import papermill as pm

    pm.execute_notebook(
        str(REPO / "notebooks" / "exchangeability.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters={
            "db": str(two_days_db),
            "study": "two-hosts",
            "figures_dir": str(tmp_path / "figs"),
            "tables_dir": str(tmp_path / "tables"),
        },
        kernel_name="python3",
        progress_bar=False,
        cwd=str(REPO / "notebooks"),
    )
    blocks = json.loads((tmp_path / "tables" / "exchangeability.json").read_text())["blocks"]
    text = " ".join(b.get("markdown", "") + b.get("caption", "") for b in blocks)
    ratios = {}
    for raw in (H1, H2):
        tps = {t: [raw_tps(d) for d in run_dirs(raw) if d.name.startswith(f"{t}.")] for t in ("ext4", "xfs")}
        ratios[raw.name] = statistics.median(sorted(b / a for a in tps["ext4"] for b in tps["xfs"]))
    assert "whether the two days agree" in text or "the days agree when their intervals overlap" in text
    # the table's row: day 1 (h2, whose runs started first) with its interval, then day 2 (h1)
    assert re.search(rf"\| {ratios['h2']:.2f} \| \[[0-9., ]+\] \| {ratios['h1']:.2f} \| \[[0-9., ]+\] \|", text)
    assert re.search(r"On two days \(1 comparisons against ext4\), [01] agree and [01] differ", text)


def test_start_states_per_cell_from_the_runs_records() -> None:
    runs = pl.DataFrame(
        {
            "run_id": ["a1", "a2", "a3", "b1", "old"],
            "target_label": ["a", "a", "a", "b", "b"],
            "workload": ["tpcb"] * 5,
            "clients": [4] * 5,
        }
    )
    warm = {"cache": "warm", "autovacuum_quiet": True, "steady": True}
    records = {
        "a1": {"start_state": {**warm, "hit_ratio": 0.40}},
        "a2": {"start_state": {**warm, "hit_ratio": 0.50, "autovacuum_quiet": False}},
        "a3": {"start_state": {**warm, "hit_ratio": 0.90, "steady": False}},
        "b1": {"start_state": {"cache": "cold", "autovacuum_quiet": True, "hit_ratio": None}},
        "old": {},  # recorded before the defined starting state: left out
    }
    typed = {k: parse(v)[0] for k, v in records.items()}
    got = {r["target_label"]: r for r in ex.start_states(runs, typed).iter_rows(named=True)}
    assert got["a"]["runs"] == 3 and got["a"]["autovacuum_quiet"] == 2
    assert got["a"]["hit_ratio"] == pytest.approx(0.50) and (got["a"]["steady"], got["a"]["warm"]) == (2, 3)
    assert got["b"]["cache"] == "cold" and got["b"]["runs"] == 1 and got["b"]["hit_ratio"] is None
    assert got["b"]["warm"] == 0
    assert ex.start_states(runs, {}).height == 0


def test_each_days_device_baseline_is_its_own_row_and_its_runs_own(tmp_path: Path) -> None:
    # day 2's device measured another random-read rate: two rows for the target, never one mixing them, and each
    # run's device-class measure is its own day's (read here from the fio reports with plain code)
    from pgfslab.analysis import device
    from pgfslab.analysis.verdicts.facts import run_facts

    raw, kept = tmp_path / "day1" / "wal-zfs", tmp_path / "kept" / "wal-zfs"
    shutil.copytree(STUDIES / "wal-zfs", raw)
    shutil.copytree(STUDIES / "wal-zfs", kept)
    report = kept / "_setup" / "ext4" / "device" / "randread_qd1.json"
    fio = json.loads(report.read_text())
    fio["jobs"][0]["read"]["iops"] = fio["jobs"][0]["read"]["iops"] / 100  # a magnetic-class device that day
    report.write_text(json.dumps(fio))
    want = {
        d: json.loads((r / "_setup" / "ext4" / "device" / "randread_qd1.json").read_text())["jobs"][0]["read"]["iops"]
        for d, r in (("day1", raw), ("day2", kept))
    }
    db = tmp_path / "d.duckdb"
    days.ingest_days(raw, kept, db, progress=False, external=None)
    study = yaml.safe_load((raw / "study.yaml").read_text())["study"]
    rows = device.device_table(str(db), study).filter(pl.col("target") == "ext4")
    assert rows.height == 2 and rows["host"].n_unique() == 2
    got = dict(zip(rows["host"].to_list(), rows["randread_qd1_iops"].to_list()))
    assert sorted(got.values()) == pytest.approx(sorted(want.values()))
    facts = run_facts(db, study).filter(pl.col("target") == "ext4")
    hosts = facts["run_id"].str.extract(r"@(.+)$")
    per_run = dict(zip(hosts.to_list(), facts["randread_qd1_iops"].to_list()))
    assert per_run == pytest.approx(got)  # every run of a day against that day's baseline
