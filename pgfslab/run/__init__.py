"""A study's runs: `prepare` a target once, `execute` one run of the plan with its `sampler`s (`pgstat_format`:
the pgstat.csv they write), the durability `crash_cycle`, `interrupt` handling, `provenance` for run.json;
`common` holds what they share.
"""
