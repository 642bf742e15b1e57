"""ZFS targets and WAL on another target: config checks (fast), and real tiny studies on a zfs target
(zfs-fuse here: no zfs kernel module), the release of pool, loop device and daemon on every exit path
(an injected failure included), and the refusals (a pool the lab did not create is never destroyed or
exported)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import machine_can_run_studies, needs_root

from pgfslab.config import study as cfgmod
from pgfslab.config.model import TargetSpec
from pgfslab.config.targets import fs_label, spec_problems, zfs_property_problems
from pgfslab.errors import LabError
from pgfslab.host.zfs import commands as zfs_commands
from pgfslab.host.zfs import daemon as zfs_daemon
from pgfslab.host.zfs import pools as zfs


def base(**targets) -> dict:
    return {
        "study": "zt",
        "targets": targets or {"z": {"fs": "zfs", "size_gb": 2}},
        "workloads": {"w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1], "repeats": 1}},
    }


# ----------------------------------------------------------------------------- config (fast)


def test_zfs_target_validates_with_properties():
    cfg = cfgmod.validate(base(z={"fs": "zfs", "zfs": {"recordsize": "8k", "compression": "gzip", "atime": False}}))
    assert cfg["targets"]["z"]["zfs"]["recordsize"] == "8k"
    assert cfgmod.Study.from_dict(cfg).runs[0].target == "z"


@pytest.mark.parametrize(
    "props, words",
    [
        ({"recordsiz": "8k"}, ["zfs.recordsiz", "unknown ZFS dataset property"]),
        ({"mountpoint": "legacy"}, ["zfs.mountpoint", "set by the lab"]),
        ({"logbias": "fast"}, ["zfs.logbias", "'fast'"]),
        ({"recordsize": "3k"}, ["zfs.recordsize", "power of 2"]),
        ({"pgfslab:created-by": "me"}, ["zfs.pgfslab:created-by", "set by the lab"]),
    ],
)
def test_zfs_properties_refused_at_config_time_naming_the_key(props, words):
    with pytest.raises(LabError) as err:
        cfgmod.validate(base(z={"fs": "zfs", "zfs": props}), "s.yaml")
    assert all(w in str(err.value) for w in words), str(err.value)
    assert "targets.z" in str(err.value)


@pytest.mark.parametrize(
    "props, words",
    [
        ({"sync": "always"}, ["zfs.sync", "no `sync` property"]),
        ({"compression": "lz4"}, ["zfs.compression", "no lz4/zstd"]),
        ({"compression": "zstd"}, ["zfs.compression", "pool version 23"]),
        ({"recordsize": "1M"}, ["zfs.recordsize", "128k"]),
        ({"xattr": "sa"}, ["zfs.xattr", "on or off"]),
        ({"dnodesize": "auto"}, ["zfs.dnodesize", "needs OpenZFS"]),
    ],
)
def test_what_zfs_fuse_cannot_do_is_named(props, words):
    assert zfs_property_problems(props, "openzfs") == []  # OpenZFS can
    problems = zfs_property_problems(props, "zfs-fuse")
    assert len(problems) == 1 and all(w in problems[0] for w in words), problems


def test_zfs_spec_refusals():
    assert any(
        "not mount or mkfs options" in p
        for p in spec_problems(TargetSpec.from_dict({"fs": "zfs", "mount_options": ["noatime"]}))
    )
    assert any(
        "not supported yet" in p
        for p in spec_problems(TargetSpec.from_dict({"fs": "zfs", "device": "/dev/sdz", "format": True}))
    )
    assert any(
        "for fs: zfs, not ext4" in p
        for p in spec_problems(TargetSpec.from_dict({"fs": "ext4", "zfs": {"atime": "off"}}))
    )


def test_fs_label_names_the_implementation():
    assert fs_label("zfs", "zfs-fuse") == "zfs (zfs-fuse, userspace)"
    assert fs_label("zfs", "openzfs") == "zfs (OpenZFS)"
    assert fs_label("ext4", None) == "ext4"


def test_pool_names():
    assert zfs.pool_name("fs-compare", "zfs-gzip") == "pgfslab-fs-compare-zfs-gzip"
    assert zfs.POOL_NAME_RE.match("pgfslab-fs-compare-zfs")
    for bad in ("tank", "pgfslab", "pgfslab-x", "rpool/pgfslab-a-b"):
        assert not zfs.POOL_NAME_RE.match(bad), bad
    with pytest.raises(LabError):
        zfs.pool_name("Bad Study", "t")


@pytest.mark.parametrize(
    "wal_on, words",
    [
        ("z", "cannot hold its own WAL"),
        ("nope", "'nope' is not a target"),
        ("y", "do not chain"),
    ],
)
def test_wal_on_refusals(wal_on, words):
    cfg = base(z={"fs": "zfs", "wal_on": wal_on}, e={"fs": "ext4"}, y={"fs": "xfs", "wal_on": "e"})
    with pytest.raises(LabError, match=words):
        cfgmod.validate(cfg, "s.yaml")


def test_wal_target_in_fingerprint_and_inputs():
    study = cfgmod.Study.from_dict(cfgmod.validate(base(z={"fs": "zfs", "wal_on": "e"}, e={"fs": "ext4"})))
    assert "wal_on" in study.target_fingerprint("z")
    assert "wal_on" not in study.target_fingerprint("e")
    assert study.wal_target_inputs("z") == ["data/raw/zt/_setup/e/target.json"]
    assert study.wal_target_inputs("e") == []


def test_durability_power_cut_on_zfs_says_why_not():
    from pgfslab.host import powercut
    from pgfslab.host.targets.mounted import Mounted

    m = Mounted("z", "zfs", Path("/x"), Path("/x"), False, device="/dev/loop7", kind="image", implementation="zfs-fuse")
    ok, why = powercut.power_cut_possible(m)
    assert not ok and "zfs (zfs-fuse, userspace)" in why and "hangs" in why


# ----------------------------------------------------------------------------- real (slow)


def zfs_usable() -> tuple[bool, str]:
    ok, why = machine_can_run_studies()
    if not ok:
        return ok, why
    try:
        zfs_commands.implementation()
    except LabError as exc:
        return False, str(exc)
    return True, ""


_zok, _zwhy = zfs_usable()
needs_zfs = pytest.mark.skipif(not _zok, reason=_zwhy or "zfs")

CONFIG = {
    "study": "zfstest",
    "targets": {
        "ext4": {"fs": "ext4", "size_gb": 1},
        "zfs": {"fs": "zfs", "size_gb": 2, "zfs": {"recordsize": "8k", "compression": "gzip", "atime": "off"}},
        "zfs-walext4": {"fs": "zfs", "size_gb": 2, "zfs": {"recordsize": "8k"}, "wal_on": "ext4"},
    },
    "postgres": {"port_base": 26720, "settings": {"shared_buffers": "32MB"}},
    "dataset": {"scale": 1},
    "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1], "repeats": 1}},
    "run": {"duration_s": 2},
    "snapshots": {"interval_s": 0.5, "keep_s": 1, "targets": ["zfs"]},
}


def lab_state(work: Path) -> dict[str, list[str]]:
    """What a study under `work` could have left: mounts, loop devices, imported lab pools, daemons."""
    with open("/proc/self/mounts") as fh:
        mnts = [ln.split()[1] for ln in fh if ln.split()[1].startswith(str(work))]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return {
        "mounts": mnts,
        "loops": [ln for ln in loops.splitlines() if str(work) in ln],
        "pools": [p for p in zfs.imported_pools() if p.startswith("pgfslab-zfstest-")]
        if zfs_daemon.running_daemons()
        else [],
        "daemons": [str(p) for p in zfs_daemon.running_daemons()],
    }


@pytest.fixture
def study(monkeypatch) -> Iterator[tuple[dict, Path]]:
    if zfs_daemon.running_daemons():
        pytest.skip("a zfs-fuse daemon that the lab did not start is running: the tests would share it")
    work = Path(tempfile.mkdtemp(prefix="pgfs-zfstest-"))
    work.chmod(0o755)
    monkeypatch.chdir(work)
    cfg = cfgmod.validate({**CONFIG, "workdir": str(work / "work")})
    (work / "data" / "raw" / "zfstest").mkdir(parents=True)
    try:
        yield cfg, work
    finally:
        from pgfslab.run.interrupt import release_after_interrupt

        for t in cfg["targets"]:
            release_after_interrupt(cfgmod.Study.from_dict(cfg).target_view(t))
        subprocess.run(["rm", "-rf", "--one-file-system", str(work)], check=False)


def assert_released(work: Path) -> None:
    state = lab_state(work)
    assert state == {"mounts": [], "loops": [], "pools": [], "daemons": []}, state


@needs_root
@needs_zfs
def test_tiny_study_on_zfs_and_wal_on_ext4(study):
    """prepare + one pgbench run on a zfs target, and on a zfs target with WAL on ext4: provenance says
    which ZFS ran and where WAL lives; nothing is left mounted, attached, imported or running."""
    from pgfslab.run.execute import run_one
    from pgfslab.run.prepare import prepare_target

    cfg, work = study
    typed = cfgmod.Study.from_dict(cfg)
    for t in ("ext4", "zfs", "zfs-walext4"):
        prepare_target(typed, t)
        assert_released(work)
    setup = json.loads((work / "data/raw/zfstest/_setup/zfs/target.json").read_text())
    assert setup["created"]["implementation"] in ("zfs-fuse", "openzfs")
    assert setup["created"]["pool"] == "pgfslab-zfstest-zfs"
    assert setup["created"]["properties"]["compression"] == "gzip"
    assert setup["zfs_footprint"]["compressratio"] > 1.5  # pgbench's blank filler compresses well
    runs = {}
    for r in typed.runs:
        if r.target != "ext4":
            runs[r.target] = json.loads(run_one(typed, r.run_id).read_text())
            assert_released(work)
    z = runs["zfs"]
    assert z["status"] == "ok", z.get("error")
    assert z["fs_label"] in ("zfs (zfs-fuse, userspace)", "zfs (OpenZFS)")
    assert z["mount"]["implementation"] in ("zfs-fuse", "openzfs")
    assert z["zfs_footprint"]["used"] > 0 and z["fs_used_bytes"] == z["zfs_footprint"]["used"]
    snaps = z["snapshots"]  # zfs snapshot/destroy on the schedule, all destroyed at the end
    assert snaps["method"] == "zfs snapshot" and snaps["errors"] == []
    assert snaps["created"] >= 2 and snaps["deleted"] == snaps["created"]
    w = runs["zfs-walext4"]
    assert w["status"] == "ok", w.get("error")
    assert w["wal"]["target"] == "ext4" and w["wal"]["fs"] == "ext4"
    assert w["wal"]["dir"].endswith("/mnt/ext4/wal-zfs-walext4")
    setup_w = json.loads((work / "data/raw/zfstest/_setup/zfs-walext4/target.json").read_text())
    assert setup_w["wal"]["target"] == "ext4"
    assert setup_w["initdb_command"][-2:] == ["-X", w["wal"]["dir"]]


@needs_root
@needs_zfs
def test_injected_failures_release_pool_loop_and_daemon(study, monkeypatch):
    """A failure in the middle of a run (the client raises) and in the middle of a preparation (after
    the pool is imported): the pool is exported, the loop device detached, the daemon stopped."""
    from pgfslab.run import prepare
    from pgfslab.run.execute import run_one
    from pgfslab.run.prepare import prepare_target
    from pgfslab.runners import pgbench

    cfg, work = study
    typed = cfgmod.Study.from_dict(cfg)
    prepare_target(typed, "zfs")

    def boom(*a, **k):
        raise LabError("injected failure")

    monkeypatch.setattr(pgbench, "run_client", boom)  # the client, as run.pg_run calls it through its runner
    run_id = next(r.run_id for r in typed.runs if r.target == "zfs")
    with pytest.raises(LabError, match="injected failure"):
        run_one(typed, run_id)
    assert_released(work)
    rec = json.loads((work / "data/raw/zfstest" / run_id / "run.incomplete.json").read_text())
    assert rec["status"] == "error"

    monkeypatch.setattr(prepare, "_prepare_cluster", boom)
    with pytest.raises(LabError, match="injected failure"):
        prepare_target(typed, "zfs")
    assert_released(work)


@needs_root
@needs_zfs
def test_pools_the_lab_did_not_create_are_never_destroyed_or_exported(study, loops):
    """An unmarked pool, whether named like the lab's or not, is refused by export, destroy, and by the
    preparation of a target whose pool name it has."""
    from pgfslab.host.targets import create as target_create
    from pgfslab.host.zfs import pools as zfs

    cfg, work = study
    wd = cfgmod.Study.from_dict(cfg).work_dir
    with zfs_daemon.service(work / "zfs-fuse.log"):
        for i, name in enumerate(("foreign-tank", "pgfslab-zfstest-zfs")):
            dev = loops.attach(loops.image(f"foreign{i}", 256))
            subprocess.run(
                ["zpool", "create", "-f", "-o", "cachefile=none", "-m", str(work / f"f{i}"), name, dev],
                check=True,
                capture_output=True,
            )
            try:
                with pytest.raises(LabError, match="refusing to export"):
                    zfs.export_pool(name)
                with pytest.raises(LabError, match="refusing to destroy"):
                    zfs.destroy_pool(name)
                if name.startswith("pgfslab-"):
                    with pytest.raises(LabError, match="refusing to destroy"):
                        target_create.create(wd, "zfs", TargetSpec.from_dict(cfg["targets"]["zfs"]), study="zfstest")
                    assert not zfs.is_lab_pool(name)
                    assert [m for m in zfs.lab_pools() if m == name] == []
                assert name in zfs.imported_pools()  # still there, untouched
            finally:
                subprocess.run(["zpool", "destroy", "-f", name], capture_output=True)
    assert_released(work)
    assert not os.path.exists(work / "zfs-fuse.pid")


@needs_root
@needs_zfs
def test_device_baseline_on_zfs_and_ext4_into_the_database(study):
    """The device baseline (fio + pg_test_fsync, 1 s per job) of a zfs and an ext4 target: raw outputs and
    baseline.json kept, ingested into device_baselines/fio_job/pg_test_fsync, the device table and the
    ceiling computed; nothing left behind."""
    import yaml

    from pgfslab.analysis import device
    from pgfslab.ingest.study import ingest_study
    from pgfslab.run.device_baseline import baseline_target
    from pgfslab.run.execute import run_one
    from pgfslab.run.prepare import prepare_target

    cfg, work = study
    cfg["device_baseline"] = {"duration_s": 1, "size": "64M", "wal_size": "16M", "pg_test_fsync_s": 1}
    raw = work / "data/raw/zfstest"
    (raw / "study.yaml").write_text(yaml.safe_dump(cfg))
    typed = cfgmod.Study.from_dict(cfgmod.validate(cfg))
    for t in ("ext4", "zfs"):
        prepare_target(typed, t)
        rec = json.loads(baseline_target(typed, t).read_text())
        assert_released(work)
        assert {"wal_qd1_fdatasync", "randread_qd32", "seqwrite_1m"} <= {j["name"] for j in rec["baseline"]["jobs"]}
        assert (raw / "_setup" / t / "device" / "pg_test_fsync.txt").stat().st_size > 0
        run_one(typed, f"{t}.tpcb.c1.r1")
    assert "zfs-fuse" in " ".join(
        json.loads((raw / "_setup/zfs/device/baseline.json").read_text())["baseline"]["notes"]
    )
    db = work / "data" / "zfstest.duckdb"
    ingest_study(raw, db, progress=False, external=None)
    table = device.device_table(str(db), "zfstest")
    assert sorted(table["target"]) == ["ext4", "zfs"]
    assert (table["wal_fdatasync_ops"] > 0).all() and (table["fdatasync_p50_us"] > 0).all()
    assert (table["pg_test_fsync_fdatasync_ops"] > 0).all()
    ceil = device.ceilings(str(db), "zfstest")
    assert (ceil["tps_1_client"] > 0).all() and (ceil["share_of_ceiling"] > 0).all()
    assert set(ceil["fs_label"]) == {"ext4", "zfs (zfs-fuse, userspace)"}


@needs_root
@needs_zfs
def test_durability_power_cut_on_zfs_kills_the_daemon(study):
    """The durability check's power loss on a zfs-fuse target: the daemon the lab started is SIGKILLed
    (what it had not written is lost), restarted, the pool imported, PostgreSQL recovers; no acknowledged
    commit may be lost and everything is released after."""
    from pgfslab.run.execute import run_one
    from pgfslab.run.prepare import prepare_target

    cfg, work = study
    cfg["targets"] = {"zfs": cfg["targets"]["zfs"]}
    cfg["workloads"] = {
        "crash": {"tool": "durability", "clients": [2], "repeats": 1, "crash_after_s": 3, "crash": "power-loss"}
    }
    cfg["snapshots"] = None
    typed = cfgmod.Study.from_dict(cfgmod.validate({k: v for k, v in cfg.items() if v is not None}))
    prepare_target(typed, "zfs")
    rec = json.loads(run_one(typed, "zfs.crash.c2.r1").read_text())
    assert_released(work)
    assert rec["status"] == "ok", rec.get("error")
    d = json.loads((work / "data/raw/zfstest/zfs.crash.c2.r1/durability.json").read_text())
    assert d["crash"] == "power-loss", d.get("crash_note")
    assert d["power_cut"]["method"] == "SIGKILL of the zfs-fuse daemon"
    assert d["committed_ids"] > 0 and d["lost_ids"] == 0 and d["violations"] == 0, d["verdict"]
    assert "zfs-fuse restarted" in " ".join(d["remount"]["notes"])


@needs_root
@needs_zfs
def test_a_daemon_left_by_a_hard_killed_lab_process_is_stopped_not_reused(study):
    """A zfs-fuse daemon recorded in the study's PID file (its lab process was SIGKILLed) is stopped by
    the next service() (which then runs its own), never left running for good; a daemon the lab did not
    record is reused and left alone (the other tests skip when one runs)."""
    cfg, work = study
    wd = cfgmod.Study.from_dict(cfg).work_dir
    pid_file = wd / "zfs-fuse.pid"
    log = wd / "zfs-fuse.log"
    code = (
        "import sys, time; from pathlib import Path; from pgfslab.host.zfs import daemon as zfs_daemon\n"
        "cm = zfs_daemon.service(Path(sys.argv[1]), pid_file=Path(sys.argv[2])); cm.__enter__()\n"
        "print('up', flush=True); time.sleep(600)\n"
    )
    import sys

    p = subprocess.Popen([sys.executable, "-c", code, str(log), str(pid_file)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
    finally:
        p.kill()  # a hard kill: its daemon lives on
        p.wait()
    orphan = zfs_daemon.running_daemons()
    assert orphan and pid_file.exists()
    with zfs_daemon.service(log, pid_file=pid_file) as svc:
        assert svc.owns_daemon and svc.started_pid not in orphan
        assert any("stopped zfs-fuse pid" in n for n in svc.notes), svc.notes
    assert_released(work)
