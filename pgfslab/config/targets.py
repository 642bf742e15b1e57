"""What a target spec may say: its kind, the file systems the lab can format, which mount options fit which file
system, and every problem a spec has beyond what the schema checks. Pure checks: nothing here touches the
machine (pgfslab.host.targets creates and mounts what a valid spec describes).
"""

from __future__ import annotations

from typing import Any

from pgfslab.errors import LabError

MKFS: dict[str, list[str]] = {
    # ext4: initialise inode tables and journal now, not lazily in the background during runs.
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
}


# Mount options that only some file systems accept: caught at config time with a clear message
# rather than as a mount(8) failure in the middle of a study.
OPTION_FS: dict[str, set[str]] = {
    "data": {"ext4"},
    "journal_async_commit": {"ext4"},
    "journal_checksum": {"ext4"},
    "dioread_nolock": {"ext4"},
    "delalloc": {"ext4"},
    "nodelalloc": {"ext4"},
    "barrier": {"ext4"},
    "nobarrier": {"ext4"},
    "nodatacow": {"btrfs"},
    "datacow": {"btrfs"},
    "nodatasum": {"btrfs"},
    "datasum": {"btrfs"},
    "compress": {"btrfs"},
    "compress-force": {"btrfs"},
    "autodefrag": {"btrfs"},
    "noautodefrag": {"btrfs"},
    "space_cache": {"btrfs"},
    "ssd": {"btrfs"},
    "nossd": {"btrfs"},
    "ssd_spread": {"btrfs"},
    "logbufs": {"xfs"},
    "logbsize": {"xfs"},
    "allocsize": {"xfs"},
    "largeio": {"xfs"},
    "huge": {"tmpfs"},
    "nr_inodes": {"tmpfs"},
    "mpol": {"tmpfs"},
    "noswap": {"tmpfs"},
    "size": set(),
    "nr_blocks": set(),  # tmpfs size comes from size_gb
}


def kind(spec: dict[str, Any]) -> str:
    """image | device | tmpfs | existing | dir"""
    fs = spec["fs"]
    if fs in ("dir", "existing", "tmpfs"):
        return fs
    return "device" if spec.get("device") else "image"


def spec_problems(spec: dict[str, Any]) -> list[str]:
    """What is wrong with a target spec beyond what the schema checks (empty if nothing)."""
    fs, k = spec["fs"], kind(spec)
    out: list[str] = []
    opts = list(spec.get("mount_options", []))
    mkfs_opts = list(spec.get("mkfs_options", []))
    if "path" in spec and k != "existing":
        out.append("`path` is only for `fs: existing` (a directory on a file system the host has mounted)")
    if k == "existing":
        if not spec.get("path"):
            out.append("`fs: existing` needs `path`: an absolute directory on a mounted file system")
        elif not str(spec["path"]).startswith("/"):
            out.append(f"path {spec['path']!r} must be absolute")
        if spec.get("device") or opts or mkfs_opts:
            out.append(
                "`fs: existing` uses the file system as the host mounted it: no device, mount_options or mkfs_options"
            )
    if spec.get("device") is not None and fs not in MKFS:
        out.append(f"`device` needs fs to be one of {sorted(MKFS)}, not {fs}")
    if k == "device" and spec.get("format") is not True:
        out.append(f"device {spec['device']} would be erased and formatted: set `format: true` to allow it")
    if "format" in spec and spec.get("device") is None:
        out.append("`format` is only for a `device` target")
    if k in ("tmpfs", "dir", "existing") and mkfs_opts:
        out.append(f"mkfs_options make no sense for fs {fs}")
    if k == "dir" and opts:
        out.append("mount_options make no sense for a plain directory")
    if any(o in ("-L", "--label") or o.startswith("--label=") for o in mkfs_opts):
        out.append("mkfs_options must not set a label: the lab labels its file systems pgfslab-<target>")
    names = {o.split("=", 1)[0] for o in opts}
    for o in opts:
        key, _, value = o.partition("=")
        allowed = OPTION_FS.get(key)
        if allowed is not None and fs not in allowed:
            where = f"a {'/'.join(sorted(allowed))} mount option" if allowed else "set by the lab"
            extra = " (use size_gb)" if key in ("size", "nr_blocks") else ""
            out.append(f"mount option {o!r} is {where}, not for {fs}{extra}")
        if key == "data" and fs == "ext4" and value not in ("ordered", "writeback", "journal"):
            out.append(f"mount option {o!r}: ext4 data= is ordered, writeback or journal")
    if fs == "btrfs" and "nodatacow" in names and names & {"compress", "compress-force"}:
        out.append("btrfs nodatacow disables compression: drop one of nodatacow and compress")
    if fs == "xfs" and names & {"nobarrier", "barrier"}:
        out.append("xfs removed barrier/nobarrier in Linux 4.19")
    return out


def check_spec(name: str, spec: dict[str, Any]) -> None:
    problems = spec_problems(spec)
    if problems:
        raise LabError(f"target {name}: " + "; ".join(problems))
