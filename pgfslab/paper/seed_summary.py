"""`pgfslab seed-summary`: what the seed studies found, written into docs/seed-studies.md from each study's verdict
table (build/<study>/tables/seed_verdicts.parquet, saved by notebooks/seed_verdicts.ipynb) and its database's
runs (date, lab commit, the runs' span), never by hand. The page's text outside the markers is left as it is.

Each study found is also kept as a record beside the page (docs/results/<study>.parquet, the verdict table as
saved, and <study>.json, where its runs came from), and the page is written from every record there: the seed
studies take longer together than one sitting of a machine, so a study run elsewhere or earlier stays on the
page, with its own date and commit, until it is run again."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from pgfslab import paths, yaml_text
from pgfslab.analysis import design, plan_record, queries
from pgfslab.analysis.plan_record import PlanInputs
from pgfslab.analysis.report import markdown_table
from pgfslab.analysis.verdicts import claims as lab_claims
from pgfslab.analysis.verdicts import ratio as R
from pgfslab.analysis.verdicts.table import NOT_IN_STUDY, STATUS_ORDER
from pgfslab.config.model import AnalysisSettings
from pgfslab.errors import LabError

START = "<!-- seed-summary:start (written by `pgfslab seed-summary` from the studies' verdict tables; do not edit) -->"
END = "<!-- seed-summary:end -->"
PAGE = paths.LAB / "docs" / "seed-studies.md"
RECORDS = paths.RESULTS.name  # beside the page: docs/results/<study>.parquet and .json
CONFIGS = paths.LAB / "config"
NOT_YET = (
    "Not yet generated: no study has a verdict table here (`build/<study>/tables/seed_verdicts.parquet`) or a record "
    "in `docs/results/`. "
    "Run a seed study (`make run CONFIG=config/<name>.yaml`), then `pgfslab seed-summary`."
)
# columns shown in other forms (the comparison and its interval) or only used to compute them


@dataclass(frozen=True)
class StudyVerdicts:
    """One study's verdict table with the provenance of the runs it was computed from."""

    study: str
    verdicts: pl.DataFrame
    first_start: datetime | None
    last_end: datetime | None
    commits: dict[str, int]  # lab commit -> runs measured with it, in the order of first use
    runs: int  # runs that ran (precision rounds skipped as unneeded ran nothing and are not counted)
    plan: PlanInputs | None = None  # what `pgfslab plan` sizes the study from, measured on these runs


def find_studies(root: Path) -> list[tuple[str, Path, Path]]:
    """(study, verdict table, database) of every study under `root` that has a verdict table."""
    tables = sorted((root / "build").glob("*/tables/seed_verdicts.parquet"))
    return [(t.parent.parent.name, t, root / "data" / f"{t.parent.parent.name}.duckdb") for t in tables]


def read_study(study: str, table: Path, db: Path) -> StudyVerdicts:
    """The verdict table of `study` and, from its database, when its runs ran and with which lab commit."""
    if not db.exists():
        raise LabError(f"{table}: the study's database {db} is missing (its dates and commit come from there)")
    try:
        verdicts = pl.read_parquet(table)
    except Exception as exc:  # polars raises several kinds for a file that is not Parquet
        raise LabError(f"{table}: not a readable verdict table ({exc})") from exc
    missing = {"claim", "verdict"} - set(verdicts.columns)
    if missing:
        raise LabError(f"{table}: not a verdict table (no column {', '.join(sorted(missing))})")
    with duckdb.connect(str(db), read_only=True) as con:
        ran = con.sql(
            "SELECT started_at, ended_at, git_commit FROM runs WHERE study = ? AND status <> 'skipped'",
            params=[study],
        ).pl()
    # in the order they were first used
    commits = (
        ran.group_by(pl.col("git_commit").fill_null("unknown"))
        .agg(pl.len(), pl.col("started_at").min().alias("first"))
        .sort("first", "git_commit")
    )
    return StudyVerdicts(
        study=study,
        verdicts=verdicts,
        first_start=ran["started_at"].min() if ran.height else None,
        last_end=ran["ended_at"].max() if ran.height else None,
        commits=dict(zip(commits["git_commit"], commits["len"])),
        runs=ran.height,
        plan=design.measured_inputs(db, study, _trim_s(db)),
    )


def _trim_s(db: Path) -> float:
    """The seconds the study's analysis trims from each run's start, from the resolved config its database holds
    (the schema's default where it holds none): the steadiness measures the plan keeps are read after it."""
    try:
        return float(queries.study_of(db).analysis.trim_s)
    except queries.MissingData:
        return float(AnalysisSettings().trim_s)


def save_record(s: StudyVerdicts, records: Path) -> None:
    """Keep `s` as a record in `records` (its verdict table as Parquet, its provenance as JSON), replacing the
    study's earlier record; each file is written aside and moved into place, so a record is whole or absent."""
    records.mkdir(parents=True, exist_ok=True)
    provenance = {
        "study": s.study,
        "first_start": s.first_start.isoformat() if s.first_start else None,
        "last_end": s.last_end.isoformat() if s.last_end else None,
        "commits": [[c, n] for c, n in s.commits.items()],
        "runs": s.runs,
        **({"plan": plan_record.to_json(s.plan)} if s.plan is not None else {}),
    }
    table, meta = records / f"{s.study}.parquet", records / f"{s.study}.json"
    s.verdicts.write_parquet(table.with_name(table.name + ".tmp"))
    meta.with_name(meta.name + ".tmp").write_text(json.dumps(provenance, indent=1) + "\n")
    table.with_name(table.name + ".tmp").replace(table)
    meta.with_name(meta.name + ".tmp").replace(meta)


def read_record(meta: Path) -> StudyVerdicts:
    """A record `save_record` wrote (`meta`, its JSON; the verdict table beside it), or an error naming the file."""
    table = meta.with_suffix(".parquet")
    try:
        p = json.loads(meta.read_text())
        verdicts = pl.read_parquet(table)
        when = [datetime.fromisoformat(p[k]) if p[k] else None for k in ("first_start", "last_end")]
        return StudyVerdicts(
            study=str(p["study"]),
            verdicts=verdicts,
            first_start=when[0],
            last_end=when[1],
            commits={str(c): int(n) for c, n in p["commits"]},
            runs=int(p["runs"]),
            plan=plan_record.from_record(p, meta),
        )
    except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError) as exc:
        raise LabError(f"{meta}: not a seed-summary record with its table {table.name} ({exc})") from exc


def read_records(records: Path) -> list[StudyVerdicts]:
    """Every record in `records`, by study name."""
    return [read_record(m) for m in sorted(records.glob("*.json"))] if records.is_dir() else []


def _span(s: StudyVerdicts) -> str:
    if s.first_start is None or s.last_end is None:
        return "–"
    total = round((s.last_end - s.first_start).total_seconds())
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    return (f"{h} h " if h else "") + (f"{m} min " if h or m else "") + f"{sec} s"


def _dates(s: StudyVerdicts) -> str:
    if s.first_start is None or s.last_end is None:
        return "–"
    a, b = s.first_start.date().isoformat(), s.last_end.date().isoformat()
    return a if a == b else f"{a} – {b}"


def _commits(s: StudyVerdicts) -> str:
    if not s.commits:
        return "–"
    if len(s.commits) == 1:
        return f"`{next(iter(s.commits))[:12]}`"
    return ", ".join(f"`{c[:12]}` ({n} runs)" for c, n in s.commits.items())


def _text(v: object) -> str:
    return "–" if v is None else str(v).replace("|", "\\|").replace("\n", " ")


def _interval(est: float | None, lo: float | None, hi: float | None, coverage: float | None) -> str:
    if est is None or math.isnan(est):
        return "–"
    ends = ["–" if x is None or math.isnan(x) else ("∞" if math.isinf(x) else f"{x:.2f}") for x in (lo, hi)]
    share = "" if coverage is None or math.isnan(coverage) else f" ({100 * coverage:.1f} %)"
    return f"{est:.2f} [{ends[0]}, {ends[1]}]{share}"


def overview(studies: list[StudyVerdicts]) -> pl.DataFrame:
    """One row per study: its seeds, when and with which commit its runs ran, their span, and how many of its
    verdict table's rows carry each verdict (the verdict words as the table has them)."""
    found = {w for s in studies for w in _kinds(_own(s.verdicts)).drop_nulls().unique()}
    words = [w for w in STATUS_ORDER if w in found] + sorted(found - set(STATUS_ORDER))  # agreement first
    rows = []
    for s in studies:
        seeds = sorted(s.verdicts["seed"].drop_nulls().unique()) if "seed" in s.verdicts.columns else []
        counts = _kinds(_own(s.verdicts)).value_counts()
        count = dict(zip(counts["verdict"], counts["count"]))
        rows.append(
            {
                "seed": ", ".join(seeds) or "–",
                "study": f"`{s.study}`",
                "date": _dates(s),
                "lab commit": _commits(s),
                "runs": s.runs,
                "first run's start to last run's end": _span(s),
                **{w: int(count.get(w, 0)) for w in words},
            }
        )
    return pl.DataFrame(rows)


def _own(v: pl.DataFrame) -> pl.DataFrame:
    """The rows of the seed's own condition (role primary) and the claims without a cell; context cells are
    in the study's paper, never part of a claim's verdict. A claim the study's runs do not reach at all is
    no row (`_untested`): a count of what a study could not test is padding."""
    own = v.filter(pl.col("role").is_null() | (pl.col("role") == "primary")) if "role" in v.columns else v
    return own.filter(pl.col("verdict") != NOT_IN_STUDY)


def _untested(v: pl.DataFrame) -> list[str]:
    """The claims the study's runs do not reach, by id."""
    return v.filter(pl.col("verdict") == NOT_IN_STUDY)["claim"].unique(maintain_order=True).to_list()


def _kinds(v: pl.DataFrame) -> pl.Series:
    """The verdict's kind: its words before a colon ("only a figure: <which>" is "only a figure")."""
    return v["verdict"].str.split(":").list.first().alias("verdict")


def study_rows(s: StudyVerdicts) -> pl.DataFrame:
    """The study's verdicts in the seed's own condition, one row per claim and primary cell, in words: what
    was compared in which cell, the estimate with its interval and coverage, the A/A control (twin/A), the runs per
    side, the verdict's sentence and its notes."""
    v = _own(s.verdicts)
    col = lambda name: v[name] if name in v.columns else pl.Series(name, [None] * v.height)  # noqa: E731
    compared = [
        _text(" · ".join(x for x in (c, cell) if x) or None) for c, cell in zip(col("compared"), col("cell"))
    ]  # formatting only: a table of a few dozen rows
    here = [_interval(*r) for r in zip(col("estimate"), col("lo"), col("hi"), col("coverage"))]
    runs = [
        "–" if nb is None else (str(nb) if not a or na is None else f"{na}+{nb}")
        for a, na, nb in zip(col("a"), col("n_a"), col("n_b"))
    ]
    band = ["–" if lo is None or hi is None else f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(col("aa_lo"), col("aa_hi"))]
    said = col("verdict_text") if "verdict_text" in v.columns else v["verdict"]
    return pl.DataFrame(
        {
            "claim": [f"`{c}`" for c in v["claim"]],
            "compared here": compared,
            "estimate [interval] (coverage)": here,
            "A/A twin/A": band,
            "runs": runs,
            "verdict": [_text(x) for x in said],
            "notes": [_text(x) for x in col("unchecked")],
        }
    )


# a verdict that decides: the interval says something of the claim (agreement, a smaller or larger effect, the
# seed's size ruled out with the direction unresolved, the opposite, a difference); "not resolved", "not tested in the seed's regime" and "measured once" decide nothing
DECISIVE = (R.HOLDS, R.SMALLER, R.SMALLER_ANY, R.LARGER, R.DIRECTION_ONLY, R.OPPOSITE, R.DIFFERS, R.VIOLATED)


def by_claim(studies: list[StudyVerdicts]) -> pl.DataFrame:
    """One row per claim set against runs in a primary cell of some study (the lab's own findings apart): each
    study's verdicts on it, and whether one study decided it, every primary cell with a decisive verdict."""
    rows = []
    for s in studies:
        v = s.verdicts
        if "role" not in v.columns:
            continue
        prim = v.filter(pl.col("role") == "primary")
        prim = prim.with_columns(_kinds(prim))
        for (claim, seed), cells in prim.group_by("claim", "seed", maintain_order=True):
            kinds = cells["verdict"].to_list()
            said = ", ".join(f"{k} ×{kinds.count(k)}" if kinds.count(k) > 1 else k for k in dict.fromkeys(kinds))
            rows.append({"seed": seed, "claim": claim, "study": s.study, "said": said,
                         "decided": all(k in DECISIVE for k in kinds)})  # fmt: skip
    if not rows:
        return pl.DataFrame()
    beyond = {c.id: c.beyond_here for c in lab_claims.claims() if c.beyond_here}
    return (
        pl.DataFrame(rows)
        .group_by("seed", "claim", maintain_order=True)
        .agg(
            pl.format("`{}`: {}", "study", "said").str.join("; ").alias("primary cells' verdicts"),
            pl.col("decided").any().alias("decided"),
        )
        .with_columns(pl.col("claim").replace_strict(beyond, default=None, return_dtype=pl.Utf8).alias("beyond here"))
        .sort("seed", "claim")
    )


def claims_markdown(table: pl.DataFrame) -> list[str]:
    """The per-claim table with its count, in words."""
    if table.is_empty():
        return []
    decided = int(table["decided"].sum())
    here = table.filter(pl.col("beyond here").is_null())
    beyond = table.filter(pl.col("beyond here").is_not_null())
    share = f" ({100 * here['decided'].sum() / here.height:.0f} %)" if here.height else ""
    out = [
        "### Per claim",
        f"{decided} of {table.height} claims set against runs in their seed's condition were decided by a study: "
        "every one of its primary cells gave a decisive verdict (holds, the same direction with a smaller or larger "
        "effect, a smaller effect than the seed's with the direction not resolved, an effect the other way, not the "
        "same). A claim no study decided reads “not resolved”, “not tested in the seed's regime” or "
        "“measured once” in at least one primary cell of each study that ran it. "
        f"Of the {here.height} this machine can decide in principle, {int(here['decided'].sum())} were decided"
        f"{share}; "
        + (
            f"the other {beyond.height} need what it cannot give (`beyond_here` in claims.yaml, below)."
            if beyond.height
            else "no claim here needs what it cannot give."
        ),
        markdown_table(
            table.drop("beyond here").with_columns(
                pl.format("`{}`", "claim").alias("claim"),
                pl.when(pl.col("decided")).then(pl.lit("yes")).otherwise(pl.lit("no")).alias("decided"),
            )
        ),
    ]
    if beyond.height:
        out.append(
            "Beyond this machine: "
            + "; ".join(f"`{c}`: {why}" for c, why in zip(beyond["claim"], beyond["beyond here"]))
            + "."
        )
    return out


def seed_studies(config_dir: Path = CONFIGS) -> list[str]:
    """The studies of the lab's configs that name a seed (`seeds:`), by their `study:` name."""
    out = []
    for path in sorted(config_dir.glob("*.yaml")):
        cfg = yaml_text.safe_load(path.read_text()) or {}
        if isinstance(cfg, dict) and cfg.get("seeds") and cfg.get("study"):
            out.append(str(cfg["study"]))
    return out


def summary_markdown(studies: list[StudyVerdicts], config_dir: Path = CONFIGS) -> str:
    """The block between the page's markers."""
    if not studies:
        return NOT_YET
    parts = [
        "Each study's verdicts in the seed's own condition as its verdict table has them "
        "(`build/<study>/tables/seed_verdicts.parquet`, kept in `docs/results/`; the other cells, context, are in the "
        "study's paper); dates, commits and the runs' span from its database (`data/<study>.duckdb`, runs that ran). "
        "Each study's row is from its latest sitting: the studies did not all run on one day or with one commit. "
        "Counts are rows of the table: one per claim and primary cell.",
        markdown_table(overview(studies), align={"runs": "right"}),
        *claims_markdown(by_claim(studies)),
    ]
    for s in studies:
        parts += [f"### `{s.study}`", markdown_table(study_rows(s))]
        untested = _untested(s.verdicts)
        if untested:
            parts.append(
                f"{len(untested)} claims of its seeds need runs this study does not make (counted nowhere above): "
                + ", ".join(f"`{c}`" for c in untested)
                + "."
            )
    absent = [name for name in seed_studies(config_dir) if name not in {s.study for s in studies}]
    if absent:
        parts.append(
            "Seed studies of the lab's configs with no verdict table in `docs/results/`, so not in it: "
            + ", ".join(f"`{name}`" for name in absent)
            + " (run each, `make run CONFIG=config/<name>.yaml`, then `pgfslab seed-summary` again)."
        )
    return "\n\n".join(parts)


def replace_block(page: Path, block: str) -> str:
    """The page's text with `block` between its markers (an error naming the page if they are not there once
    each, in order: nothing else of the page is touched)."""
    text = page.read_text()
    i, j = text.find(START), text.find(END)
    if i < 0 or j < 0 or text.count(START) != 1 or text.count(END) != 1 or j < i:
        raise LabError(f"{page}: needs the two markers, once each and in order:\n{START}\n{END}")
    return text[: i + len(START)] + "\n\n" + block + "\n\n" + text[j:]


def write(root: Path, page: Path = PAGE) -> list[StudyVerdicts]:
    """Read every study's verdict table under `root`, keep each as a record beside `page` (replacing its older
    one), and write the summary from all the records there into `page`; the studies found under `root`."""
    replace_block(page, "")  # the page's markers checked before anything is written
    studies = [read_study(*found) for found in find_studies(root)]
    records = page.parent / RECORDS
    for s in studies:
        save_record(s, records)
    new = replace_block(page, summary_markdown(read_records(records)))
    if new != page.read_text():
        tmp = page.with_name(page.name + ".tmp")
        tmp.write_text(new)
        tmp.replace(page)
    return studies


def command(root: Path, page: Path | None = None) -> int:
    """The command line's `seed-summary`: write the page, say what it was written from."""
    page = page or PAGE
    studies = write(root, page)
    records = page.parent / RECORDS
    kept = sorted({r.study for r in read_records(records)} - {s.study for s in studies})
    if not studies:
        print(
            f"seed-summary: no verdict table under {root.resolve()}/build/<study>/tables/seed_verdicts.parquet "
            "(run a seed study first); "
            + (
                f"{page} written from the earlier records of {', '.join(kept)}"
                if kept
                else f"{page} says the summary is not yet generated"
            ),
            file=sys.stderr,
        )
        return 0
    for s in studies:
        print(f"seed-summary: {s.study}: {s.verdicts.height} verdict rows, {s.runs} runs, kept in {records}")
    if kept:
        print(f"seed-summary: from earlier records in {records}: {', '.join(kept)}")
    print(f"seed-summary: wrote {page}")
    return 0
