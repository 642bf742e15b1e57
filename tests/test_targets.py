"""Targets for real: loop-mounted images with new mount options, tmpfs, existing mount points, and
user-named block devices (a loop device over an image this test creates stands in for the user's disk)."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import needs_root

from pgfslab.config import targets as target_spec
from pgfslab.config.model import TargetSpec
from pgfslab.errors import LabError
from pgfslab.host import blockdev, btrfs, mounts, safety
from pgfslab.host.targets import create as target_create
from pgfslab.host.targets import mount as target_mount
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release

OWNER = "nobody"


def spec(fs: str, **kw) -> TargetSpec:
    base = {"fs": fs, "size_gb": 0.5, "mkfs_options": [], "mount_options": [], "direct_io": True}
    base.update(kw)
    return TargetSpec.from_dict(base)


def _losetup_j(image: Path) -> str:
    return subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True).stdout.strip()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "work" / "study1"
    wd.mkdir(parents=True)
    return wd


@pytest.fixture
def released(workdir: Path):
    """Targets a test creates are released when it ends, whatever happens."""
    names: list[str] = []
    try:
        yield names
    finally:
        for n in names:
            target_release.release(workdir, n)


# --- spec validation (no root needed) ---------------------------------------------------------


@pytest.mark.parametrize(
    "bad, words",
    [
        (spec("btrfs", mount_options=["nodatacow", "compress=zstd"]), "nodatacow disables compression"),
        (spec("xfs", mount_options=["data=writeback"]), "ext4 mount option"),
        (spec("ext4", mount_options=["data=fast"]), "ordered, writeback or journal"),
        (spec("ext4", mount_options=["nodatacow"]), "btrfs mount option"),
        (spec("xfs", mount_options=["nobarrier"]), "4.19"),
        (spec("tmpfs", mount_options=["size=1G"]), "use size_gb"),
        (spec("ext4", device="/dev/sdz"), "format: true"),
        (spec("tmpfs", device="/dev/sdz", format=True), "device"),
        (spec("existing"), "needs `path`"),
        (spec("existing", path="/srv", mount_options=["noatime"]), "no device, mount_options"),
        (spec("ext4", path="/srv"), "only for `fs: existing`"),
        (spec("ext4", format=True), "only for a `device`"),
        (spec("ext4", mkfs_options=["-L", "mine"]), "must not set a label"),
    ],
)
def test_spec_problems_are_named(bad, words):
    with pytest.raises(LabError, match="target t: ") as err:
        target_spec.check_spec("t", bad)
    assert words in str(err.value)


@pytest.mark.parametrize(
    "good",
    [
        spec("ext4", mount_options=["data=writeback"]),
        spec("btrfs", mount_options=["nodatacow"]),
        spec("btrfs", mount_options=["compress=zstd"]),
        spec("tmpfs", mount_options=["huge=within_size"]),
        spec("xfs", device="/dev/sdz", format=True),
        spec("existing", path="/srv", mount_options=[], mkfs_options=[]),
    ],
)
def test_good_specs_pass(good):
    target_spec.check_spec("t", good)


def test_lab_labels_fit_each_file_system():
    assert blockdev.lab_label("ext4-wb", "ext4") == "pgfslab-ext4-wb"
    long = blockdev.lab_label("a-very-long-target-name", "xfs")
    assert long.startswith("pgfslab-") and len(long) == 12
    assert long != blockdev.lab_label("a-very-long-target-name2", "xfs")
    assert blockdev.lab_label("a-very-long-target-name", "btrfs") == "pgfslab-a-very-long-target-name"


# --- images with new mount options --------------------------------------------------------------


@needs_root
@pytest.mark.parametrize(
    "fs, opts, shown",
    [
        ("ext4", ["data=writeback"], "data=writeback"),
        ("btrfs", ["nodatacow"], "nodatacow"),
        ("xfs", ["noatime"], "noatime"),
    ],
)
def test_image_targets_mount_with_their_options(workdir, released, fs, opts, shown):
    name = f"{fs}-opt"
    released.append(name)
    rec = target_create.create(workdir, name, spec(fs, mount_options=opts))
    assert rec["kind"] == "image" and rec["label"] == blockdev.lab_label(name, fs)
    image = Path(rec["image"])
    with target_mount.mounted(workdir, name, spec(fs, mount_options=opts), OWNER) as m:
        assert m.fs == fs and m.kind == "image" and not m.fallback
        entry = mounts.at(m.mountpoint)
        assert entry is not None and entry.fstype == fs and entry.source == m.device
        assert shown in entry.options and shown in m.mount_options.split(",")
        assert m.notes == [] and m.direct_io is True and m.mount_s is not None
        probe = subprocess.run(
            ["blkid", "-p", "-o", "value", "-s", "LABEL", m.device], capture_output=True, text=True
        ).stdout.strip()
        assert probe == rec["label"]
        f = m.path / "probe"
        f.write_bytes(b"x" * 8192)
        if fs == "btrfs":  # nodatacow really applies: new files carry the No_COW attribute
            attrs = subprocess.run(["lsattr", str(f)], capture_output=True, text=True, check=True).stdout.split()[0]
            assert "C" in attrs
        if fs == "ext4":
            dev = Path(m.device).name
            assert "data=writeback" in Path(f"/proc/fs/ext4/{dev}/options").read_text().split()
        mnt = m.mountpoint
    assert not mounts.is_mounted(mnt) and not mnt.exists()
    assert _losetup_j(image) == ""


@needs_root
def test_unshown_option_is_noted(workdir, released):
    released.append("e")
    s = spec("ext4", mount_options=["barrier", "data=writeback"])  # barrier: a default ext4 does not list
    target_create.create(workdir, "e", s)
    with target_mount.mounted(workdir, "e", s, OWNER) as m:
        assert len(m.notes) == 1 and "mount option barrier requested" in m.notes[0]


@needs_root
def test_btrfs_data_subvolume(workdir, released):
    released.append("b")
    s = spec("btrfs")
    rec = target_create.create(workdir, "b", s, data_subvolume=True)
    assert rec["data_subvolume"] == "data"
    with target_mount.mounted(workdir, "b", s, OWNER) as m:
        assert m.path == m.mountpoint / "data"
        assert btrfs.is_subvolume(m.path)
        assert os.stat(m.path).st_uid == int(subprocess.run(["id", "-u", OWNER], capture_output=True, text=True).stdout)
    with pytest.raises(LabError, match="needs a btrfs"):
        target_create.create(workdir, "x", spec("ext4"), data_subvolume=True)


# --- tmpfs ---------------------------------------------------------------------------------------


@needs_root
def test_tmpfs_stays_mounted_until_release(workdir, released):
    released.append("ram")
    s = spec("tmpfs", size_gb=0.25, mount_options=["nr_inodes=10000"])
    rec = target_create.create(workdir, "ram", s)
    mnt = target_paths.mountpoint(workdir, "ram")
    assert rec["kind"] == "tmpfs" and rec["size_bytes"] == 2**28
    st = os.statvfs(mnt)
    assert st.f_blocks * st.f_frsize == 2**28
    assert st.f_files == 10000
    with target_mount.mounted(workdir, "ram", s, OWNER) as m:
        assert m.fs == "tmpfs" and m.path == mnt and "size=262144k" in m.mount_options
        (m.path / "keep").write_text("x")
    assert mounts.at(mnt).fstype == "tmpfs" and (mnt / "keep").exists()  # survives between stages
    assert f"unmounted {mnt}" in target_release.release(workdir, "ram")
    with pytest.raises(LabError, match="prepare the target again"):
        with target_mount.mounted(workdir, "ram", s, OWNER):
            pass


# --- existing mount points ------------------------------------------------------------------------


@needs_root
def test_existing_mount_point(tmp_path, workdir, loops):
    host = tmp_path / "host"
    dev = loops.attach(loops.image("host", 256))
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    loops.mount(dev, host, "-o", "noatime")
    (host / "users-data").write_text("precious")
    s = spec("existing", path=str(host), mkfs_options=[], mount_options=[])
    rec = target_create.create(workdir, "ex", s)
    sub = host / "pgfs-lab-study1-ex"
    assert rec["path"] == str(sub) and rec["host_fs"] == "ext4" and rec["host_mountpoint"] == str(host)
    assert "noatime" in rec["host_mount_options"].split(",")
    assert safety.marker(sub)["target"] == "ex"
    (sub / "old-run").mkdir()
    (sub / "old-run" / "f").write_text("x")
    target_create.create(workdir, "ex", s)  # again: the lab's subdirectory is emptied, nothing else touched
    assert sorted(p.name for p in sub.iterdir()) == [safety.MARKER]
    assert (host / "users-data").read_text() == "precious"
    with target_mount.mounted(workdir, "ex", s, OWNER) as m:
        entry = mounts.at(host)
        assert (m.kind, m.fs, m.path, m.mountpoint) == ("existing", "ext4", sub, host)
        assert m.mount_options == entry.options_text and m.device == dev
    assert mounts.is_mounted(host)  # never unmounted by the lab
    # a directory of the same name the lab did not create is refused, not emptied
    other = spec("existing", path=str(host), mkfs_options=[], mount_options=[])
    (host / "pgfs-lab-study1-mine").mkdir()
    (host / "pgfs-lab-study1-mine" / "theirs").write_text("y")
    with pytest.raises(LabError, match="not created by the lab"):
        target_create.create(workdir, "mine", other)
    assert (host / "pgfs-lab-study1-mine" / "theirs").exists()


def test_existing_path_must_be_a_directory(tmp_path, workdir):
    with pytest.raises(LabError, match="not an existing directory"):
        target_create.create(
            workdir, "ex", spec("existing", path=str(tmp_path / "nope"), mount_options=[], mkfs_options=[])
        )
    with pytest.raises(LabError, match="proc"):
        target_create.create(workdir, "ex", spec("existing", path="/proc/sys", mount_options=[], mkfs_options=[]))


# --- user-named block devices ----------------------------------------------------------------------


def _write_mbr(image: Path) -> None:
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 100_000)
    with open(image, "r+b") as fh:
        fh.seek(446)
        fh.write(entry)
        fh.seek(510)
        fh.write(b"\x55\xaa")


@needs_root
def test_device_with_foreign_file_system_is_refused(loops, workdir):
    img = loops.image("foreign", 256)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "holiday-pics", str(img)], check=True, capture_output=True)
    dev = loops.attach(img)
    s = spec("ext4", device=dev, format=True)
    with pytest.raises(LabError, match="holds ext4 labelled 'holiday-pics', which the lab did not make"):
        target_create.create(workdir, "udev", s)
    probe = subprocess.run(["blkid", "-p", "-o", "value", "-s", "LABEL", dev], capture_output=True, text=True)
    assert probe.stdout.strip() == "holiday-pics"  # untouched


@needs_root
def test_device_without_label_and_with_partition_table_are_refused(loops, workdir):
    img = loops.image("nolabel", 512)  # xfs needs more than 300 MB
    subprocess.run(["mkfs.xfs", "-q", "-f", str(img)], check=True, capture_output=True)
    with pytest.raises(LabError, match=r"xfs \(no label\)"):
        blockdev.check_device(loops.attach(img), target="udev", fs="xfs")
    img2 = loops.image("parted", 256)
    _write_mbr(img2)
    with pytest.raises(LabError, match=r"partition table \(dos\)"):
        blockdev.check_device(loops.attach(img2, direct_io=False), target="udev", fs="xfs")


@needs_root
def test_device_formatted_by_the_lab_is_accepted_again(loops, workdir, released):
    dev = loops.attach(loops.image("user-disk", 512))
    s = spec("btrfs", device=dev, format=True, mount_options=["compress=zstd"])
    released.append("udev")
    rec = target_create.create(workdir, "udev", s)  # blank device: accepted
    assert rec["kind"] == "device" and rec["label"] == "pgfslab-udev" and rec["previously"]["fstype"] is None
    again = target_create.create(workdir, "udev", s)  # the lab's own file system: accepted, reformatted
    assert again["previously"] == {"fstype": "btrfs", "label": "pgfslab-udev", "lab_owned": True}
    assert again["uuid"] != rec["uuid"]
    with target_mount.mounted(workdir, "udev", s, OWNER) as m:
        assert m.kind == "device" and m.device == dev and m.fs == "btrfs"
        assert mounts.at(m.mountpoint).source == dev
        assert any(o.startswith("compress=zstd") for o in m.mount_options.split(","))
    assert not mounts.is_mounted(target_paths.mountpoint(workdir, "udev"))
    # another target's config pointing at it: its label is not that target's, so refused
    with pytest.raises(LabError, match="pgfslab-udev"):
        target_create.create(workdir, "other", spec("btrfs", device=dev, format=True))
    # the lab's ext4 where the config now says xfs: may be reformatted, but not mounted as xfs
    with pytest.raises(LabError, match="holds btrfs, not xfs"):
        blockdev.check_device(dev, target="udev", fs="xfs", purpose="mount")


@needs_root
def test_mounted_device_is_refused(loops, tmp_path, workdir):
    dev = loops.attach(loops.image("busy", 256))
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-L", blockdev.lab_label("udev", "ext4"), dev], check=True, capture_output=True
    )
    blockdev.check_device(dev, target="udev", fs="ext4")  # the lab's own and free: accepted
    where = loops.mount(dev, tmp_path / "elsewhere")
    with pytest.raises(LabError, match=f"mounted at {where}"):
        target_create.create(workdir, "udev", spec("ext4", device=dev, format=True))
    assert (where / "lost+found").exists()  # not formatted under the user's feet


def test_device_paths_and_types():
    with pytest.raises(LabError, match="only a full /dev path"):
        blockdev.check_device("sdb", target="t", fs="ext4")
    with pytest.raises(LabError, match="only a full /dev path"):
        blockdev.check_device("/tmp/disk.img", target="t", fs="ext4")
    with pytest.raises(LabError, match="only a full /dev path"):
        blockdev.check_device("/dev/../tmp/x", target="t", fs="ext4")
    with pytest.raises(LabError, match="not a block device"):
        blockdev.check_device("/dev/null", target="t", fs="ext4")
    with pytest.raises(LabError, match="no such device"):
        blockdev.check_device("/dev/pgfs-lab-no-such-disk", target="t", fs="ext4")


@needs_root
def test_root_device_is_refused():
    """The root check, against the machine's actual root device (findmnt), not a stand-in."""
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True).stdout.strip()
    roots = blockdev.root_devices()
    assert os.stat("/").st_dev in roots or not src.startswith("/dev/")
    if not src.startswith("/dev/"):
        pytest.skip(f"root is mounted from {src!r}, not a /dev block device")
    with pytest.raises(LabError, match="is the root device"):
        blockdev.check_device(src, target="t", fs="ext4")
    with pytest.raises(LabError, match="is the root device"):
        blockdev.check_device(src, target="t", fs="ext4", purpose="mount")
    parent = Path(f"/sys/class/block/{Path(os.path.realpath(src)).name}/partition")
    if parent.exists():  # root on a partition: the whole disk holds it and is refused too
        disk = "/dev/" + parent.parent.resolve().parent.name
        with pytest.raises(LabError, match="holds the root file system"):
            blockdev.check_device(disk, target="t", fs="ext4")
