"""The verdict section's tables and figures: one row per claim and cell, readable on its own; the seed's own
condition (primary) first, other cells as context; the verdict as a sentence with its numbers."""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from pgfslab.analysis.verdicts import ratio as R
from pgfslab.analysis.verdicts.claims import Claim
from pgfslab.analysis.verdicts.evaluate import OWN_ROLE
from pgfslab.analysis.verdicts.regime import PRECONDITIONS

VERDICT_COLORS = {
    R.HOLDS: "#2a9d8f",
    R.DIRECTION_ONLY: "#52b69a",
    R.SMALLER: "#a7c957",
    R.SMALLER_ANY: "#c5d86d",
    R.LARGER: "#6a994e",
    R.OPPOSITE: "#e76f51",
    R.DIFFERS: "#f4a261",
    R.VIOLATED: "#9d0208",
    R.UNRESOLVED: "#8d99ae",
    R.NOT_IN_REGIME: "#457b9d",
    R.ONCE: "#e9c46a",
}
NOT_IN_STUDY = "not tested in this study"
# a claim that is the lab's own finding (Claim.lab_own: crash checks of the lab's own devices, where the seed's
# claim was about another stack): shown and labelled, never counted among the seed's verdicts
OWN_STATUS = "the lab's own finding"
# every status a claim can have in a chart or a count; a claim this study's runs do not reach at all (NOT_IN_STUDY)
# is said in one sentence (`untested_sentence`), never counted: a count of what a study could not test is padding
STATUS_ORDER = [*VERDICT_COLORS, "context only", "only a figure", "not reproducible here"]
MIXED_STATUS = "mixed: the seed's cells disagree (each in the table)"
# quantities drawn on the forest's B/A axis (a saving is B's own; the rank-test floor and the crash check are
# not ratios)
NOT_ON_AXIS = ("saving", "rank_test_floor", "durability", "qualitative")


def expects(c: Claim) -> str:
    """What the claim says of B/A, in words, with the seed's number or the lab's band."""
    what = {
        "variance_ratio": "σ² B/A",
        "cv_ratio": "CV B/A",
        "latency_p95_ratio": "p95 latency B/A",
        "tx_latency_p95_ratio": "p95 transaction latency B/A",
        "read_await_variance": "σ² of read await B/A",
        "written_per_tx": "bytes written per commit B/A",
        "tail_ratio": "p99/p50 B/A",
        "compression_ratio": "compression ratio B/A",
        "footprint": "size B/A",
        "bandwidth": "sync bandwidth B/A",
        "saving": "saving of B",
    }.get(c.quantity, "B/A")
    if c.interaction:
        i = c.interaction
        what = f"({what} at {i['key']} {i['to']}) / ({what} at {i['from']})".replace("_", " ")
    if c.quantity in ("durability", "rank_test_floor", "qualitative"):
        return "—"
    if c.expect == "same":
        lo, hi = c.band_range or (math.nan, math.nan)
        return f"{what} within [{lo:.2f}, {hi:.2f}] (band: {c.band_why})"
    side = "> 1" if c.expect == "greater" else "< 1"
    seed = c.seed_range
    if c.quantity == "saving":
        said = (
            ""
            if seed is None
            else (f"{100 * seed[0]:.0f} %" if seed[0] == seed[1] else f"{100 * seed[0]:.0f}–{100 * seed[1]:.0f} %")
        )
        return f"{what} > 0" + (f"; the seed's {said}" if said else "")
    if seed is None:
        return f"{what} {side} (direction only: the seed gave no size)"
    if c.seed_value is None and c.size:
        return f"{what} {side}; the seed's '{c.size}' ({R.range_text(seed)}, the lab's rule for words of size)"
    return f"{what} {side}; the seed's {R.range_text(seed)}"


def _claim_frame(claims: list[Claim]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "claim": c.id,
                "finding": c.claim,
                "seed_number": c.seed_number or "–",
                "expects": expects(c),
                "quantity": c.quantity,
                # named here, defined once in `conditions_legend`
                "preconditions": ", ".join(c.preconditions)
                or (f"none: {c.no_preconditions_why}" if c.no_preconditions_why else "–"),
            }
            for c in claims
        ],
        schema={
            "claim": pl.Utf8,
            "finding": pl.Utf8,
            "seed_number": pl.Utf8,
            "expects": pl.Utf8,
            "quantity": pl.Utf8,
            "preconditions": pl.Utf8,
        },  # fmt: skip
    )


def _interval(est: float | None, lo: float | None, hi: float | None, quantity: str, coverage: float | None) -> str:
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "–"
    if quantity == "saving":  # one load: its interval is the value itself
        if lo is None or hi is None:
            return f"{100 * est:.0f} % (no interval)"
        return f"{100 * est:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}]"
    if quantity == "rank_test_floor":
        return f"p ≥ {est:.3f}"
    if hi is None or not math.isfinite(hi) or lo is None:
        return f"{est:.2f} (no interval)"
    # an interval below 95 % is the widest the run counts allow: its coverage is said beside it
    if coverage is not None and math.isfinite(coverage) and coverage < 0.9495:
        return f"{est:.2f} [{lo:.2f}, {hi:.2f}] ({100 * coverage:.0f} % interval)"
    return f"{est:.2f} [{lo:.2f}, {hi:.2f}]"


def verdict_table(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Per tested claim and cell, the seed's own condition first: its role, what was compared, this lab's estimate
    with its interval (against A and its A/A twin together, where the study has one), the A/A control itself (the
    twin against A: the instrument's own difference), the runs per side, the verdict in a word or two and its notes
    (the verdict's sentence; a precondition checked with less than today's samplers, a side whose runs were not
    steady). What each claim expects is said once per claim, in `findings_table`; the test is the same for every
    ratio (the caption)."""
    df = results.filter(pl.col("role").is_not_null()).join(_claim_frame(claims), on="claim")
    text = [
        _interval(e, lo, hi, q, cov)
        for e, lo, hi, q, cov in zip(df["estimate"], df["lo"], df["hi"], df["quantity"], df["coverage"], strict=True)
    ]  # formatting only: one string per row of a table of a few dozen rows
    band = [
        f"[{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else "–"
        for lo, hi in zip(df["aa_lo"], df["aa_hi"], strict=True)
    ]
    order = {c.id: i for i, c in enumerate(claims)}
    return (
        df.with_columns(
            pl.Series("here", text, dtype=pl.Utf8),
            pl.Series("A/A twin/A", band, dtype=pl.Utf8),
            pl.col("claim").replace_strict(order, default=len(order)).alias("_order"),
            (pl.col("role") != "primary").alias("_context"),
        )
        .sort("_order", "_context", maintain_order=True)
        .select(
            "claim",
            "role",
            # "xfs / ext4"; one target against itself by its settings; a saving, B's own
            pl.col("compared").alias("compared here"),
            "cell",
            pl.col("here").alias("here [interval]"),
            # the instrument's own difference in this cell: A's identical twin against A (the A/A control)
            "A/A twin/A",
            pl.when(pl.col("a") == "")
            .then(pl.col("n_b").cast(pl.Utf8))
            .otherwise(pl.concat_str([pl.col("n_a").cast(pl.Utf8), pl.lit("+"), pl.col("n_b").cast(pl.Utf8)]))
            .alias("runs"),
            "verdict",
            # the verdict's sentence, and what was checked with less than today's samplers or was not steady: long,
            # so set under the table as numbered notes (report.markdown_table's `notes`)
            pl.concat_str(
                [pl.col("verdict_text"), pl.col("unchecked").fill_null("")], separator="; ", ignore_nulls=True
            )
            .str.strip_chars_end("; ")
            .alias("notes"),
        )
    )


def findings_table(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Every reproducible finding of the study's seeds: the finding, the seed's own number, its preconditions,
    and what this study made of it in the seed's own condition (the primary cells' verdicts, with the number of
    context cells shown beside them), or why it was not tested; a finding this study's runs do not reach at
    all is left to `untested_sentence`."""
    judged = results.filter(pl.col("role").is_not_null())
    prim = judged.filter(pl.col("role").is_in(["primary", OWN_ROLE])).with_columns(
        pl.when(pl.col("role") == OWN_ROLE)
        .then(pl.lit("the lab's own finding, on its own stack: ") + pl.col("verdict_text"))
        .otherwise(pl.col("verdict_text"))
        .alias("verdict_text")
    )
    per = prim.group_by("claim", maintain_order=True).agg(
        pl.col("verdict_text").unique(maintain_order=True).str.join(" | ")
    )
    ctx = judged.filter(pl.col("role") == "context").group_by("claim").len("context")
    none = judged.select("claim").unique().join(prim.select("claim").unique(), on="claim", how="anti")
    untested = results.filter(pl.col("role").is_null()).select("claim", pl.col("verdict").alias("verdict_text"))
    outcome = pl.concat([
        per,
        none.with_columns(pl.lit("no cell in the seed's own condition (context only)").alias("verdict_text")),
        untested,
    ])  # fmt: skip
    return (
        _claim_frame([c for c in claims if c.reproducible_here])
        .join(outcome, on="claim", how="left")
        .filter(pl.col("verdict_text").ne_missing(NOT_IN_STUDY))
        .join(ctx, on="claim", how="left")
        .select(
            "claim",
            "finding",
            pl.col("seed_number").alias("seed's number"),
            "expects",
            pl.col("preconditions").alias("conditions"),
            pl.col("verdict_text").fill_null("–").alias("here (the seed's own condition)"),
            pl.col("context").fill_null(0).alias("context cells"),
        )
    )


def answers_table(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """The answers at a glance, one short row per finding this study judged: the claim, what the seed said (its
    number or its direction), this study's estimate in the seed's own condition (the first primary cell, with how
    many more there are) and the status in a word or two. The sentences, the conditions and every cell are in
    `verdict_table` and `findings_table`; a finding the study did not reach is left to `untested_sentence`."""
    status = claim_status(results, claims).filter(~pl.col("status").is_in([NOT_IN_STUDY, "not reproducible here"]))
    prim = results.filter(pl.col("role").is_in(["primary", OWN_ROLE])).join(
        _claim_frame(claims).select("claim", "quantity"), on="claim"
    )
    first = prim.group_by("claim", maintain_order=True).agg(
        pl.col("estimate", "lo", "hi", "quantity", "coverage").first(), pl.len().alias("cells")
    )
    here = [
        _interval(e, lo, hi, q, cov) + (f" (+{n - 1} cells)" if n > 1 else "")
        for e, lo, hi, q, cov, n in zip(
            first["estimate"],
            first["lo"],
            first["hi"],
            first["quantity"],
            first["coverage"],
            first["cells"],
            strict=True,
        )
    ]  # formatting only: one string per claim
    order = {c.id: i for i, c in enumerate(claims)}
    return (
        status.join(first.select("claim").with_columns(pl.Series("here", here, dtype=pl.Utf8)), on="claim", how="left")
        .join(_claim_frame(claims).select("claim", "seed_number"), on="claim", how="left")
        .with_columns(pl.col("claim").replace_strict(order, default=len(order)).alias("_order"))
        .sort("_order")
        .select(
            "claim",
            pl.col("seed_number").map_elements(first_words, return_dtype=pl.Utf8).alias("seed"),
            pl.col("here").fill_null("–").alias("here [interval]"),
            pl.col("status").alias("verdict"),
        )
    )


def first_words(said: str, most: int = 100) -> str:
    """What a seed said, in its first words, for a table at a glance: its asides in parentheses left out and only
    its first clause (up to a semicolon or a full stop), at most `most` characters, cut at a word with " …".
    The whole statement is in `findings_table`."""
    bare = said
    while (inner := re.sub(r"\s*\([^()]*\)", "", bare)) != bare:  # innermost parentheses first
        bare = inner
    out = re.split(r";\s|(?<!\.)\.\s", bare.strip())[0].strip() or said
    return out if len(out) <= most else out[: most - 1].rsplit(" ", 1)[0] + " …"


def conditions_legend(claims: list[Claim]) -> pl.DataFrame:
    """Each precondition the claims name, defined once (the findings table names them)."""
    used = sorted({p for c in claims for p in c.preconditions})
    return pl.DataFrame(
        {"condition": used, "what it means, and how it is measured": [PRECONDITIONS[p] for p in used]},
        schema={"condition": pl.Utf8, "what it means, and how it is measured": pl.Utf8},
    )


def not_reproducible(claims: list[Claim]) -> pl.DataFrame:
    """Claims no machine of this kind can test, with the reason (so no table implies more than was measured)."""
    rows = [
        {"claim": c.id, "finding": c.claim, "why not here": c.why_not or ""} for c in claims if not c.reproducible_here
    ]
    return pl.DataFrame(rows, schema={"claim": pl.Utf8, "finding": pl.Utf8, "why not here": pl.Utf8})


def forest_rows(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """The rows the forest draws: judged cells whose quantity is a ratio, with an estimate."""
    ratio_claims = [c.id for c in claims if c.quantity not in NOT_ON_AXIS]
    return results.filter(
        pl.col("role").is_not_null() & pl.col("estimate").is_not_null() & pl.col("claim").is_in(ratio_claims)
    )


# A legend of every category a verdict can take is wider than the chart and shrinks the figure on the page:
# it lists only the categories drawn, wrapped below the chart.
def _legend() -> Any:
    """The verdict charts' legend: under the chart, three columns, labels in full."""
    import altair as alt

    return alt.Legend(orient="bottom", columns=3, labelLimit=320, symbolLimit=0)


def _present(domain: list[str], colors: list[str], drawn: pl.Series) -> tuple[list[str], list[str]]:
    """The scale's domain and colours cut to the categories drawn, in the scale's order (colours stay fixed)."""
    keep = set(drawn.drop_nulls().to_list())
    pairs = [(d, c) for d, c in zip(domain, colors, strict=True) if d in keep]
    return [d for d, _ in pairs], [c for _, c in pairs]


AXIS_REACH = 3.0  # the forest's axis reaches this factor beyond its marks, never further


def axis_domain(df: pl.DataFrame) -> tuple[float, float]:
    """The forest's log axis: every estimate, seed tick, band and A/A interval drawn, and the intervals as far as
    AXIS_REACH beyond those; an interval reaching further is cut at the edge (one wide interval would otherwise
    squeeze every other cell into a corner of an axis running to 100)."""

    def positive(cols: list[str]) -> list[float]:
        values = [v for c in cols if c in df.columns for v in df[c].cast(pl.Float64).to_list()]
        return [v for v in values if v is not None and math.isfinite(v) and v > 0]

    core = [1.0, *positive(["estimate", "seed_tick", "seed_tick_hi", "band_lo", "band_hi", "aa_lo", "aa_hi"])]
    ends = positive(["lo", "hi"])
    lo, hi = min(core), max(core)
    return max(min([lo, *ends]), lo / AXIS_REACH) / 1.1, min(max([hi, *ends]), hi * AXIS_REACH) * 1.1


def forest(results: pl.DataFrame, claims: list[Claim]) -> Any:
    """Each judged claim and cell: B/A (or the ratio of ratios) with its interval on a log axis, coloured by
    verdict; a grey rule at 1, black ticks at the seed's own size (its number, or the ends of its range), grey
    ticks at an equivalence band, a wide pale bar at the cell's A/A control (A's twin against A, its interval). A
    cell outside the seed's regime is drawn hollow and faint: its estimate is shown, not judged. The axis:
    `axis_domain`."""
    import altair as alt

    def finite(v: float | None) -> float | None:
        return v if v is not None and math.isfinite(v) and v > 0 else None

    rows = []
    for c in claims:
        seed = c.seed_range if c.quantity not in NOT_ON_AXIS else None
        band = c.band_range
        rows.append({
            "claim": c.id, "seed_tick": finite(seed[0]) if seed else None,
            "seed_tick_hi": finite(seed[1]) if seed and seed[1] != seed[0] else None,
            "band_lo": band[0] if band else None, "band_hi": band[1] if band else None,
        })  # fmt: skip
    marks = pl.DataFrame(
        rows,
        schema={"claim": pl.Utf8, **dict.fromkeys(("seed_tick", "seed_tick_hi", "band_lo", "band_hi"), pl.Float64)},
    )
    df = forest_rows(results, claims).drop("seed_value").join(marks, on="claim")
    if df.is_empty():
        return None
    cap = lambda c: pl.when(pl.col(c).is_infinite() | (pl.col(c) <= 0)).then(None).otherwise(pl.col(c))  # noqa: E731
    df = df.with_columns(
        (pl.col("claim") + " (" + pl.col("role") + ")\n" + pl.col("compared") + " · " + pl.col("cell")).alias("row"),
        cap("lo").alias("lo"),
        cap("hi").alias("hi"),
        (pl.col("verdict") != R.NOT_IN_REGIME).alias("judged"),
    )
    y = alt.Y("row:N", title=None, sort=None, axis=alt.Axis(labelLimit=600, labelExpr="split(datum.label, '\\n')"))
    xs = alt.Scale(type="log", domain=list(axis_domain(df)), clamp=True)
    x = alt.X("estimate:Q", scale=xs, title="B / A (log scale), with its interval; an interval cut at the edge goes on")
    shown = _present(list(VERDICT_COLORS), list(VERDICT_COLORS.values()), df["verdict"])
    color = alt.Color("verdict:N", scale=alt.Scale(domain=shown[0], range=shown[1]), title=None, legend=_legend())
    fill = alt.Fill("verdict:N", scale=alt.Scale(domain=shown[0], range=shown[1]), legend=None)
    base = alt.Chart(df)
    one = alt.Chart(pl.DataFrame({"x": [1.0]})).mark_rule(color="#bbb").encode(x=alt.X("x:Q", scale=xs))
    # the seed's size: one tick at its number, or both ends of the range it gave (or its words of size reach)
    seed = base.mark_tick(color="black", thickness=2, size=14).encode(
        y=y, x=alt.X("seed_tick:Q", scale=xs)
    ) + base.mark_tick(color="black", thickness=2, size=14).encode(y=y, x=alt.X("seed_tick_hi:Q", scale=xs))
    band = base.mark_tick(color="#888", thickness=1, size=14).encode(
        y=y, x=alt.X("band_lo:Q", scale=xs)
    ) + base.mark_tick(color="#888", thickness=1, size=14).encode(y=y, x=alt.X("band_hi:Q", scale=xs))
    # the instrument's own noise under each cell, so an interval inside it reads as no finding at a glance
    noise = (
        base.transform_filter("isValid(datum.aa_lo) && isValid(datum.aa_hi)")
        .mark_rule(color="#dee2e6", strokeWidth=14)
        .encode(y=y, x=alt.X("aa_lo:Q", scale=xs), x2="aa_hi:Q")
    )
    # a cell outside the seed's regime keeps its estimate for the reader, but must not look like a verdict
    faint = alt.condition("datum.judged", alt.value(1.0), alt.value(0.35))
    bars = base.mark_rule(strokeWidth=4).encode(y=y, x=alt.X("lo:Q", scale=xs), x2="hi:Q", color=color, opacity=faint)
    tip = ["claim", "role", "a", "b", "cell", "estimate", "lo", "hi", "aa_lo", "aa_hi", "verdict_text"]
    dots = base.mark_point(size=110, strokeWidth=2).encode(
        y=y, x=x, color=color, fill=alt.condition("datum.judged", fill, alt.value("white")), tooltip=tip
    )
    return alt.layer(one, noise, bars, band, seed, dots).properties(width=360, height=alt.Step(30))


def claim_status(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Per claim: its seed and status, the verdict of its primary cells (one category when they agree, else
    the categories joined by ' / '), or why it has none."""
    judged = results.filter(pl.col("role").is_not_null())
    prim = (
        judged.filter(pl.col("role") == "primary")
        .group_by("claim", maintain_order=True)
        .agg(pl.col("verdict").unique(maintain_order=True).str.join(" / ").alias("status"))
    )
    own = (
        judged.filter(pl.col("role") == OWN_ROLE)
        .select("claim")
        .unique()
        .with_columns(pl.lit(OWN_STATUS).alias("status"))
    )
    ctx_only = judged.select("claim").unique().join(prim, on="claim", how="anti").join(own, on="claim", how="anti")
    rest = results.filter(pl.col("role").is_null()).select(
        "claim", pl.when(pl.col("verdict").str.starts_with("only a figure")).then(pl.lit("only a figure"))
        .otherwise(pl.col("verdict")).alias("status"))  # fmt: skip
    gone = pl.DataFrame(
        [{"claim": c.id, "status": "not reproducible here"} for c in claims if not c.reproducible_here],
        schema={"claim": pl.Utf8, "status": pl.Utf8},
    )
    seeds = pl.DataFrame([{"claim": c.id, "seed": c.seed} for c in claims], schema={"claim": pl.Utf8, "seed": pl.Utf8})
    both = pl.concat([prim, ctx_only.with_columns(pl.lit("context only").alias("status")), own, rest, gone])
    return both.join(seeds, on="claim")


def status_counts(results: pl.DataFrame, claims: list[Claim]) -> pl.DataFrame:
    """Per seed and status (`claim_status`): how many findings (a claim counts once), those this study's runs
    do not reach left out."""
    return (
        claim_status(results, claims)
        .filter(~pl.col("status").is_in([NOT_IN_STUDY, OWN_STATUS]))
        .group_by("seed", "status")
        .len("findings")
        .sort("seed", "status")
    )


def untested_sentence(results: pl.DataFrame) -> str | None:
    """The findings this study's runs do not reach, in one sentence (None when there are none)."""
    ids = results.filter(pl.col("role").is_null() & (pl.col("verdict") == NOT_IN_STUDY))["claim"].unique(
        maintain_order=True
    )
    if ids.len() == 0:
        return None
    listed = ", ".join(f"`{c}`" for c in ids)
    return (
        f"{ids.len()} of the seeds' findings need runs this study does not make, and are neither counted nor "
        f"listed above: {listed}."
    )


def status_chart(results: pl.DataFrame, claims: list[Claim]) -> Any:
    """How many of each seed's findings hold, hold in direction only, show a smaller or larger effect, the
    opposite, are not resolved, were not in the seed's regime, were not or cannot be tested: a bar per seed."""
    import altair as alt

    # a claim whose primary cells disagree (e.g. "not resolved / opposite direction") is one category here:
    # each combination in its own grey was unreadable, and the verdict table beside the chart has every cell
    domain = [*STATUS_ORDER, MIXED_STATUS]
    colors = [*VERDICT_COLORS.values(), "#ced4da", "#c77dff", "#7b2cbf", "#6c757d"]
    counts = (
        status_counts(results, claims)
        .with_columns(pl.when(pl.col("status").is_in(STATUS_ORDER)).then("status").otherwise(pl.lit(MIXED_STATUS)))
        .group_by("seed", "status", maintain_order=True)
        .agg(pl.col("findings").sum())
        .with_columns(pl.col("status").replace_strict({d: i for i, d in enumerate(domain)}).alias("rank"))
    )
    shown = _present(domain, colors, counts["status"])
    return (
        alt.Chart(counts)
        .mark_bar()
        .encode(
            y=alt.Y("seed:N", title="seed"),
            x=alt.X("findings:Q", title="findings"),
            color=alt.Color("status:N", scale=alt.Scale(domain=shown[0], range=shown[1]), title=None, legend=_legend()),
            order=alt.Order("rank:Q"),  # the bar's segments in the legend's order
            tooltip=["seed", "status", "findings"],
        )
        .properties(width=420, height=160)
    )


def tally_sentence(results: pl.DataFrame, claims: list[Claim], seeds: list[str]) -> str:
    """The seeds' findings counted once each: how many have a status here (and which), how many of those were
    set against this study's runs, and how many need runs the study does not make."""
    status = claim_status(results, claims)
    counts = status.group_by("status").len().sort(["len", "status"], descending=[True, False])
    said = [(s, int(n)) for s, n in counts.iter_rows() if s != NOT_IN_STUDY]
    judged = results.filter(pl.col("role").is_not_null())["claim"].n_unique()
    absent = len(claims) - sum(n for _, n in said)
    where = ", ".join(seeds) or "none"
    text = f"Of {len(claims)} findings of seed(s) {where}, {sum(n for _, n in said)} have a status here"
    if said:
        text += f" ({', '.join(f'{n} {s}' for s, n in said)})"
        text += f"; {judged} of them were set against this study's runs, the others only from a figure or not on "
        text += "this kind of machine"
    return text + (f"; {absent} need runs this study does not make." if absent else ".")
