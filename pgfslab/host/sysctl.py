"""OS write-back settings for a run: vm.* sysctls applied for the duration of a with-block and restored
on every exit path, with before/after recorded for run.json; and dropping the page cache.

The kernel keeps each of dirty_bytes/dirty_ratio and dirty_background_bytes/dirty_background_ratio
as a pair of which only one is in force: writing one zeroes the other (when its value changes), and
it refuses 0 for a *_bytes key (EINVAL). So the previous state is restored by writing whichever of the
pair was non-zero before, never both, and read back to confirm.

These settings are global to the machine: a lock file keeps two lab processes from changing them
at once (and restoring each other's values in the wrong order).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pgfslab.config.vm_settings import PAIRS, key
from pgfslab.errors import LabError

VM = Path("/proc/sys/vm")
LOCK = Path("/run/pgfs-lab-vm.lock")


def read(name: str, root: Path = VM) -> int:
    return int((root / key(name)).read_text().split()[0])


def snapshot(names: list[str], root: Path = VM) -> dict[str, int]:
    """Current values of `names` and of their bytes/ratio counterparts."""
    keys: list[str] = []
    for n in names:
        for k in (key(n), PAIRS.get(key(n))):
            if k and k not in keys:
                keys.append(k)
    return {k: read(k, root) for k in keys}


def _write(k: str, value: int, root: Path) -> None:
    try:
        (root / k).write_text(f"{value}\n")
    except OSError as exc:
        hint = " (dirty_bytes must be at least two pages)" if exc.errno == 22 and k == "dirty_bytes" else ""
        raise LabError(f"cannot set vm.{k} = {value}: {exc.strerror}{hint}") from None


def _restore(before: Mapping[str, int], root: Path) -> list[str]:
    """Write back `before`; of a bytes/ratio pair only the member that was in force (the non-zero one;
    writing it zeroes the other). The caller reads everything back to confirm. Returns the errors."""
    errors: list[str] = []
    done: set[str] = set()
    for k in before:
        if k in done:
            continue
        other = PAIRS.get(k)
        if other is not None and other in before:
            done.update((k, other))
            by_kind = {k.rsplit("_", 1)[1]: k, other.rsplit("_", 1)[1]: other}
            k = by_kind["bytes"] if before[by_kind["bytes"]] != 0 else by_kind["ratio"]
        done.add(k)
        try:
            _write(k, before[k], root)
        except LabError as exc:
            errors.append(str(exc))
    return errors


def restore(before: Mapping[str, int], root: Path = VM) -> list[str]:
    """Write back values recorded by applied() (its record["before"]); returns the errors."""
    errors = _restore(before, root)
    if snapshot(list(before), root) != dict(before):
        errors.append(f"read back {snapshot(list(before), root)}, expected {dict(before)}")
    return errors


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    try:
        fh = open(LOCK, "a")
    except OSError as exc:
        raise LabError(f"cannot open the vm settings lock {LOCK}: {exc.strerror}") from None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(
                f"another pgfs-lab process is changing vm.* settings now (lock {LOCK}); "
                "runs that change OS settings cannot overlap"
            ) from None
        yield


@contextlib.contextmanager
def applied(settings: Mapping[str, int], root: Path = VM) -> Iterator[dict[str, Any]]:
    """Apply vm settings for the block; restore the previous values on every exit path.

    Yields the record for run.json: requested, before, after (read back once applied) and, once the
    block has ended, restored (read back) and restore_errors."""
    wanted = {key(k): int(v) for k, v in settings.items()}
    for k in wanted:
        if PAIRS.get(k) in wanted:
            raise LabError(f"vm.{k} and vm.{PAIRS[k]} cannot both be set (writing one zeroes the other)")
    record: dict[str, Any] = {"requested": dict(wanted)}
    if not wanted:
        record["before"] = record["after"] = {}
        yield record
        return
    with _locked():
        before = snapshot(list(wanted), root)
        record["before"] = before
        try:
            for k, v in wanted.items():
                _write(k, v, root)
            record["after"] = snapshot(list(wanted), root)
            record["applied_at"] = time.time()
            yield record
        finally:
            errors = _restore(before, root)
            record["restored"] = snapshot(list(wanted), root)
            if record["restored"] != before:
                errors.append(f"read back {record['restored']}, expected {before}")
            record["restore_errors"] = errors
            if errors:
                print("WARNING: vm settings not restored: " + "; ".join(errors), file=sys.stderr, flush=True)
                if sys.exc_info()[0] is None:
                    raise LabError("vm settings not restored: " + "; ".join(errors))


def drop_caches() -> str:
    """sync, then drop the page cache, dentries and inodes: "dropped (sync X s)" or "not dropped: why"."""
    t0 = time.monotonic()
    os.sync()
    sync_s = time.monotonic() - t0
    try:
        (VM / "drop_caches").write_text("3\n")
    except OSError as exc:
        return f"not dropped: {exc.strerror}"
    return f"dropped (sync {sync_s:.2f} s, drop {time.monotonic() - t0 - sync_s:.2f} s)"
