"""The verdict section's tables and figure: one row per claim and cell, readable on its own."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from pgfslab.analysis.verdicts.claims import Claim

VERDICT_COLORS = {"holds": "#2a9d8f", "does not hold": "#e76f51", "not resolved": "#8d99ae"}


def _claim_frame(claims: list[Claim]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "claim": c.id,
                "finding": c.claim,
                "seed_number": c.seed_number or "–",
                "expects": _expects(c),
                "quantity": c.quantity,
            }
            for c in claims
        ],
        schema={"claim": pl.Utf8, "finding": pl.Utf8, "seed_number": pl.Utf8, "expects": pl.Utf8, "quantity": pl.Utf8},
    )


def _expects(c: Claim) -> str:
    what = {
        "ratio": "B/A",
        "variance_ratio": "CV B/A",
        "saving": "saving of B",
        "compression_ratio": "compression ratio B/A",
        "footprint": "size B/A",
        "bandwidth": "sync bandwidth B/A",
    }.get(c.quantity, c.quantity)
    if c.direction == "within" and c.threshold is not None:
        return f"{what} within 1 ± {c.threshold:g}"
    if c.direction == "greater" and c.threshold is not None:
        return f"{what} ≥ {c.threshold:g}"
    if c.direction == "less" and c.threshold is not None:
        return f"{what} ≤ {c.threshold:g}"
    return "—"


def _interval(
    est: float | None, lo: float | None, hi: float | None, quantity: str, coverage: float | None = None
) -> str:
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "–"
    if quantity == "saving":
        return f"{100 * est:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}]"
    hi_s = "∞" if hi is None or math.isinf(hi) else f"{hi:.2f}"
    # an interval below 95 % is the widest the run counts allow: its coverage is said beside it
    low = coverage is not None and math.isfinite(coverage) and coverage < 0.9495
    return f"{est:.2f} [{lo:.2f}, {hi_s}]" + (f" ({100 * coverage:.0f} % interval)" if low else "")


def verdict_table(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Per tested claim and cell: what was compared, what the claim expects, this lab's estimate with its
    interval, the runs per side (n A + n B), the test and the verdict."""
    df = results.filter(pl.col("verdict").is_in(list(VERDICT_COLORS))).join(_claim_frame(claims), on="claim")
    text = [
        _interval(e, lo, hi, q, cov)
        for e, lo, hi, q, cov in zip(df["estimate"], df["lo"], df["hi"], df["quantity"], df["coverage"], strict=True)
    ]  # formatting only: one string per row of a table of a few dozen rows
    return df.with_columns(pl.Series("here", text, dtype=pl.Utf8)).select(
        "claim",
        # "xfs / ext4 · cell"; one target against itself by its settings; a saving, B's own ("btrfs-zlib · cell")
        pl.concat_str([pl.col("compared"), pl.lit(" · "), pl.col("cell")]).alias("compared here"),
        "expects",
        pl.col("here").alias("here [interval]"),
        pl.when(pl.col("a") == "")
        .then(pl.col("n_b").cast(pl.Utf8))
        .otherwise(pl.concat_str([pl.col("n_a").cast(pl.Utf8), pl.lit("+"), pl.col("n_b").cast(pl.Utf8)]))
        .alias("runs"),
        "test",
        "verdict",
    )


def findings_table(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Every reproducible finding of the study's seeds: the finding, the seed's own number, and what this
    study made of it (its verdicts over cells, or why it was not tested)."""
    tested = results.filter(pl.col("verdict").is_in(list(VERDICT_COLORS)))
    outcome = pl.concat(
        [
            tested.group_by("claim", maintain_order=True)
            .agg(pl.col("verdict").value_counts(sort=True).alias("_counts"))
            .select(
                "claim",
                pl.col("_counts")
                .list.eval(
                    pl.element().struct.field("verdict")
                    + pl.lit(" (")
                    + pl.element().struct.field("count").cast(pl.Utf8)
                    + pl.lit(")")
                )
                .list.join(", ")
                .alias("here"),
            ),
            results.filter(~pl.col("verdict").is_in(list(VERDICT_COLORS))).select(
                "claim", pl.col("verdict").alias("here")
            ),
        ]
    )
    return (
        _claim_frame([c for c in claims if c.reproducible_here])
        .join(outcome, on="claim", how="left")
        .select("claim", "finding", pl.col("seed_number").alias("seed's number"), pl.col("here").fill_null("–"))
    )


def not_reproducible(claims: list[Claim]) -> pl.DataFrame:
    """Claims no machine of this kind can test, with the reason (so no table implies more than was measured)."""
    rows = [
        {"claim": c.id, "finding": c.claim, "why not here": c.why_not or ""} for c in claims if not c.reproducible_here
    ]
    return pl.DataFrame(rows, schema={"claim": pl.Utf8, "finding": pl.Utf8, "why not here": pl.Utf8})


def forest(results: pl.DataFrame, claims: list[Claim]) -> Any:
    """Each tested claim and cell: B/A with its interval on a log axis, coloured by verdict, with the
    claim's own line (its threshold, or the band 1 ± t) in grey."""
    import altair as alt

    edges_of = pl.DataFrame(
        [{"claim": c.id, "quantity": c.quantity, "edge_lo": _line(c)[0], "edge_hi": _line(c)[1]} for c in claims],
        schema={"claim": pl.Utf8, "quantity": pl.Utf8, "edge_lo": pl.Float64, "edge_hi": pl.Float64},
    )
    df = (
        results.filter(pl.col("verdict").is_in(list(VERDICT_COLORS)) & pl.col("estimate").is_not_null())
        .join(edges_of, on="claim")
        .filter(pl.col("quantity") != "saving")
    )
    if df.is_empty():
        return None
    cap = lambda c: pl.when(pl.col(c).is_infinite() | (pl.col(c) <= 0)).then(None).otherwise(pl.col(c))  # noqa: E731
    df = df.with_columns(
        (pl.col("claim") + "\n" + pl.col("compared") + " · " + pl.col("cell")).alias("row"),
        cap("lo").alias("lo"),
        cap("hi").alias("hi"),
    )
    data = df
    # whole labels, on two lines (the claim; what was compared, in which cell): two cells of one claim differ
    # only at their end (e.g. ", fsync=off")
    y = alt.Y("row:N", title=None, sort=None, axis=alt.Axis(labelLimit=600, labelExpr="split(datum.label, '\\n')"))
    x = alt.X("estimate:Q", scale=alt.Scale(type="log"), title="B / A (log scale), with its interval")
    color = alt.Color(
        "verdict:N", scale=alt.Scale(domain=list(VERDICT_COLORS), range=list(VERDICT_COLORS.values())), title=None
    )
    base = alt.Chart(data)
    edges = base.mark_tick(color="#555", thickness=2, size=14).encode(y=y, x="edge_lo:Q") + base.mark_tick(
        color="#555", thickness=2, size=14
    ).encode(y=y, x="edge_hi:Q")
    bars = base.mark_rule(strokeWidth=4).encode(y=y, x=alt.X("lo:Q"), x2="hi:Q", color=color)
    dots = base.mark_point(filled=True, size=110).encode(
        y=y, x=x, color=color, tooltip=["claim", "a", "b", "cell", "estimate", "lo", "hi", "verdict"]
    )
    return alt.layer(bars, edges, dots).properties(width=360, height=alt.Step(30))


def _line(c: Claim) -> tuple[float | None, float | None]:
    """The claim's edges on the B/A axis: (1 - t, 1 + t) for within, (f, f) for greater/less."""
    t = c.threshold
    if t is None:
        return None, None
    if c.direction == "within":
        return 1 - float(t), 1 + float(t)
    return float(t), float(t)


def status_counts(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Per seed: how many findings this study resolved either way, left unresolved, did not test, or
    cannot test on this kind of machine (a claim counts once, by its cells' verdicts)."""
    per_claim = results.group_by("claim", maintain_order=True).agg(pl.col("verdict").unique().alias("_v"))
    status = pl.when(pl.col("_v").list.len() > 1).then(pl.lit("mixed over cells")).otherwise(pl.col("_v").list.first())
    gone = pl.DataFrame(
        [{"claim": c.id, "status": "not reproducible here"} for c in claims if not c.reproducible_here],
        schema={"claim": pl.Utf8, "status": pl.Utf8},
    )
    seeds = pl.DataFrame([{"claim": c.id, "seed": c.seed} for c in claims], schema={"claim": pl.Utf8, "seed": pl.Utf8})
    return (
        pl.concat([per_claim.select("claim", status.alias("status")), gone])
        .join(seeds, on="claim")
        .group_by("seed", "status")
        .len("findings")
        .sort("seed", "status")
    )


def status_chart(results: pl.DataFrame, claims: list[Claim]) -> Any:
    """How many of each seed's findings hold, do not hold, are not resolved, or were not or cannot be
    tested: a stacked bar per seed."""
    import altair as alt

    order = ["holds", "does not hold", "mixed over cells", "not resolved", "not tested in this study",
             "judged from the figures (qualitative)", "not evaluated automatically", "not reproducible here"]  # fmt: skip
    colors = ["#2a9d8f", "#e76f51", "#f4a261", "#457b9d", "#48cae4", "#e9c46a", "#c77dff", "#7b2cbf"]
    return (
        alt.Chart(status_counts(results, claims))
        .mark_bar()
        .encode(
            y=alt.Y("seed:N", title="seed"),
            x=alt.X("findings:Q", title="findings"),
            color=alt.Color("status:N", scale=alt.Scale(domain=order, range=colors), title=None, sort=order),
            order=alt.Order("status:N"),
            tooltip=["seed", "status", "findings"],
        )
        .properties(width=420, height=160)
    )
