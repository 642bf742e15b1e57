# Functions the rules call (Snakemake's layout keeps them apart from the rules): which files a stage reads
# and which notebooks a study runs with which parameters (decided in pgfslab.analysis.registry).

JOBS = {j.name: j for j in registry.jobs(STUDY_OBJ)}


from snakemake.exceptions import WorkflowError


def _machine_cores():
    """Every core Snakemake may use here: a target's preparation, its device baseline and every run take
    them all, so nothing runs beside a measurement. The Slurm profile gives no --cores (Snakemake then
    refuses `workflow.cores`): there each host's share is one exclusive job, and no run rule runs here."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


MACHINE_CORES = _machine_cores()


def _ingest_inputs(wildcards):
    raw = labcfg.raw_dir(wildcards.study)
    if RAW_ONLY:
        return [*map(str, sorted(raw.glob("study.yaml"))), *map(str, sorted(raw.glob("*/study.yaml"))),
                *map(str, sorted(raw.glob("*/run.json"))), *map(str, sorted(raw.glob("*/*/run.json"))),
                *map(str, sorted(raw.glob("_setup/*/target.json"))),
                *map(str, sorted(raw.glob("*/_setup/*/target.json"))),
                *map(str, sorted(raw.glob("_setup/*/device/baseline.json"))),
                *map(str, sorted(raw.glob("*/_setup/*/device/baseline.json")))]
    if HOSTS:
        return [FROZEN, *(str(raw / h / "share.json") for h in HOSTS)]
    rawh = Path(RAW)
    return [FROZEN,
            *(str(rawh / "_setup" / t / "target.json") for t in STUDY_OBJ.targets),
            *(f for t in STUDY_OBJ.targets for f in STUDY_OBJ.baseline_inputs(t)),
            *(str(rawh / r.run_id / "run.json") for r in PLAN)]


def analysis_outputs(study):
    """Every executed notebook and publication of a study (what the paper needs)."""
    return [f for j in JOBS.values() for f in (j.outputs(study)["nb"], j.outputs(study)["publication"])]


def _params(w):
    return json.dumps(JOBS[getattr(w, "name", "fs_micro")].parameters(STUDY_OBJ, db=Path(f"data/{w.study}.duckdb"),
                                              figures_dir=Path(f"figures/{w.study}"),
                                              tables_dir=Path(f"build/{w.study}/tables")), sort_keys=True)
