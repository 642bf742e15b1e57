# Stage 2: every raw log of the study into data/<study>.duckdb (rebuilt atomically).


from pgfslab.ingest import merge as labmerge

# A study whose data/raw/<study>/ holds host folders (<host>/study.yaml: several machines, or one with a
# host key) is merged into one database with a `host` column (pgfslab.ingest.merge); re-analysing one
# without a study.yaml of its own reads their common config, frozen here.
MERGED = bool(HOSTS or STUDY_CFG.get("host") or labmerge.host_folders(labcfg.raw_dir(STUDY)))
if RAW_ONLY and MERGED and not Path(FROZEN).exists():
    FROZEN = f"build/{STUDY}/study.yaml"

    localrules:
        merged_config,

    rule merged_config:
        """The config every host folder of the study shares (without `host`), for the notebooks."""
        output:
            FROZEN,
        params:
            cfg=json.dumps(STUDY_CFG, sort_keys=True),
            src=CONFIG_SOURCE,
        shell:
            "{PY} -m pgfslab freeze --json {params.cfg:q} --source {params.src:q} --out {output}"


def _ingest_inputs(wildcards):
    raw = labcfg.raw_dir(wildcards.study)
    if RAW_ONLY:
        return [*map(str, sorted(raw.glob("study.yaml"))), *map(str, sorted(raw.glob("*/study.yaml"))),
                *map(str, sorted(raw.glob("*/run.json"))), *map(str, sorted(raw.glob("*/*/run.json"))),
                *map(str, sorted(raw.glob("_setup/*/target.json"))),
                *map(str, sorted(raw.glob("*/_setup/*/target.json")))]
    if HOSTS:
        return [FROZEN, *(str(raw / h / "share.json") for h in HOSTS)]
    rawh = Path(RAW)
    return [FROZEN,
            *(str(rawh / "_setup" / t / "target.json") for t in STUDY_CFG["targets"]),
            *(str(rawh / r.run_id / "run.json") for r in PLAN)]


rule ingest:
    input:
        _ingest_inputs,
        code=CODE["ingest"],
        external=sorted(str(p) for p in paths.EXTERNAL.rglob("*") if p.is_file()),
    output:
        "data/{study}.duckdb",
    shell:
        "{PY} -m pgfslab ingest-study --raw data/raw/{wildcards.study} --db {output}"
