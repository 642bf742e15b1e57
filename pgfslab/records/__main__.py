"""`python -m pgfslab.records`: write each record's JSON schema into docs/ (run-record.schema.json,
target-record.schema.json)."""

from __future__ import annotations

import json

from pgfslab.paths import LAB
from pgfslab.records import SCHEMAS

if __name__ == "__main__":
    for name, schema in SCHEMAS.items():
        out = LAB / "docs" / name
        out.write_text(json.dumps(schema(), indent=2) + "\n")
        print(out)
