"""`python -m pgfslab.records`: write docs/run-record.schema.json, the run record's JSON schema."""

from __future__ import annotations

import json

from pgfslab.paths import LAB
from pgfslab.records import run_record

if __name__ == "__main__":
    out = LAB / "docs" / "run-record.schema.json"
    out.write_text(json.dumps(run_record.json_schema(), indent=2) + "\n")
    print(out)
