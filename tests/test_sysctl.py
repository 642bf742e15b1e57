"""vm.* settings applied for a block and restored on every exit path, against the real /proc/sys/vm.

The tests that change the machine's write-back settings or drop its caches skip while a benchmark is
running here (they would perturb its measurements); PGFS_LAB_ALLOW_HOST_CHANGES=1 runs them anyway.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import machine_is_quiet, needs_root

from pgfslab.config import vm_settings
from pgfslab.config.model import OsSettings
from pgfslab.errors import LabError
from pgfslab.host import sysctl

pytestmark = pytest.mark.machine_wide  # changes machine-wide settings: `make test` runs it apart, serially

VM = Path("/proc/sys/vm")
PAIR_KEYS = ["dirty_background_bytes", "dirty_background_ratio", "dirty_bytes", "dirty_ratio"]


def now() -> dict[str, int]:
    return {k: int((VM / k).read_text()) for k in PAIR_KEYS}


def require_quiet() -> None:
    ok, why = machine_is_quiet()
    if not ok:
        pytest.skip(why)


def test_parse_bytes():
    assert vm_settings.parse_bytes(33554432) == 32 * 2**20
    assert vm_settings.parse_bytes("32MB") == 32_000_000
    assert vm_settings.parse_bytes("32MiB") == vm_settings.parse_bytes("32M") == 32 * 2**20
    assert vm_settings.parse_bytes("1 GB") == 10**9
    for bad in ("-1", "1.5GB", "32 parsecs", True, -5):
        with pytest.raises(LabError, match="byte count"):
            vm_settings.parse_bytes(bad)


def test_settings_from_config():
    got = vm_settings.settings_from_config(
        OsSettings.from_dict(
            {
                "vm_dirty_background_bytes": "32MiB",
                "vm_dirty_bytes": 2**30,
                "vm": {"dirty_expire_centisecs": 500, "vm.swappiness": 10},
            }
        )
    )
    assert got == {
        "dirty_background_bytes": 32 * 2**20,
        "dirty_bytes": 2**30,
        "dirty_expire_centisecs": 500,
        "swappiness": 10,
    }
    with pytest.raises(LabError, match="cannot both be set"):
        vm_settings.settings_from_config(OsSettings.from_dict({"vm_dirty_bytes": "1GB", "vm": {"dirty_ratio": 20}}))
    with pytest.raises(LabError, match="given twice"):
        vm_settings.settings_from_config(OsSettings.from_dict({"vm_dirty_bytes": "1GB", "vm": {"dirty_bytes": 5}}))
    for bad in ("drop_caches", "kernel.panic", "../../kernel/panic", "nr_hugepages"):
        with pytest.raises(LabError, match="not a setting the lab changes"):
            vm_settings.settings_from_config(OsSettings.from_dict({"vm": {bad: 1}}))


def test_nothing_requested_touches_nothing():
    with sysctl.applied({}) as rec:
        assert rec == {"requested": {}, "before": {}, "after": {}}


@needs_root
def test_invalid_value_is_refused_and_nothing_changes():
    before = now()
    with pytest.raises(LabError, match=r"vm.dirty_bytes = 100: Invalid argument \(dirty_bytes must be at least"):
        with sysctl.applied({"dirty_bytes": 100}):
            pytest.fail("the block must not run")
    assert now() == before


@needs_root
def test_lock_refuses_a_second_change_at_once(tmp_path):
    fake = tmp_path / "vm"
    fake.mkdir()
    (fake / "swappiness").write_text("60\n")
    with sysctl.applied({"swappiness": 10}, root=fake) as rec:
        assert (fake / "swappiness").read_text().strip() == "10" and rec["before"] == {"swappiness": 60}
        with pytest.raises(LabError, match="another pgfs-lab process is changing vm"):
            with sysctl.applied({"swappiness": 20}, root=fake):
                pass
    assert (fake / "swappiness").read_text().strip() == "60"
    assert rec["restored"] == {"swappiness": 60} and rec["restore_errors"] == []


@needs_root
def test_bytes_applied_then_ratios_restored_after_an_error():
    require_quiet()
    before = now()
    assert before["dirty_ratio"] > 0 and before["dirty_bytes"] == 0, "machine not in ratio mode: test assumes it"
    want = {"dirty_background_bytes": 32 * 2**20, "dirty_bytes": 64 * 2**20, "dirty_expire_centisecs": 1234}
    expire_before = int((VM / "dirty_expire_centisecs").read_text())
    with pytest.raises(RuntimeError, match="inside"):
        with sysctl.applied(want) as rec:
            inside = now()
            assert inside["dirty_background_bytes"] == 32 * 2**20 and inside["dirty_bytes"] == 64 * 2**20
            assert inside["dirty_background_ratio"] == 0 and inside["dirty_ratio"] == 0  # the kernel zeroed them
            assert int((VM / "dirty_expire_centisecs").read_text()) == 1234
            assert rec["after"]["dirty_ratio"] == 0 and rec["before"] == {
                **before,
                "dirty_expire_centisecs": expire_before,
            }
            raise RuntimeError("inside")
    assert now() == before
    assert int((VM / "dirty_expire_centisecs").read_text()) == expire_before
    assert rec["restored"] == rec["before"] and rec["restore_errors"] == []


@needs_root
def test_bytes_mode_is_restored_as_bytes():
    """The machine itself in bytes mode (as after `sysctl vm.dirty_bytes=...`): a run that sets the ratio
    must give back the bytes value, not leave the ratio."""
    require_quiet()
    original = now()
    try:
        (VM / "dirty_bytes").write_text(str(200 * 2**20))
        machine = now()
        assert machine["dirty_ratio"] == 0
        with sysctl.applied({"dirty_ratio": 5}):
            assert now()["dirty_bytes"] == 0 and now()["dirty_ratio"] == 5
        assert now() == machine
    finally:
        (VM / "dirty_ratio").write_text(str(original["dirty_ratio"]))
        if original["dirty_bytes"]:
            (VM / "dirty_bytes").write_text(str(original["dirty_bytes"]))
    assert now() == original


@needs_root
def test_drop_caches_empties_the_page_cache(tmp_path):
    require_quiet()
    if subprocess.run(["which", "fincore"], capture_output=True).returncode != 0:
        pytest.skip("fincore (util-linux) not installed")
    f = tmp_path / "cached"
    f.write_bytes(os.urandom(8 * 2**20))
    f.read_bytes()

    def resident() -> int:
        out = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--output", "RES", str(f)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.split()[0])

    assert resident() == 8 * 2**20
    status = sysctl.drop_caches()
    assert status.startswith("dropped"), status
    assert resident() == 0
