"""benchstat's text: the aligned table of a `compare.benchstat()` frame, its number format and the
delta strings of its rows."""

from __future__ import annotations

import math

import polars as pl


def format_delta(significant: bool, old: float, new: float) -> str:
    """A row's delta column: `~` when not significant, else the change (`?` when it has no ratio)."""
    if not significant:
        return "~"
    if old == new:
        return "0.00%"
    if old == 0 or math.isnan(old) or math.isnan(new):
        return "?"
    return format_ratio(old, new)


def format_ratio(old: float, new: float) -> str:
    """The change from old to new as benchstat prints it: +x.xx%."""
    return f"{(new / old - 1) * 100:+.2f}%"


def si_scaler(val: float) -> tuple[str, float, str]:
    """benchstat's number format for a row (old `NewScaler`, unitless): 3 significant digits with a
    k/M/G/T suffix, chosen from the row's baseline value. Returns (format, scale, suffix)."""
    x = abs(val) if not math.isnan(val) else 0.0
    steps = [
        (99.5e12, "%.0f", 1e12, "T"),
        (9.95e12, "%.1f", 1e12, "T"),
        (995e9, "%.2f", 1e12, "T"),
        (99.5e9, "%.0f", 1e9, "G"),
        (9.95e9, "%.1f", 1e9, "G"),
        (995e6, "%.2f", 1e9, "G"),
        (99.5e6, "%.0f", 1e6, "M"),
        (9.95e6, "%.1f", 1e6, "M"),
        (995e3, "%.2f", 1e6, "M"),
        (99.5e3, "%.0f", 1e3, "k"),
        (9.95e3, "%.1f", 1e3, "k"),
        (995, "%.2f", 1e3, "k"),
        (99.5, "%.0f", 1, ""),
        (9.95, "%.1f", 1, ""),
    ]
    for threshold, fmt, scale, suffix in steps:
        if x >= threshold:
            return fmt, scale, suffix
    return "%.2f", 1, ""


def _fmt_num(v: float, scaler: tuple[str, float, str]) -> str:
    fmt, scale, suffix = scaler
    if v is None or math.isnan(v):
        return "-"
    return (fmt % (v / scale)) + suffix


def _fmt_pm(pm: float | None) -> str:
    if pm is None or (isinstance(pm, float) and math.isnan(pm)):
        return "± ?"
    if math.isinf(pm):
        return "± ∞"
    return f"±{f'{pm * 100:.0f}%':>3}"


def format_benchstat(df: pl.DataFrame, metric: str | None = None) -> str:
    """benchstat-style aligned text of a `benchstat()` frame, in the layout of seed 003:

        name          ext4 tps     xfs tps      delta
        tpcb/c=1       100 ± 2%      80 ± 3%    -19.95%  (p=0.002 n=6+6)
        select/c=4    5.31k ± ∞ ¹  5.42k ± ∞ ¹  ~        (p=0.100 n=3+3) ²
        geomean            729          658     -9.64%
        ¹ need >= 6 samples for confidence interval at level 0.95
        ² need >= 4 samples to detect a difference at alpha level 0.05 (...)

    Each row's numbers use the scale chosen from its baseline center (as benchstat). Notes become
    numbered footnotes; the p shown is the one that decided significance (adjusted if adjusting).
    """
    if df.height == 0:
        return "(no benchmarks)\n"
    base, cand = df["baseline"][0], df["candidate"][0]
    unit = f" {metric}" if metric else ""
    adjust = df["adjust"][0] if "adjust" in df.columns else "none"
    footnotes: list[str] = []

    def mark(note: str | None) -> str:
        if not note:
            return ""
        marks = []
        for part in note.split("; "):
            if part not in footnotes:
                footnotes.append(part)
            marks.append(_superscript(footnotes.index(part) + 1))
        return " " + ",".join(marks)

    table: list[list[str]] = [["name", f"{base}{unit}", f"{cand}{unit}", "delta", ""]]
    for r in df.iter_rows(named=True):  # one line per benchmark: small
        sc = si_scaler(r["center_baseline"] if r["center_baseline"] is not None else math.nan)
        if r["benchmark"] == "geomean":
            cells = [_fmt_num(r["center_baseline"], sc), _fmt_num(r["center_candidate"], sc)]
            table.append([r["benchmark"], *cells, r["delta"] or "", mark(r["note"]).strip()])
            continue
        ci_notes = [n for n in (r["note"] or "").split("; ") if n.startswith("need >=") and "confidence" in n]
        other_notes = [n for n in (r["note"] or "").split("; ") if n and n not in ci_notes]
        a = f"{_fmt_num(r['center_baseline'], sc)} {_fmt_pm(r['pm_baseline'])}" if r["n_baseline"] else "-"
        b = f"{_fmt_num(r['center_candidate'], sc)} {_fmt_pm(r['pm_candidate'])}" if r["n_candidate"] else "-"
        if ci_notes:
            m = mark("; ".join(ci_notes))
            a += m if r["pm_baseline"] is not None and math.isinf(r["pm_baseline"]) else ""
            b += m if r["pm_candidate"] is not None and math.isinf(r["pm_candidate"]) else ""
        p_used = r["p_adjusted"] if adjust != "none" else r["p"]
        test = ""
        if r["p"] is not None and not math.isnan(r["p"]):
            test = f"(p={p_used:.3f} n={r['n_baseline']}+{r['n_candidate']})"
        table.append([r["benchmark"], a, b, r["delta"] or "", (test + mark("; ".join(other_notes))).strip()])

    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = []
    for row in table:
        line = f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]:<{widths[3]}}  {row[4]}"
        lines.append(line.rstrip())
    for i, note in enumerate(footnotes, 1):
        lines.append(f"{_superscript(i)} {note}")
    if adjust != "none":
        n_compared = int(df.filter(pl.col("p").is_not_null() & pl.col("p").is_not_nan()).height)
        lines.append(
            f"p-values {'Holm-Bonferroni' if adjust == 'holm' else 'Benjamini-Hochberg'}-adjusted over {n_compared} "
            "comparisons"
        )
    return "\n".join(lines) + "\n"


def _superscript(i: int) -> str:
    digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
    return "".join(digits[int(c)] for c in str(i))
