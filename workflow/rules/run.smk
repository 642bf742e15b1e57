# Stage 1: targets and runs. Both touch the machine, so `make run` uses -j1: one job at a time.
# Runs are ordered by the plan (interleaved repeats) through their priority. Inputs on other
# stages' outputs are ancient(): a study folder copied from another machine (arbitrary mtimes)
# is never re-run; a run re-runs only when its own parameters change (Snakemake's params trigger,
# pgfslab.config.study.run_fingerprint / target_fingerprint).

RUNS = {r.run_id: r for r in PLAN}

if not RAW_ONLY:

    rule freeze_config:
        """The resolved study config travels with the raw data (data/raw/<study>/study.yaml); every
        later stage reads it, so what ran is exactly what is recorded."""
        output:
            "data/raw/{study}/study.yaml",
        params:
            cfg=json.dumps(STUDY_CFG, sort_keys=True),
            src=CONFIG_SOURCE,
        shell:
            "{PY} -m pgfslab freeze --json {params.cfg:q} --source {params.src:q} --out {output}"

    rule prepare_target:
        """mkfs on a loop-mounted image, initdb, bulk load (pgbench -i, timed)."""
        input:
            frozen=ancient(FROZEN),
            # a target whose WAL lives on another target is prepared after it (and again when it is)
            wal=lambda w: labcfg.wal_target_inputs(STUDY_CFG, w.study, w.target),
        output:
            "data/raw/{study}/_setup/{target}/target.json",
        params:
            spec=lambda w: labcfg.target_fingerprint(STUDY_CFG, w.target),
        priority: 1000
        shell:
            "{PY} -m pgfslab prepare --config {input.frozen:q} --target {wildcards.target}"

    rule device_baseline:
        """The target measured without PostgreSQL: fio jobs and pg_test_fsync (pgfslab.run.device_baseline)."""
        input:
            frozen=ancient(FROZEN),
            target=ancient("data/raw/{study}/_setup/{target}/target.json"),
        output:
            "data/raw/{study}/_setup/{target}/device/baseline.json",
        params:
            spec=lambda w: labcfg.baseline_fingerprint(STUDY_CFG, w.target),
        priority: 999
        shell:
            "{PY} -m pgfslab device-baseline --config {input.frozen:q} --target {wildcards.target}"

    rule run:
        """One run of the plan: raw logs + run.json under data/raw/<study>/<run-id>/."""
        input:
            frozen=ancient(FROZEN),
            target=lambda w: ancient(f"data/raw/{w.study}/_setup/{RUNS[w.run_id].target}/target.json"),
            # measured before the target's runs, when the study has a device baseline
            baseline=lambda w: [ancient(f) for f in labcfg.baseline_inputs(STUDY_CFG, w.study, RUNS[w.run_id].target)],
        output:
            "data/raw/{study}/{run_id}/run.json",
        params:
            spec=lambda w: labcfg.run_fingerprint(STUDY_CFG, RUNS[w.run_id]),
        priority: lambda w: len(PLAN) - RUNS[w.run_id].plan_index
        shell:
            "{PY} -m pgfslab run-one --config {input.frozen:q} --run-id {wildcards.run_id}"


rule raw:
    """Only the measurements: every run of the plan and the study's resolved config (`snakemake raw`)."""
    input:
        FROZEN,
        [f"data/raw/{STUDY}/{r.run_id}/run.json" for r in PLAN],
