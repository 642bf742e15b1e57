"""One runner per workload tool. A runner builds the tool's command line from a workload spec,
runs it in the run directory (raw outputs land there untouched) and reports progress."""
