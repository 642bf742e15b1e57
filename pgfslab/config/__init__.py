"""A study config: loaded, validated against workflow/schemas/config.schema.yaml, expanded into the run plan.

Nothing here touches the machine: `study` (load, validate, plan, fingerprints), `targets` (what a target spec may
say), `fsmicro_spec` (what a file-system micro-benchmark may say, and its command line), `vm_settings` (the vm.*
sysctls a study may set), `host_folders` (a study's raw folders from several hosts, checked to be one study),
`workflow_config` (a study config as Snakemake's --configfile/--config give it). YAML is read with
`pgfslab.yaml_text`.
"""
