"""run.json as one typed record (pgfslab.records.run_record): every run.json the lab has written reads back
unchanged, older versions are brought up, and what does not fit is refused or reported, naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgfslab.errors import LabError
from pgfslab.records import run_record
from pgfslab.records.run_record import RunRecord, ServerFacts, parse

REPO = Path(__file__).resolve().parent.parent
RECORDED = sorted((REPO / "tests" / "data").rglob("run.json"))


def test_the_repository_holds_recorded_runs_of_each_tool() -> None:
    tools = {json.loads(p.read_text()).get("tool") for p in RECORDED}
    assert {"pgbench", "sysbench", "fsmicro"} <= tools


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(REPO / "tests" / "data")))
def test_every_recorded_run_json_reads_back_key_for_key(path: Path) -> None:
    data = json.loads(path.read_text())
    rec, unknown = run_record.read(path)
    assert unknown == []
    expected = {**data, "schema_version": 3}
    if data.get("schema_version", 1) == 1 and "duration_s" not in data and "duration_s" in (data.get("run") or {}):
        expected["duration_s"] = data["run"]["duration_s"]
    if data.get("schema_version", 1) < 3 and data.get("tool") in data:  # versions 1-2 kept it under the tool's name
        expected["outcome"] = expected.pop(data["tool"])
    assert rec.to_json() == expected


def test_a_version_1_record_gets_the_studys_length_and_a_version_2_keeps_its_own() -> None:
    v1 = {"schema_version": 1, "run_id": "r", "run": {"duration_s": 15}}
    assert parse(v1)[0].duration_s == 15
    assert parse({**v1, "duration_s": 20})[0].duration_s == 20
    assert parse({"schema_version": 2, "run_id": "r", "run": {"duration_s": 15}})[0].duration_s is None
    assert parse({"run_id": "r"})[0].schema_version == 3  # no version: a hand-made record, read as version 1


def test_a_version_2_outcome_under_the_tools_name_moves_to_outcome() -> None:
    v2 = {"schema_version": 2, "run_id": "r", "tool": "sysbench", "sysbench": {"returncode": 0, "wall_s": 20.5}}
    rec, unknown = parse(v2)
    assert rec.outcome == run_record.ToolOutcome(returncode=0, wall_s=20.5) and unknown == []
    assert "sysbench" not in rec.to_json()
    # a key named after a tool the run did not use is no outcome of this run: reported, not taken
    rec, unknown = parse({**v2, "pgbench": {"returncode": 1}})
    assert rec.outcome is not None and rec.outcome.returncode == 0 and unknown == ["pgbench"]
    # version 3 has no per-tool keys
    assert parse({"schema_version": 3, "run_id": "r", "tool": "pgbench", "pgbench": {"returncode": 0}})[1] == [
        "pgbench"
    ]


def test_an_unknown_key_is_reported_and_left_out() -> None:
    rec, unknown = parse({"run_id": "r", "tps_guess": 12, "status": "ok"})
    assert unknown == ["tps_guess"]
    assert "tps_guess" not in rec.to_json()


def test_a_value_of_the_wrong_type_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"run_id": "r", "host": {"cpus": "two"}}))
    with pytest.raises(LabError, match=r"run\.json: `host\.cpus`"):
        run_record.read(p)
    p.write_text(json.dumps({"run_id": "r", "status": "fine"}))
    with pytest.raises(LabError, match="`status`"):
        run_record.read(p)
    p.write_text('{"run_id": "r",\n "status": }')
    with pytest.raises(LabError, match=r"run\.json:2: not valid JSON"):
        run_record.read(p)
    with pytest.raises(LabError, match="schema_version 7"):
        parse({"schema_version": 7, "run_id": "r"})


def test_the_writer_cannot_add_a_key_or_a_wrong_type() -> None:
    rec = RunRecord(run_id="r")
    with pytest.raises(ValidationError, match="no attribute .tps_guess."):
        rec.tps_guess = 12  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        rec.clients = "four"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        rec.outcome = {"returncode": "zero"}  # type: ignore[assignment]


def test_the_server_part_filled_after_it_was_placed_is_written() -> None:
    """pg_run and the crash cycle place the server's part first (an interrupted run's marker has it), then fill it."""
    rec = RunRecord(run_id="r", status="running")
    server = ServerFacts()
    rec.server = server
    server.alive_after_run = False
    server.crashed = True
    assert rec.to_json()["server"] == {"alive_after_run": False, "crashed": True}


def test_a_record_without_the_keys_the_ingest_needs_is_refused() -> None:
    rec, _ = parse({"run_id": "r", "status": "ok"})
    with pytest.raises(LabError, match="x/run.json: no study, target"):
        rec.require("run_id", "study", "target", where="x/run.json")
