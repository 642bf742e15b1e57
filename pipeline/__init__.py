"""pgfs-lab: how storage changes PostgreSQL's throughput, latency and footprint.

Modules, one job each:
    config      load and validate a study config, expand it into an interleaved run plan
    targets     loop-mounted file-system targets (or a labelled plain-directory fallback)
    postgres    one PostgreSQL cluster per target, started and stopped as an unprivileged user
    sampler     /proc samplers that run beside a workload
    provenance  host, kernel, tool and git facts for run.json
    runners     one runner per workload tool
    parsers     one parser per raw log format
    ingest      raw logs -> DuckDB, one transaction per file
    charts      the lab's altair theme and chart builders
    pdf_export  nbconvert exporter: notebook -> Markdown -> pandoc -> Typst -> PDF
"""

__version__ = "0.1.0"
