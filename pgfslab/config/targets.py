"""What a target spec may say: its kind, the file systems the lab can format, which mount options fit which file
system, and every problem a spec has beyond what the schema checks. Pure checks: nothing here touches the
machine (pgfslab.host.targets.create creates and pgfslab.host.targets.mount mounts what a valid spec describes).
"""

from __future__ import annotations

from typing import Any

from pgfslab.config.model import TargetSpec
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


# ZFS dataset properties a target may set (`zfs: {recordsize: 8k, compression: gzip, ...}`), with the
# values OpenZFS accepts where they are a short list (None: checked by zfs itself when the dataset is
# made). What the zfs-fuse implementation (pool version 23) lacks is in ZFS_FUSE_LIMITS; the running
# implementation's own property table is checked again before a pool is created (pgfslab.host.zfs.pools).
_ONOFF = {"on", "off"}
ZFS_PROPERTIES: dict[str, set[str] | None] = {
    "recordsize": None,
    "compression": None,
    "atime": _ONOFF,
    "relatime": _ONOFF,
    "logbias": {"latency", "throughput"},
    "primarycache": {"all", "none", "metadata"},
    "secondarycache": {"all", "none", "metadata"},
    "sync": {"standard", "always", "disabled"},
    "checksum": {"on", "off", "fletcher2", "fletcher4", "sha256", "sha512", "skein", "edonr", "blake3"},
    "xattr": {"on", "off", "sa", "dir"},
    "dedup": None,
    "copies": {"1", "2", "3"},
    "redundant_metadata": {"all", "most", "some", "none"},
    "dnodesize": {"legacy", "auto", "1k", "2k", "4k", "8k", "16k"},
    "special_small_blocks": None,
    "quota": None,
    "refquota": None,
    "reservation": None,
    "refreservation": None,
    "exec": _ONOFF,
    "setuid": _ONOFF,
    "devices": _ONOFF,
    "readonly": _ONOFF,
    "snapdir": {"hidden", "visible"},
    "aclinherit": None,
    "casesensitivity": {"sensitive", "insensitive", "mixed"},
    "normalization": None,
    "utf8only": _ONOFF,
}
# set by the lab itself: never from a config
ZFS_LAB_PROPERTIES = {"mountpoint", "canmount", "cachefile"}
_COMPRESSION_FUSE = {"on", "off", "lzjb", "gzip", "zle", *(f"gzip-{i}" for i in range(1, 10))}
_COMPRESSION_OPENZFS = _COMPRESSION_FUSE | {"lz4", "zstd", "zstd-fast", *(f"zstd-{i}" for i in range(1, 20))}
# what Debian's zfs-fuse 0.7.0 (pool version 23) cannot do, measured on these machines (its own error text)
ZFS_FUSE_LIMITS: dict[str, str] = {
    "sync": "zfs-fuse (pool version 23) has no `sync` property: synchronous semantics are fixed there "
    "(fsync and O_DSYNC go through the ZIL; logbias is the only knob)",
    "relatime": "zfs-fuse has no `relatime` property",
    "redundant_metadata": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "dnodesize": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
    "special_small_blocks": "needs OpenZFS (absent from zfs-fuse, pool version 23)",
}


def _zfs_size(value: str) -> int | None:
    import re

    m = re.fullmatch(r"(\d+)([kKmM]?)", value)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2}[m.group(2).lower()]


def zfs_property_problems(props: dict[str, Any], implementation: str = "openzfs") -> list[str]:
    """What is wrong with a target's `zfs:` dataset properties for an implementation ('openzfs' or
    'zfs-fuse'), each problem naming the key. Pure: the machine is not asked."""
    out: list[str] = []
    fuse = implementation == "zfs-fuse"
    impl = "zfs-fuse, userspace" if fuse else "OpenZFS"
    for key, raw in props.items():
        value = ("on" if raw else "off") if isinstance(raw, bool) else str(raw)
        where = f"zfs.{key}"
        if ":" in key:  # a user property module:name
            if key.startswith("pgfslab:"):
                out.append(f"{where}: the pgfslab: user properties are set by the lab itself")
            continue
        if key in ZFS_LAB_PROPERTIES:
            out.append(f"{where}: set by the lab itself (the dataset is mounted at the lab's mount point)")
            continue
        if key not in ZFS_PROPERTIES:
            out.append(f"{where}: unknown ZFS dataset property (known: {', '.join(sorted(ZFS_PROPERTIES))})")
            continue
        if fuse and key in ZFS_FUSE_LIMITS:
            out.append(f"{where}: {ZFS_FUSE_LIMITS[key]}")
            continue
        allowed = ZFS_PROPERTIES[key]
        if allowed is not None and value not in allowed:
            out.append(f"{where}: {value!r} is not one of {', '.join(sorted(allowed))}")
        if key == "compression":
            ok = _COMPRESSION_FUSE if fuse else _COMPRESSION_OPENZFS
            if value not in ok:
                extra = " (no lz4/zstd in zfs-fuse's pool version 23)" if fuse else ""
                out.append(
                    f"{where}: {value!r} is not a compression of {impl}{extra}; allowed: {', '.join(sorted(ok))}"
                )
        if key == "recordsize":
            size = _zfs_size(value)
            top = 128 * 1024 if fuse else 16 * 1024**2
            if size is None or size < 512 or size > top or size & (size - 1):
                out.append(
                    f"{where}: {value!r}: recordsize is a power of 2 from 512 to "
                    f"{'128k (zfs-fuse, pool version 23)' if fuse else '16M'}"
                )
        if key == "xattr" and fuse and value not in _ONOFF:
            out.append(f"{where}: zfs-fuse's xattr is on or off, not {value!r}")
    return out


def fs_label(fs: str, implementation: str | None = None) -> str:
    """How a file system is named in tables and figures: zfs says which implementation ran."""
    if fs == "zfs":
        return {"zfs-fuse": "zfs (zfs-fuse, userspace)", "openzfs": "zfs (OpenZFS)"}.get(implementation or "", "zfs")
    return fs


def kind(spec: TargetSpec) -> str:
    """image | device | tmpfs | existing | dir"""
    if spec.fs in ("dir", "existing", "tmpfs"):
        return spec.fs
    return "device" if spec.device else "image"


def spec_problems(spec: TargetSpec) -> list[str]:
    """What is wrong with a target spec beyond what the schema checks (empty if nothing)."""
    fs, k = spec.fs, kind(spec)
    out: list[str] = []
    opts = list(spec.mount_options)
    mkfs_opts = list(spec.mkfs_options)
    if fs == "zfs":
        if spec.device is not None:
            out.append(
                "a zfs target lives on the lab's own image (a pool on its loop device); a pool on a "
                "device of yours is not supported yet"
            )
        if opts or mkfs_opts:
            out.append(
                "a zfs target takes dataset properties under `zfs:` (e.g. recordsize: 8k), not mount or mkfs options"
            )
        out += zfs_property_problems(spec.zfs or {}, "openzfs")
    elif spec.zfs:
        out.append(f"`zfs:` properties are for fs: zfs, not {fs}")
    if spec.path is not None and k != "existing":
        out.append("`path` is only for `fs: existing` (a directory on a file system the host has mounted)")
    if k == "existing":
        if not spec.path:
            out.append("`fs: existing` needs `path`: an absolute directory on a mounted file system")
        elif not spec.path.startswith("/"):
            out.append(f"path {spec.path!r} must be absolute")
        if spec.device or opts or mkfs_opts:
            out.append(
                "`fs: existing` uses the file system as the host mounted it: no device, mount_options or mkfs_options"
            )
    if spec.device is not None and fs not in MKFS and fs != "zfs":
        out.append(f"`device` needs fs to be one of {sorted(MKFS)}, not {fs}")
    if k == "device" and spec.format is not True:
        out.append(f"device {spec.device} would be erased and formatted: set `format: true` to allow it")
    if spec.format is not None and spec.device is None:
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


def check_spec(name: str, spec: TargetSpec) -> None:
    problems = spec_problems(spec)
    if problems:
        raise LabError(f"target {name}: " + "; ".join(problems))
