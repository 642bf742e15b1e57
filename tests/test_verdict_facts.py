"""What facts.run_facts reads from a run's record: a value the record lacks is a null, a value it has that does
not read is an error (a bug or a damaged record), never a silent null that drops the run from a claim's side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pgfslab.analysis.verdicts import facts
from pgfslab.errors import LabError
from pgfslab.ingest.study import ingest_study

STUDY = Path(__file__).resolve().parent / "data" / "studies" / "dirty-bytes"


def _facts(raw: Path, db: Path) -> list[int | None]:
    ingest_study(raw, db, progress=False, external=None)
    rows = facts.run_facts(db, "dirty-bytes").sort("run_id")
    return rows["dirty_background_bytes"].to_list()


def test_a_byte_count_a_run_recorded_is_read_and_one_that_does_not_read_is_an_error(tmp_path: Path) -> None:
    raw = tmp_path / "dirty-bytes"
    shutil.copytree(STUDY, raw)
    assert _facts(raw, tmp_path / "a.duckdb") == [10**9, 10**9, 32 * 10**6, 32 * 10**6]
    # a run without the setting: absent, not an error
    run = raw / "ext4.dirty-32mb.c4.r2" / "run.json"
    rec = json.loads(run.read_text())
    del rec["os"]["vm_dirty_background_bytes"]
    run.write_text(json.dumps(rec))
    assert _facts(raw, tmp_path / "b.duckdb")[3] is None
    rec["os"]["vm_dirty_background_bytes"] = "lots"
    run.write_text(json.dumps(rec))
    with pytest.raises(LabError, match="not a byte count: 'lots'"):
        _facts(raw, tmp_path / "c.duckdb")
