"""A study config: loaded, validated against workflow/schemas/config.schema.yaml, expanded into the run plan.

Nothing here touches the machine: `study` (load, validate, plan, fingerprints), `targets` (what a target spec may
say), `workflow_config` (a study config as Snakemake's --configfile/--config give it) (YAML is read with
`pgfslab.yaml_text`).
"""
