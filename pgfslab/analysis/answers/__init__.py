"""The computations behind the analysis notebooks, one module per notebook, named for what it answers.

A notebook reads as question → data → figure → table → what it shows; what it computes on the way (the
per-run and per-cell tables, the table shaped for the reader) lives here, on plain polars frames, tested
in tests/test_answers_*.py with hand-made frames:

* `stability`: each run's steady-state mean throughput and each cell's summary (throughput_stability);
* `significance`: within-run variance, variance ratios and the benchstat grid with goodput
  (variance_significance);
* `dirty_memory`: checkpoint windows, the representative run per cell, dirty memory and checkpoint share
  per run and per cell (dirty_memory_checkpoints);
* `footprint`: logical and physical size after each target's last run (compression_footprint);
* `micro`: file-system micro-benchmarks per operation and target (fs_micro);
* `published`: this lab's numbers beside the seed documents' (local_vs_published);
* `scaling`: throughput against data-set size (scaling);
* `io_methods`: PostgreSQL 18's io_method variants against sync per target, with reads and CPU beside
  (io_methods);
* `percentiles`: latency bands per second and over the run (latency_percentiles);
* `precision`: each cell's interval over repeats and what a non-significant comparison could detect
  (precision).

The seeds' claims and their verdicts are a subpackage of their own: `pgfslab.analysis.verdicts`.
"""
