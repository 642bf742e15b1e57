"""A study's runs: `prepare` a target once, `execute` one run of the plan (the machine set up around it), its
tool through `pg_run` (pgbench, sysbench), `fs_run` (fsmicro) or the durability `crash_cycle`, with its
`sampler`s (`pgstat_format`: the pgstat.csv they write); `record` (run.json), `outcome` (the run's error and
footprint), `interrupt` handling, `provenance` for run.json; `common` holds what they share. Each takes the
run's view of the study (pgfslab.config.study.RunView) or a target's, not the whole config.
"""
