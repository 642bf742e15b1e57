"""What the lab may delete, unmount and detach: pgfslab/host/safety.py, and release() going through it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import needs_root

from pgfslab.errors import LabError
from pgfslab.host import mounts, safety
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "work" / "s"
    wd.mkdir(parents=True)
    return wd


def test_workdir_must_be_deep_and_absolute():
    for bad in ("/", "/tmp", "/home"):
        with pytest.raises(LabError, match="too close to /"):
            safety.check_workdir(Path(bad))
    with pytest.raises(LabError, match="absolute"):
        safety.check_workdir(Path("data/work/x"))


def test_under_workdir_is_deletable_and_outside_is_not(tmp_path, workdir):
    inside = workdir / "dirs" / "t"
    inside.mkdir(parents=True)
    (inside / "f").write_text("x")
    assert safety.remove_tree(inside, workdir) and not inside.exists()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(LabError, match="neither under the study's work directory"):
        safety.remove_tree(outside, workdir)
    assert outside.exists()
    with pytest.raises(LabError, match="neither under"):
        safety.remove_tree(workdir, workdir)  # the work directory itself is not "under" it


def test_symlink_out_of_the_workdir_is_refused(tmp_path, workdir):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "t").mkdir()
    (victim / "t" / "keep").write_text("x")
    link = workdir / "dirs"
    link.symlink_to(victim)
    with pytest.raises(LabError, match="neither under"):
        safety.reset_dir(link / "t", workdir)  # workdir/dirs/t, really victim/t
    with pytest.raises(LabError, match="symbolic link"):
        safety.remove_tree(link, workdir)
    assert (victim / "t" / "keep").exists()


def test_lab_marked_directory_elsewhere(tmp_path, workdir):
    lab = tmp_path / "pgfs-lab-s-t"
    lab.mkdir()
    with pytest.raises(LabError, match="marker"):
        safety.remove_tree(lab, workdir)  # right name, no marker
    safety.mark(lab, study="s", target="t")
    (lab / "pgdata").mkdir()
    safety.reset_dir(lab, workdir)
    assert [p.name for p in lab.iterdir()] == [safety.MARKER]
    assert safety.marker(lab)["target"] == "t"
    renamed = tmp_path / "users-dir"
    lab.rename(renamed)
    with pytest.raises(LabError, match="neither under"):
        safety.remove_tree(renamed, workdir)  # marker, but not the lab's name pattern
    (renamed / safety.MARKER).write_text('{"created_by": "someone else"}')
    renamed.rename(lab)
    assert not safety.is_lab_dir(lab)


def test_unmount_only_under_workdir(tmp_path, workdir):
    safety.require_unmountable(workdir / "mnt" / "t", workdir)
    with pytest.raises(LabError, match="refusing to unmount"):
        safety.require_unmountable(tmp_path / "mnt", workdir)


@needs_root
def test_delete_never_walks_into_a_mount(workdir, loops):
    d = workdir / "dirs" / "t"
    (d / "m").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "pgfslab-test", str(d / "m")], check=True)
    loops.mounts.append(d / "m")
    (d / "m" / "inside").write_text("x")
    with pytest.raises(LabError, match="a file system is mounted at"):
        safety.remove_tree(d, workdir)
    assert (d / "m" / "inside").exists()


@needs_root
def test_detach_only_the_labs_loops(tmp_path, workdir, loops):
    foreign = loops.attach(loops.image("foreign", 16))
    with pytest.raises(LabError, match="not under the study's work directory"):
        safety.require_detachable(foreign, workdir)
    with pytest.raises(LabError, match="not an attached loop device"):
        safety.require_detachable("/dev/null", workdir)
    own_image = target_paths.image_path(workdir, "t")
    own_image.parent.mkdir(parents=True)
    own_image.write_bytes(b"\0" * 2**20)
    own = loops.attach(own_image)
    assert safety.require_detachable(own, workdir) == own
    # release() of a target detaches its own loop and nothing else
    assert target_release.release(workdir, "t") == [f"detached {own}"]
    assert safety.loop_backing_file(foreign) == (tmp_path / "foreign.img")
    assert safety.loop_backing_file(own) is None or safety.loop_backing_file(own) != own_image


@needs_root
def test_release_leaves_foreign_mounts_alone(tmp_path, workdir, loops):
    dev = loops.attach(loops.image("other", 64))
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    where = loops.mount(dev, tmp_path / "other-mnt")
    assert target_release.release(workdir, "other-mnt") == []
    assert mounts.is_mounted(where)
