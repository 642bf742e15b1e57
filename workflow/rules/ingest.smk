# Stage 2: every raw log of the study into data/<study>.duckdb (rebuilt atomically); what it said, warnings
# included, also in build/<study>/logs/ingest.log. Its inputs: common.smk's _ingest_inputs.

import shlex

from pgfslab.config import host_folders as labfolders

# A study whose data/raw/<study>/ holds host folders (<host>/study.yaml: several machines, or one with a
# host key) is merged into one database with a `host` column (pgfslab.ingest.merge); re-analysing one
# without a study.yaml of its own reads their common config, frozen here.
MERGED = bool(HOSTS or STUDY_OBJ.host or labfolders.host_folders(labcfg.raw_dir(STUDY)))
if RAW_ONLY and MERGED and not Path(FROZEN).exists():
    FROZEN = f"build/{STUDY}/study.yaml"

    localrules:
        merged_config,

    rule merged_config:
        """The config every host folder of the study shares (without `host`), for the notebooks."""
        output:
            FROZEN,
        params:
            cfg=workflow_config.frozen_json(STUDY_CFG),
            src=CONFIG_SOURCE,
        shell:
            "{PY} -m pgfslab freeze --json {params.cfg:q} --source {params.src:q} --out {output}"


rule ingest:
    input:
        _ingest_inputs,
        code=CODE["ingest"],
        external=sorted(str(p) for p in paths.EXTERNAL.rglob("*") if p.is_file()),
    output:
        "data/{study}.duckdb",
    log:
        "build/{study}/logs/ingest.log",
    params:
        # `make analyse STUDY=x DAY2=<earlier raw folder>`: both days in one database (docs/two-days.md); a
        # change of DAY2 (or its removal) re-ingests
        day2=f"--day2 {shlex.quote(str(config['day2']))}" if config.get("day2") else "",
    shell:
        # the warnings (files not ingested) stay on the console as well (Snakemake's shell sets pipefail)
        "{PY} -m pgfslab ingest-study --raw data/raw/{wildcards.study} --db {output} {params.day2} 2>&1 | tee {log}"
