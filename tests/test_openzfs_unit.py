"""The OpenZFS branch of pgfslab.host.zfs.pools, without OpenZFS: this machine has no zfs kernel module (nothing
under /lib/modules), so only zfs-fuse ever ran here (tests/test_zfs.py). What can be checked without the
module is checked here with the `zfs`/`zpool` calls replaced: which implementation is chosen, what the
lab parses from OpenZFS's output, and which commands it would run.

The OpenZFS texts below are not recordings from a machine: they are built from the format strings of
OpenZFS's own source (openzfs/zfs at be7657e3, 2026-08-21): the property table `zfs get` prints with its
usage (cmd/zfs/zfs_main.c, usage() and usage_prop_cb(): "\\t%-21s %s  %s   %s" header, "\\t%-22s " name,
"YES    "/" NO    " edit, "  YES   "/"   NO   " inherit, then the values of module/zcommon/zfs_prop.c),
`zfs get -p compressratio` ("%llu.%02llu", no trailing x, lib/libzfs/libzfs_dataset.c) and `zfs version`
(ZFS_META_ALIAS, then "zfs-kmod-<version>", lib/libzfs/libzfs_util.c). Untested until a machine with the
module runs tests/test_zfs.py: pool creation, export/import, snapshots and the power cut on OpenZFS.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pgfslab.errors import LabError
from pgfslab.host.zfs import commands as zfs_commands
from pgfslab.host.zfs import daemon as zfs_daemon
from pgfslab.host.zfs import pools as zfs
from pgfslab.host.zfs import properties as zfs_properties


def _prop(name: str, editable: bool, inherit: bool, values: str) -> str:
    """One line of usage_prop_cb() (cmd/zfs/zfs_main.c)."""
    return (
        f"\t{name:<22} "
        + ("YES    " if editable else " NO    ")
        + ("  YES   " if inherit else "   NO   ")
        + values
        + "\n"
    )


OPENZFS_GET_USAGE = (
    "missing property argument\n"
    "usage:\n"
    '\tget [-rHp] [-d max] [-o "all" | field[,...]]\n'
    "\n"
    "The following properties are supported:\n"
    + f"\n\t{'PROPERTY':<21} EDIT  INHERIT   VALUES\n\n"
    + _prop("available", False, False, "<size>")
    + _prop("compressratio", False, False, "<1.00x or higher if compressed>")
    + _prop("logicalused", False, False, "<size>")
    + _prop("used", False, False, "<size>")
    + _prop("atime", True, True, "on | off")
    + _prop(
        "compression",
        True,
        True,
        "on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | "
        "zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]",
    )
    + _prop("recordsize", True, True, "512 to 16M, power of 2")
    + _prop("sync", True, True, "standard | always | disabled")
    + f"\t{'userused@...':<22} "
    + " NO       NO   <size>\n"
    + "\nSizes are specified in bytes with standard units such as K, M, G, etc.\n"
    + "\nUser-defined properties can be specified by using a name containing a colon (:).\n"
)


def _done(cmd: list[str], rc: int = 0, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(cmd, rc, out, err)


@pytest.fixture
def openzfs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """pgfslab.host.zfs.pools as on a machine with OpenZFS: the implementation is 'openzfs', `zfs get` prints
    OpenZFS's property table; every zfs/zpool call is recorded (and answered by the test)."""
    calls: list[list[str]] = []
    monkeypatch.setattr(zfs_commands, "implementation", lambda: "openzfs")
    monkeypatch.setattr(zfs_properties, "_TABLES", {})

    def fake_zfs(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        calls.append(["zfs", *args])
        if args == ("get",):
            return _done(["zfs", "get"], 2, "", OPENZFS_GET_USAGE)
        return _done(["zfs", *args])

    def fake_zpool(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        calls.append(["zpool", *args])
        return _done(["zpool", *args])

    monkeypatch.setattr(zfs_commands, "zfs", fake_zfs)
    monkeypatch.setattr(zfs_commands, "zpool", fake_zpool)
    return calls


def test_kernel_module_detection(tmp_path: Path) -> None:
    fs = tmp_path / "filesystems"
    fs.write_text("nodev\tsysfs\n\text4\n\txfs\nnodev\tzfs\n")
    assert zfs_commands._kernel_has_zfs(fs, tmp_path / "no-module") == (True, "/proc/filesystems lists zfs")
    fs.write_text("nodev\tsysfs\n\text4\nfuseblk\n")
    (tmp_path / "module").mkdir()
    assert zfs_commands._kernel_has_zfs(fs, tmp_path / "module") == (True, "/sys/module/zfs exists")


def test_openzfs_is_chosen_when_the_module_and_its_userland_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zfs_commands, "_kernel_has_zfs", lambda: (True, "/proc/filesystems lists zfs"))
    monkeypatch.setattr(zfs_commands.shutil, "which", lambda name, path=None: f"/usr/sbin/{name}")
    ran: list[list[str]] = []

    def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        ran.append(cmd)
        return _done(cmd, 0, "zfs-2.2.2-0ubuntu9\nzfs-kmod-2.2.2-0ubuntu9\n")

    monkeypatch.setattr(zfs_commands.subprocess, "run", run)
    assert zfs_commands.implementation() == "openzfs"
    assert ran == [["/usr/sbin/zfs", "version"]]
    assert zfs_commands.version("openzfs") == "zfs-2.2.2-0ubuntu9"  # the userland's line (ZFS_META_ALIAS)


def test_module_without_userland_and_without_zfs_fuse_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zfs_commands, "_kernel_has_zfs", lambda: (True, "/sys/module/zfs exists"))
    monkeypatch.setattr(zfs_commands.shutil, "which", lambda name, path=None: None)
    with pytest.raises(LabError, match=r"/sys/module/zfs exists but the OpenZFS userland is missing.*zfsutils-linux"):
        zfs_commands.implementation()


def test_openzfs_service_starts_no_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zfs_commands, "implementation", lambda: "openzfs")

    def no_popen(*a: Any, **kw: Any) -> None:
        raise AssertionError("OpenZFS needs no daemon")

    monkeypatch.setattr(zfs_commands.subprocess, "Popen", no_popen)
    with zfs_daemon.service() as svc:
        assert svc.implementation == "openzfs" and svc.started_pid is None and not svc.owns_daemon


def test_openzfs_property_table(openzfs: list[list[str]]) -> None:
    table = zfs_properties.property_table()
    assert set(table) == {
        "available",
        "compressratio",
        "logicalused",
        "used",
        "atime",
        "compression",
        "recordsize",
        "sync",
        "userused@...",
    }
    assert table["compression"].editable and table["compression"].inherit
    assert not table["logicalused"].editable and table["recordsize"].values == "512 to 16M, power of 2"
    ok = zfs_properties.validate_properties(
        {"compression": "lz4", "recordsize": "1M", "sync": "disabled", "atime": False}
    )
    assert ok == {"compression": "lz4", "recordsize": "1M", "sync": "disabled", "atime": "off"}
    assert zfs_properties.validate_properties({"compression": "zstd-3"}) == {
        "compression": "zstd-3"
    }  # only zfs can tell
    with pytest.raises(LabError, match=r"recordsize='32M' is not allowed; allowed: 512 to 16M"):
        zfs_properties.validate_properties({"recordsize": "32M"})
    with pytest.raises(LabError, match=r"\(openzfs\): property 'logicalused' is read-only"):
        zfs_properties.validate_properties({"logicalused": "1"})
    with pytest.raises(LabError, match=r"unknown property 'dnodesize': needs OpenZFS"):  # not in this short table
        zfs_properties.validate_properties({"dnodesize": "auto"})


def test_openzfs_footprint_reads_logicalused_and_a_plain_ratio(
    openzfs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = "used\t41943040\ncompressratio\t2.50\nlogicalused\t104857600\navailable\t1000000\n"

    def fake_zfs(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        openzfs.append(["zfs", *args])
        if args == ("get",):
            return _done(["zfs", "get"], 2, "", OPENZFS_GET_USAGE)
        return _done(["zfs", *args], 0, answer)

    monkeypatch.setattr(zfs_commands, "zfs", fake_zfs)
    fp = zfs.footprint("pgfslab-s-t/data")
    assert openzfs[-1] == [
        "zfs",
        "get",
        "-Hp",
        "-o",
        "property,value",
        "used,compressratio,logicalused,available",
        "pgfslab-s-t/data",
    ]
    assert (fp["used"], fp["logicalused"], fp["compressratio"]) == (41943040, 104857600, 2.5)
    assert fp["implementation"] == "openzfs" and "logicalused_est" not in fp
    # the properties this short table lacks are said, not guessed
    assert fp["unsupported"] == ["referenced", "logicalreferenced", "usedbydataset", "usedbysnapshots"]


def test_pool_commands(openzfs: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands create/export/import/destroy would run (the same for both implementations)."""
    monkeypatch.setattr(zfs, "_imported_pools", lambda: [])
    monkeypatch.setattr(zfs, "_check_device", lambda device, allow: None)
    monkeypatch.setattr(zfs, "get_properties", lambda ds, names: {n: "x" for n in names})
    monkeypatch.setattr(zfs.time, "time", lambda: 1795420845.7)
    pool = zfs.create_pool("pgfslab-s-t", "/dev/loop7", "/mnt/t", {"recordsize": "8k", "compression": "lz4"})
    creates = [c for c in openzfs if c[1] == "create"]
    assert creates[0] == [
        "zpool",
        "create",
        "-f",
        "-o",
        "cachefile=none",
        "-O",
        "pgfslab:created-by=pgfslab",
        "-O",
        "pgfslab:created-at=1795420845",
        "-m",
        "/mnt/t",
        "pgfslab-s-t",
        "/dev/loop7",
    ]
    assert creates[1] == ["zfs", "create", "-o", "recordsize=8k", "-o", "compression=lz4", "pgfslab-s-t/pgdata"]
    assert pool.implementation == "openzfs" and pool.dataset == "pgfslab-s-t/pgdata"
    zfs.OWNED.discard("pgfslab-s-t")
