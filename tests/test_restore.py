"""run.restore: every run starts from the data set as loaded. The config's checks and fingerprints, and on a real
PostgreSQL a `fs: dir` target prepared with the key: what a run writes (pgbench's history rows) is gone once the
loaded copy is put back, and the copy lies outside the target."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import machine_can_run_studies

from pgfslab.config.checks import validate
from pgfslab.config.study import Study
from pgfslab.errors import LabError
from pgfslab.host import postgres
from pgfslab.host.targets import mount as target_mount
from pgfslab.run import restore
from pgfslab.run.prepare import prepare_target

PORT = 26950  # a port of its own: test files run side by side


def config(**run: Any) -> dict[str, Any]:
    return {
        "study": "restored",
        "targets": {"d": {"fs": "dir"}},
        "postgres": {"port_base": PORT, "settings": {"shared_buffers": "16MB"}},
        "dataset": {"scale": 1},
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "run": {"repeats": 1, "duration_s": 2, **run},
    }


def test_a_wal_on_another_target_is_refused() -> None:
    cfg = config(restore=True)
    cfg["targets"] = {"ssd": {"fs": "ext4", "size_gb": 1}, "d": {"fs": "ext4", "size_gb": 1, "wal_on": "ssd"}}
    with pytest.raises(LabError, match=r"run.restore .* d keep their WAL on another target"):
        Study.from_dict(validate(cfg))


def test_the_key_enters_the_fingerprints_only_when_given() -> None:
    before, off, on = (Study.from_dict(validate(c)) for c in (config(), config(restore=False), config(restore=True)))
    run = before.runs[0]
    assert "restore" not in before.target_fingerprint("d")
    assert on.target_fingerprint("d") != before.target_fingerprint("d")  # prepared again, with its copy
    assert on.run_fingerprint(run) != before.run_fingerprint(run)  # measured again: another starting state
    assert off.target_fingerprint("d") == before.target_fingerprint("d")  # false prepares as before


ok, why = machine_can_run_studies()


@pytest.fixture(scope="module")
def prepared() -> Iterator[Study]:
    if not ok:
        pytest.skip(why)
    work = Path(tempfile.mkdtemp(prefix="pgfslab-restore-"))
    work.chmod(0o755)  # the server's user walks into it
    cwd = Path.cwd()
    os.chdir(work)
    try:
        study = Study.from_dict(validate(config(restore=True)))
        prepare_target(study, "d")
        yield study
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


def history_rows(pgdata: Path) -> int:
    with postgres.running(pgdata, PORT, postgres.bindir(), "postgres") as cl:
        return int(cl.query("SELECT count(*) FROM pgbench_history")[0][0])


@pytest.mark.slow
def test_a_run_starts_from_the_data_set_as_loaded(prepared: Study) -> None:
    tv = prepared.target_view("d")
    record = json.loads((tv.setup_dir / "target.json").read_text())
    copy = Path(record["loaded_copy"]["path"])
    with target_mount.mounted(tv.workdir, "d", tv.spec, "postgres", study=prepared.study) as mnt:
        pgdata = mnt.path / "pgdata"
        assert not copy.is_relative_to(mnt.path)  # outside the target: no footprint counts it
        with postgres.running(pgdata, PORT, postgres.bindir(), "postgres") as cl:  # what a run leaves behind
            cl.query("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT 1, 1, g, 1, now() "
                     "FROM generate_series(1, 500) g")  # fmt: skip
        assert history_rows(pgdata) == 500
        put = restore.put_back(tv.workdir, "d", pgdata, tv.setup_dir / "target.json")
        assert history_rows(pgdata) == 0  # pgbench -i leaves the history empty
        assert put.bytes is not None and put.bytes > 10 * 2**20  # scale 1 is about 16 MB of tables
        assert (pgdata / "PG_VERSION").read_text() == (copy / "PG_VERSION").read_text()
        assert pgdata.stat().st_uid == copy.stat().st_uid != 0  # still the server's user's


def test_a_missing_copy_names_what_to_delete(tmp_path: Path) -> None:
    pgdata, record = tmp_path / "pgdata", tmp_path / "raw" / "_setup" / "d" / "target.json"
    pgdata.mkdir()
    with pytest.raises(LabError, match=re.escape(f"delete {record} ")):
        restore.put_back(tmp_path / "work", "d", pgdata, record)
    assert pgdata.exists()  # nothing touched
