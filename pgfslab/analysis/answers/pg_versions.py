"""Does a file-system choice still hold on the PostgreSQL a user will run next year (notebook pg_versions)?

A study whose targets run more than one PostgreSQL major: `postgres.versions` crosses every target with each
major (`ext4-pg15`, `ext4-pg18`, ...; `config/versions.py`). A crossed target's *file system* is the target
it was crossed from (its name without `-pg<major>`); a target that names its own build keeps its name. A
run's major is the one its server reported (the runs table's `pg_major`, else the first number of its
server's version string), not the one the config asked for.

Per workload, rung and client count (a cell), two readings:

* **the major on each file system**: each major against the study's oldest one (the reference) on the same
  file system: the median tps, major/reference as the lab's ratio (Hodges-Lehmann, exact Mann-Whitney
  interval: `verdicts.ratio.ratio_ci`; 3 runs a side allow no 95 % interval, the widest there is is given
  with its coverage), and in words the direction apart from the size: "faster", "slower", or "no difference
  resolved at ±X %";
* **the file system on each major**: each file system against the config's first one on the same major,
  the same ratio and words; and whether that choice holds on a newer major: how the file system's ratio
  changed from the reference major, (B/A on major M) / (B/A on the reference major) with Welch's t
  interval over runs (`verdicts.ratio.interaction_ci`): "unchanged" is never said, only "changed"
  (the interval excludes 1) or "no change resolved at ±X %".

Beside the tps, medians over each cell's runs of the CPUs' busy and I/O wait shares and the data device's
reads per second (`verdicts.regime.run_measures`): what a major changed in how it used the machine.
"""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from pgfslab.analysis.charts import alt
from pgfslab.analysis.scalar import number, whole
from pgfslab.analysis.verdicts.ratio import direction_words, interaction_ci, ratio_ci
from pgfslab.config.model import StudyConfig
from pgfslab.tools import TOOLS

MIN_RUNS = 2  # a side, for any interval at all
MEASURES = ("reads_per_s", "cpu_busy", "cpu_iowait")
CELL = ["workload", "rung", "clients"]


def fs_of(target: str, major: int | None) -> str:
    """The file system a target stands for: the target it was crossed from (`ext4-pg18` -> `ext4`)."""
    if major is None:
        return target
    return re.sub(rf"-pg{major}$", "", target)


def runs_by_major(headline: pl.DataFrame, runs: pl.DataFrame, measures: pl.DataFrame) -> pl.DataFrame:
    """`headline`'s successful runs (`queries.headline`) with the major their server reported (`runs`:
    `queries.runs`), their file system (`fs_of`), the config's workload name (a ladder's `rw.d2` is `rw`)
    and MEASURES (`verdicts.regime.run_measures`; null where not sampled)."""
    base = pl.coalesce("base_workload", "workload") if "base_workload" in headline.columns else pl.col("workload")
    out = (
        headline.filter(pl.col("value").is_not_null())
        .with_columns(base.alias("workload"), pl.col("rung").fill_null(0))
        .join(
            runs.select(  # a run on the default build records no build: its server's version string says it
                "run_id",
                pl.coalesce(
                    pl.col("pg_major").cast(pl.Int64),
                    pl.col("pg_server_version").str.extract(r"(\d+)").cast(pl.Int64, strict=False),
                ).alias("pg_major"),
            ),
            on="run_id",
            how="left",
        )
        .filter(pl.col("pg_major").is_not_null())
    )
    out = out.with_columns(  # as fs_of, per run
        pl.col("target").str.strip_suffix(pl.format("-pg{}", "pg_major")).alias("fs_target")
    )
    cols = [m for m in MEASURES if m in measures.columns]
    out = out.join(measures.select("run_id", *cols), on="run_id", how="left") if cols else out
    return out.with_columns(pl.lit(None, pl.Float64).alias(m) for m in MEASURES if m not in out.columns)


def _against(ref: list[float], values: list[float], ref_label: str, alpha: float) -> dict[str, Any]:
    """values over ref: the ratio, its interval and coverage and the finding in words, or why not compared."""
    if len(ref) < MIN_RUNS or len(values) < MIN_RUNS:
        return {"finding": f"not compared: {len(values)} run(s) against {len(ref)} on {ref_label}"}
    ci = ratio_ci(ref, values, alpha)
    return {"ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "coverage": ci.confidence,
            "finding": direction_words(ci, alpha, "faster", "slower", "no difference")}  # fmt: skip


SCHEMA = {
    "reading": pl.Utf8,  # "major" (a major against the oldest on one fs) or "fs" (a fs against the first on one major)
    "workload": pl.Utf8,
    "rung": pl.Int64,
    "clients": pl.Int64,
    "fs_target": pl.Utf8,
    "pg_major": pl.Int64,
    "reference": pl.Utf8,  # what the ratio is over: "15" (major) or "ext4" (fs)
    "n": pl.Int64,
    "median_tps": pl.Float64,
    "ratio": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "coverage": pl.Float64,
    "finding": pl.Utf8,
    "change": pl.Float64,  # fs reading: the ratio on this major over the ratio on the reference major
    "change_lo": pl.Float64,
    "change_hi": pl.Float64,
    "change_finding": pl.Utf8,
    **{m: pl.Float64 for m in MEASURES},
    "dataset_bytes": pl.Float64,  # the cell's median data set (the database's size after the load)
}


def compare(runs: pl.DataFrame, fs_order: list[str], alpha: float = 0.05) -> pl.DataFrame:
    """Both readings of `runs` (`runs_by_major`) per cell, file system and major. `fs_order`: the file systems
    in the config's order (the first is the reference file system); the oldest major is the reference major."""
    per = (
        runs.group_by([*CELL, "fs_target", "pg_major"])
        .agg(
            pl.col("value").alias("values"),
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("value").median().alias("median_tps"),
            *[pl.col(m).median() for m in MEASURES],
        )
        .sort([*CELL, "pg_major"])
    )
    data = (  # the cell's data set as loaded (the same scale is a few MB larger on some majors)
        runs.group_by(CELL).agg(pl.col("dataset_bytes").median())
        if "dataset_bytes" in runs.columns
        else per.select(CELL).unique().with_columns(pl.lit(None, pl.Float64).alias("dataset_bytes"))
    )
    values = {(r["workload"], r["rung"], r["clients"], r["fs_target"], r["pg_major"]): r["values"]
              for r in per.iter_rows(named=True)}  # fmt: skip
    majors = sorted(per["pg_major"].unique().to_list())
    ref_major = majors[0] if majors else None
    order = {fs: i for i, fs in enumerate(fs_order)}
    rows: list[dict[str, Any]] = []
    for r in per.iter_rows(named=True):
        cell = (r["workload"], r["rung"], r["clients"])
        common = {k: r[k] for k in (*CELL, "fs_target", "pg_major", "n", "median_tps", *MEASURES)}
        # the major on this file system
        ref = values.get((*cell, r["fs_target"], ref_major), [])
        row = {**common, "reading": "major", "reference": str(ref_major)}
        if r["pg_major"] == ref_major:
            row["finding"] = "the reference major"
        else:
            row.update(_against(ref, r["values"], str(ref_major), alpha))
        rows.append(row)
        # the file system on this major
        present = [fs for fs in fs_order if (*cell, fs, r["pg_major"]) in values]
        if not present:
            continue
        ref_fs = present[0]  # the config's first file system that ran this cell on this major
        base = values.get((*cell, ref_fs, r["pg_major"]), [])
        row = {**common, "reading": "fs", "reference": ref_fs}
        if r["fs_target"] == ref_fs:
            row["finding"] = "the reference file system"
            rows.append(row)
            continue
        row.update(_against(base, r["values"], ref_fs, alpha))
        if row.get("ratio") is not None:
            a0 = values.get((*cell, ref_fs, ref_major), [])
            b0 = values.get((*cell, r["fs_target"], ref_major), [])
            if r["pg_major"] != ref_major and a0 and b0:
                ch = interaction_ci(a0, b0, base, r["values"], alpha)
                row.update(change=ch.ratio, change_lo=ch.lo, change_hi=ch.hi)
                row["change_finding"] = (
                    f"not resolved: under 3 runs in a group (point {ch.ratio:.2f})" if not math.isfinite(ch.confidence)
                    else direction_words(ch, alpha, "changed: larger", "changed: smaller", "no change")
                )  # fmt: skip
        rows.append(row)
    out = pl.DataFrame(rows, schema=SCHEMA).drop("dataset_bytes")
    out = out.join(data.with_columns(pl.col("dataset_bytes").cast(pl.Float64)), on=CELL, how="left")
    return out.sort(
        "reading",
        *CELL,
        pl.col("fs_target").replace_strict(order, default=len(order)),
        "pg_major",
    )


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "∞" if not math.isfinite(x) else f"{x:.2f}"


def _interval(est: float | None, lo: float | None, hi: float | None) -> str:
    return "–" if est is None else f"{_num(est)} [{_num(lo)}, {_num(hi)}]"


def _cov(value: object) -> float:
    c = number(value)
    return math.nan if c is None else c


def _label(cfg: StudyConfig, key: tuple[object, ...], dataset_bytes: object) -> str:
    """`cell_label` of a cell's key (workload, rung, clients) as polars gives it."""
    workload, rung, clients = key
    return cell_label(cfg, str(workload), None if rung is None else whole(rung), whole(clients), number(dataset_bytes))


def cell_label(
    cfg: StudyConfig, workload: str, rung: int | None, clients: int, dataset_bytes: float | None = None
) -> str:
    """`rw (tpcb-like), 4 clients, scale 45 (678 MB, beyond the 384 MiB limit)`: the data set from the ladder's
    rung, its size as loaded and where it stands against the study's memory limit."""
    wl = cfg.workloads[workload]
    target = next(iter(cfg.targets))
    data = ""
    if TOOLS[wl.tool].loads == "pgbench":
        data = f", scale {cfg.dataset_for(target, rung or None).scale}"
    if dataset_bytes is not None and math.isfinite(dataset_bytes):
        limit = cfg.ladder.memory_limit_mb if cfg.ladder is not None else None
        where = ""
        if limit:
            where = f", {'within' if dataset_bytes <= limit * 2**20 else 'beyond'} the {limit} MiB limit"
        data += f" ({dataset_bytes / 1e6:.0f} MB{where})"
    return f"{workload} ({wl.options.what() or wl.tool}), {clients} client{'s' if clients != 1 else ''}{data}"


def tables(comp: pl.DataFrame, cfg: StudyConfig) -> list[tuple[str, pl.DataFrame]]:
    """The reader's tables, one per cell (its label, `cell_label`, for the caption): per file system and major,
    runs, the median tps, the major's tps over the oldest major's, the file system's over the first file
    system's, how that changed from the oldest major, and the CPU and device beside. The directions in words
    are the summary's; a table keeps to numbers so that it fits a page."""
    change = ["change", "change_lo", "change_hi"]  # the fs reading's: a major row has none
    major = comp.filter(pl.col("reading") == "major").drop(change)
    fs = comp.filter(pl.col("reading") == "fs").select(
        *CELL, "fs_target", "pg_major", pl.col("ratio").alias("fs_ratio"), pl.col("lo").alias("fs_lo"),
        pl.col("hi").alias("fs_hi"), *change,
    )  # fmt: skip
    both = major.join(fs, on=[*CELL, "fs_target", "pg_major"], how="left", maintain_order="left")
    out = []
    for key, part in both.group_by(CELL, maintain_order=True):
        rows = [
            {
                "file system": r["fs_target"],
                "major": r["pg_major"],
                "runs": r["n"],
                "tps": r["median_tps"],
                "over the oldest major": _interval(r["ratio"], r["lo"], r["hi"]),
                "over the first fs": _interval(r["fs_ratio"], r["fs_lo"], r["fs_hi"]),
                "change of that ratio": _interval(r["change"], r["change_lo"], r["change_hi"]),
                "CPU busy %": None if r["cpu_busy"] is None else 100 * r["cpu_busy"],
                "I/O wait %": None if r["cpu_iowait"] is None else 100 * r["cpu_iowait"],
                "device reads/s": r["reads_per_s"],
            }
            for r in part.iter_rows(named=True)
        ]
        out.append((_label(cfg, key, part["dataset_bytes"].first()), pl.DataFrame(rows)))
    return out


def chart(comp: pl.DataFrame, cfg: StudyConfig) -> Any:
    """Each newer major's tps over the oldest's on the same file system, with its interval, on a log axis and
    a rule at 1: one panel per cell, one row per file system, one mark per major."""
    df = comp.filter((pl.col("reading") == "major") & pl.col("ratio").is_not_null()).with_columns(
        pl.when(pl.col("lo") > 0).then(pl.col("lo")).alias("lo"),
        pl.when(pl.col("hi").is_finite()).then(pl.col("hi")).alias("hi"),
        pl.col("pg_major").cast(pl.Utf8).alias("major"),
    )
    labels = [_label(cfg, k[:3], k[3]) for k in df.select(*CELL, "dataset_bytes").iter_rows()]
    df = df.with_columns(pl.Series("panel", labels, pl.Utf8))
    lo = min([*df["lo"].drop_nulls().to_list(), *df["ratio"].to_list(), 1.0])
    hi = max([*df["hi"].drop_nulls().to_list(), *df["ratio"].to_list(), 1.0])
    x_scale = alt.Scale(type="log", domain=[lo / 1.05, hi * 1.05], nice=False)
    ref = str(comp.filter(pl.col("reading") == "major")["reference"].first())
    fs_shown = df["fs_target"].unique(maintain_order=True).to_list()

    def panel(part: pl.DataFrame, title: str) -> Any:
        y = alt.Y("fs_target:N", title=None, sort=fs_shown)
        base = alt.Chart(part).encode(y=y, yOffset=alt.YOffset("major:N"), color=alt.Color("major:N", title="major"))
        one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(color="#888", strokeDash=[4, 3]).encode(x="x:Q")
        bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("lo:Q", scale=x_scale), x2="hi:Q")
        dots = base.mark_point(filled=True, size=45).encode(
            x=alt.X("ratio:Q", scale=x_scale, title=f"tps of the major / tps of PostgreSQL {ref} (log)"),
            tooltip=["fs_target", "major", "n", "ratio", "lo", "hi", "coverage", "finding"],
        )
        rows = part["fs_target"].n_unique() * max(1, part["major"].n_unique())
        return alt.layer(one, bars, dots).properties(width=420, height=12 * rows + 10, title=title)

    panels = [panel(df.filter(pl.col("panel") == p), p) for p in df["panel"].unique(maintain_order=True)]
    return alt.vconcat(*panels, spacing=16)


def summary(comp: pl.DataFrame, cfg: StudyConfig) -> str:
    """In words, per cell: which file systems got faster or slower on each newer major, and where a file
    system's standing against the reference one changed between majors."""
    paragraphs = []
    for key, part in comp.group_by(CELL, maintain_order=True):
        label = _label(cfg, key, part["dataset_bytes"].first())
        said = []
        major = part.filter((pl.col("reading") == "major") & pl.col("ratio").is_not_null())
        for (m,), mp in major.group_by("pg_major", maintain_order=True):
            groups: dict[str, list[str]] = {}
            for r in mp.iter_rows(named=True):
                k = r["finding"].split(" (")[0]
                k = "no difference resolved" if k.startswith("no difference") else k
                groups.setdefault(k, []).append(f"{r['fs_target']} {_interval(r['ratio'], r['lo'], r['hi'])}")
            ref = str(mp["reference"].first())
            said.append(
                f"PostgreSQL {m} over {ref}: " + "; ".join(f"{k} on {', '.join(v)}" for k, v in groups.items()) + "."
            )
        fs = part.filter((pl.col("reading") == "fs") & pl.col("change").is_not_null())
        if fs.height:
            changed = fs.filter(pl.col("change_finding").str.starts_with("changed"))
            ref_fs = str(fs["reference"].first())
            if changed.height:
                said.append(
                    f"Against {ref_fs}, the standing changed for "
                    + "; ".join(
                        f"{r['fs_target']} on {r['pg_major']} "
                        f"({_interval(r['change'], r['change_lo'], r['change_hi'])} of its ratio on the oldest major)"
                        for r in changed.iter_rows(named=True)
                    )
                    + "."
                )
            else:
                widest = max(
                    (100 * (r["change_hi"] - r["change_lo"]) / 2 / r["change"] for r in fs.iter_rows(named=True)
                     if r["change_hi"] is not None and math.isfinite(r["change_hi"]) and r["change"]),
                    default=math.inf,
                )  # fmt: skip
                said.append(
                    f"No file system's ratio to {ref_fs} changed resolvably between majors (intervals up to "
                    f"±{widest:.0f} %)."
                )
        if said:
            paragraphs.append(f"**{label}**: " + " ".join(said))
    cov = comp.filter(pl.col("ratio").is_not_null())["coverage"].drop_nulls()
    if cov.len():
        lo_cov, hi_cov = _cov(cov.min()), _cov(cov.max())
        level = f"{100 * lo_cov:.0f} %" if abs(hi_cov - lo_cov) < 1e-9 else f"{100 * lo_cov:.0f}–{100 * hi_cov:.0f} %"
        paragraphs.append(
            f"Ratios are Hodges-Lehmann estimates with exact Mann-Whitney intervals of {level} coverage (the widest "
            "a cell's run counts allow when they allow no 95 % interval); a change of a file system's ratio is a "
            "ratio of ratios with Welch's t interval over runs. Faster, slower or changed is said only "
            "where the whole interval lies on one side of 1."
        )
    fewest = number(comp.filter(pl.col("change").is_not_null())["n"].min())
    if fewest is not None and fewest < 5:
        paragraphs.append(
            f"With {fewest:g} runs in a group the change's t interval rests on log tps being roughly normal, "
            f"which {fewest:g} runs cannot check: read a changed standing as a lead to repeat with more rounds, "
            "not as a finding."
        )
    return "\n\n".join(paragraphs) if paragraphs else "No cell ran on more than one PostgreSQL major."
