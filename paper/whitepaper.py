# %% tags=["parameters"]
# Paths are relative to the repository (or absolute), wherever the kernel runs (`make run` first).
db = "data/default.duckdb"
study = "default"
figures_dir = "figures/default"
tables_dir = "build/default/tables"
build_dir = "build/default"

# %%
from pgfslab.paper.abstract import abstract
from pgfslab.paper.appendix import appendix
from pgfslab.paper.context import Context
from pgfslab.paper.durability import durability
from pgfslab.paper.methodology import methodology
from pgfslab.paper.results import answers, published, results
from pgfslab.paper.testbed import setup
from pgfslab.paper.threats import threats

ctx = Context.load(db, study, figures_dir=figures_dir, tables_dir=tables_dir, build_dir=build_dir)
abstract(ctx)
answers(ctx)  # what holds of each seed finding, first

# %%
results(ctx)

# %%
published(ctx)

# %%
durability(ctx)

# %%
setup(ctx)

# %%
methodology(ctx)

# %%
threats(ctx)

# %%
appendix(ctx)
