"""One PostgreSQL cluster per target: initdb'd on the target as an unprivileged user, its own
port and unix-socket directory, settings from the study config; started and stopped by the lab.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from pgfslab.errors import LabError
from pgfslab.host import pg_stats, proc


def one_row(conn: psycopg.Connection[Any], sql: Any, params: Sequence[Any] | None = None) -> tuple[Any, ...]:
    """The row a query that always returns one gives (an aggregate, a SHOW); none is a clear error."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise LabError(f"PostgreSQL returned no row for: {str(sql)[:80]}")
    return tuple(row)


def checksums_args(major: int, on: bool) -> list[str]:
    """initdb's checksum argument, said explicitly for every major: --data-checksums, or (off) 18's
    --no-data-checksums (18 made checksums initdb's default); before 18 off is initdb's default and the flag
    does not exist."""
    if on:
        return ["--data-checksums"]
    return ["--no-data-checksums"] if major >= 18 else []


def bindir(configured: str | None = None) -> Path:
    """The PostgreSQL binaries: the configured directory, else the newest /usr/lib/postgresql/*/bin."""
    if configured:
        p = Path(configured)
        if not (p / "postgres").exists():
            raise LabError(f"postgres.bindir {p} has no `postgres` binary")
        return p
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise LabError("no PostgreSQL server found under /usr/lib/postgresql (run `make setup`)")
    return found[-1].parent


_NAME = re.compile(r"[a-z_][a-z0-9_.]*")
_VALUE = re.compile(r"[A-Za-z0-9._ :-]*")  # the same characters workflow/schemas/config.schema.yaml allows


def _conf_line(name: str, value: Any) -> str:
    """`name = 'value'` for a PostgreSQL config file; refuses anything that could end the line or the
    quoted string (a second line, a quote, a backslash): workflow/schemas/config.schema.yaml refuses them first."""
    if not _NAME.fullmatch(name):
        raise LabError(f"refusing PostgreSQL setting name {name!r}: only lower-case letters, digits, '_' and '.'")
    return f"{name} = {_conf_value(value)}"


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value)
    if not _VALUE.fullmatch(text):
        raise LabError(f"refusing PostgreSQL setting value {text!r}: only letters, digits, '._-: ' allowed")
    return f"'{text}'"


# What the server log says when the server crashed or restarted itself during a run.
CRASH_PATTERNS = [
    (re.compile(r"server process \(PID \d+\) was terminated by signal (\d+)"), "a server process was killed"),
    (re.compile(r"terminating any other active server processes"), "the server reset itself after a crash"),
    (re.compile(r"\bPANIC: "), "PostgreSQL PANIC"),
    (re.compile(r"database system was interrupted"), "the server recovered from a crash"),
]
ENOSPC = re.compile(r"No space left on device|could not extend file|disk quota exceeded", re.I)


def crash_signs(log_text: str) -> list[str]:
    """Lines of a server log that show a crash, a PANIC or a crash reset (first few, verbatim)."""
    out = []
    for line in log_text.splitlines():
        if any(rx.search(line) for rx, _ in CRASH_PATTERNS):
            out.append(line.strip())
    return out[:5]


@dataclass
class Cluster:
    pgdata: Path
    port: int
    bindir: Path
    user: str
    sockdir: Path
    log: Path
    # wraps the server's start command, e.g. to start it inside a cgroup (children inherit it)
    wrap: Callable[[list[str]], list[str]] = lambda cmd: cmd
    notes: list[str] = field(default_factory=list)  # what stop()/reap() did after a crash
    initdb_command: list[str] = field(default_factory=list)  # set by initdb()
    # the database the lab's own connections (facts, samplers) use: a data-set ladder's rung has its own
    dbname: str = "postgres"

    @property
    def conninfo(self) -> str:
        return f"host={self.sockdir} port={self.port} user=postgres dbname={self.dbname}"

    def client_args(self) -> list[str]:
        """Connection flags for pgbench/psql."""
        return ["-h", str(self.sockdir), "-p", str(self.port), "-U", "postgres"]

    def _as_user(self, *cmd: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return proc.run(["runuser", "-u", self.user, "--", *cmd], timeout=timeout)

    def initdb(self, settings: dict[str, Any], waldir: Path | None = None, extra: Sequence[str] = ()) -> list[str]:
        """initdb as the server's user; `waldir`: pg_wal lives there (initdb -X, pg_wal a symlink); `extra`:
        more initdb arguments (checksums_args)."""
        cmd = [
            str(self.bindir / "initdb"),
            "-D",
            str(self.pgdata),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-instructions",
        ]
        if waldir is not None:
            cmd += ["-X", str(waldir)]
        cmd += list(extra)
        self.initdb_command = cmd
        self._as_user(*cmd)
        # unix socket only: no TCP port is opened, so trust authentication reaches nobody but the
        # users who can enter the socket directory (root and the server's user, mode 0700)
        lines = ["# written by pgfs-lab from the study config", "listen_addresses = ''"]
        lines += [_conf_line(k, v) for k, v in settings.items()]
        conf = self.pgdata / "pgfs-lab.conf"
        conf.write_text("\n".join(lines) + "\n")
        pw = pwd.getpwnam(self.user)
        os.chown(conf, pw.pw_uid, pw.pw_gid)
        with open(self.pgdata / "postgresql.conf", "a") as fh:
            fh.write("\ninclude = 'pgfs-lab.conf'\ninclude_if_exists = 'pgfs-run.conf'\n")
        return cmd

    def set_run_settings(self, settings: dict[str, Any]) -> Path:
        """This run's settings (target's and workload's over the study's), read at the next start.

        A file of its own, rewritten before every start, so no run inherits another's settings."""
        lines = ["# written by pgfs-lab for one run; replaced before the next"]
        lines += [_conf_line(k, v) for k, v in settings.items()]
        conf = self.pgdata / "pgfs-run.conf"
        conf.write_text("\n".join(lines) + "\n")
        pw = pwd.getpwnam(self.user)
        os.chown(conf, pw.pw_uid, pw.pw_gid)
        return conf

    def start(self) -> list[str]:
        if _port_in_use(self.port):
            raise LabError(
                f"port {self.port} is already in use: another server is listening; change postgres.port_base"
            )
        cmd = [
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.pgdata),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "120",
            "-o",
            f"-p {self.port} -k {self.sockdir}",
            "start",
        ]
        try:
            proc.run(self.wrap(["runuser", "-u", self.user, "--", *cmd]), timeout=300)
        except LabError as exc:
            tail = self.log.read_text(errors="replace").splitlines()[-5:] if self.log.exists() else []
            raise LabError(f"{exc}\n  server log {self.log}:\n    " + "\n    ".join(tail)) from None
        return cmd

    def postmaster_pid(self) -> int | None:
        """The PID in postmaster.pid (None when there is no such file or it is unreadable)."""
        try:
            first = (self.pgdata / "postmaster.pid").read_text().splitlines()[0]
            return int(first.strip())
        except (OSError, IndexError, ValueError):
            return None

    def processes(self) -> list[int]:
        """Every live process working in this cluster's data directory: the postmaster and its children
        (PostgreSQL's processes chdir to PGDATA), including backends orphaned by a killed postmaster."""
        want = os.path.realpath(self.pgdata)
        found = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                if os.readlink(p / "cwd") == want and _state(int(p.name)) != "Z":
                    found.append(int(p.name))
            except OSError:
                continue
        return found

    def alive(self) -> bool:
        """Is this cluster's postmaster running (the PID of postmaster.pid, working in PGDATA)?"""
        pid = self.postmaster_pid()
        return pid is not None and pid in self.processes()

    def running(self) -> bool:
        return self.alive()

    def kill(self, sig: int = signal.SIGKILL, *, all_processes: bool = False) -> int | None:
        """Send `sig` to the postmaster (`all_processes`: to it and every process of the cluster at once,
        as a power cut would stop them). Returns the postmaster's PID (None if it was not running)."""
        pid = self.postmaster_pid() if self.alive() else None
        targets = self.processes() if all_processes else ([pid] if pid else [])
        for p in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
        return pid

    def reap(self, timeout_s: float = 10) -> list[str]:
        """After a crash (the postmaster gone): wait for the orphaned server processes to exit (they
        notice the postmaster's death), SIGKILL the ones that do not, and remove a stale postmaster.pid
        so that the next start is not refused. PostgreSQL recovers from the crash at that start.

        Does nothing while the postmaster runs. Returns what it did (for run.json)."""
        notes: list[str] = []
        if self.alive():
            return notes
        deadline = time.monotonic() + timeout_s
        left = self.processes()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = self.processes()
        if left:
            for p in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            notes.append(f"killed {len(left)} orphaned server process(es) of a dead postmaster")
            end = time.monotonic() + 5
            while self.processes() and time.monotonic() < end:
                time.sleep(0.05)
        pidfile = self.pgdata / "postmaster.pid"
        try:
            exists = pidfile.exists()
        except OSError as exc:  # a file system cut under the server (power-loss emulation) answers EIO
            notes.append(f"postmaster.pid not checked: {exc.strerror}")
            return notes
        if exists and not self.processes():
            stale = self.postmaster_pid()
            try:
                pidfile.unlink()
                notes.append(f"removed stale postmaster.pid (PID {stale or '?'} not running)")
            except OSError as exc:  # e.g. a file system that went read-only after an I/O error
                notes.append(f"stale postmaster.pid not removed: {exc.strerror}")
        return notes

    def stop(self, mode: str = "fast") -> list[str]:
        """Stop the server; after a crash, clean up what the dead postmaster left. Never raises for a
        server that is already gone: a crashed server is data, not a lab error."""
        if not self.alive():
            return self.reap()
        res = proc.run(
            [
                "runuser",
                "-u",
                self.user,
                "--",
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.pgdata),
                "-m",
                mode,
                "-w",
                "-t",
                "120",
                "stop",
            ],
            check=False,
            timeout=180,
        )
        if res.returncode != 0 and mode != "immediate" and self.alive():
            return self.stop("immediate")
        if self.alive():  # pg_ctl could not stop it: do not leave it running on a file system we unmount
            self.kill(signal.SIGKILL, all_processes=True)
        return self.reap()

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []

    def facts(self) -> dict[str, Any]:
        """Version, non-default settings and sizes, read through psycopg."""
        with self.connect() as conn:
            version = one_row(conn, "SELECT version()")[0]
            num = conn.info.server_version
            checksums = one_row(conn, "SHOW data_checksums")[0]
            settings = conn.execute(
                "SELECT name, setting, unit, source FROM pg_settings "
                "WHERE source NOT IN ('default', 'override') ORDER BY name"
            ).fetchall()
            db_bytes = one_row(conn, "SELECT pg_database_size(current_database())")[0]
            all_db_bytes = one_row(conn, "SELECT sum(pg_database_size(oid))::bigint FROM pg_database")[0]
            frm, exprs = pg_stats.bgwriter_sources(num)
            bgw_keys = [
                "checkpoints_timed",
                "checkpoints_req",
                "buffers_checkpoint",
                "buffers_clean",
                "buffers_backend",
            ]
            bgw = one_row(conn, f"SELECT {', '.join(exprs[k] for k in bgw_keys)} FROM {frm}")
            dbstat = one_row(
                conn,
                "SELECT xact_commit, xact_rollback, blks_read, blks_hit FROM pg_stat_database "
                "WHERE datname = current_database()",
            )
            rels = conn.execute(
                "SELECT c.relname, c.relkind, pg_relation_size(c.oid), pg_total_relation_size(c.oid), "
                "coalesce((SELECT option_value::int FROM pg_options_to_table(c.reloptions) "
                "WHERE option_name = 'fillfactor'), CASE c.relkind WHEN 'r' THEN 100 END) "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i', 'p') "
                "ORDER BY pg_relation_size(c.oid) DESC LIMIT 50"
            ).fetchall()
        return {
            "version": version,
            "server_version_num": num,
            "data_checksums": checksums == "on",
            "settings": {n: {"setting": s, "unit": u, "source": src} for n, s, u, src in settings},
            "database_bytes": db_bytes,
            "all_databases_bytes": all_db_bytes,
            "bgwriter": dict(zip(bgw_keys, bgw)),
            "database_stats": dict(zip(["xact_commit", "xact_rollback", "blks_read", "blks_hit"], dbstat)),
            "relations": [
                {"relname": r, "relkind": k, "relation_bytes": b, "total_bytes": t, "fillfactor": f}
                for r, k, b, t, f in rels
            ],
        }


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _check_shell_safe(pgdata: Path) -> None:
    """pg_ctl and initdb start the server through /bin/sh with the data directory and the log file in
    double quotes: refuse a path in which the shell would expand anything ($, `, ", \\, newline)."""
    text = str(pgdata.absolute())
    bad = sorted({c for c in text if c in '$`"\\\n\r' or ord(c) < 32})
    if bad:
        raise LabError(
            f"refusing data directory {text!r}: it contains {''.join(bad)!r}, which pg_ctl's shell "
            "command line would expand; use a work directory without these characters"
        )


def check_reachable(path: Path, user: str) -> None:
    """PostgreSQL runs as `user`: every parent of its data directory must be searchable by it.

    A repository under /root or a 0700 temporary directory is not; say which directory blocks it.
    """
    pw = pwd.getpwnam(user)
    for parent in reversed(path.resolve().parents):
        st = parent.stat()
        if st.st_uid == pw.pw_uid or st.st_mode & 0o001 or (st.st_gid == pw.pw_gid and st.st_mode & 0o010):
            continue
        raise LabError(
            f"PostgreSQL's user {user!r} cannot reach {path}: {parent} is not searchable by it "
            f"(mode {st.st_mode & 0o777:o}); set `workdir:` in the study config to a directory "
            f"{user!r} can reach, or `chmod o+x {parent}`"
        )


@contextlib.contextmanager
def running(
    pgdata: Path,
    port: int,
    bin_dir: Path,
    user: str,
    settings: dict[str, Any] | None = None,
    *,
    init: bool = False,
    run_settings: dict[str, Any] | None = None,
    wrap: Callable[[list[str]], list[str]] | None = None,
    waldir: Path | None = None,
    initdb_args: Sequence[str] = (),
) -> Iterator[Cluster]:
    """A started cluster for the duration of the block (initdb first if `init`); always stopped after.

    `settings` go to the cluster's own config at initdb; `run_settings` to the per-run file read at
    this start (an empty dict clears the previous run's); `wrap` wraps the start command."""
    _check_shell_safe(pgdata)
    pw = pwd.getpwnam(user)
    # mkdtemp makes it 0700: only root (the lab, pgbench, sysbench) and the server's user can enter it,
    # so the socket's trust authentication is open to no one else
    sockdir = Path(tempfile.mkdtemp(prefix="pgfs-sock-"))
    os.chown(sockdir, pw.pw_uid, pw.pw_gid)
    log = pgdata.parent / "postgresql.log"
    cluster = Cluster(pgdata, port, bin_dir, user, sockdir, log, wrap or (lambda cmd: cmd))
    try:
        check_reachable(pgdata.parent, user)
        try:
            check_reachable(bin_dir, user)
        except LabError as exc:  # a pinned build unpacked into a lab under /root, say
            raise LabError(
                f"{exc}\n  (these are the PostgreSQL binaries; a pinned build goes where $PGFSLAB_PG_CACHE says: "
                f"a directory {user!r} can reach)"
            ) from None
        if init:
            pgdata.mkdir(mode=0o700, exist_ok=False)
            os.chown(pgdata, pw.pw_uid, pw.pw_gid)
            if waldir is not None:
                _check_shell_safe(waldir)
            cluster.initdb(settings or {}, waldir, initdb_args)
        elif not (pgdata / "PG_VERSION").exists():
            raise LabError(f"no cluster at {pgdata}; the target must be prepared first")
        if run_settings is not None:
            cluster.set_run_settings(run_settings)
        cluster.notes += cluster.reap()  # a crash of an earlier run may have left a stale postmaster.pid
        cluster.start()
        yield cluster
    finally:
        # leaving on an exception (Ctrl-C, a lab error, a full disk whose shutdown checkpoint cannot be
        # written and would wait out pg_ctl's timeout): stop at once; PostgreSQL recovers at the next start
        cluster.notes += cluster.stop("immediate" if sys.exc_info()[0] is not None else "fast")
        with contextlib.suppress(OSError):
            for f in sockdir.iterdir():
                f.unlink()
            sockdir.rmdir()


def wait_ready(cluster: Cluster, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cluster.query("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
