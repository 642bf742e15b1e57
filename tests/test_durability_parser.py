"""The durability check's result file and its parser (the check itself runs for real in test_faults.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import ParseError, durability
from pgfslab.runners import durability as runner

RECORD = {
    "format": "pgfs-lab durability v1",
    "run_id": "ext4.crash.c4.r1",
    "target": "ext4",
    "workload": "crash",
    "clients": 4,
    "crash_requested": "power-loss",
    "crash_after_s": 3.0,
    "crashes": 1,
    "crash": "power-loss",
    "write_s": 3.01,
    "committed_ids": 442,
    "present_ids": 410,
    "lost_ids": 32,
    "lost_within_window": 32,
    "lost_allowed": 32,
    "lost_allowed_reason": "within the synchronous_commit=off window",
    "violations": 0,
    "in_doubt_present": 0,
    "oldest_lost_ms": 10.9,
    "balances_ok": True,
    "synchronous_commit": "off",
    "fsync": "on",
    "full_page_writes": "on",
    "wal_writer_delay_ms": 200.0,
    "window_ms": 600.0,
    "restart_s": 1.786,
    "amcheck": "ok",
    "verdict": "power-loss crash after 442 committed transactions: 32 lost",
    "lost_sample": [{"id": 1, "acked_ms_before_crash": 3.0}],
}


def write(tmp_path: Path, rec: object) -> Path:
    p = tmp_path / "durability.json"
    p.write_text(json.dumps(rec, indent=2))
    return p


def test_detected_and_parsed_into_one_row(tmp_path: Path) -> None:
    p = write(tmp_path, RECORD)
    assert parsers.detect_format(p) == "durability"
    out = parsers.parse(p)
    assert set(out) == {"durability"}
    row = out["durability"].row(0, named=True)
    assert row["committed_ids"] == 442 and row["lost_allowed"] == 32 and row["violations"] == 0
    assert row["window_ms"] == 600.0 and row["balances_ok"] is True and row["restart_error"] is None
    assert list(out["durability"].schema.items()) == list(durability.SCHEMA.items())


def test_failed_restart_has_null_counts(tmp_path: Path) -> None:
    rec = {k: RECORD[k] for k in ("format", "target", "crash", "crashes", "committed_ids")}
    rec["restart_error"] = "server did not start"
    row = parsers.parse(write(tmp_path, rec))["durability"].row(0, named=True)
    assert row["lost_ids"] is None and row["restart_error"] == "server did not start"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ('{"format": "pgfs-lab durability v1", "crash": ', "not valid JSON"),
        ('{"format": "something else"}', "not a durability check result"),
        ('{"format": "pgfs-lab durability v1"}', "missing key"),
        ('{"format": "pgfs-lab durability v1", "crash": "kill", "crashes": "one"}', "key 'crashes'"),
    ],
)
def test_damaged_files_raise_with_the_reason(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "durability.json"
    p.write_text(text)
    with pytest.raises(ParseError, match=message):
        durability.parse(p)


def test_loss_window_follows_the_settings() -> None:
    assert runner.window_ms({"synchronous_commit": "off", "wal_writer_delay": "200"}) == 600
    assert runner.window_ms({"synchronous_commit": "on", "wal_writer_delay": "200"}) == 0
    assert runner.window_ms({"synchronous_commit": "local"}) == 0


def test_acked_ids_skip_a_torn_last_line(tmp_path: Path) -> None:
    (tmp_path / "acked.0.log").write_text("1 100.5\n2 100.6\n3 10")
    (tmp_path / "acked.1.log").write_text("1000000001 100.7\n")
    acked, torn = runner.read_acked(tmp_path)
    assert acked == {1: 100.5, 2: 100.6, 1000000001: 100.7} and torn == 1


def test_verdict_names_violations() -> None:
    text = runner.verdict({**RECORD, "lost_ids": 3, "lost_allowed": 0, "violations": 3, "balances_ok": False})
    assert "3 VIOLATIONS" in text and "DISAGREE" in text
