# %% [markdown]
# # Does the seed's finding hold here?
#
# **Question.** This study reproduces one or more of the seed documents (`seeds` in its config). For each of
# their findings, as the seed made it: the same comparison in this study's runs (B over A of the quantity the
# seed reported: throughput, its σ², latency, I/O wait, bytes written; a ratio of ratios where the seed spoke
# of a change), its distribution-free interval (the runs compared as independent samples, or paired by
# round where the config says so: `analysis.primary`), and a verdict that says the **direction** (agrees, opposite,
# unresolved) and the **magnitude** apart: "holds: the seed's 1.45 is inside [1.20, 1.60]", "same direction,
# smaller effect: 0.85 [0.80, 0.90] against the seed's 0.50", "opposite direction", "not resolved at ±X %"
# (or, where the interval covers 1 yet stops short of the seed's size, "smaller effect, direction not resolved").
# A finding the seed gave only in words is tested for its direction; "the same" is tested for equivalence
# against a band the lab chose (its reason is stated). Only the cell that is the seed's own condition gives a
# verdict; other cells are context. A cell that misses a condition under which the seed's mechanism acts
# (I/O-bound, steady, the seed's device class, ...; measured from the samplers) is "not tested in the seed's
# regime", with the measured reason. Claims are in `pgfslab/analysis/verdicts/claims.yaml`.

# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs. The defaults read the
# default study (`make run` first); papermill and `pgfslab notebook` pass another study's.
db = "data/default.duckdb"
study = "default"
targets = None  # a list of target names to keep, or None for every target
alpha = 0.05
trim_s = 2.0
figures_dir = "figures/default"
tables_dir = "build/default/tables"

# %%
from pgfslab.analysis import queries, report
from pgfslab.analysis.notebook import setup
from pgfslab.analysis.verdicts import claims, evaluate, facts, table

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
seed_claims = claims.for_seeds(cfg.get("seeds") or [])
crashes = facts.durability_runs(db, study)  # the durability check's crashes (a study of those alone has no headline)
runs = facts.run_facts(db, study, trim_s)
if crashes.height == 0:
    queries.require(runs, "successful runs to set against the seeds' findings")
# the primary comparison the config stated before the runs (analysis.primary): runs, or paired by round
primary = (cfg.get("analysis") or {}).get("primary", "runs")
results = evaluate.evaluate_all(runs, seed_claims, alpha, crashes, primary)
pub = report.Publication(
    "seed_verdicts",
    "Does the seed's finding hold here?",
    f"Seed(s) {', '.join(cfg.get('seeds') or []) or 'none'}: each finding set against this study's runs, with its interval.",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)
pub.save(results)

# %% [markdown]
# ## The findings at a glance

# %%
pub.figure(
    table.status_chart(results, seed_claims),
    "seed_verdicts",
    "What this study says of each seed's findings, in the seed's own condition: how many hold (the seed's number "
    "inside the lab's interval, or its direction where it gave no number), show a smaller or larger effect, the "
    "opposite, are not resolved, were not in the seed's regime, can be judged only from a figure, or cannot be "
    "tested on this kind of machine (findings this study's runs do not reach at all are named in one sentence "
    "below, not counted).",
)
pub.table(
    table.answers_table(results, seed_claims),
    caption="The answers at a glance: each finding this study judged (claim id as in claims.yaml), what the seed "
    "said (its number or its direction), this study's estimate in the seed's own condition (B/A, or the quantity "
    "the claim names, with its interval at the claim's level: 95 % over its primary cells, Bonferroni-adjusted; "
    "+k: more primary cells, each in the full table) and the verdict. The seed's words in full, every cell, its "
    "conditions and the verdict's sentence are in Appendix A.",
    main=True,
)

# %% [markdown]
# ## Each tested finding: B/A with its interval, against 1 and the seed's number

# %%
chart = table.forest(results, seed_claims)
if chart is not None:
    pub.figure(
        chart,
        "seed_verdicts-forest",
        f"Each judged claim and cell (primary: the seed's own condition; context: the others): B/A, or the ratio "
        f"of ratios, with its {100 * (1 - alpha):g} % interval on a log axis, coloured by verdict; the grey rule is "
        "1, the black tick the seed's own number, grey ticks the lab's equivalence band (where the claim says 'the "
        "same'), the wide pale bar the A/A control (A's identical twin against A, with its interval, where the "
        "study has a twin; the comparison is then made against A and the twin together). A hollow, faint cell was not in the "
        "seed's regime: its estimate is shown, not judged. Where too few runs allow no such interval the widest "
        "there is is drawn, and resolves nothing.",
    )

# %%
tested = table.verdict_table(results, seed_claims)
# a study without an A/A twin has no A/A column to show: its width goes to the others
no_twin = tested["A/A twin/A"].eq("–").all()
# one table per claim: all of a claim's cells in one table of nine columns would not fit the page
for i, ((claim,), cells) in enumerate(tested.group_by("claim", maintain_order=True)):
    pub.table(
        cells.drop("claim", *(["A/A twin/A"] if no_twin else [])),
        caption=f"`{claim}`, per cell, as in the first of these tables."
        if i
        else f"`{claim}`, and each finding after it in a table of its own: per cell, the seed's own condition "
        "(primary) first, what was compared, this lab's estimate with its interval ("
        + (
            "the Hodges-Lehmann ratio with the exact signed-rank interval of the runs paired by round; "
            if primary == "rounds"
            else "the mean per-round ratio of the runs paired by round with Student's t interval; "
            if primary == "rounds-t"
            else "the Hodges-Lehmann ratio with the exact rank interval; "
        )
        + "where the study carries a twin of A, against A and the twin together, so that B "
        "must differ from both; a claim's primary cells Bonferroni-adjusted), the A/A control (the twin against A, where the study has one), the runs per side, the verdict "
        "in a word or two, and its notes under the table (the verdict's sentence; a precondition checked with less "
        "than today's samplers, a side whose runs were not steady). What each claim expects is in the list of "
        "findings below. Context cells are shown, never pooled into the verdict. Footprints and compression ratios "
        "are one measurement per load (the runs re-read the same load): no interval.",
        notes=("notes",),
    )
pub.entries(
    table.findings_table(results, seed_claims),
    "claim",
    "Every finding of the seed(s) this machine can test: the finding (our wording), the seed's own number in its "
    "words, what the claim expects of B/A, the conditions under which its mechanism acts (defined in the list "
    "after it), what this study made of it in the seed's own condition (or why it has no verdict: only a figure can "
    "speak to it, and which) and how many context cells it has.",
)
legend = table.conditions_legend(seed_claims)
if legend.height:
    pub.entries(
        legend,
        "condition",
        "The conditions the findings name, each measured on the set-up or on the reference side A's runs, never on "
        "the response under test.",
    )
untested = table.untested_sentence(results)
if untested:
    pub.text(untested)

# %%
gone = table.not_reproducible(seed_claims)
if gone.height:
    pub.entries(
        gone, "claim", "Findings no machine of this kind can test (so nothing above implies they were measured)."
    )

# %%
pub.text(table.tally_sentence(results, seed_claims, list(cfg.get("seeds") or [])))
