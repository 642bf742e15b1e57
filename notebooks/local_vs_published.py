# %% [markdown]
# # This lab's numbers beside the published ones
#
# **Question.** Where this study measured something a seed document also reports, how do the numbers
# compare? The published results ship with the lab (`data/external/`, ingested with origin `published`):
# pgbench summaries (seed 001), sysbench TPS average and variance and disk space (seed 002), file-system
# micro-benchmarks (seed 003) and btrfs compression savings (seed 004). **Caveat:** different hardware,
# data-set sizes, client counts, PostgreSQL versions and run lengths; absolute numbers are not comparable,
# and the ratios between configurations (which setup is faster, by how much) are the comparable part.

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

from pgfslab.analysis import charts, queries, report
from pgfslab.analysis.answers import published
from pgfslab.analysis.notebook import setup

db, figures_dir, tables_dir, cfg, colors = setup(db, study, figures_dir, tables_dir)  # paths: against the repository

# %%
runs = queries.headline(db, study, targets)
pg_pub, sb_pub = queries.published_pgbench(db), queries.published(db, "published_sysbench_variance")
fs_pub, comp_pub = queries.published_fs_ops(db), queries.published(db, "published_compression")
space_pub = queries.published(db, "published_space")
if not (pg_pub.height or sb_pub.height or fs_pub.height or comp_pub.height or space_pub.height):
    raise queries.MissingData("no published reference results in this study database (data/external/ not ingested)")

# %%
pub = report.Publication(
    "local_vs_published",
    "Comparison with published results",
    "How do this lab's numbers compare with the seed documents' where both measured the same thing?",
    tables_dir=tables_dir,
    figures_dir=figures_dir,
    study=study,
)

# %%
# one block of rows per measure a seed document also reports: seed 001 pgbench tps, seed 002 sysbench CV of
# per-second tps (scale-free), seed 003 fs micro-benchmark ops/s by benchmark family, seeds 002 and 004 space savings
table = published.comparable(
    [
        published.pgbench_items(runs, pg_pub, cfg["workloads"], cfg.get("dataset", {}).get("scale")),
        published.sysbench_items(queries.throughput(db, study, None, targets), sb_pub, cfg["workloads"], trim_s),
        published.fs_items(queries.fs_ops(db, study, targets), fs_pub),
        published.compression_items(queries.storage(db, study, targets), comp_pub, space_pub),
    ]
)
if table.height == 0:
    raise queries.MissingData(
        "nothing in this study is comparable with the published results (no pgbench, sysbench, "
        "fsmicro or btrfs-compression data that a seed also reports)"
    )
pub.save(table)

# %%
chart = charts.comparison_dots(
    table,
    "value",
    "item",
    "source",
    "kind",
    x_title="value (log scale; unit per panel)",
    title="This lab and the seed documents",
)
pub.figure(
    chart,
    "local_vs_published",
    "This lab's numbers (one dot per target and cell) beside the published ones (seed documents), one panel per "
    "comparable measure with its own log scale: pgbench tps, sysbench CV of per-second tps (%), fs ops/s, space "
    "savings (%). Different hardware and sizes: read the spread between configurations, not the absolute gap.",
)
for kind, part in table.group_by("kind", maintain_order=True):
    pub.table(
        part.select("source", "item", pl.col("value").alias(part["unit"][0]), "note"),
        caption=f"{kind[0]}: this lab and the published numbers. Caveat: different machines, sizes and run lengths.",
    )

# %%
notes = [
    f"{r['kind']}: this lab {r['lab_min']:,.1f}–{r['lab_max']:,.1f} {r['unit']} against published "
    f"{r['pub_min']:,.1f}–{r['pub_max']:,.1f}"
    for r in published.ranges(table).iter_rows(named=True)
]
pub.text(
    "; ".join(notes) + ". The published numbers come from other machines: 16- and 48-vCPU cloud VMs on "
    "S3-backed network block devices (seed 001), two x86 servers with a compressing SSD and an NVMe drive "
    "(seed 002), a 4-core machine, a larger Xeon and a ~100-core AMD EPYC with four NVMe drives (seed 000), "
    "and a 32 GB machine with a magnetic data disk and WAL on an SSD (seed 004), with larger data sets and "
    "longer runs; only the direction and size of differences between configurations carry over."
)
