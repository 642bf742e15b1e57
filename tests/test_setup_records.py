"""target.json and baseline.json as typed records (pgfslab.records.target_record, .baseline_record): every one the
lab has written reads back unchanged, a run reads its data set's load from target.json (a ladder rung's own), and
what does not fit is refused or reported, naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgfslab.errors import LabError
from pgfslab.records import SCHEMAS, baseline_record, target_record
from pgfslab.records.target_record import Load, Rung, TargetRecord, parse
from pgfslab.run.record import setup_facts

REPO = Path(__file__).resolve().parent.parent
RECORDED = sorted((REPO / "tests" / "data").rglob("target.json"))
BASELINES = sorted((REPO / "tests" / "data").rglob("baseline.json"))


def test_the_repository_holds_recorded_targets_with_and_without_a_ladder() -> None:
    records = [json.loads(p.read_text()) for p in RECORDED]
    assert any("rungs" in r for r in records) and any("load" in r for r in records)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(REPO / "tests" / "data")))
def test_every_recorded_target_json_reads_back_key_for_key(path: Path) -> None:
    data = json.loads(path.read_text())
    rec, unknown = target_record.read(path)
    assert unknown == []
    assert rec.to_json() == {**data, "schema_version": 2}


@pytest.mark.parametrize("path", BASELINES, ids=lambda p: str(p.relative_to(REPO / "tests" / "data")))
def test_every_recorded_baseline_json_reads_back_key_for_key(path: Path) -> None:
    data = json.loads(path.read_text())
    rec, unknown = baseline_record.read(path)
    assert unknown == []
    assert rec.to_json() == {**data, "schema_version": 2}
    assert rec.baseline is not None and rec.baseline.notes == data["baseline"]["notes"]


def test_a_baseline_record_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(LabError, match=r"baseline\.json: `baseline\.direct`"):
        baseline_record.parse({"study": "s", "target": "t", "baseline": {"direct": "maybe"}})
    assert baseline_record.parse({"study": "s", "target": "t", "fio_guess": 1})[1] == ["fio_guess"]


def test_a_run_reads_its_own_rungs_load_and_size() -> None:
    rec = TargetRecord(
        study="s",
        target="ext4",
        rungs=[
            Rung(rung=1, database="pgfs_d1", database_bytes=100, load=Load(wall_s=1.5)),
            Rung(rung=2, database="pgfs_d2", database_bytes=400, load=Load(wall_s=6.0)),
        ],
        postgres={"database_bytes": 9},
    )
    two = setup_facts(rec, 2)
    assert (two.load_wall_s, two.database, two.database_bytes_loaded) == (6.0, "pgfs_d2", 400)
    # a rung the record does not hold: the cluster's own database, as records from before rungs said it
    three = setup_facts(rec, 3)
    assert (three.load_wall_s, three.database, three.database_bytes_loaded) == (None, "postgres", 9)
    flat = TargetRecord(study="s", target="ext4", load=Load(wall_s=2.0), load_sysbench=Load(wall_s=5.0))
    assert setup_facts(flat, None).load_wall_s == 2.0 and setup_facts(flat, None).load_sysbench_wall_s == 5.0
    assert flat.load_wall_s() == 2.0
    assert TargetRecord(study="s", target="t", load_sysbench=Load(wall_s=5.0)).load_wall_s() == 5.0


def test_an_unknown_key_is_reported_and_a_wrong_type_refused(tmp_path: Path) -> None:
    rec, unknown = parse({"study": "s", "target": "t", "load_guess": 3})
    assert unknown == ["load_guess"] and "load_guess" not in rec.to_json()
    p = tmp_path / "target.json"
    p.write_text(json.dumps({"study": "s", "target": "t", "rungs": [{"rung": "two", "database": "d"}]}))
    with pytest.raises(LabError, match=r"target\.json: `rungs\.0\.rung`"):
        target_record.read(p)
    p.write_text(json.dumps({"target": "t"}))
    with pytest.raises(LabError, match="`study`: Field required"):
        target_record.read(p)
    p.write_text("[1]")
    with pytest.raises(LabError, match="not a target record"):
        target_record.read(p)
    with pytest.raises(LabError, match="schema_version 9"):
        parse({"schema_version": 9, "study": "s", "target": "t"})


def test_the_writer_cannot_add_a_key() -> None:
    rec = TargetRecord(study="s", target="t")
    with pytest.raises(ValidationError):
        rec.load_guess = 3  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        rec.fs_used_bytes = "a lot"  # type: ignore[assignment]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_documented_json_schemas_are_current(name: str) -> None:
    """docs/<record>.schema.json is the model's schema: regenerate them with `python -m pgfslab.records`."""
    assert json.loads((REPO / "docs" / name).read_text()) == SCHEMAS[name]()
