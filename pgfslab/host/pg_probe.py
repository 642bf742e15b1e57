"""Asking a PostgreSQL build what it has: the settings of its server (pg_settings of a throw-away cluster,
initdb'd in a temporary directory as the server's user and started on a unix socket only).

`postgres --describe-config` needs no cluster but leaves out the developer settings (GUC_NOT_IN_SAMPLE:
debug_io_direct, ...), which a study may set; pg_settings lists them.
"""

from __future__ import annotations

import os
import pwd
import socket
import tempfile
from pathlib import Path

from pgfslab.host import postgres
from pgfslab.host.pg_install import Build


def free_port() -> int:
    """A TCP port nobody listens on (the cluster opens none: the number only names its socket)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_settings(build: Build, user: str = "postgres") -> list[tuple[str, str, str]]:
    """(name, vartype, context) of every setting of `build`'s server, by name."""
    pw = pwd.getpwnam(user)
    with tempfile.TemporaryDirectory(prefix="pgfs-probe-") as tmp:
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        with postgres.running(Path(tmp) / "pgdata", free_port(), build.bindir, user, init=True) as cl:
            rows = cl.query("SELECT name, vartype, context FROM pg_settings ORDER BY name")
    return [(str(n), str(t), str(c)) for n, t, c in rows]
