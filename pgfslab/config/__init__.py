"""A study config: loaded, validated against workflow/schemas/config.schema.yaml, built once into a typed study,
expanded into the run plan.

Nothing here touches the machine: `model` (one frozen dataclass per object of the schema), `checks` (the
schema with its defaults, and every rule it cannot say), `study` (the typed `Study`: load, the plan, each
run's and target's view, fingerprints), `targets` (what a target spec may say), `vm_settings` (the vm.*
sysctls a study may set),
`host_folders` (a study's raw folders from several hosts, checked to be one study), `workflow_config` (a study
config as Snakemake's --configfile/--config give it). YAML is read with `pgfslab.yaml_text`.
"""
