# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs (`make run` first).
db = "data/default.duckdb"
study = "default"
figures_dir = "figures/default"
tables_dir = "build/default/tables"
build_dir = "build/default"

# %%
from pgfslab.paper import sections as ps

ctx = ps.Context.load(db, study, figures_dir=figures_dir, tables_dir=tables_dir, build_dir=build_dir)
ps.abstract(ctx)

# %%
ps.setup(ctx)

# %%
ps.methodology(ctx)

# %%
ps.results(ctx)

# %%
ps.published(ctx)

# %%
ps.durability(ctx)

# %%
ps.threats(ctx)

# %%
ps.appendix(ctx)
