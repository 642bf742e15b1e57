"""A target's slow-device profile: the config keys (`device_profile`, `device_model`), what they become for the
target's runs and device baseline, what they refuse; the throttle (`hdd-throttle`) for real: the device
baseline's fio held to its rate on a throttled direct-I/O loop device. The emulated disk (`hdd`) for real is in
tests/test_disk_device.py."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import needs_root

from pgfslab.analysis.verdicts import claims, evaluate, facts, regime
from pgfslab.config import device_profiles
from pgfslab.config.model import Resources, TargetSpec
from pgfslab.config.study import Study, load_study, resolve
from pgfslab.errors import LabError
from pgfslab.host import cgroups
from pgfslab.paper import device_baseline as paper_device
from pgfslab.records.run_record import RunRecord, parse
from pgfslab.run import device_baseline


def rec_of(data: dict[str, object]) -> RunRecord:
    """A run record from run.json's mapping, as the analysis reads it."""
    return parse(data)[0]


REPO = Path(__file__).resolve().parent.parent


def study_dict(profile: str = "hdd-throttle") -> dict:
    return {
        "study": "hdd-test",
        "targets": {
            "ssd": {"fs": "ext4"},
            "ext4": {"fs": "ext4", "device_profile": profile, "wal_on": "ssd"},
            "btrfs": {"fs": "btrfs", "device_profile": profile, "wal_on": "ssd"},
        },
        "workloads": {"tpcb": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "resources": {"memory_limit_mb": 512},
        "device_baseline": {"duration_s": 1},
    }


def build(raw: dict) -> Study:
    return Study.from_dict(resolve(copy.deepcopy(raw), "my.yaml", REPO))


def test_profile_becomes_the_targets_blkio_and_keeps_the_studys_memory_limit():
    study = build(study_dict())
    for target in ("ext4", "btrfs"):
        res = study.resources_for(target)
        assert res.memory_limit_mb == 512
        assert res.blkio is not None and res.blkio.to_dict() == {
            "read_iops": 150,
            "write_iops": 150,
            "read_bps": "100MB",
            "write_bps": "100MB",
        }
    assert study.resources_for("ssd").blkio is None  # the WAL's target stays the real device
    view = study.run_view(next(r for r in study.runs if r.target == "ext4"))
    lim = cgroups.limits_from_config(view.resources, "/dev/loop7", view.target.spec.device_profile)
    assert (lim.read_iops, lim.write_iops, lim.read_bps, lim.write_bps) == (150, 150, 100_000_000, 100_000_000)
    assert lim.profile == "hdd-throttle" and lim.memory_bytes == 512 * 2**20


def test_an_emulated_disk_is_no_cgroup_throttle():
    """`hdd` is below the file system: its runs get the study's memory limit and no blkio throttle, and the
    run's cgroup is not asked for one."""
    study = build(study_dict("hdd"))
    res = study.resources_for("ext4")
    assert res.memory_limit_mb == 512 and res.blkio is None
    view = study.run_view(next(r for r in study.runs if r.target == "ext4"))
    assert device_profiles.throttle(view.target.spec.device_profile) is None
    lim = cgroups.limits_from_config(view.resources, "/dev/loop7", None)
    assert not lim.io_limited


def test_profile_names_its_source():
    assert "7,200 rpm" in device_profiles.source("hdd-throttle")
    assert "ST9500430SS" in device_profiles.source("hdd") and "Product Manual" in device_profiles.source("hdd")
    note = device_baseline.emulated_note("hdd-throttle", "/dev/loop7")
    assert "/dev/loop7" in note and "150 read" in note and "not emulated" in note
    note = device_baseline.emulated_note("hdd", "/dev/loop7", {"model": {"drive": "X", "derived": {}}})
    assert "emulated disk" in note and "one queue for reads and writes" in note and "not emulated" in note


@pytest.mark.parametrize("profile", ["hdd", "hdd-throttle"])
def test_a_target_without_profile_keeps_its_fingerprints(profile):
    """Adding the key to one target re-measures that target only: the others' runs and baselines keep
    their fingerprints (no new default reaches an existing run)."""
    raw = study_dict(profile)
    plain = copy.deepcopy(raw)
    for spec in plain["targets"].values():
        spec.pop("device_profile", None)
    a, b = build(raw), build(plain)
    runs = {r.run_id: r for r in a.runs}
    for r in b.runs:
        same = a.run_fingerprint(runs[r.run_id]) == b.run_fingerprint(r)
        assert same == (r.target == "ssd"), r.run_id
    assert a.baseline_fingerprint("ssd") == b.baseline_fingerprint("ssd")
    assert a.baseline_fingerprint("ext4") != b.baseline_fingerprint("ext4")
    assert "device_profile" not in json.loads(b.run_fingerprint(b.runs[0]))


def test_a_changed_disk_model_re_measures_the_target():
    raw = study_dict("hdd")
    other = copy.deepcopy(raw)
    other["targets"]["ext4"]["device_model"] = {"seek_read_ms": {"average": 9.5}}
    a, b = build(raw), build(other)
    assert a.baseline_fingerprint("ext4") != b.baseline_fingerprint("ext4")
    assert a.baseline_fingerprint("btrfs") == b.baseline_fingerprint("btrfs")
    fp = json.loads(b.baseline_fingerprint("ext4"))["device_profile"]["hdd"]
    assert fp["seek_read_ms"]["average"] == 9.5 and fp["disk"] == "constellation-7200"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["targets"]["ext4"].update(device_profile="ssd"), "device_profile"),
        (lambda c: c["targets"].update(ram={"fs": "tmpfs", "device_profile": "hdd"}), "ram.device_profile: tmpfs"),
        (lambda c: c["targets"].update(z={"fs": "zfs", "device_profile": "hdd-throttle"}), "a zfs pool's I/O"),
        (lambda c: c["targets"].update(z={"fs": "zfs", "device_profile": "hdd"}), "serves an ext4, xfs or btrfs image"),
        (
            lambda c: c["targets"].update(
                d={"fs": "ext4", "device": "/dev/sdz", "format": True, "device_profile": "hdd"}
            ),
            "serves an ext4, xfs or btrfs image",
        ),
        (lambda c: c["targets"]["ssd"].update(device_model={"rpm": 5400}), "only with an emulated disk"),
        (
            lambda c: c["targets"]["ext4"].update(device_profile="hdd", device_model={"rpm": 0}),
            "device_model.rpm",
        ),
        (
            lambda c: c["targets"]["ext4"].update(device_profile="hdd", device_model={"seek_read_ms": {"average": 30}}),
            "track < average < full",
        ),
        (lambda c: c["targets"]["ext4"].update(device_profile="hdd", direct_io=False), "direct I/O"),
        (lambda c: c["resources"].update(blkio={"read_iops": 100}), "also sets resources.blkio"),
        (lambda c: c.pop("device_baseline"), "needs the study's device_baseline"),
        (lambda c: c["device_baseline"].update(enabled=False), "needs the study's device_baseline"),
        (
            lambda c: c["workloads"].update(micro={"tool": "fsmicro", "op": "create_fsync"}),
            "fsmicro workloads \\(micro\\) do not run in the target's cgroup",
        ),
    ],
)
def test_what_a_profile_refuses(change, message):
    raw = study_dict()
    change(raw)
    with pytest.raises(LabError, match=message):
        build(raw)


def test_a_profile_without_throttles_is_an_error():
    with pytest.raises(LabError, match="device profile hdd-throttle: no blkio throttles"):
        cgroups.limits_from_config(Resources(memory_limit_mb=64), "/dev/loop7", "hdd-throttle")


def test_fsmicro_runs_on_an_emulated_disk():
    """The disk is below the file system: fsmicro's operations reach it like everything else (a throttle
    would not see them: they do not run in the target's cgroup)."""
    raw = study_dict("hdd")
    raw["workloads"]["micro"] = {"tool": "fsmicro", "op": "create_fsync"}
    assert build(raw).targets["ext4"].device_profile == "hdd"


def test_the_btrfs_hdd_study_puts_its_data_on_the_emulated_disk_and_not_its_wal():
    study = load_study(REPO / "config" / "btrfs-hdd.yaml")
    assert "004" in study.seeds
    profiled = {t for t, s in study.targets.items() if s.device_profile == "hdd"}
    assert all(device_profiles.is_disk(study.targets[t].device_profile) for t in profiled)
    assert profiled == {"ext4", "btrfs", "btrfs-zlib"}
    for t in profiled:
        wal = study.targets[t].wal_on
        assert wal is not None and study.targets[wal].device_profile is None
    assert study.ladder is not None and study.resources.memory_limit_mb is not None
    assert study.baseline_enabled()
    tpcb = [w for w in study.workloads.values() if w.options.what() == "tpcb-like"]
    assert {c for w in tpcb for c in w.clients} >= {8}
    assert any((w.postgres_settings or {}).get("fsync") == "off" for w in tpcb)
    # the crossover's mechanism is checkpoint write-back competing with reads: every run spans two checkpoint_timeouts
    timeout_s = int(str(study.postgres.settings["checkpoint_timeout"]).removesuffix("s"))
    assert all(study.run_view(r).duration_s >= 2 * timeout_s for r in study.runs)


def test_the_select_study_reads_beyond_memory_from_the_emulated_disk():
    """btrfs-hdd-select: the post's select-only test where its reads came from, a magnetic disk, with the data set
    beyond the memory limit (the claims' primary regime, placed by the plan before anything runs)."""
    from pgfslab.analysis import design

    study = load_study(REPO / "config" / "btrfs-hdd-select.yaml")
    assert "004" in study.seeds and study.baseline_enabled()
    assert {t: s.device_profile for t, s in study.targets.items()} == dict.fromkeys(
        ["ext4", "btrfs", "btrfs-zlib"], "hdd"
    )
    assert {w.options.what() for w in study.workloads.values()} == {"select-only"}
    assert design.cells(study)["regime"].to_list() == ["exceeds_ram"]
    claims = set(design.claims(study, design.cells(study))["claim"])
    assert claims == {"s004-select-zlib-45pct", "s004-select-btrfs-ahead"}


def test_the_durability_study_names_the_seeds_it_answers():
    assert set(load_study(REPO / "config" / "durability.yaml").seeds) == {"001", "004"}


# --- for real: the device baseline's fio under the profile, on a direct-I/O loop device


def _iops(report: Path, direction: str) -> float:
    text = report.read_text()
    return float(json.loads(text[text.index("{") :])["jobs"][0][direction]["iops"])


@needs_root
@pytest.mark.machine_wide
def test_the_baseline_fio_is_held_to_the_profile(loops, tmp_path):
    """8 kB random reads with O_DIRECT at QD1 and QD32 (the baseline's randread jobs) run at the profile's
    150 reads/s under it, and far faster without it on the same file system."""
    if "io" not in cgroups.find():
        pytest.skip("no blkio/io controller mounted here")
    dev = loops.attach(loops.image("hdd", 512))
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    mnt = loops.mount(dev, tmp_path / "mnt")
    jobs = ["randread_qd1", "randread_qd32"]
    kw = {"duration_s": 3, "size": "64M", "wal_size": "8M", "pg_test_fsync_secs": None, "jobs": jobs}
    free = device_baseline.run_baseline(mnt, tmp_path / "free", **kw)
    limits = cgroups.limits_from_config(Resources(blkio=device_profiles.blkio("hdd-throttle")), dev, "hdd-throttle")
    with cgroups.limited(f"test-{os.getpid()}-hdd", limits) as cg:
        held = device_baseline.run_baseline(mnt, tmp_path / "held", wrap=cg.command, **kw)
        io = cg.usage()["io"]
    assert free.direct and held.direct
    want = limits.read_iops
    assert want == 150
    for job in jobs:
        got, unthrottled = (
            _iops(tmp_path / "held" / f"{job}.json", "read"),
            _iops(tmp_path / "free" / f"{job}.json", "read"),
        )
        assert 0.8 * want <= got <= 1.1 * want, (job, got)
        assert unthrottled >= 3 * want, (job, unthrottled)  # else the throttle could not be told from the device
    # what the cgroup was charged: at least the reads fio reported (3 s per job at 150/s)
    assert io["read_ios"] >= 0.8 * want * 3 * len(jobs), io
    assert not any(p.name.startswith(device_baseline.DATA_PREFIX) for p in mnt.iterdir())


def test_a_throttled_run_is_io_bound_by_what_its_cgroup_was_charged():
    """diskstats see a throttled device mostly idle (the throttle holds I/O back above it): the regime check
    counts the share of the throttle's capacity the run used. 1,650 reads in 11 s against 150/s is 100 %."""
    phases = {"cgroup": 0.04, "server_start": 1.0, "facts_before": 0.5, "measured": 9.0, "facts_after": 0.5,
              "server_stop": 7.7}  # fmt: skip
    limits = {"read_iops": 150, "write_iops": 150, "read_bps": 100_000_000, "write_bps": 100_000_000}
    rec = {
        "phases_s": phases,
        "cgroup": {"limits": limits, "usage": {"io": {"read_ios": 1650, "write_ios": 33, "read_bytes": 8e6}}},
    }
    assert regime.throttle_busy(rec_of(rec)) == pytest.approx(1650 / (150 * 11.0))
    rec["cgroup"]["usage"]["io"]["read_ios"] = 330
    assert regime.throttle_busy(rec_of(rec)) == pytest.approx(330 / (150 * 11.0))  # 20 %: not I/O-bound
    rec["cgroup"]["usage"]["io"]["write_bytes"] = 1.1e9  # bandwidth-bound writes
    assert regime.throttle_busy(rec_of(rec)) == 1.0
    assert regime.throttle_busy(rec_of({"phases_s": phases, "cgroup": {"limits": {"memory_limit_bytes": 1}}})) is None


def test_an_emulated_device_is_compared_with_emulated_devices_only():
    """ext4 on the real device (the WAL's target, its own runs as context) is never a side against btrfs on
    the throttled one: only the two throttled targets make a pair."""
    claim = next(c for c in claims.claims() if c.id == "s004-btrfs-2x-ext4-magnetic")
    base = {"tool": "pgbench", "kind": "tpcb-like", "op": None, "workload": "tpcb", "clients": 8, "rung": 2,
            "regime": "exceeds_ram", "compression": "none", "fillfactor": 100, "snapshots": False,
            "aa_twin_of": None, **dict.fromkeys(facts.PG_KEYS), **dict.fromkeys(facts.FS_KEYS),
            "dirty_background_bytes": None}  # fmt: skip
    rows = [
        {
            **base,
            "target": t,
            "target_label": t,
            "fs": fs,
            "device_profile": profile,
            "value": v + i,
            "run_id": f"{t}.{i}",
        }  # fmt: skip
        for t, fs, profile, v in (
            ("ext4-ssd", "ext4", None, 300.0),
            ("ext4", "ext4", "hdd", 60.0),
            ("btrfs", "btrfs", "hdd", 70.0),
        )  # fmt: skip
        for i in range(5)
    ]
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), claim)
    assert out.select("a", "b").rows() == [("ext4", "btrfs")]
    # read await behind a throttle is the real device's: a claim about service times gets no verdict there
    claim = next(c for c in claims.claims() if c.id == "s004-ext4-io-service-time-variance")
    rows = [r | {"read_await_var": 1.0 + i / 10 if r["fs"] == "ext4" else 0.1 + i / 100} for i, r in enumerate(rows)]
    out = evaluate.evaluate(pl.DataFrame(rows, infer_schema_length=None), claim)
    assert out.select("a", "b").rows() == [("ext4", "btrfs")]
    # (the claim now also needs a magnetic-class device, which these rows carry no baseline to show)
    said = out["verdict_text"][0]
    assert said.startswith("not tested in the seed's regime: ") and "the data device is emulated (hdd" in said
    plain = [r | {"device_profile": None} for r in rows if r["target"] != "ext4-ssd"]
    out = evaluate.evaluate(pl.DataFrame(plain, infer_schema_length=None), claim)
    assert "emulated" not in out["verdict_text"][0]


def test_the_paper_says_which_device_is_emulated_and_what_it_leaves_out():
    cfg = load_study(REPO / "config" / "btrfs-hdd.yaml")
    assert paper_device.profiles(cfg) == {"ext4": "hdd", "btrfs": "hdd", "btrfs-zlib": "hdd"}
    text = paper_device.emulated_text(cfg)
    assert text is not None
    for said in ("ext4: `hdd`, 7200 rpm", "0.5/8.0/17.35 ms", "ST9500430SS", "one queue shared by reads and writes",
                 "page cache", "Not emulated: a write cache", "docs/slow-device.md"):  # fmt: skip
        assert said in text, said
    raw = study_dict()  # the throttle: what it leaves out
    text = paper_device.emulated_text(build(raw))
    assert text is not None
    for said in ("ext4, btrfs: `hdd-throttle`", "150 read and 150 write operations", "no seek model",
                 "separate budgets", "not throttled"):  # fmt: skip
        assert said in text, said
    assert paper_device.emulated_text(load_study(REPO / "config" / "wal-separate.yaml")) is None
    # a raw folder from before the emulated disk: its `hdd` was the throttle, as its runs recorded
    text = paper_device.emulated_text(cfg, {"ext4": "throttle", "btrfs": "throttle", "btrfs-zlib": "throttle"})
    assert text is not None and "`hdd`, 150 read and 150 write operations" in text and "ST9500430SS" not in text


def test_the_setup_table_states_the_disk_model_from_the_records():
    from pgfslab.paper import testbed

    model = device_profiles.model(TargetSpec.from_dict({"fs": "ext4", "device_profile": "hdd"}), 4 * 2**30).describe()
    label = testbed.disk_label(model)
    for said in ("emulated disk `constellation-7200`", "7200 rpm", "0.5/8.0/17.35 ms read", "0.7/8.4/17.82 write",
                 "0.2 ms overhead", "142-75 MB/s", "no write cache", "random 8 kB read 12.3"):  # fmt: skip
        assert said in label, said


def test_a_target_that_only_holds_the_others_wal_is_no_baseline(tmp_path: Path) -> None:
    """btrfs-hdd's first target, ext4-ssd, holds the emulated targets' WAL and runs no cell: a notebook that took
    the config's first target as the baseline found no run of it and failed (variance_significance)."""
    import duckdb

    from pgfslab.analysis import queries
    from pgfslab.ingest.schema import create_schema

    db = tmp_path / "h.duckdb"
    with duckdb.connect(str(db)) as con:
        create_schema(con)
        cfg = (REPO / "config" / "btrfs-hdd.yaml").read_text()
        con.execute("INSERT INTO study (study, title, authors, config_yaml) VALUES ('btrfs-hdd', 't', '[]', ?)", [cfg])
        con.execute("INSERT INTO runs (run_id, study, target, status) VALUES ('a', 'btrfs-hdd', 'btrfs', 'ok'), "
                    "('b', 'btrfs-hdd', 'ext4', 'ok')")  # fmt: skip
    assert queries.target_names(str(db), "btrfs-hdd")[0] == "ext4-ssd"
    assert queries.baseline_target(str(db), "btrfs-hdd") == "ext4"
