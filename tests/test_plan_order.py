"""Issue 30's study keys on the plan and the config checks: target order rotated per round (run.order),
burn-in rounds (run.burn_in_rounds), the cache state (run.cache), the A/A twin (targets.<t>.aa_twin_of);
and that a study without the new keys keeps its run ids and fingerprints."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pgfslab.config import order
from pgfslab.config.study import Study, load_study, validate
from pgfslab.errors import LabError
from pgfslab.run import record

REPO = Path(__file__).resolve().parent.parent


def base(**run: Any) -> dict[str, Any]:
    return {
        "study": "t",
        "targets": {"a": {"fs": "ext4"}, "b": {"fs": "xfs"}, "c": {"fs": "btrfs"}},
        "workloads": {
            "w": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [4], "repeats": 3},
            "f": {"tool": "fsmicro", "op": "create_fsync", "repeats": 2},
        },
        **({"run": run} if run else {}),
    }


def study(cfg: dict[str, Any]) -> Study:
    return Study.from_dict(validate(cfg, "s.yaml"))


def test_the_default_order_is_a_williams_design_balancing_positions_and_predecessors() -> None:
    """Four targets: the rows a b d c / b c a d / c d b a / d a c b (the first row 0, 1, n-1, 2, each next one
    shifted by one), worked by hand. Over the four rounds each target runs in each position once and follows
    each other target once; a rotation makes d follow c in every round."""
    cfg = base()
    cfg["targets"]["d"] = {"fs": "ext4"}
    cfg["workloads"]["w"]["repeats"] = 4
    runs = [r for r in study(cfg).runs if r.workload == "w"]
    rounds = [[r.target for r in runs if r.repeat == k] for k in (1, 2, 3, 4)]
    assert rounds == [list("abdc"), list("bcad"), list("cdba"), list("dacb")]
    assert Counter((r.target, r.position) for r in runs) == {(t, p): 1 for t in "abcd" for p in range(4)}
    follows = Counter((x, y) for row in rounds for x, y in zip(row, row[1:]))
    assert follows == {(x, y): 1 for x in "abcd" for y in "abcd" if x != y}
    rotated = [r for r in study({**cfg, "run": {"order": "rotate"}}).runs if r.workload == "w"]
    rot_rounds = [[r.target for r in rotated if r.repeat == k] for k in (1, 2, 3, 4)]
    assert Counter((x, y) for row in rot_rounds for x, y in zip(row, row[1:]))[("c", "d")] == 3


def test_an_odd_number_of_targets_needs_the_mirrored_rows() -> None:
    # three targets: 0 1 2, 1 2 0, 2 0 1 and the same reversed; each ordered pair follows twice in six rounds
    rows = order.williams_rows(3)
    assert rows == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0], [0, 2, 1], [1, 0, 2]]
    follows = Counter((x, y) for row in rows for x, y in zip(row, row[1:]))
    assert follows == {(x, y): 2 for x in range(3) for y in range(3) if x != y}
    assert order.cycle_length(3, "williams") == 6 and order.cycle_length(4, "williams") == 4


def test_a_run_records_the_run_that_ended_last_before_it(tmp_path: Path) -> None:
    from pgfslab.records.run_record import Predecessor

    def put(rid: str, target: str, ended: str | None, status: str = "ok") -> None:
        (tmp_path / rid).mkdir()
        rec = {"run_id": rid, "target": target, "status": status, "ended_at": ended}
        (tmp_path / rid / "run.json").write_text(json.dumps(rec))

    assert record.predecessor(tmp_path, "x") is None
    put("a.w.1", "a", "2026-11-28T10:00:00.000+00:00")
    put("b.w.1", "b", "2026-11-28T10:01:00.000+00:00")
    put("c.w.1", "c", "2026-11-28T10:02:00.000+00:00", status="skipped")  # nothing ran
    put("d.w.1", "d", None)  # a run.json without an end: never finished
    assert record.predecessor(tmp_path, "c.w.2") == Predecessor(run_id="b.w.1", target="b")
    assert record.predecessor(tmp_path, "b.w.1") == Predecessor(run_id="a.w.1", target="a")  # not itself


def test_round_r_starts_at_target_r_mod_n_and_every_position_is_taken_equally() -> None:
    runs = [r for r in study(base(order="rotate")).runs if r.workload == "w"]
    rounds = [[r.target for r in runs if r.repeat == k] for k in (1, 2, 3)]
    assert rounds == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert [r.position for r in runs] == [0, 1, 2] * 3
    # over three rounds of three targets each target ran first, second and third once
    assert Counter((r.target, r.position) for r in runs) == {(t, p): 1 for t in "abc" for p in range(3)}


def test_fixed_order_is_the_configs_in_every_round() -> None:
    runs = [r for r in study(base(order="fixed")).runs if r.workload == "w"]
    assert [r.target for r in runs] == ["a", "b", "c"] * 3


def test_burn_in_rounds_come_first_are_marked_and_skip_fsmicro() -> None:
    plan = study(base(burn_in_rounds=2)).runs
    burn = [r for r in plan if r.burn_in]
    assert {r.workload for r in burn} == {"w"}  # fs micro-benchmarks have no caches to settle
    assert [r.run_id for r in burn[:3]] == ["a.w.c4.b1", "b.w.c4.b1", "c.w.c4.b1"]
    assert {r.run_id.rsplit(".", 1)[1] for r in burn} == {"b1", "b2"}
    assert {r.repeat for r in burn} == {-1, 0}  # rounds sort in time: burn-in before repeat 1
    assert max(r.plan_index for r in burn) < min(r.plan_index for r in plan if not r.burn_in)
    counted = [r for r in plan if not r.burn_in and r.workload == "w"]
    assert sorted({r.repeat for r in counted}) == [1, 2, 3] and len(counted) == 9
    # the burn-in rounds take part in the order: the first counted round is the third row (c first)
    assert counted[0].target == "c"


def test_new_keys_absent_keep_run_ids_and_fingerprints() -> None:
    """The plan's order and burn-in never enter a run's fingerprint; absent keys add nothing to it."""
    old = study(base())
    ids = {r.run_id for r in old.runs}
    assert all(r.run_id.rsplit(".", 1)[1].startswith("r") for r in old.runs)
    for changed in (base(order="fixed"), base(burn_in_rounds=1)):
        new = study(changed)
        for r in new.runs:
            if not r.burn_in:
                assert r.run_id in ids
                assert new.run_fingerprint(r) == old.run_fingerprint(old.find_run(r.run_id))
    fp = json.loads(old.run_fingerprint(old.runs[0]))
    assert not {"cache", "order", "burn_in_rounds"} & set(fp["run"])
    assert "aa_twin_of" not in fp["target"]
    # the cache state is what a run measures: it does change the fingerprint
    warm = study(base(cache="warm"))
    assert warm.run_fingerprint(warm.runs[0]) != old.run_fingerprint(old.runs[0])


def test_shipped_studies_fingerprints_do_not_see_the_new_keys() -> None:
    """Every shipped config without the keys: its run fingerprints hold none of them."""
    for path in sorted((REPO / "config").glob("*.yaml")):
        s = load_study(path)
        if s.run.cache is None:
            assert "cache" not in json.loads(s.run_fingerprint(s.runs[0]))["run"], path


def test_cache_key_must_agree_with_drop_caches_and_prewarm() -> None:
    with pytest.raises(LabError, match="s.yaml: run.cache: warm and run.prewarm: false disagree"):
        study(base(cache="warm", prewarm=False))
    with pytest.raises(LabError, match="s.yaml: run.cache: cold and run.prewarm: true disagree"):
        study(base(cache="cold", prewarm=True))
    with pytest.raises(LabError, match="run.drop_caches .* false contradicts"):
        study(base(cache="cold", drop_caches=False))
    assert study(base(cache="warm", prewarm=True)).run.cache == "warm"
    with pytest.raises(LabError, match="run.cache"):
        study(base(cache="tepid"))


def twin(**spec: Any) -> dict[str, Any]:
    cfg = base()
    cfg["targets"]["a-aa"] = {"fs": "ext4", "aa_twin_of": "a", **spec}
    return cfg


def test_aa_twin_is_checked_against_its_baseline() -> None:
    s = study(twin())
    assert s.targets["a-aa"].aa_twin_of == "a"
    assert {r.target for r in s.runs} == {"a", "b", "c", "a-aa"}  # interleaved like every target
    with pytest.raises(LabError, match=r"s.yaml: targets.a-aa.aa_twin_of: .*differ in mount_options"):
        study(twin(mount_options=["noatime"]))
    with pytest.raises(LabError, match=r"differ in fs \('xfs' vs 'ext4'\)"):
        cfg = twin()
        cfg["targets"]["a-aa"]["fs"] = "xfs"
        study(cfg)
    cfg = twin()
    cfg["targets"]["a-aa"]["aa_twin_of"] = "z"
    with pytest.raises(LabError, match=r"targets.a-aa.aa_twin_of: 'z' is not a target \(targets: a, b, c, a-aa\)"):
        study(cfg)
    cfg = twin()
    cfg["targets"]["a-aa"]["aa_twin_of"] = "a-aa"
    with pytest.raises(LabError, match="its own A/A twin"):
        study(cfg)
    cfg = twin()
    cfg["targets"]["a-aa2"] = {"fs": "ext4", "aa_twin_of": "a-aa"}
    with pytest.raises(LabError, match="a-aa is itself an A/A twin"):
        study(cfg)
    # a default written out is the same spec as the default left out
    assert study(twin(size_gb=4)).targets["a-aa"].size_gb == 4


def test_shipped_twins() -> None:
    for name in ("default", "fs-compare"):
        s = load_study(REPO / "config" / f"{name}.yaml")
        assert {t: spec.aa_twin_of for t, spec in s.targets.items() if spec.aa_twin_of} == {"ext4-aa": "ext4"}


def test_a_run_row_carries_its_predecessor_and_the_host_probe() -> None:
    from pgfslab.ingest.run_rows import run_row
    from pgfslab.records.run_record import parse

    rec = {"run_id": "x.w.c4.r2", "study": "t", "target": "x", "status": "ok", "predecessor": {"run_id": "a.w.c4.r2", "target": "a"},
           "host_probe": {"work": "sha256", "wall_s": 0.2, "mib_per_s": 2560.0}}  # fmt: skip
    row = run_row(parse(rec)[0])
    assert (row["predecessor"], row["host_speed"]) == ("a", 2560.0)
    old = run_row(parse({"run_id": "x.w.c4.r1", "study": "t", "target": "x", "status": "ok"})[0])  # from before either
    assert (old["predecessor"], old["host_speed"]) == (None, None)


def test_the_host_probe_does_its_fixed_work_on_every_cpu() -> None:
    import os

    from pgfslab.host import cpu_probe

    out = cpu_probe.measure()
    cpus = os.cpu_count() or 1
    assert out["work"].endswith(f"on {cpus} threads") and out["wall_s"] > 0
    assert out["mib_per_s"] * out["wall_s"] == pytest.approx(cpus * cpu_probe.ROUNDS * cpu_probe.BUFFER_MIB)


def test_a_runs_length_is_its_own_and_a_skipped_round_is_no_commit() -> None:
    """btrfs-compression's select-only runs last 20 s in a study of 15 s runs: run.json's top-level duration_s
    is the run's own; `run.duration_s` is the study default (all an older run.json has)."""
    from pgfslab.ingest.run_rows import run_row
    from pgfslab.paper.context import lab_commit
    from pgfslab.records.run_record import parse

    rec = {"run_id": "x.ro.c4.r1", "study": "t", "target": "x", "status": "ok", "duration_s": 20,
           "run": {"duration_s": 15}, "schema_version": 1}  # fmt: skip
    assert run_row(parse(rec)[0])["duration_s"] == 20
    assert run_row(parse({k: v for k, v in rec.items() if k != "duration_s"})[0])["duration_s"] == 15
    ran = {"status": "ok", "git": {"commit": "2ba1787aed79ffff", "dirty": False}}
    skipped = {"status": "skipped"}  # a round the precision target skipped: no code ran, no commit
    assert lab_commit([parse(r)[0] for r in (ran, ran, skipped)]) == "2ba1787aed79"
    assert lab_commit([parse(ran)[0], parse({"status": "ok"})[0]]) == "2ba1787aed79, unknown — 2 commits over the runs"
