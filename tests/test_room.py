"""The room check before a target is prepared: on the real file system under a temporary directory, a study whose
images could outgrow the disk is refused with the numbers, one that fits passes, and an image already written counts
as taken (it is replaced in place)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgfslab.config.model import TargetSpec
from pgfslab.errors import LabError
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import room

GIB = 2**30


def free_gib(path: Path) -> float:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / GIB


def test_images_larger_than_the_disk_are_refused_with_the_numbers(tmp_path: Path) -> None:
    huge = TargetSpec(fs="ext4", size_gb=round(free_gib(tmp_path) + 50))
    with pytest.raises(LabError, match=r"not enough disk .* may grow by [0-9.]+ GiB \(size_gb: big [0-9]+\).* free"):
        room.require_room(tmp_path / "work" / "study", {"big": huge, "d": TargetSpec(fs="dir")})


def test_images_that_fit_pass_and_plain_directories_take_nothing(tmp_path: Path) -> None:
    room.require_room(tmp_path / "work", {"small": TargetSpec(fs="ext4", size_gb=0.5), "d": TargetSpec(fs="dir")})
    assert room.growth(tmp_path, {"d": TargetSpec(fs="dir")}) == 0


def test_what_an_image_already_takes_is_not_counted_again(tmp_path: Path) -> None:
    spec = TargetSpec(fs="ext4", size_gb=0.25)
    image = target_paths.image_path(tmp_path, "t")
    image.parent.mkdir(parents=True)
    image.write_bytes(os.urandom(8 * 2**20))  # 8 MiB written
    assert room.growth(tmp_path, {"t": spec}) == int(0.25 * GIB) - room.allocated(image)
    assert room.allocated(image) >= 8 * 2**20
