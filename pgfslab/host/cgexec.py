"""Run a command inside cgroups: write this process's PID into each given cgroup.procs file, then exec
the command, so it and everything it starts are charged to the cgroups from their first byte.

Standalone (no pipeline imports) so it runs by path with any Python:
    python3 cgexec.py /sys/fs/cgroup/memory/.../cgroup.procs [...] -- runuser -u postgres -- pg_ctl ...
Exit status 126: a cgroup could not be joined; 127: the command was not found.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: cgexec.py CGROUP_PROCS_FILE... -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    i = argv.index("--")
    procs, cmd = argv[:i], argv[i + 1 :]
    if not procs or not cmd:
        print("cgexec.py: need at least one cgroup.procs file and a command", file=sys.stderr)
        return 2
    for path in procs:
        if os.path.basename(path) not in ("cgroup.procs", "tasks"):
            print(f"cgexec.py: {path} is not a cgroup.procs file", file=sys.stderr)
            return 126
        try:
            with open(path, "w") as fh:
                fh.write(str(os.getpid()))
        except OSError as exc:
            print(f"cgexec.py: cannot join cgroup {os.path.dirname(path)}: {exc.strerror}", file=sys.stderr)
            return 126
    try:
        os.execvp(cmd[0], cmd)
    except FileNotFoundError:
        print(f"cgexec.py: command not found: {cmd[0]}", file=sys.stderr)
        return 127
    except OSError as exc:
        print(f"cgexec.py: cannot run {cmd[0]}: {exc.strerror}", file=sys.stderr)
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
