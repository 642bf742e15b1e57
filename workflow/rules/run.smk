# Stage 1: targets and runs. Both touch the machine: each of their jobs takes every core Snakemake has
# (threads: MACHINE_CORES, common.smk), so nothing runs beside a measurement even when `make run` gives
# Snakemake all cores (which lets the study's notebooks run side by side once the runs are done).
# Runs are ordered by the plan (interleaved repeats) through their priority. A run re-runs when its own
# parameters change (Snakemake's params trigger, pgfslab.config.study.Study.run_fingerprint /
# target_fingerprint), or when its target was prepared again, in the same pass that freezes the changed
# config: the rules read RUN_CONFIG, written at parse time (workflow_config.run_config says why), and
# depend on their target's target.json by its time. Other inputs on earlier stages (the device
# baseline) are ancient(): they order the jobs and trigger nothing. A raw folder from another machine is
# re-analysed with `make analyse` (raw_only), which has no run rules.

RUNS = {r.run_id: r for r in PLAN}

if not RAW_ONLY:

    # a re-analysis (raw_only) has no freeze_config to name local
    localrules:
        freeze_config,

    rule freeze_config:
        """The resolved study config travels with the raw data (data/raw/<study>/study.yaml); every
        later stage reads it, so what ran is exactly what is recorded."""
        output:
            FROZEN,
        params:
            cfg=workflow_config.frozen_json(STUDY_CFG),
            src=CONFIG_SOURCE,
        priority: 10000  # first: the raw folder says what its runs were measured with before they are
        shell:
            "{PY} -m pgfslab freeze --json {params.cfg:q} --source {params.src:q} --out {output}"

    rule prepare_target:
        """mkfs on a loop-mounted image, initdb, bulk load (pgbench -i, timed)."""
        input:
            # a target whose WAL lives on another target is prepared after it (and again when it is)
            wal=lambda w: STUDY_OBJ.wal_target_inputs(w.target),
        output:
            f"{RAW}/_setup/{{target}}/target.json",
        params:
            spec=lambda w: STUDY_OBJ.target_fingerprint(w.target),
        priority: 1000
        threads: MACHINE_CORES  # alone on the machine
        shell:
            "{PY} -m pgfslab prepare --config {RUN_CONFIG:q} --target {wildcards.target}"

    rule device_baseline:
        """The target measured without PostgreSQL: fio jobs and pg_test_fsync (pgfslab.run.device_baseline)."""
        input:
            # not ancient: a target prepared again is measured again in the same pass (see rule run)
            target=f"{RAW}/_setup/{{target}}/target.json",
        output:
            f"{RAW}/_setup/{{target}}/device/baseline.json",
        params:
            spec=lambda w: STUDY_OBJ.baseline_fingerprint(w.target),
        priority: 999
        threads: MACHINE_CORES  # alone on the machine
        shell:
            "{PY} -m pgfslab device-baseline --config {RUN_CONFIG:q} --target {wildcards.target}"

    rule run:
        """One run of the plan: raw logs + run.json under data/raw/<study>/<run-id>/."""
        input:
            # not ancient: only `prepare` writes target.json, and a target prepared again (its spec changed)
            # must be measured again in the same pass; Snakemake 9 compares no parameters of a job while a
            # job it takes input from must run, so the params trigger alone would wait for the next pass
            target=lambda w: f"{RAW}/_setup/{RUNS[w.run_id].target}/target.json",
            # measured before the target's runs, when the study has a device baseline
            baseline=lambda w: [ancient(f) for f in STUDY_OBJ.baseline_inputs(RUNS[w.run_id].target)],
        output:
            f"{RAW}/{{run_id}}/run.json",
        params:
            spec=lambda w: STUDY_OBJ.run_fingerprint(RUNS[w.run_id]),
        priority: lambda w: len(PLAN) - RUNS[w.run_id].plan_index
        threads: MACHINE_CORES  # alone on the machine
        shell:
            "{PY} -m pgfslab run-one --config {RUN_CONFIG:q} --run-id {wildcards.run_id}"


    if HOSTS:
        from pgfslab.run import hosts as labhosts

        rule host_share:
            """A host's whole share of the plan (every target, every run, in plan order, one at a time) under
            its host key, data/raw/<study>/<host>/ (pgfslab.run.hosts). With the Slurm profile: one job per
            host, exclusive on its node (no other job, no other share beside a measurement)."""
            input:
                frozen=ancient(FROZEN),
            output:
                f"data/raw/{STUDY}/{{host}}/share.json",
            params:
                spec=json.dumps(STUDY_CFG, sort_keys=True),
            resources:
                runtime=labhosts.runtime_minutes(STUDY_OBJ),
                # no --mem: the node's memory goes with the exclusive job (a memory limit would cap the
                # page cache the study measures); a site that needs one: set-resources in the profile
                mem_mb=0,
                slurm_extra=lambda w: "--exclusive" + (f" --nodelist={w.host}" if PIN_HOSTS else ""),
            shell:
                "{PY} -m pgfslab host-share --config {input.frozen:q} --host {wildcards.host} --out {output}"


rule raw:
    """Only the measurements: every run of the plan and the study's resolved config (`snakemake raw`)."""
    input:
        FROZEN,
        [f"data/raw/{STUDY}/{h}/share.json" for h in HOSTS] or [f"{RAW}/{r.run_id}/run.json" for r in PLAN],
