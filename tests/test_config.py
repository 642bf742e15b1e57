from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from pipeline import config
from pipeline.errors import LabError

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
        cfg = config.load(path)
        assert config.plan(cfg), path


def test_defaults_are_filled():
    cfg = config.validate(base())
    assert cfg["run"]["duration_s"] == 20
    assert cfg["targets"]["a"]["size_gb"] == 4
    assert cfg["targets"]["a"]["direct_io"] is True
    assert cfg["postgres"]["user"] == "postgres"


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c["targets"]["a"].update(fs="zfs"), "targets.a.fs"),
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
        config.validate(cfg, "my.yaml")
    assert f"my.yaml: {key}" in str(err.value)


def test_repeats_for_unknown_client_count_rejected():
    cfg = base()
    cfg["workloads"]["w"]["repeats"] = {"8": 3}
    with pytest.raises(LabError, match="client counts \\[8\\]"):
        config.validate(cfg)


def test_yaml_error_names_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("study: x\ntargets:\n  a: {fs: ext4\n")
    with pytest.raises(LabError, match=r"s.yaml:\d+: not valid YAML"):
        config.load(p)


def test_plan_is_interleaved_and_counts_repeats():
    cfg = config.validate(base())
    runs = config.plan(cfg)
    counts = Counter((r.workload, r.clients, r.target) for r in runs)
    assert counts[("w", 1, "a")] == 2 and counts[("w", 4, "c")] == 5
    assert len({r.run_id for r in runs}) == len(runs)
    # A B C A B C: within every cell, targets alternate and repeat r of all targets precedes r+1
    cell4 = [r for r in runs if r.clients == 4]
    assert [r.target for r in cell4[:6]] == ["a", "b", "c", "a", "b", "c"]
    for r in runs:
        later = [s for s in runs if s.plan_index > r.plan_index and s.clients == r.clients]
        assert all(s.repeat >= r.repeat for s in later)
    assert [r.plan_index for r in runs] == list(range(len(runs)))


def test_default_study_meets_its_brief():
    cfg = config.load(REPO / "config" / "default.yaml")
    fss = {t["fs"] for t in cfg["targets"].values()}
    assert fss == {"ext4", "xfs", "btrfs"}
    assert any("compress=zstd" in t.get("mount_options", []) for t in cfg["targets"].values())
    runs = config.plan(cfg)
    assert max(Counter((r.target, r.workload, r.clients) for r in runs).values()) >= 5
    assert 20 <= cfg["run"]["duration_s"] <= 30
    # budget: run time alone must stay well under 15 minutes on the 2-core machine
    assert len(runs) * (cfg["run"]["duration_s"] + 3) < 15 * 60
