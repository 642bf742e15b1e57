"""The records the stages exchange, typed: a run's record (run.json), written by `run` and read by `ingest` and
the analysis. One model per record, versioned, with its JSON schema in docs/."""
