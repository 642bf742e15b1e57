"""The defined starting state against a real PostgreSQL: a tiny `fs: dir` target prepared (its
load vacuumed, analysed, checkpointed, autovacuum waited for), then a cold and a warm start reached on its
server and what run.json's `start_state` would say checked against the server itself. No cache drop, no
cgroup, no sysctl: nothing machine-wide (those are pgfslab.run.execute's, tested by the integration runs).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import machine_can_run_studies

from pgfslab.config.study import Study, validate
from pgfslab.host import postgres
from pgfslab.host.targets import mount as target_mount
from pgfslab.run import start_state
from pgfslab.run.prepare import prepare_target

ok, why = machine_can_run_studies()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not ok, reason=why)]

PORT = 26940  # a port of its own: test files run side by side
STUDY = "startstate"


@pytest.fixture(scope="module")
def prepared() -> Iterator[tuple[Study, Path]]:
    work = Path(tempfile.mkdtemp(prefix="pgfslab-start-"))
    work.chmod(0o755)  # the server's user walks into it
    cwd = Path.cwd()
    os.chdir(work)
    try:
        study = Study.from_dict(
            validate(
                {
                    "study": STUDY,
                    "targets": {"d": {"fs": "dir"}},
                    "postgres": {"port_base": PORT, "settings": {"shared_buffers": "16MB"}},
                    "dataset": {"scale": 2},  # ~30 MB: beyond shared_buffers, so a pass leaves some of it out
                    "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
                    "run": {"cache": "warm"},
                },
                "test",
            )
        )
        record = prepare_target(study, "d")
        yield study, record
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


def test_prepared_target_is_vacuumed_checkpointed_and_quiet(prepared: tuple[Study, Path]) -> None:
    study, record = prepared
    settled = json.loads(record.read_text())["settled"]
    assert settled["vacuum_analyze"]["databases"] == ["postgres"]
    assert settled["autovacuum"]["quiet"] is True
    assert settled["checkpoint"]["lsn"].count("/") == 1
    tv = study.target_view("d")
    with (
        target_mount.mounted(tv.workdir, "d", tv.spec, "postgres", study=STUDY) as mnt,
        postgres.running(mnt.path / "pgdata", PORT, postgres.bindir(), "postgres") as cl,
    ):
        # the ANALYZE ran: every pgbench table has planner statistics and a vacuum on record
        rows = cl.query(
            "SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL FROM pg_stat_user_tables ORDER BY 1"
        )
        assert [r[0] for r in rows] == ["pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers"]
        assert all(v and a for _, v, a in rows), rows


def test_cold_and_warm_starts_are_reached_and_verified(prepared: tuple[Study, Path]) -> None:
    study, _ = prepared
    tv = study.target_view("d")
    with target_mount.mounted(tv.workdir, "d", tv.spec, "postgres", study=STUDY) as mnt:
        with postgres.running(mnt.path / "pgdata", PORT, postgres.bindir(), "postgres") as cl:
            cold = start_state.reach(cl, "cold", "kept")
            before = cl.query("SELECT checkpoint_lsn::text FROM pg_control_checkpoint()")[0][0]
            assert cold["cache"] == "cold" and cold["hit_ratio"] is None and "warm" not in cold
            assert cold["checkpoint"]["lsn"] == before  # the recorded checkpoint is the server's last one
            assert cold["caches_dropped"] is False  # "kept": what execute.py records when nothing was dropped
        with postgres.running(mnt.path / "pgdata", PORT, postgres.bindir(), "postgres") as cl:
            warm = start_state.reach(cl, "warm", "dropped")
            w = warm["warm"]
            pages = cl.query(
                "SELECT sum(pg_relation_size(c.oid)) / 8192 FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')"
            )[0][0]
            shared = int(cl.query("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'")[0][0])
    assert w["relation_blocks"] == pages and w["pass_blocks"][0] == pages  # one pass reads the whole data set
    assert 1 <= w["passes"] <= start_state.MAX_PASSES and len(w["probes"]) == 2 * w["passes"]
    assert all(p["blocks"] > 0 for p in w["probes"])
    # the data set is about twice shared_buffers: a warm start cannot hit everything, nor nothing
    assert pages > shared
    assert 0 < warm["hit_ratio"] < 1 and w["steady"], w
    a, b = (p["hit_ratio"] for p in w["probes"][-2:])
    assert abs(a - b) <= w["tolerance"]
    assert warm["autovacuum_quiet"] in (True, False) and warm["checkpoint"]["lsn"]


def test_cache_mode_without_the_key_is_what_the_lab_did() -> None:
    assert start_state.cache_mode(None, True, None) == "cold"
    assert start_state.cache_mode(None, True, True) == "prewarm"
    assert start_state.cache_mode(None, False, None) == "kept"
    assert start_state.cache_mode("warm", True, None) == "warm"


def test_probes_agree_within_their_sampling_error() -> None:
    assert start_state.agreement({"blocks": 0, "hit": 0}, {"blocks": 10, "hit": 5}) == start_state.STEADY_TOLERANCE
    # 50 % of 250 blocks twice: the difference's standard error is sqrt(.25 * 2/250) = 0.0447
    assert start_state.agreement({"blocks": 250, "hit": 125}, {"blocks": 250, "hit": 125}) == pytest.approx(
        0.0894, 1e-3
    )
    # all hits: no sampling error, the fixed tolerance
    assert (
        start_state.agreement({"blocks": 250, "hit": 250}, {"blocks": 250, "hit": 250}) == start_state.STEADY_TOLERANCE
    )
