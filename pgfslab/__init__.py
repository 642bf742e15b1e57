"""pgfs-lab: how storage changes PostgreSQL's throughput, latency and footprint.

The subpackages follow the data's flow:

    config/     a study config: load, validate, expand into an interleaved run plan (pure: touches nothing)
    host/       what the lab does to the machine: targets (loop devices, mkfs, mounts), PostgreSQL
                clusters, cgroups, vm.* sysctls, snapshots, power-cut emulation, and what it may touch
    run/        a study's runs: prepare a target, execute one run with its samplers, the durability crash
                cycle, interrupt handling, provenance
    runners/    one module per workload tool (pgbench, sysbench, fsmicro, durability client)
    ingest/     raw logs -> DuckDB: one parser per format, the loader, Parquet export
    analysis/   what the notebooks call: queries, statistics, charts, report text, the notebook registry
    paper/      the whitepaper: its sections and the PDF export (Markdown -> pandoc -> Typst)
    cli/        the `pgfslab` command (the Snakemake rules call it)

Below them all, the base layer every stage may import (the package's top-level modules): `paths` finds the
lab's own files; `errors.LabError` is an error the command line reports as one line; `yaml_text` reads YAML;
`progress` prints progress lines. A module imports only from its own subpackage, from those listed before
it, and from the base layer (tests/test_import_layers.py checks).
"""

__version__ = "0.2.0"
