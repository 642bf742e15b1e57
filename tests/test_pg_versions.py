"""PostgreSQL versions in a study: the version factor crossed with the targets, each target's build,
checksums said explicitly, and a setting the target's major does not have refused at validation (the table
held to the real servers in a slow test)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from pgfslab import yaml_text
from pgfslab.analysis import registry
from pgfslab.config import pg_settings, versions
from pgfslab.config.study import Study, load, load_study, validate
from pgfslab.errors import LabError
from pgfslab.host import pg_install, postgres

REPO = Path(__file__).resolve().parent.parent


def cfg(**over) -> dict:
    raw = {
        "study": "ver",
        "targets": {"ext4": {"fs": "ext4"}, "xfs": {"fs": "xfs"}},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [4], "repeats": 2}},
        "postgres": {"versions": [15, 18]},
    }
    raw.update(over)
    return validate(raw, "test.yaml")


def test_versions_cross_every_target_in_order_and_the_plan_interleaves_them():
    c = cfg()
    assert list(c["targets"]) == ["ext4-pg15", "ext4-pg18", "xfs-pg15", "xfs-pg18"]
    assert c["targets"]["xfs-pg18"] == {**c["targets"]["xfs-pg15"], "postgres_version": 18}
    study = Study.from_dict(c)
    ids = [r.run_id for r in study.runs]
    # the first round is the Williams design's first row for four targets: 0, 1, 3, 2 (pgfslab.config.order)
    assert ids[:4] == ["ext4-pg15.rw.c4.r1", "ext4-pg18.rw.c4.r1", "xfs-pg18.rw.c4.r1", "xfs-pg15.rw.c4.r1"]
    assert len(ids) == 8
    assert [study.port_of(t) for t in study.targets] == [55400, 55401, 55402, 55403]
    pg = study.postgres_for("xfs-pg18", "rw")
    assert (pg.version, pg.bindir, pg.data_checksums) == (18, None, False)


def test_crossing_is_done_once_and_leaves_own_builds_alone():
    c = cfg(
        targets={
            "ext4": {"fs": "ext4"},
            "uring": {"fs": "xfs", "postgres_bindir": "/opt/pg18/bin", "postgres_version": 18},
            "old": {"fs": "xfs", "postgres_version": 14},
        }
    )
    assert list(c["targets"]) == ["ext4-pg15", "ext4-pg18", "uring", "old"]
    again = validate(c, "study.yaml")  # the frozen study.yaml validated again
    assert list(again["targets"]) == list(c["targets"])
    study = Study.from_dict(c)
    assert study.bindir_of("uring") == "/opt/pg18/bin" and study.pg_version_of("old") == 14
    assert study.postgres_for("old").bindir is None  # its own major: that major's build, not the study's bindir


def test_wal_targets_and_snapshots_follow_their_copies():
    c = cfg(
        targets={"data": {"fs": "btrfs", "wal_on": "wal"}, "wal": {"fs": "ext4"}},
        snapshots={"interval_s": 5, "keep_s": 10, "targets": ["data"]},
    )
    assert c["targets"]["data-pg18"]["wal_on"] == "wal-pg18"
    assert c["snapshots"]["targets"] == ["data-pg15", "data-pg18"]
    with pytest.raises(LabError, match=r"targets\.own\.wal_on: wal is crossed.*wal-pg15, wal-pg18"):
        cfg(targets={"own": {"fs": "btrfs", "wal_on": "wal", "postgres_version": 18}, "wal": {"fs": "ext4"}})


def test_an_aa_twin_follows_its_baselines_copy() -> None:
    """The default study's twin (`ext4-aa: aa_twin_of: ext4`) crossed with two majors: each copy of the twin names
    the baseline's copy of its own major (a study with a twin and `versions` was refused for naming `ext4`)."""
    c = cfg(targets={"ext4": {"fs": "ext4"}, "ext4-aa": {"fs": "ext4", "aa_twin_of": "ext4"}})
    assert c["targets"]["ext4-aa-pg15"]["aa_twin_of"] == "ext4-pg15"
    assert c["targets"]["ext4-aa-pg18"]["aa_twin_of"] == "ext4-pg18"
    with pytest.raises(LabError, match=r"targets\.own\.aa_twin_of: ext4 is crossed.*ext4-pg15, ext4-pg18"):
        cfg(targets={"own": {"fs": "ext4", "aa_twin_of": "ext4", "postgres_version": 18}, "ext4": {"fs": "ext4"}})


def test_refusals_name_the_key():
    with pytest.raises(LabError, match="not both"):
        cfg(postgres={"versions": [15], "version": 15})
    with pytest.raises(LabError, match=r"targets\.a-very-long-target-name-of-28c: .*longer than 32"):
        cfg(targets={"a-very-long-target-name-of-28c": {"fs": "ext4"}})
    with pytest.raises(LabError, match=r"'ext4-pg18' is already a target"):
        cfg(targets={"ext4": {"fs": "ext4"}, "ext4-pg18": {"fs": "ext4", "postgres_version": 17}})


def test_a_setting_the_major_lacks_is_refused_naming_key_and_major():
    wl = {"scan": {"tool": "pgbench", "builtin": "select-only", "postgres_settings": {"io_method": "worker"}}}
    with pytest.raises(LabError) as exc:
        cfg(workloads=wl)
    text = str(exc.value)
    assert "workloads.scan.postgres_settings.io_method" in text and "PostgreSQL 15 has no setting 'io_method'" in text
    assert "PostgreSQL 18 has" in text and "target ext4-pg15" in text
    ok = cfg(workloads=wl, postgres={"version": 18})  # 18 has it
    assert ok["workloads"]["scan"]["postgres_settings"] == {"io_method": "worker"}
    with pytest.raises(LabError, match=r"postgres\.settings\.vacuum_defer_cleanup_age: PostgreSQL 16 .*14-15 has"):
        cfg(postgres={"version": 16, "settings": {"vacuum_defer_cleanup_age": 0}})
    with pytest.raises(LabError, match=r"targets\.ext4\.postgres_settings\.shared_bufers: .*nor has any"):
        cfg(postgres={"version": 15}, targets={"ext4": {"fs": "ext4", "postgres_settings": {"shared_bufers": "1GB"}}})
    # an extension's setting, a major the table does not cover, and no major at all: the server decides
    cfg(postgres={"version": 15, "settings": {"pg_stat_statements.track": "all"}})
    cfg(postgres={"version": 13, "bindir": "/opt/pg13/bin", "settings": {"io_method": "worker"}})  # a build of its own
    cfg(postgres={"settings": {"io_method": "worker"}})


def test_settings_table_case_and_spans():
    assert pg_settings.problem("DateStyle".lower(), 15) is None  # names ignore case, as PostgreSQL's do
    assert (
        pg_settings.problem("summarize_wal", 16)
        == "PostgreSQL 16 has no setting 'summarize_wal' (PostgreSQL 17-18 has)"
    )
    assert pg_settings.problem("debug_io_direct", 15) is not None and pg_settings.problem("debug_io_direct", 16) is None


def test_existing_studies_keep_their_targets_and_postgres_keys():
    """A study without the new keys is not changed by them: the same targets (so run ids), and no key added
    to `postgres` or a target (so the fingerprints Snakemake compares stay as they were)."""
    for path in sorted((REPO / "config").glob("*.yaml")):
        raw = yaml_text.safe_load(path.read_text())
        if "versions" in (raw.get("postgres") or {}) or "version" in (raw.get("postgres") or {}):
            continue
        c = load(path)
        assert list(c["targets"]) == list(raw["targets"]), path
        assert set(c["postgres"]) <= {"user", "port_base", "settings", "bindir"}, path
        assert not any("postgres_version" in t for t in c["targets"].values()), path


def test_checksums_are_said_for_every_major():
    assert postgres.checksums_args(15, False) == []  # 15's initdb: off by default, no flag to say it
    assert postgres.checksums_args(18, False) == ["--no-data-checksums"]  # 18's initdb: on unless told
    assert postgres.checksums_args(15, True) == postgres.checksums_args(18, True) == ["--data-checksums"]


def test_build_selection(tmp_path, monkeypatch):
    deb = pg_install.build_for(15, None)
    assert deb.source == "debian" and deb.major == 15 and deb.bindir == Path("/usr/lib/postgresql/15/bin")
    assert pg_install.build_for(None, None).bindir == postgres.bindir()  # nothing named: as the lab always did
    with pytest.raises(LabError, match="holds PostgreSQL 15.*asks for PostgreSQL 18"):
        pg_install.build_for(18, "/usr/lib/postgresql/15/bin")
    with pytest.raises(LabError, match="no pinned build"):
        pg_install.build_for(12, None)
    monkeypatch.setenv("PGFSLAB_PG_CACHE", str(tmp_path))  # an empty cache: nothing installed there
    with pytest.raises(LabError, match=r"pgfslab pg-install 18"):
        pg_install.build_for(18, None, fetch=False)
    assert pg_install.cache_root() == tmp_path


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a throw-away cluster as the postgres user)")
@pytest.mark.parametrize("major", [15, 18])
def test_the_settings_table_is_what_the_real_server_says(major):
    """The table against the server itself: pg_settings of a throw-away cluster of the major's build (15:
    Debian's; 18: the pinned wheel, installed into the lab's cache when missing)."""
    from pgfslab.host import pg_probe

    build = pg_install.build_for(major, None)
    names = {n.lower() for n, _, _ in pg_probe.server_settings(build)}
    _, table = pg_settings.table()
    assert names == {n for n, have in table.items() if major in have}
    assert ("io_method" in names) == (major >= 18)


def test_a_workload_runs_on_its_targets_and_rungs_only():
    wl = {
        "rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [4]},
        "aio": {
            "tool": "pgbench",
            "builtin": "select-only",
            "targets": ["ext4-pg18"],  # a crossed copy by name: an 18-only setting is then allowed
            "rungs": [2],
            "prewarm": "read",
            "postgres_settings": {"io_method": "worker"},
        },
    }
    c = cfg(workloads=wl, ladder={"scales": [2, 8]}, run={"repeats": 1})
    study = Study.from_dict(c)
    ids = [r.run_id for r in study.runs]
    assert [i for i in ids if ".aio." in i] == ["ext4-pg18.aio.d2.c1.r1"]
    assert len([i for i in ids if ".rw." in i]) == 4 * 2
    # the notebooks per workload follow the runs: aio's at its own rung only (no notebook for a cell with no run)
    per_workload = {j.name for j in registry.jobs(study) if j.workload}
    assert {n for n in per_workload if "aio" in n} == {"throughput_stability-aio.d2", "latency_percentiles-aio.d2"}
    assert {"throughput_stability-rw.d1", "throughput_stability-rw.d2"} <= per_workload
    view = study.run_view(study.find_run("ext4-pg18.aio.d2.c1.r1"))
    assert view.prewarm == "read" and study.run_view(study.find_run("xfs-pg15.rw.d1.c4.r1")).prewarm is False
    # a name before the crossing means every major's copy; then the 18-only setting meets 15
    wl["aio"]["targets"] = ["ext4"]
    with pytest.raises(LabError, match=r"workloads\.aio\.postgres_settings\.io_method: PostgreSQL 15"):
        cfg(workloads=wl, ladder={"scales": [2, 8]})
    del wl["aio"]["postgres_settings"]
    assert cfg(workloads=wl, ladder={"scales": [2, 8]})["workloads"]["aio"]["targets"] == ["ext4-pg15", "ext4-pg18"]
    wl["aio"]["targets"] = ["nvme"]
    with pytest.raises(LabError, match=r"workloads\.aio\.targets: 'nvme' is not a target"):
        cfg(workloads=wl, ladder={"scales": [2, 8]})
    wl["aio"]["targets"] = ["ext4"]
    with pytest.raises(LabError, match=r"workloads\.aio\.rungs: \[3\] not rungs of this study \(rungs 1-2\)"):
        cfg(workloads={**wl, "aio": {**wl["aio"], "rungs": [3]}}, ladder={"scales": [2, 8]})
    with pytest.raises(LabError, match=r"not rungs of this study \(no ladder\)"):
        cfg(workloads=wl)


def test_the_issue_32_studies_are_what_their_comments_say():
    versions = load_study(REPO / "config" / "pg-versions.yaml")
    assert len(versions.targets) == 9 and {versions.pg_version_of(t) for t in versions.targets} == {15, 17, 18}
    assert versions.postgres.data_checksums is False and len(versions.runs) == 108
    aio = load_study(REPO / "config" / "aio.yaml")
    assert {aio.pg_version_of(t) for t in aio.targets} == {18}
    direct = [r.target for r in aio.runs if r.workload == "direct"]
    assert set(direct) == {"ext4", "xfs", "btrfs"}
    warm = {r.rung for r in aio.runs if r.workload.startswith("warm")}
    assert warm == {1} and {r.rung for r in aio.runs if not r.workload.startswith("warm")} == {2}
    assert len(aio.runs) == (4 * 12 + 3) * 4


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the socket directory is handed to the postgres user)")
def test_binaries_the_server_user_cannot_reach_are_refused_clearly():
    hidden = Path(tempfile.mkdtemp(prefix="pgfs-hidden-"))  # mode 0700, root's: a lab under /root, say
    try:
        (hidden / "bin").mkdir()
        with tempfile.TemporaryDirectory(prefix="pgfs-test-") as tmp:
            os.chmod(tmp, 0o755)
            with pytest.raises(LabError, match=r"(?s)cannot reach .*PGFSLAB_PG_CACHE"):
                with postgres.running(Path(tmp) / "pgdata", 25999, hidden / "bin", "postgres", init=True):
                    pass
            assert not (Path(tmp) / "pgdata").exists()  # refused before initdb
    finally:
        shutil.rmtree(hidden)


@pytest.fixture
def distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The distribution's PostgreSQL majors as this test says (Debian 12's 15 unless told), not the machine's:
    what validation accepts depends on them."""

    def have(*majors: int) -> None:
        root = tmp_path / "usr-lib-postgresql"
        for major in majors:
            (root / str(major) / "bin").mkdir(parents=True)
            (root / str(major) / "bin" / "postgres").touch()
        monkeypatch.setattr(versions, "DISTRIBUTION", root)

    have(15)
    return have


PINNED = "(pinned: 14, 15, 16, 17, 18)"


def test_validation_refuses_a_major_no_build_gives_naming_the_key(distribution):
    with pytest.raises(LabError) as exc:
        cfg(postgres={"versions": [15, 19]})
    assert str(exc.value).startswith(f"test.yaml: postgres.versions[1]: PostgreSQL 19 has no pinned build {PINNED}")
    # a copy takes no postgres.bindir: the remedy is the key's own
    assert "remove it, or add a target with postgres_version: 19" in str(exc.value)
    with pytest.raises(LabError, match=r"^test\.yaml: postgres\.version: PostgreSQL 19 .*; give postgres\.bindir$"):
        cfg(postgres={"version": 19})
    with pytest.raises(LabError, match=r"^test\.yaml: targets\.x\.postgres_version: PostgreSQL 13 .*postgres_bindir$"):
        cfg(targets={"x": {"fs": "ext4", "postgres_version": 13}}, postgres={})
    # a target of its own whose name looks like a copy's is still named by its own key
    with pytest.raises(LabError, match=r"targets\.db-pg19\.postgres_version: PostgreSQL 19 has no pinned build"):
        cfg(targets={"db-pg19": {"fs": "ext4", "postgres_version": 19}, "ext4": {"fs": "ext4"}})
    # the user's own binaries: any major, checked when they run
    cfg(targets={"x": {"fs": "ext4", "postgres_version": 13, "postgres_bindir": "/opt/pg13/bin"}}, postgres={})
    cfg(postgres={"version": 19, "bindir": "/opt/pg19/bin"})
    # a major the distribution has needs no pinned build
    distribution(19)
    assert list(cfg(postgres={"versions": [15, 19]})["targets"])[:2] == ["ext4-pg15", "ext4-pg19"]


def _scan(**settings: str) -> dict:
    return {"scan": {"tool": "pgbench", "builtin": "select-only", "clients": [1], "postgres_settings": settings}}


def test_validation_refuses_io_uring_on_a_build_without_liburing(distribution):
    with pytest.raises(LabError) as exc:
        cfg(postgres={"versions": [18], "settings": {"io_method": "io_uring"}})
    assert str(exc.value).startswith(
        "test.yaml: postgres.settings.io_method: io_uring needs a build with liburing; the pinned PostgreSQL 18 build"
    )
    with pytest.raises(LabError, match=r"^test\.yaml: workloads\.scan\.postgres_settings\.io_method: io_uring"):
        cfg(postgres={"version": 18}, workloads=_scan(io_method="IO_URING"))  # PostgreSQL ignores an enum's case
    # a copy's settings are the target's the config names: the key path is the one in the file
    with pytest.raises(LabError, match=r"^test\.yaml: targets\.xfs\.postgres_settings\.io_method: io_uring"):
        cfg(postgres={"versions": [18]}, targets={"xfs": {"fs": "xfs", "postgres_settings": {"io_method": "io_uring"}}})
    # a workload's worker does not change what the target's preparation starts its server with
    with pytest.raises(LabError, match=r"^test\.yaml: postgres\.settings\.io_method: io_uring"):
        cfg(postgres={"version": 18, "settings": {"io_method": "io_uring"}}, workloads=_scan(io_method="worker"))
    assert cfg(postgres={"versions": [18], "settings": {"io_method": "worker"}})  # what the pinned build has


def test_io_uring_is_left_to_builds_validation_cannot_see_into(distribution):
    """io_uring where no pinned build runs it: a target's own bindir, a target that sets another io_method
    over the study's, the distribution's build (what it was built with is not recorded: its server decides)."""
    uring = {"io_method": "io_uring"}
    targets = {
        "uring": {"fs": "xfs", "postgres_bindir": "/opt/pg18-uring/bin"},
        "ext4": {"fs": "ext4", "postgres_settings": {"io_method": "worker"}},
    }
    assert cfg(postgres={"version": 18, "settings": uring}, targets=targets)
    with pytest.raises(LabError, match=r"targets\.ext4\.postgres_settings\.io_method: io_uring"):
        cfg(postgres={"version": 18}, targets={**targets, "ext4": {"fs": "ext4", "postgres_settings": uring}})
    # 15 has no io_method at all: that is what it is told
    with pytest.raises(LabError, match=r"PostgreSQL 15 has no setting 'io_method'"):
        cfg(postgres={"version": 15}, workloads=_scan(**uring))
    distribution(18)
    assert cfg(postgres={"version": 18}, workloads=_scan(**uring))


def test_a_copys_settings_are_named_by_the_target_the_config_names():
    with pytest.raises(LabError, match=r"^test\.yaml: targets\.ext4\.postgres_settings\.io_method: PostgreSQL 15"):
        cfg(targets={"ext4": {"fs": "ext4", "postgres_settings": {"io_method": "worker"}}})
