"""A study config: loaded, validated against workflow/schemas/config.schema.yaml, built once into a typed study,
expanded into the run plan.

Nothing here touches the machine: `model` (one frozen dataclass per object of the schema), `checks` (the
schema with its defaults, and every rule it cannot say), `study` (the typed `Study`: load, the plan, each
run's and target's view, fingerprints; and the dict-taking functions callers still use), `targets` (what a
target spec may say), `workflow_config` (a study config as Snakemake's --configfile/--config give it),
`yaml_text` (YAML read with libyaml, for every YAML file the lab reads).
"""
