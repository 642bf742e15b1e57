from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from pgfslab import yaml_text
from pgfslab.config import checks, vm_settings
from pgfslab.config.study import Study, load, validate
from pgfslab.errors import LabError

REPO = Path(__file__).resolve().parent.parent


def base() -> dict:
    return {
        "study": "t",
        "targets": {"a": {"fs": "ext4"}, "b": {"fs": "xfs"}, "c": {"fs": "btrfs", "mount_options": ["compress=zstd"]}},
        "workloads": {"w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 4], "repeats": {"1": 2, "4": 5}}},
    }


def test_shipped_configs_validate():
    for path in sorted((REPO / "config").glob("*.yaml")):
        if path.name == "schema.yaml":
            continue
        cfg = load(path)
        assert Study.from_dict(cfg).runs, path


def test_defaults_are_filled():
    cfg = validate(base())
    assert cfg["run"]["duration_s"] == 20
    assert cfg["targets"]["a"]["size_gb"] == 4
    assert cfg["targets"]["a"]["direct_io"] is True
    assert cfg["postgres"]["user"] == "postgres"


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c["targets"]["a"].update(fs="ntfs"), "targets.a.fs"),
        (lambda c: c["targets"]["a"].update(colour="red"), "targets.a"),
        (lambda c: c.update(workloadz={}), "(top level)"),
        (lambda c: c["workloads"]["w"].update(clients=[0]), "workloads.w.clients.0"),
        (lambda c: c["targets"].update({"bad name": {"fs": "xfs"}}), "targets"),
        (lambda c: c["targets"]["a"].update(mount_options=["compress=zstd;rm -rf /"]), "targets.a.mount_options.0"),
    ],
)
def test_errors_name_the_key(mutate, key):
    cfg = base()
    mutate(cfg)
    with pytest.raises(LabError) as err:
        validate(cfg, "my.yaml")
    assert f"my.yaml: {key}" in str(err.value)


def test_repeats_for_unknown_client_count_rejected():
    cfg = base()
    cfg["workloads"]["w"]["repeats"] = {"8": 3}
    with pytest.raises(LabError, match="client counts \\[8\\]"):
        validate(cfg)


def test_yaml_error_names_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("study: x\ntargets:\n  a: {fs: ext4\n")
    with pytest.raises(LabError, match=r"s.yaml:\d+: not valid YAML"):
        load(p)


def test_plan_is_interleaved_and_counts_repeats():
    cfg = validate(base())
    runs = Study.from_dict(cfg).runs
    counts = Counter((r.workload, r.clients, r.target) for r in runs)
    assert counts[("w", 1, "a")] == 2 and counts[("w", 4, "c")] == 5
    assert len({r.run_id for r in runs}) == len(runs)
    # A B C, B C A: within every cell, targets alternate (the first rows of the Williams order, run.order) and
    # repeat r of all targets precedes r+1
    cell4 = [r for r in runs if r.clients == 4]
    assert [r.target for r in cell4[:6]] == ["a", "b", "c", "b", "c", "a"]
    for r in runs:
        later = [s for s in runs if s.plan_index > r.plan_index and s.clients == r.clients]
        assert all(s.repeat >= r.repeat for s in later)
    assert [r.plan_index for r in runs] == list(range(len(runs)))


def test_default_study_meets_its_brief():
    cfg = load(REPO / "config" / "default.yaml")
    fss = {t["fs"] for t in cfg["targets"].values()}
    assert fss == {"ext4", "xfs", "btrfs"}
    assert any("compress=zstd" in t.get("mount_options", []) for t in cfg["targets"].values())
    runs = Study.from_dict(cfg).runs
    assert max(Counter((r.target, r.workload, r.clients) for r in runs).values()) >= 5
    assert 20 <= cfg["run"]["duration_s"] <= 30
    # budget: the fixed rounds' run time must stay under 15 minutes on the 2-core machine, and the optional
    # rounds of the precision target may not start after it
    # (the A/A control's runs measure the instrument, not the file systems: they come on top)
    twins = {name for name, t in cfg["targets"].items() if t.get("aa_twin_of")}
    assert twins == {"ext4-aa"}
    fixed = [r for r in runs if not r.optional and r.target not in twins]
    assert len(fixed) * (cfg["run"]["duration_s"] + 3) < 15 * 60
    assert cfg["precision"]["budget_min"] <= 15


# --- target kinds, os, resources and snapshots sections ------------------------------------------


def full() -> dict:
    cfg = base()
    cfg["targets"].update(
        {
            "wb": {"fs": "ext4", "mount_options": ["data=writeback"]},
            "nocow": {"fs": "btrfs", "mount_options": ["nodatacow"]},
            "ram": {"fs": "tmpfs", "size_gb": 2},
            "host": {"fs": "existing", "path": "/srv/pg"},
            "disk": {"fs": "btrfs", "device": "/dev/disk/by-id/nvme-XYZ", "format": True},
        }
    )
    cfg["os"] = {
        "vm_dirty_background_bytes": "32MB",
        "vm_dirty_bytes": 1073741824,
        "vm": {"dirty_expire_centisecs": 500},
        "drop_caches": True,
    }
    cfg["resources"] = {"memory_limit_mb": 512}
    cfg["snapshots"] = {"interval_s": 300, "keep_s": 900, "targets": ["c", "disk"]}
    return cfg


def test_new_sections_validate_with_defaults():
    cfg = validate(full())
    assert cfg["snapshots"]["offset_s"] == 0 and Study.from_dict(cfg).snapshot_targets() == ["c", "disk"]
    assert cfg["targets"]["disk"]["format"] is True and "format" not in cfg["targets"]["a"]
    plain = validate(base())
    assert plain["os"] == {"drop_caches": True} and plain["resources"] == {} and "snapshots" not in plain
    assert Study.from_dict(plain).snapshot_targets() == []


def test_drop_caches_is_one_setting():
    cfg = base()
    cfg["os"] = {"drop_caches": False}
    got = validate(cfg)
    assert got["run"]["drop_caches"] is False and got["os"]["drop_caches"] is False
    cfg["run"] = {"drop_caches": True}
    with pytest.raises(LabError, match="disagree"):
        validate(cfg)


def test_vm_allowlist_matches_the_vm_settings_module():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(schema["properties"]["os"]["properties"]["vm"]["propertyNames"]["enum"]) == set(vm_settings.ALLOWED)


def _set(path: str, value):
    def mutate(c: dict) -> None:
        *head, last = path.split(".")
        node = c
        for k in head:
            node = node.setdefault(k, {})
        node[last] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, where",
    [
        (_set("os.vm_dirty_bytes", "lots"), "my.yaml: os.vm_dirty_bytes"),
        (_set("os.vm", {"drop_caches": 3}), "my.yaml: os.vm"),
        (_set("os.vm", {"dirty_ratio": 10}), "my.yaml: os: vm.dirty_bytes and vm.dirty_ratio cannot both be set"),
        (_set("resources.memory_limit_mb", 8), "my.yaml: resources.memory_limit_mb"),
        (_set("resources.blkio", {"read_bps": "fast"}), "my.yaml: resources.blkio.read_bps"),
        (_set("resources.blkio", {"read_mbps": 5}), "my.yaml: resources.blkio: unknown key"),
        (_set("snapshots", {"interval_s": 300, "targets": ["c"]}), "my.yaml: snapshots: 'keep_s' is a required"),
        (_set("snapshots.targets", ["a"]), "my.yaml: snapshots.targets: a is ext4 (image)"),
        (_set("snapshots.targets", ["ram"]), "my.yaml: snapshots.targets: ram is tmpfs"),
        (_set("snapshots.targets", ["zz"]), "my.yaml: snapshots.targets: 'zz' is not a target"),
        (_set("targets.disk.format", False), "my.yaml: targets.disk: device /dev/disk/by-id/nvme-XYZ would be erased"),
        (_set("targets.disk.device", "sdb"), "my.yaml: targets.disk.device"),
        (
            lambda c: c["targets"]["wb"].update(device="/dev/disk/by-id/nvme-XYZ", format=True),
            "my.yaml: targets.disk: device /dev/disk/by-id/nvme-XYZ is also target wb's",
        ),
        (_set("targets.host.path", None), "my.yaml: targets.host.path"),
        (
            _set("targets.nocow.mount_options", ["nodatacow", "compress=zstd"]),
            "my.yaml: targets.nocow: btrfs nodatacow",
        ),
        (_set("targets.a.mount_options", ["nodatacow"]), "my.yaml: targets.a: mount option 'nodatacow' is a btrfs"),
        (_set("targets.ram.device", "/dev/sdq"), "my.yaml: targets.ram: `device` needs fs"),
    ],
)
def test_new_sections_errors_name_the_key(mutate, where):
    cfg = full()
    mutate(cfg)
    with pytest.raises(LabError) as err:
        validate(cfg, "my.yaml")
    assert where in str(err.value)


def test_blkio_needs_block_device_targets():
    cfg = full()
    del cfg["targets"]["ram"]
    cfg["resources"]["blkio"] = {"read_bps": "50MB", "write_iops": 2000}
    validate(cfg)  # existing targets are checked at run time (their mount may be on a block device)
    cfg["targets"]["ram"] = {"fs": "tmpfs"}
    with pytest.raises(LabError, match="resources.blkio: target ram \\(tmpfs\\) has no block device"):
        validate(cfg)


# ----------------------------------------------------------------------------- workloads of every tool


@pytest.mark.parametrize(
    "workload, message",
    [
        ({"tool": "pgbench", "clients": [1]}, "pgbench needs `builtin` or `scripts`"),
        ({"tool": "sysbench", "clients": [1]}, "sysbench needs `test`"),
        ({"tool": "fsmicro"}, "fsmicro needs `op`"),
        ({"tool": "fsmicro", "op": "statfs", "clients": [4]}, "clients must be [1]"),
        (
            {"tool": "sysbench", "test": "oltp_read_only", "builtin": "tpcb-like"},
            "'builtin' (pgbench) not valid for tool sysbench",
        ),
        ({"tool": "pgbench", "builtin": "tpcb-like", "op": "statfs"}, "'op' (fsmicro) not valid for tool pgbench"),
        ({"tool": "pgbench", "builtin": "tpcb-like", "sampling_rate": 0.1}, "sampling_rate needs log: transactions"),
        ({"tool": "fsmicro", "op": "statfs", "files": 10}, "statfs does not take files"),
    ],
)
def test_workload_keys_belong_to_their_tool(workload, message):
    cfg = base()
    cfg["workloads"] = {"w": workload}
    with pytest.raises(LabError) as err:
        validate(cfg, "my.yaml")
    assert "my.yaml: workloads.w" in str(err.value) and message in str(err.value)


def test_target_and_workload_overrides_merge_over_the_study():
    cfg = base()
    cfg["postgres"] = {"settings": {"shared_buffers": "64MB", "fsync": "on"}}
    cfg["dataset"] = {"scale": 5, "sysbench": {"tables": 2, "table_size": 1000}}
    cfg["targets"]["b"]["postgres_settings"] = {"fsync": "off"}
    cfg["targets"]["b"]["dataset"] = {"sysbench": {"fillfactor": 70}}
    cfg["workloads"]["w"]["postgres_settings"] = {"synchronous_commit": "off"}
    cfg["os"] = {"vm_dirty_bytes": "1GB"}
    cfg["workloads"]["w"]["os"] = {"vm_dirty_background_bytes": "32MB"}
    c = Study.from_dict(validate(cfg))
    assert c.pg_settings_for("a", "w") == {"shared_buffers": "64MB", "fsync": "on", "synchronous_commit": "off"}
    assert c.pg_settings_for("b", "w") == {
        "shared_buffers": "64MB",
        "fsync": "off",
        "synchronous_commit": "off",
    }
    assert c.dataset_for("b").sysbench.to_dict() == {"tables": 2, "table_size": 1000, "fillfactor": 70}
    assert c.dataset_for("a").sysbench.to_dict() == {"tables": 2, "table_size": 1000}
    os_w = c.os_for("w")
    assert os_w.vm_dirty_bytes == "1GB" and os_w.vm_dirty_background_bytes == "32MB"
    # the run's view carries the same: PostgreSQL settings of the run, its data set and OS settings
    view = c.run_view(c.runs[1])
    assert view.spec.target == "b" and view.postgres.settings == c.pg_settings_for("b", "w")
    assert view.dataset.sysbench.fillfactor == 70 and view.os == os_w


@pytest.mark.parametrize("value", ["x'; DROP TABLE t", "1\ninclude '/etc/passwd'", "$(reboot)", 'a"b', "on;off"])
def test_postgres_setting_values_cannot_escape_the_config_file(value):
    cfg = base()
    cfg["postgres"] = {"settings": {"work_mem": value}}
    with pytest.raises(LabError) as err:
        validate(cfg, "my.yaml")
    assert "my.yaml: postgres.settings.work_mem" in str(err.value)


def test_pgbench_scripts_resolve_next_to_the_config(tmp_path):
    (tmp_path / "my.sql").write_text("SELECT 1;\n")
    cfg = base()
    cfg["workloads"]["w"] = {"tool": "pgbench", "scripts": [{"file": "my.sql", "weight": 3}], "clients": [1]}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(cfg))
    loaded = load(path)
    assert loaded["workloads"]["w"]["scripts"] == [{"file": str(tmp_path / "my.sql"), "weight": 3}]


def test_the_schema_is_parsed_once_per_version_of_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema is cached (every command validates a config) and read with libyaml where PyYAML has it: the
    same document as PyYAML's pure-Python loader gives, and an edited schema file is read again."""
    text = checks.SCHEMA_PATH.read_text()
    schema, _ = checks.schema()
    assert schema == yaml.load(text, Loader=yaml.SafeLoader)
    raw = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    raw["run"]["duration_s"] = 30
    copy = tmp_path / "config.schema.yaml"
    copy.write_text(text)
    monkeypatch.setattr(checks, "SCHEMA_PATH", copy)
    assert validate(raw)["run"]["duration_s"] == 30
    edited = text.replace(
        "duration_s: {type: integer, minimum: 1, default: 20}", "duration_s: {type: integer, minimum: 60, default: 60}"
    )
    assert edited != text
    copy.write_text(edited)
    with pytest.raises(LabError, match="duration_s"):
        validate(raw)


def test_yaml_is_read_as_pyyamls_pure_python_loader_reads_it(tmp_path: Path) -> None:
    """The lab reads YAML with libyaml where PyYAML has it (every ingest reads data/external's manifest): every
    YAML file of the repository gives the document PyYAML's pure-Python safe loader gives, and a syntax error
    in a study config still names its file and line."""
    assert yaml_text.LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = sorted(
        p
        for p in REPO.rglob("*.y*ml")
        if not {".venv", "build", ".snakemake", "node_modules"} & set(p.relative_to(REPO).parts)
    )
    assert len(files) > 20
    for p in files:
        text = p.read_text()
        assert yaml_text.safe_load(text) == yaml.load(text, Loader=yaml.SafeLoader), p
    bad = tmp_path / "bad.yaml"
    bad.write_text("study: x\ntargets:\n  ext4: {fs: ext4\nworkloads: {}\n")
    with pytest.raises(LabError, match=rf"^{bad}:4: not valid YAML"):
        load(bad)
