# Stage 2: every raw log of the study into data/<study>.duckdb (rebuilt atomically).


def _ingest_inputs(wildcards):
    raw = labcfg.raw_dir(wildcards.study)
    if RAW_ONLY:
        return [str(raw / "study.yaml"), *map(str, sorted(raw.glob("*/run.json"))),
                *map(str, sorted(raw.glob("_setup/*/target.json"))),
                *map(str, sorted(raw.glob("_setup/*/device/baseline.json")))]
    return [str(raw / "study.yaml"),
            *(str(raw / "_setup" / t / "target.json") for t in STUDY_CFG["targets"]),
            *(f for t in STUDY_CFG["targets"] for f in labcfg.baseline_inputs(STUDY_CFG, wildcards.study, t)),
            *(str(raw / r.run_id / "run.json") for r in PLAN)]


rule ingest:
    input:
        _ingest_inputs,
        code=CODE["ingest"],
        external=sorted(str(p) for p in paths.EXTERNAL.rglob("*") if p.is_file()),
    output:
        "data/{study}.duckdb",
    shell:
        "{PY} -m pgfslab ingest-study --raw data/raw/{wildcards.study} --db {output}"
