# %% [markdown]
# # Does the seed's finding hold here?
#
# **Question.** This study reproduces one or more of the seed documents (`seeds` in its config). For each of
# their findings: the seed's number, the same comparison in this study's runs (B over A of the runs'
# headline values, or of their within-run variation), its distribution-free interval (Hodges-Lehmann ratio
# with the exact rank interval that the significance tables' Mann-Whitney test inverts), and the verdict:
# **holds** (the whole interval is where the claim says), **does not hold** (none of it is), or **not resolved**
# at the precision reached (the interval straddles the claim's edge; its width says how far off). Claims are
# in `pgfslab/analysis/verdicts/claims.yaml`; thresholds the seeds gave only in words are marked "(ours)".

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
import polars as pl

from pgfslab.analysis import queries as data
from pgfslab.analysis import report
from pgfslab.analysis.notebook import setup
from pgfslab.analysis.verdicts import claims, evaluate, facts, table

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
seed_claims = claims.for_seeds(cfg.get("seeds") or [])
runs = data.require(facts.run_facts(db, study, trim_s), "successful runs to set against the seeds' findings")
results = evaluate.evaluate_all(runs, seed_claims, alpha)
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
    "What this study says of each seed's findings: how many hold, do not hold, are not resolved at the precision "
    "reached, were not tested by its runs, or cannot be tested on this kind of machine.",
)

# %% [markdown]
# ## Each tested finding: B/A with its interval, against the claim's line

# %%
chart = table.forest(results, seed_claims)
if chart is not None:
    pub.figure(
        chart,
        "seed_verdicts-forest",
        f"Each tested claim and cell: B/A with its {100 * (1 - alpha):g} % (or wider) distribution-free interval on a "
        "log axis, coloured by verdict (where too few runs allow no such interval, the widest there is: it resolves "
        "nothing); grey ticks mark the claim's line (its factor, or the band 1 ± tolerance).",
    )

# %%
tested = table.verdict_table(results, seed_claims)
if tested.height:
    pub.table(
        tested,
        caption="Each finding tested by this study, per cell: B over A as compared here, what the claim expects, this "
        "lab's estimate with its interval, the runs per side, the test and the verdict. Not resolved: the interval "
        "straddles the claim's edge at the precision reached (more repeats narrow it: see the precision section), or "
        f"the runs are too few for a {100 * (1 - alpha):g} % interval at all (3 against 3 cannot give one): then the "
        "widest interval there is is shown with its coverage (e.g. 90 %), and no verdict is drawn from it.",
    )
pub.table(
    table.findings_table(results, seed_claims),
    caption="Every finding of the seed(s) this machine can test: the finding (our wording), the seed's own number "
    '("(ours)": the seed gave only words and the threshold is the lab\'s), and what this study made of it.',
)

# %%
gone = table.not_reproducible(seed_claims)
if gone.height:
    pub.table(gone, caption="Findings no machine of this kind can test (so no table above implies they were measured).")

# %%
tally = evaluate.summary(results)
counts = {v: int((results["verdict"] == v).sum()) for v in ("holds", "does not hold", "not resolved")}
untested = results.filter(~pl.col("verdict").is_in(list(counts)))
pub.text(
    f"Of {len(seed_claims)} findings of seed(s) {', '.join(cfg.get('seeds') or [])}, {tally.height} were tested here "
    f"in {sum(counts.values())} cells: {counts['holds']} hold, {counts['does not hold']} do not hold and "
    f"{counts['not resolved']} are not resolved at the precision reached. {untested.height} were not tested by this "
    f"study's runs and {gone.height} cannot be tested on this kind of machine."
)
