# Stage 2: every raw log of the study into data/<study>.duckdb (rebuilt atomically); what it said, warnings
# included, also in build/<study>/logs/ingest.log. Its inputs: common.smk's _ingest_inputs.


rule ingest:
    input:
        _ingest_inputs,
        code=CODE["ingest"],
        external=sorted(str(p) for p in paths.EXTERNAL.rglob("*") if p.is_file()),
    output:
        "data/{study}.duckdb",
    log:
        "build/{study}/logs/ingest.log",
    shell:
        # the warnings (files not ingested) stay on the console as well (Snakemake's shell sets pipefail)
        "{PY} -m pgfslab ingest-study --raw data/raw/{wildcards.study} --db {output} 2>&1 | tee {log}"
