"""Several hosts' raw folders of one study -> one database with a `host` column (pgfslab.ingest.merge).

The folders here are the recorded fs-micro study (tests/data/studies/fs-micro) placed twice under two
host keys: this checks the merge's bookkeeping (host labels, run ids, source names, refusals), not a
claim that two machines measured anything. Expected values are counted from the folders themselves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
import yaml
from conftest import DATA, REPO

from pgfslab.config import host_folders
from pgfslab.config import study as labcfg
from pgfslab.errors import LabError
from pgfslab.ingest import merge
from pgfslab.ingest.study import ingest_study

RECORDED = DATA / "studies" / "fs-micro"
TWO = DATA / "studies" / "two-hosts"


def _host_folder(root: Path, host: str, **changes: object) -> Path:
    dest = root / "data" / "raw" / "fs-micro" / host
    shutil.copytree(RECORDED, dest)
    cfg = yaml.safe_load((dest / "study.yaml").read_text())
    cfg["host"] = host
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = cfg
        for key in path:
            node = node[key]
        node[last] = value
    (dest / "study.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def _run_ids(folder: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["run_id"] for p in folder.glob("*/run.json"))


def test_the_same_folder_under_two_keys_is_refused(tmp_path: Path) -> None:
    """Two measurements never write identical logs; the ingest keys rows by a file's SHA-256, so a copy
    under a second host key would silently replace the first host's rows: refused instead."""
    a = _host_folder(tmp_path, "a")
    _host_folder(tmp_path, "b")
    with pytest.raises(LabError, match="byte for byte the same"):
        merge.merge_study(host_folders.study_folders(a.parent), tmp_path / "m.duckdb", progress=False, external=None)
    assert not (tmp_path / "m.duckdb").exists()


def test_refuses_folders_that_are_not_one_study(tmp_path: Path) -> None:
    _host_folder(tmp_path, "a")
    _host_folder(tmp_path, "b", run__duration_s=99, dataset__scale=7)
    with pytest.raises(LabError) as err:
        host_folders.study_folders(tmp_path / "data" / "raw" / "fs-micro")
    assert "dataset.scale" in str(err.value) and "run.duration_s" in str(err.value)
    assert "host" not in str(err.value).split(" in ")[-1]


def test_a_key_the_lab_gained_since_at_its_default_is_no_difference(tmp_path: Path) -> None:
    """A folder recorded before the lab had a key (here the /proc/stat sampler's rate) is the same study as
    one recorded after, while the other has that key at its default; at another value it differs."""
    _host_folder(tmp_path, "a", sampler__stat_hz=1)  # recorded with the key, at its default
    old = _host_folder(tmp_path, "b")
    cfg = yaml.safe_load((old / "study.yaml").read_text())
    cfg["sampler"].pop("stat_hz", None)
    (old / "study.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert [f.host for f in host_folders.study_folders(tmp_path / "data" / "raw" / "fs-micro")] == ["a", "b"]
    cfg["sampler"]["stat_hz"] = 5
    (old / "study.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    with pytest.raises(LabError, match=r"differs from .* in sampler\.stat_hz"):
        host_folders.study_folders(tmp_path / "data" / "raw" / "fs-micro")


def test_host_keys_must_be_distinct(tmp_path: Path) -> None:
    one = tmp_path / "one" / "fs-micro"
    two = tmp_path / "two" / "fs-micro"
    shutil.copytree(RECORDED, one)
    shutil.copytree(RECORDED, two)
    # two machines' single-host folders: keys from their recorded hostname collide, so they must be given
    with pytest.raises(LabError, match="names two folders"):
        host_folders.check_one_study(host_folders.parse_folder_args([str(one), str(two)]))
    folders = host_folders.parse_folder_args([f"{one}=x1", f"{two}=x2"])
    assert [f.host for f in folders] == ["x1", "x2"]


def test_merge_command_and_ingest_study_merge_host_folders(tmp_path: Path) -> None:
    _host_folder(tmp_path, "a")
    _host_folder(tmp_path, "b", title="another title")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pgfslab",
            "ingest-study",
            "--raw",
            "data/raw/fs-micro",
            "--db",
            "s.duckdb",
            "--no-published",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "differs" in res.stderr and "title" in res.stderr


def test_two_recorded_hosts_in_one_database(tmp_path: Path) -> None:
    """The recorded two-host study (tests/data/studies/two-hosts: one tiny study run as hosts h1 and h2)."""
    res = subprocess.run(
        [sys.executable, "-m", "pgfslab", "merge", "--db", str(tmp_path / "m.duckdb"), "--no-published", str(TWO)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    with duckdb.connect(str(tmp_path / "m.duckdb"), read_only=True) as con:
        runs = con.execute("SELECT host, run_id FROM runs ORDER BY host, run_id").fetchall()
        expected = [(h, r) for h in ("h1", "h2") for r in _run_ids(TWO / h)]
        assert runs == expected and all(r.endswith("@" + h) for h, r in runs)
        targets = con.execute("SELECT host, target FROM targets ORDER BY ALL").fetchall()
        assert targets == [(h, p.name) for h in ("h1", "h2") for p in sorted((TWO / h / "_setup").iterdir())]
        hosts = con.execute("SELECT host, runs, hostname FROM hosts ORDER BY host").fetchall()
        for h, n, hostname in hosts:
            assert n == len(_run_ids(TWO / h))
            assert hostname == json.loads((TWO / h / "host.json").read_text())["machine"]["hostname"]
        # every log of every run is in, under its host's name
        logs = {
            f"two-hosts/{p.relative_to(TWO)}"
            for h in ("h1", "h2")
            for p in (TWO / h).glob("*@*/*")
            if p.name in ("pgbench.stdout", "meminfo.log")
        }
        names = {s for (s,) in con.execute("SELECT source_file FROM files WHERE origin = 'local'").fetchall()}
        assert logs <= names
        tps = dict(con.execute("SELECT run_id, tps FROM pgbench_summary").fetchall())
        for h, r in runs:
            out = (TWO / h / r / "pgbench.stdout").read_text()
            line = next(ln for ln in out.splitlines() if ln.startswith("tps = "))
            assert tps[r] == pytest.approx(float(line.split()[2]), rel=1e-6)


def test_one_machine_study_has_no_host(tmp_path: Path) -> None:
    db = tmp_path / "one.duckdb"
    ingest_study(RECORDED, db, progress=False, external=None)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT DISTINCT host FROM runs").fetchall()
        ids = sorted(r for (r,) in con.execute("SELECT run_id FROM runs").fetchall())
    assert rows == [(None,)]
    assert ids == _run_ids(RECORDED)


def test_host_key_in_plan_and_paths() -> None:
    study = labcfg.load_study(REPO / "config" / "default.yaml")
    assert study.raw_dir == Path("data/raw/default")
    ids = [r.run_id for r in study.runs]
    hosted_cfg = labcfg.validate({**yaml.safe_load((REPO / "config" / "default.yaml").read_text()), "host": "n1"})
    hosted = labcfg.Study.from_dict(hosted_cfg)
    assert [r.run_id for r in hosted.runs] == [f"{i}@n1" for i in ids]
    assert hosted.raw_dir == Path("data/raw/default/n1")
    assert hosted.work_dir == study.work_dir / "n1"
    with pytest.raises(LabError, match="host"):
        labcfg.validate({**hosted_cfg, "host": "Bad Key"})


def test_hardware_that_differs_is_named() -> None:
    from pgfslab.paper.hosts import differing_hardware

    same = {"cpu_model": "AMD EPYC", "cpus": 2, "mem_total_kb": 1000, "devices": '[{"name": "vda"}]'}
    hosts = pl.DataFrame([{"host": "a", **same}, {"host": "b", **same}])
    assert differing_hardware(hosts) == []
    other = pl.DataFrame([{"host": "a", **same}, {"host": "b", **same, "cpus": 8, "devices": '[{"name": "nvme0n1"}]'}])
    assert differing_hardware(other) == ["cpus", "devices"]
