"""After an interrupt (Ctrl-C, SIGTERM, a killed job): release what a study's target holds, and only that: its
server's processes, the mount, the loop device, vm.* settings and cgroups the lab set.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from pgfslab.config.study import TargetView
from pgfslab.errors import LabError
from pgfslab.host import cgroups, disk_daemon, sysctl
from pgfslab.host.targets import paths as target_paths
from pgfslab.host.targets import release as target_release
from pgfslab.run.common import say


def release_after_interrupt(target: TargetView, vm_rec: dict[str, Any] | None = None) -> list[str]:
    """The safety net after an interrupt or a lab error: whatever the unwinding context managers
    could not release (a second signal during their cleanup, an error inside one) is released here.
    Idempotent and limited to the lab's own things: the target's server processes, its mount and loop
    devices, its emulated disk's daemon, its cgroups, and vm.* settings not restored. Returns what it had to do."""
    done: list[str] = []
    wd = target.workdir
    mnt = target_paths.mountpoint(wd, target.name)
    for pid in _processes_under(mnt):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
        done.append(f"killed process {pid} working in {mnt}")
    if done:
        time.sleep(0.5)
    with contextlib.suppress(LabError):
        done += target_release.release(wd, target.name)
    done += disk_daemon.stop_current(target.name)  # if its block's own cleanup was cut short
    wal = target.spec.wal_on
    if wal:  # the target that holds this target's WAL was mounted for the run too
        with contextlib.suppress(LabError):
            done += target_release.release(wd, wal)
    with contextlib.suppress(Exception):
        done += cgroups.remove_leftovers(cgroups.cgroup_name(target.study, target.name))
    if vm_rec and "before" in vm_rec and "restored" not in vm_rec and vm_rec.get("before"):
        errors = sysctl.restore(vm_rec["before"])
        done.append("restored vm settings" + (f" (errors: {'; '.join(errors)})" if errors else ""))
    for line in done:
        say("cleanup", line)
    return done


def _processes_under(path: Path) -> list[int]:
    """Processes whose working directory lies under `path` (a target's mount point)."""
    root = os.path.realpath(path)
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            with contextlib.suppress(OSError):
                cwd = os.readlink(p / "cwd")
                if cwd == root or cwd.startswith(root + "/"):
                    out.append(int(p.name))
    return out
