# Stage 3: the study's notebooks (pgfslab.analysis.registry says which, with which parameters), each
# executed by papermill with the kernel in notebooks/, as JupyterLab runs it. A notebook re-runs when the
# database, the notebook, the analysis code or its parameters change.

NOTEBOOK_SHELL = ("{PY} -m pgfslab notebook --config {input.frozen:q} --name {params.name} --out {output.nb}"
                  " > {log} 2>&1 || {{ tail -30 {log} >&2; exit 1; }}")


rule notebook:
    """One notebook of the study (throughput, latency, variance, memory, footprint, scaling, published
    comparison): executed copy, its figure in three formats, its table and what it gives the paper."""
    input:
        db="data/{study}.duckdb",
        nb=lambda w: str(JOBS[w.name].source),
        frozen=ancient(FROZEN),
        code=CODE["analyse"],
    output:
        nb="build/{study}/notebooks/{name}.ipynb",
        figs=multiext("figures/{study}/{name}", *registry.FIGURE_FORMATS),
        table="build/{study}/tables/{name}.parquet",
        publication="build/{study}/tables/{name}.json",
    wildcard_constraints:
        name="|".join(re.escape(n) for n, j in JOBS.items() if j.figures == (n,)) or "-",
    params:
        p=_params,
        name=lambda w: w.name,
    log:
        "build/{study}/logs/{name}.log",
    shell:
        NOTEBOOK_SHELL


rule fs_micro:
    """File-system micro-benchmarks: ops/s and latency per operation and target, benchstat table."""
    input:
        db="data/{study}.duckdb",
        nb=str(paths.NOTEBOOKS / "fs_micro.ipynb"),
        frozen=ancient(FROZEN),
        code=CODE["analyse"],
    output:
        nb="build/{study}/notebooks/fs_micro.ipynb",
        figs=[f"figures/{{study}}/{f}{e}" for f in registry.FIGURES["fs_micro"] for e in registry.FIGURE_FORMATS],
        table="build/{study}/tables/fs_micro.parquet",
        publication="build/{study}/tables/fs_micro.json",
    params:
        p=lambda w: _params(w) if "fs_micro" in JOBS else "",
        name="fs_micro",
    log:
        "build/{study}/logs/fs_micro.log",
    shell:
        NOTEBOOK_SHELL
