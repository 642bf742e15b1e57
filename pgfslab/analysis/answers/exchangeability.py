"""Are the runs exchangeable, and where is the noise floor? The notebook `exchangeability.ipynb`.

Per target and cell, the four checks of `stats.exchangeability` (trend over rounds, first round against
the rest, two groups, run-level outliers with their samplers' evidence), a figure of every run's headline
value by round, and, when the study carries an A/A twin of its baseline (`aa_twin_of` in the twin's target
spec, or the notebook's `aa_twins`), the A/A ratio and band per cell beside every comparison with the
baseline (`stats.aa`).

Burn-in rounds (run.burn_in_rounds, `burn_in` in the runs table, rounds <= 0) are shown beside the counted
rounds and never compared: the checks and the A/A band use the counted rounds only. Two days of one study
ingested together (`make analyse DAY2=...`, pgfslab.ingest.days: the days are host keys `day1`/`day2`) get,
per comparison, whether the two days agree (`stats.days`). Where the runs sampled /proc/stat, every
comparison is also shown adjusted for the CPU the hypervisor took from each run (`stats.steal_adjusted`:
a model-based sensitivity analysis, never used by the verdicts).

Input is one headline value per run (`queries.headline(..., burn_in=True)`: pgbench and sysbench tps).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from scipy import stats as sps

from pgfslab.analysis.stats import aa, days, steal_adjusted
from pgfslab.analysis.stats.aa import primary_ratio
from pgfslab.analysis.stats.exchangeability import exchangeability, outlier_runs
from pgfslab.analysis.verdicts.calibration import twin_coverage
from pgfslab.analysis.verdicts.ratio import METHOD_WORDS, both_references, ratio_ci
from pgfslab.ingest.days import DAYS
from pgfslab.records.run_record import RunRecord

CELL = ("workload", "clients")


def counted(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs that count: burn-in rounds left out (a frame without the column is all counted)."""
    return runs.filter(~pl.col("burn_in").fill_null(False)) if "burn_in" in runs.columns else runs


def burn_in_table(runs: pl.DataFrame) -> pl.DataFrame:
    """Per target and cell, each burn-in run's value over the median of the counted runs: how far from the
    steady state the study's first rounds were (the burn-in it asked for keeps them out of the comparisons)."""
    if "burn_in" not in runs.columns or not runs["burn_in"].fill_null(False).any():
        return pl.DataFrame()
    keys = ["target", "target_label", *CELL]
    med = counted(runs).group_by(keys).agg(pl.col("value").median().alias("median_counted"), pl.len().alias("n"))
    return (
        runs.filter(pl.col("burn_in").fill_null(False))
        .join(med, on=keys, how="left")
        .with_columns(cell_expr(), (pl.col("value") / pl.col("median_counted")).alias("over_median"))
        .sort("plan_index")
    )


def start_states(runs: pl.DataFrame, records: Mapping[str, RunRecord]) -> pl.DataFrame:
    """Per target and cell, the starting state its runs recorded (run.json `start_state`): the cache mode, how
    many runs started with autovacuum quiet, the warm starts' median buffer hit ratio and how many of them
    reached a steady ratio. Empty for runs recorded before the defined starting state."""
    rows = []
    for r in runs.iter_rows(named=True):
        rec = records.get(r["run_id"])
        st = rec.start_state if rec else None
        if st is None:
            continue
        rows.append(
            {
                "target_label": r["target_label"],
                "workload": r["workload"],
                "clients": r["clients"],
                "cache": st.cache,
                "quiet": bool(st.autovacuum_quiet),
                "hit_ratio": st.hit_ratio,
                "steady": st.steady,
            }
        )
    if not rows:
        return pl.DataFrame()
    df = pl.DataFrame(rows, schema_overrides={"hit_ratio": pl.Float64, "steady": pl.Boolean})
    return (
        df.group_by("target_label", *CELL, "cache", maintain_order=True)
        .agg(
            pl.len().alias("runs"),
            pl.col("quiet").sum().alias("autovacuum_quiet"),
            pl.col("hit_ratio").median().alias("hit_ratio"),
            pl.col("steady").sum().alias("steady"),
            pl.col("steady").is_not_null().sum().alias("warm"),
        )
        .with_columns(cell_expr())
    )


def baseline_of(cfg: Mapping[str, Any], twins: Mapping[str, str]) -> str | None:
    """The target comparisons are read against: the A/A twin's baseline, else the config's first target."""
    if twins:
        return next(iter(twins.values()))
    names = list(cfg.get("targets") or {})
    return names[0] if names else None


def steal_adjusted_comparisons(
    runs: pl.DataFrame, cpu: pl.DataFrame, baseline: str | None, alpha: float
) -> pl.DataFrame:
    """Per cell, every target against the baseline adjusted for each run's CPU contention (its steal over the
    CPU time it wanted; `cpu` holds pgfslab.analysis.cpu_time's per-run measures); empty where /proc/stat was
    not sampled or a cell cannot carry the model (stats.steal_adjusted). A study of several days or hosts gets a
    shift per day (the runs' `host`) in the model."""
    if baseline is None or cpu.height == 0:
        return pl.DataFrame()
    contention = cpu.filter(pl.col("cpu_busy") > 0).select(
        "run_id", (pl.col("cpu_steal") / pl.col("cpu_busy")).alias("contention")
    )
    f = counted(runs).join(contention, on="run_id")
    parts = [
        steal_adjusted.fit(part, baseline, alpha, block="host" if "host" in runs.columns else None).with_columns(
            pl.lit(key[0]).alias("workload"), pl.lit(key[1]).cast(runs.schema["clients"]).alias("clients")
        )
        for key, part in f.group_by(list(CELL), maintain_order=True)
    ]
    parts = [p for p in parts if p.height]
    return pl.concat(parts).select(*CELL, pl.exclude(*CELL)) if parts else pl.DataFrame()


def two_days(runs: pl.DataFrame, baseline: str | None, alpha: float, primary: str = "runs") -> pl.DataFrame:
    """Per cell and target, whether the two days of a study ingested with DAY2 agree (`stats.days`), each day
    compared as the study's verdicts compare (`primary`); empty for a study of one day."""
    if baseline is None or "host" not in runs.columns:
        return pl.DataFrame()
    hosts = set(runs["host"].drop_nulls().unique().to_list())
    if hosts != set(DAYS):
        return pl.DataFrame()
    return days.days_agreement(counted(runs).rename({"host": "day"}), baseline, alpha=alpha, primary=primary)


def carry_over(runs: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Per target and cell: its runs grouped by the target that ran just before (run.json `predecessor`;
    in older raw folders the previous run in plan order on the same host), each group's median over the
    target's own median, and a Kruskal-Wallis p across the groups of at least two runs (null with fewer than
    two such groups). A carry-over from the run before shows as one predecessor's runs sitting apart; the
    Williams order balances it, a rotation does not. `runs` is every run (burn-in included: they are
    predecessors too), one row each with target, target_label, host, plan_index, the cell's columns, value."""
    after = pl.col("target").shift(1).over(pl.col("host").fill_null(""), order_by="plan_index")
    if "predecessor" in runs.columns:
        after = pl.coalesce(pl.col("predecessor"), after)
    f = counted(runs.with_columns(after.alias("after"))).drop_nulls(["after", "value"])
    if f.height == 0:
        return pl.DataFrame()
    groups = (
        f.with_columns((pl.col("value") / pl.col("value").median().over("target", *CELL)).alias("_rel"))
        .group_by("target", "target_label", *CELL, "after", maintain_order=True)
        .agg(pl.len().alias("runs"), pl.col("_rel").median().alias("median_over_target"), pl.col("value"))
    )
    p_values = []
    for key, part in groups.group_by("target", *CELL, maintain_order=True):
        samples = [v.to_numpy() for v, n in zip(part["value"], part["runs"]) if n >= 2]
        p = float(sps.kruskal(*samples).pvalue) if len(samples) >= 2 else None
        p_values.append({"target": key[0], **dict(zip(CELL, key[1:])), "carry_over_p": p})
    ps = pl.DataFrame(
        p_values, schema={"target": pl.Utf8, **{c: groups.schema[c] for c in CELL}, "carry_over_p": pl.Float64}
    )
    return (
        groups.drop("value")
        .join(ps, on=["target", *CELL], how="left")
        .with_columns((pl.col("carry_over_p") < alpha).fill_null(False).alias("flagged"), cell_expr())
    )


def cell_expr() -> pl.Expr:
    """`tpcb/c=4`: a cell's name in tables and figure panels."""
    return pl.concat_str(pl.col("workload"), pl.lit("/c="), pl.col("clients").cast(pl.Utf8)).alias("cell")


def labels(headline: pl.DataFrame) -> dict[str, str]:
    return dict(headline.select("target", "target_label").unique().iter_rows())


def checks(headline: pl.DataFrame, evidence: pl.DataFrame | None, alpha: float) -> pl.DataFrame:
    """`exchangeability` per target and cell, with the target's label and the cell's name."""
    out = exchangeability(headline, evidence, alpha=alpha)
    if out.height == 0:
        return out
    return out.with_columns(
        cell_expr(), pl.col("target").replace_strict(labels(headline), default=pl.col("target")).alias("target_label")
    )


def flagged_runs(headline: pl.DataFrame, evidence: pl.DataFrame | None, alpha: float) -> pl.DataFrame:
    """`outlier_runs` with the cell's name."""
    out = outlier_runs(headline, evidence, alpha=alpha)
    return out.with_columns(cell_expr()) if out.height else out


def rounds_chart(headline: pl.DataFrame, flagged: pl.DataFrame, color_scale: Any = None) -> Any:
    """Every run's headline value by round, one line per target, one panel per cell (log scale, each panel
    its own): a trend, a slow first round or two groups show as shapes; outlier runs are ringed in red."""
    import altair as alt

    df = headline.with_columns(
        cell_expr(), pl.col("run_id").is_in(flagged["run_id"].to_list() if flagged.height else []).alias("outlier")
    ).sort("plan_index")
    base = alt.Chart().encode(
        x=alt.X("repeat:O", title="round (0 and below: burn-in)"),
        y=alt.Y("value:Q", title="throughput (tps)", scale=alt.Scale(type="log", zero=False)),
        color=alt.Color("target_label:N", scale=color_scale, title="target"),
    )
    lines = base.mark_line(opacity=0.7, strokeWidth=2).encode(detail="target_label:N")
    dots = base.mark_point(filled=True, size=70).encode(
        tooltip=["run_id", "repeat", "plan_index", alt.Tooltip("value:Q", format=",.0f")]
    )
    rings = (
        alt.Chart()
        .mark_point(size=220, color="#d62728", strokeWidth=2)
        .encode(x="repeat:O", y="value:Q")
        .transform_filter(alt.datum.outlier)
    )
    return (
        alt.layer(lines, dots, rings, data=df)
        .properties(width=320, height=150)
        .facet(row=alt.Row("cell:N", title=None))
        .resolve_scale(y="independent")
    )


def twins(cfg: Mapping[str, Any], given: Mapping[str, str] | None) -> dict[str, str]:
    """twin -> baseline: `given` (the notebook's parameter) or the config's `aa_twin_of` keys."""
    return dict(given) if given else aa.twins_from_config(cfg)


def against_baseline_and_twin(
    headline: pl.DataFrame, baseline: str, twin: str, alpha: float, value: str = "value", primary: str = "runs"
) -> pl.DataFrame:
    """Per cell, every other target against the baseline and against its A/A twin (each as the study's verdicts
    compare, `stats.aa.primary_ratio`), and the one interval spanning both (`verdicts.ratio.both_references`, the
    verdicts' reading): a direction only where B differs from both identical targets."""
    rows = []
    for key, part in headline.group_by(list(CELL), maintain_order=True):
        part = part.filter(pl.col(value).is_not_null())
        a, t = part.filter(pl.col("target") == baseline), part.filter(pl.col("target") == twin)
        for name in part["target"].unique(maintain_order=True).to_list():
            b = part.filter(pl.col("target") == name)
            if name in (baseline, twin) or min(a.height, t.height, b.height) == 0:
                continue
            to_a, to_twin = primary_ratio(a, b, value, alpha, primary), primary_ratio(t, b, value, alpha, primary)
            both = both_references(to_a, to_twin)
            rows.append(
                {
                    **dict(zip(CELL, key)),
                    "target": name,
                    "n": f"{to_a.n_a}+{to_twin.n_a}+{to_a.n_b}",
                    "to_baseline": to_a.ratio,
                    "to_twin": to_twin.ratio,
                    "ratio": both.ratio,
                    "lo": both.lo,
                    "hi": both.hi,
                    "resolved": bool(both.confidence >= 1 - alpha - 1e-9 and (both.lo > 1 or both.hi < 1)),
                }
            )
    return pl.DataFrame(rows)


# the known ratio the twin's calibration injects (B/A 5 % above 1)
INJECT = 1.05


def method_words(primary: str) -> str:
    """The study's comparison (`analysis.primary`) in words."""
    return METHOD_WORDS.get(primary, METHOD_WORDS["runs"])


def calibration(headline: pl.DataFrame, twins: Mapping[str, str], primary: str, alpha: float) -> pl.DataFrame:
    """Per twin, the study's comparison checked on the twin's own rounds (`verdicts.calibration.twin_coverage`):
    pseudo-studies of as many rounds as the twin's fewest in a cell (at least 4), labels swapped within rounds and
    INJECT injected (the share covering it), and with the labels as recorded, two rounds fewer (the share covering
    1, which falls with any bias of the twin's own). Empty where no cell has 4 rounds of both."""
    rows = []
    for twin, baseline in twins.items():
        side = {
            t: headline.filter(pl.col("target") == t).select(*CELL, "repeat", pl.col("value").alias(col))
            for t, col in ((baseline, "a"), (twin, "b"))
        }
        pairs = (
            side[baseline]
            .join(side[twin], on=[*CELL, "repeat"])
            .filter(pl.col("a").is_not_null() & pl.col("b").is_not_null())
            .with_columns(cell_expr())
        )
        counts = pairs.group_by("cell").len().filter(pl.col("len") >= 4)
        if counts.is_empty():
            continue
        k = int(counts["len"].min())  # type: ignore[arg-type]
        swapped = {c.method: c for c in twin_coverage(pairs, k, INJECT, alpha)}[primary]
        # as recorded, pseudo-studies of all k rounds would all be the study itself: two fewer rounds, so they vary
        k_rec = max(4, k - 2)
        recorded = {c.method: c for c in twin_coverage(pairs, k_rec, 1.0, alpha, swap=False)}[primary]
        rows.append(
            {
                "twin": twin,
                "baseline": baseline,
                "cells": counts.height,
                "rounds": k,
                "pseudo-studies": swapped.studies,
                "covered %": 100 * swapped.covered,
                "as recorded %": 100 * recorded.covered,
                "rounds as recorded": k_rec,
                "half-width %": swapped.half_width_pct,
            }
        )
    return pl.DataFrame(rows)


def comparisons(headline: pl.DataFrame, baseline: str, alpha: float, skip: list[str]) -> pl.DataFrame:
    """Per cell, every target but the baseline and `skip` (the twins) against the baseline: `ratio_ci`."""
    rows = []
    for key, part in headline.group_by(list(CELL), maintain_order=True):
        a = part.filter(pl.col("target") == baseline)["value"].to_numpy()
        for t in part["target"].unique(maintain_order=True).to_list():
            b = part.filter(pl.col("target") == t)["value"].to_numpy()
            if t == baseline or t in skip or len(a) == 0 or len(b) == 0:
                continue
            ci = ratio_ci(a, b, alpha)
            rows.append(
                {
                    **dict(zip(CELL, key)),
                    "target": t,
                    "ratio": ci.ratio,
                    "lo": ci.lo,
                    "hi": ci.hi,
                    "n": f"{ci.n_a}+{ci.n_b}",
                }
            )
    return pl.DataFrame(rows)
