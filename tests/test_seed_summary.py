"""`pgfslab seed-summary`: docs/seed-studies.md's summary written from the studies' verdict tables and databases,
here two small studies built as real files (a Parquet verdict table, a DuckDB database with the lab's schema)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pgfslab.cli.main import main
from pgfslab.errors import LabError
from pgfslab.paper import seed_summary

SCHEMA = Path(seed_summary.paths.LAB) / "pgfslab" / "ingest" / "schema.sql"
PAGE = """# Seed studies

Text a person wrote, kept as it is.

{start}
old text
{end}

More text after.
"""
T0 = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_study(root: Path, study: str, rows: list[dict], runs: list[tuple[timedelta, timedelta, str, str]]) -> None:
    """build/<study>/tables/seed_verdicts.parquet from `rows`, data/<study>.duckdb holding `runs` as
    (start offset from T0, length, status, commit)."""
    tables = root / "build" / study / "tables"
    tables.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(tables / "seed_verdicts.parquet")
    (root / "data").mkdir(exist_ok=True)
    with duckdb.connect(str(root / "data" / f"{study}.duckdb")) as con:
        con.execute(SCHEMA.read_text())
        for i, (start, length, status, commit) in enumerate(runs):
            con.execute(
                "INSERT INTO runs (run_id, study, status, started_at, ended_at, git_commit, run_json) "
                "VALUES (?, ?, ?, ?, ?, ?, '{}')",
                [f"r{i}", study, status, T0 + start, T0 + start + length, commit],
            )


def verdict(claim: str, est: float | None, lo: float | None, hi: float | None, word: str, **more: object) -> dict:
    row = {"claim": claim, "seed": "000", "cell": "tpcb-like, 4 clients", "compared": "xfs / ext4", "a": "ext4"}
    row |= {"b": "xfs", "n_a": 9, "n_b": 9, "estimate": est, "lo": lo, "hi": hi, "coverage": 0.96, "test": "HL"}
    return row | {"verdict": word} | more


@pytest.fixture
def page(tmp_path: Path) -> Path:
    p = tmp_path / "seed-studies.md"
    p.write_text(PAGE.format(start=seed_summary.START, end=seed_summary.END))
    return p


def test_two_studies(tmp_path: Path, page: Path) -> None:
    s = timedelta(seconds=1)
    make_study(
        tmp_path,
        "default",
        [
            verdict("s000-xfs-ext4", 0.97, 0.90, 1.06, "not resolved"),
            verdict("s000-btrfs-slower", 0.52, 0.49, 0.58, "holds"),
            verdict("s000-zfs-snap", None, None, None, "not tested in this study"),
        ],
        # 35 min 22 s from the first start to the last end; the skipped round (no commit, later) does not count
        [(0 * s, 20 * s, "ok", COMMIT), (2102 * s, 20 * s, "failed", COMMIT), (4000 * s, 0 * s, "skipped", None)],
    )
    make_study(
        tmp_path,
        "fs-micro",
        [
            verdict("s003-deletes", 0.30, 0.27, 0.32, "holds") | {"seed": "003", "direction": "agrees"},
            verdict("s003-creates", 0.80, 0.70, 0.90, "same direction, smaller effect") | {"seed": "003"},
        ],
        # over midnight, two commits
        [(13 * 3600 * s, 3600 * s, "ok", "aaaaaaaaaaaaaaaa"), (14 * 3600 * s, 3601 * s, "ok", "bbbbbbbbbbbbbbbb")],
    )
    assert main(["seed-summary", "--root", str(tmp_path), "--page", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Seed studies\n\nText a person wrote, kept as it is.\n")
    assert text.endswith(f"{seed_summary.END}\n\nMore text after.\n")
    assert "old text" not in text
    assert "**" not in text  # nothing in bold
    lines = text.splitlines()
    default = next(ln for ln in lines if ln.startswith("| 000 | `default`"))
    cells = [c.strip() for c in default.strip("|").split("|")]
    # seed, study, date, commit, runs, span, then one count per verdict word of either table, from agreement
    # to no test (not alphabetical: a smaller effect comes right after "holds"); a claim the study's runs do not
    # reach is no count (padding), but one sentence under the study's rows
    assert cells == ["000", "`default`", "2026-11-24", "`0123456789ab`", "2", "35 min 22 s", "1", "0", "1"]
    header = [c.strip() for c in lines[lines.index(default) - 2].strip("|").split("|")]
    assert header[-3:] == ["holds", "same direction, smaller effect", "not resolved"]
    micro = next(ln for ln in lines if ln.startswith("| 003 | `fs-micro`"))
    assert "2026-11-24 – 2026-11-25" in micro
    assert "`aaaaaaaaaaaa` (1 runs), `bbbbbbbbbbbb` (1 runs)" in micro
    assert "2 h 0 min 1 s" in micro
    # each study's rows in words: compared, estimate, the A/A band (none here), runs, the verdict, its notes
    assert (
        "| `s000-xfs-ext4` | xfs / ext4 · tpcb-like, 4 clients | 0.97 [0.90, 1.06] (96.0 %) | – | 9+9 | not resolved | – |"
        in text
    )
    assert "`s000-zfs-snap` |" not in text
    assert "1 claims of its seeds need runs this study does not make (counted nowhere above): `s000-zfs-snap`." in text


def test_only_the_seeds_own_condition_and_the_verdicts_sentence(tmp_path: Path, page: Path) -> None:
    # a claim's primary cell gives its verdict; a context cell is in the paper, not in the summary; "only a
    # figure: <which>" counts as "only a figure"
    said = "holds: the seed's 1.45 is inside [1.20, 1.60]"
    make_study(
        tmp_path,
        "default",
        [
            verdict("s000-a", 1.4, 1.2, 1.6, "holds", role="primary", verdict_text=said, aa_lo=0.97, aa_hi=1.03),
            verdict("s000-a", 0.9, 0.8, 1.0, "opposite direction", role="context", verdict_text="opposite direction"),
            verdict("s000-b", None, None, None, "only a figure: throughput", role=None, verdict_text="only a figure"),
        ],
        [(timedelta(0), timedelta(seconds=20), "ok", COMMIT)],
    )
    assert main(["seed-summary", "--root", str(tmp_path), "--page", str(page)]) == 0
    text = page.read_text()
    assert f"| 1.40 [1.20, 1.60] (96.0 %) | [0.97, 1.03] | 9+9 | {said} | – |" in text
    assert "opposite direction" not in text
    header = next(ln for ln in text.splitlines() if ln.startswith("| seed | study"))
    assert header.rstrip(" |").endswith("| holds | only a figure")
    # a second run writes the same page
    before = page.read_text()
    seed_summary.write(tmp_path, page)
    assert page.read_text() == before


def test_no_verdict_tables(tmp_path: Path, page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["seed-summary", "--root", str(tmp_path), "--page", str(page)]) == 0
    assert "no verdict table" in capsys.readouterr().err
    text = page.read_text()
    assert f"{seed_summary.START}\n\nNot yet generated: no study has a verdict table here" in text
    assert "old text" not in text and text.endswith("More text after.\n")


def test_page_without_markers_is_left_alone(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# a page\n")
    with pytest.raises(LabError, match="p.md: needs the two markers"):
        seed_summary.write(tmp_path, page)
    assert page.read_text() == "# a page\n"


def test_missing_database_is_named(tmp_path: Path, page: Path) -> None:
    make_study(tmp_path, "x", [verdict("c", 1.0, 0.9, 1.1, "holds")], [])
    (tmp_path / "data" / "x.duckdb").unlink()
    with pytest.raises(LabError, match=r"x\.duckdb is missing"):
        seed_summary.write(tmp_path, page)
    assert "old text" in page.read_text()


def test_not_a_verdict_table(tmp_path: Path, page: Path) -> None:
    make_study(tmp_path, "x", [{"something": 1}], [])
    with pytest.raises(LabError, match=r"seed_verdicts\.parquet: not a verdict table \(no column claim, verdict\)"):
        seed_summary.write(tmp_path, page)


def test_the_lab_page_has_the_markers() -> None:
    text = seed_summary.PAGE.read_text()
    assert text.count(seed_summary.START) == 1 and text.count(seed_summary.END) == 1


def test_seed_studies_without_a_verdict_table_are_named_not_kept(tmp_path: Path) -> None:
    """A seed study of the lab's configs with no verdict table and no record is named in one sentence; a config
    that names no seed is not a seed study."""
    configs = tmp_path / "config"
    configs.mkdir()
    (configs / "default.yaml").write_text("study: default\nseeds: ['000']\n")
    (configs / "compare.yaml").write_text("study: fs-compare\nseeds: ['000']\n")
    (configs / "mine.yaml").write_text("study: mine\n")
    make_study(
        tmp_path,
        "default",
        [verdict("s000-a", 1.4, 1.2, 1.6, "holds")],
        [(timedelta(0), timedelta(seconds=20), "ok", COMMIT)],
    )
    studies = [seed_summary.read_study(*found) for found in seed_summary.find_studies(tmp_path)]
    assert seed_summary.seed_studies(configs) == ["fs-compare", "default"]
    text = seed_summary.summary_markdown(studies, configs)
    assert "so not in it: `fs-compare` (run each" in text
    assert "`mine`" not in text and "`default` (" not in text


def test_per_claim_a_study_decides_when_every_primary_cell_does(tmp_path: Path, page: Path) -> None:
    one = timedelta(seconds=20)
    make_study(
        tmp_path,
        "default",
        [
            verdict("s000-a", 1.0, 0.9, 1.1, "not resolved", role="primary"),
            verdict("s000-b", 1.0, 0.97, 1.03, "holds", role="primary"),
            verdict("s000-b", 1.2, 1.1, 1.3, "not the same", role="primary"),
            verdict("s000-c", 1.0, 0.9, 1.1, "not resolved", role="primary"),
            verdict("s000-c", 0.5, 0.4, 0.6, "opposite direction", role="primary"),
        ],
        [(timedelta(0), one, "ok", COMMIT)],
    )
    make_study(
        tmp_path,
        "fs-compare",
        [
            verdict("s000-a", 0.5, 0.4, 0.6, "opposite direction", role="primary"),
            verdict("s000-c", None, None, None, "not tested in the seed's regime: not I/O-bound", role="primary"),
            verdict("s000-d", 0.5, 0.4, 0.6, "holds", role="context"),
        ],
        [(timedelta(0), one, "ok", COMMIT)],
    )
    table = seed_summary.by_claim(seed_summary.write(tmp_path, page))
    assert dict(zip(table["claim"], table["decided"])) == {"s000-a": True, "s000-b": True, "s000-c": False}
    said = dict(zip(table["claim"], table["primary cells' verdicts"]))
    assert said["s000-c"] == (
        "`default`: not resolved, opposite direction; `fs-compare`: not tested in the seed's regime"
    )
    assert "2 of 3 claims set against runs in their seed's condition were decided by a study" in page.read_text()


def test_a_claim_beyond_this_machine_is_shown_and_left_out_of_what_it_can_decide(tmp_path: Path, page: Path) -> None:
    """claims.yaml's `beyond_here`: zfs-fuse cannot give kernel ZFS's steadiness as an equivalence; the claim's verdict stays in the table,
    and the share of claims this machine can decide in principle counts the others only."""
    make_study(
        tmp_path,
        "fs-micro",
        [
            verdict("s000-zfs-throughput-very-stable", 1.2, 0.8, 1.5, "not resolved", role="primary"),
            verdict("s000-a", 0.5, 0.4, 0.6, "opposite direction", role="primary"),
            verdict("s000-b", 1.0, 0.9, 1.1, "not resolved", role="primary"),
        ],
        [(timedelta(0), timedelta(seconds=20), "ok", COMMIT)],
    )
    table = seed_summary.by_claim(seed_summary.write(tmp_path, page))
    assert table.filter(pl.col("beyond here").is_not_null())["claim"].to_list() == ["s000-zfs-throughput-very-stable"]
    text = page.read_text()
    assert "1 of 3 claims set against runs in their seed's condition were decided by a study" in text
    assert "Of the 2 this machine can decide in principle, 1 were decided (50 %); the other 1 need" in text
    assert "Beyond this machine: `s000-zfs-throughput-very-stable`: an equivalence of ZFS's steadiness" in text


def test_a_study_run_earlier_stays_from_its_record_and_a_new_run_replaces_it(tmp_path: Path, page: Path) -> None:
    """The seed studies take longer than one sitting: a study's verdicts are kept beside the page
    (results/<study>.parquet and .json) and the page is written from every record, each with its own date and
    commit, until the study runs again."""
    one = timedelta(seconds=20)
    earlier, later = tmp_path / "monday", tmp_path / "tuesday"
    make_study(earlier, "fs-compare", [verdict("s000-a", 0.5, 0.4, 0.6, "opposite direction", role="primary")],
               [(timedelta(0), one, "ok", "a" * 40)])  # fmt: skip
    make_study(earlier, "default", [verdict("s000-b", 1.0, 0.9, 1.2, "not resolved", role="primary")],
               [(timedelta(0), one, "ok", "a" * 40)])  # fmt: skip
    seed_summary.write(earlier, page)
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [
        "default.json", "default.parquet", "fs-compare.json", "fs-compare.parquet"]  # fmt: skip
    # the next day, elsewhere: only the default study runs again, with another commit and verdict
    make_study(later, "default", [verdict("s000-b", 1.0, 0.95, 1.05, "holds", role="primary")],
               [(timedelta(days=1), one, "ok", "b" * 40)])  # fmt: skip
    assert main(["seed-summary", "--root", str(later), "--page", str(page)]) == 0
    lines = page.read_text().splitlines()
    compare = next(ln for ln in lines if ln.startswith("| 000 | `fs-compare`"))
    default = next(ln for ln in lines if ln.startswith("| 000 | `default`"))
    assert "2026-11-24" in compare and "`aaaaaaaaaaaa`" in compare
    assert "2026-11-25" in default and "`bbbbbbbbbbbb`" in default
    assert "| `s000-b` | xfs / ext4 · tpcb-like, 4 clients | 1.00 [0.95, 1.05] (96.0 %) |" in page.read_text()
    assert "1.00 [0.90, 1.20]" not in page.read_text()
    said = dict(zip(*seed_summary.by_claim(seed_summary.read_records(tmp_path / "results"))[["claim", "decided"]]))
    assert said == {"s000-a": True, "s000-b": True}
    # with nothing under the root, the page is still written from the records
    assert main(["seed-summary", "--root", str(tmp_path / "empty"), "--page", str(page)]) == 0
    assert "`fs-compare`" in page.read_text() and "Not yet generated" not in page.read_text()


def test_a_broken_record_is_named(tmp_path: Path, page: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "x.json").write_text('{"study": "x"}')
    with pytest.raises(LabError, match=r"results/x\.json: not a seed-summary record with its table x\.parquet"):
        seed_summary.write(tmp_path, page)
    assert "old text" in page.read_text()
