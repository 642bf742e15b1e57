"""The records the stages exchange, typed: a run's record (run.json), written by `run` and read by `ingest` and
the analysis, a prepared target's (target.json) and its device baseline's (baseline.json). One model per record, versioned, with its JSON schema in
docs/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pgfslab.records import baseline_record, run_record, target_record

# docs/<file> -> the schema it holds (written by `python -m pgfslab.records`, checked current by the tests)
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "run-record.schema.json": run_record.json_schema,
    "target-record.schema.json": target_record.json_schema,
    "baseline-record.schema.json": baseline_record.json_schema,
}
