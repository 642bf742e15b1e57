"""Run a `pgfslab` command or a kernel in a fork of the warm server, or cold where there is none.

The client stands in for the command: the child gets this process's standard streams, working directory,
environment and arguments; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent here are passed on to the child's
process group; this process exits with the child's status (or dies of the child's signal).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pgfslab.warm import protocol

START_TIMEOUT_S = 120.0
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Unavailable(Exception):
    """No warm server could be had (the command then runs cold)."""


def _connect(path: Path) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    return s


def _spawn(path: Path, lock_fd: int) -> subprocess.Popen:
    """Start a server for `path`. It inherits the start lock and holds it until it listens: a client
    that finds no socket waits on the lock instead of starting a second server."""
    log = path.with_suffix(".log")
    with open(log, "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pgfslab.warm", "serve", "--socket", str(path), "--lock-fd", str(lock_fd)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            pass_fds=(lock_fd,),
            start_new_session=True,  # not in the job's process group: a stopped job leaves it to idle out
            cwd="/",  # holds no folder of a study (a child works in its client's)
            env={**os.environ, "PGFSLAB_WARM_SERVER": "1"},
        )


def _path() -> Path:
    try:
        return protocol.socket_path()
    except OSError as exc:
        raise Unavailable(str(exc)) from None


def start() -> None:
    """Have this code's server start importing now, without waiting for it (it will be ready by the time
    the first notebook needs it); nothing when one runs or is starting."""
    path = _path()
    if (s := _connect(path)) is not None:
        s.close()
        return
    with open(path.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another client is starting it
        if (s := _connect(path)) is not None:
            s.close()
            return
        _spawn(path, lock.fileno())


def connect(start: bool = True) -> socket.socket:
    """A connection to this code's server; started (and waited for) when there is none, unless `start` is
    false (then Unavailable)."""
    path = _path()
    if (s := _connect(path)) is not None:
        return s
    if not start:
        raise Unavailable(f"no warm server at {path}")
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held by a server while it starts: then it is ready below
        if (s := _connect(path)) is not None:
            return s
        proc = _spawn(path, lock.fileno())
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if (s := _connect(path)) is not None:
                return s
            if proc.poll() is not None:
                log = path.with_suffix(".log")
                raise Unavailable(f"the warm server exited ({proc.returncode}): {log.read_text()[-500:]}")
            time.sleep(0.05)
        raise Unavailable(
            f"no warm server at {path} after {START_TIMEOUT_S:.0f} s (its log: {path.with_suffix('.log')})"
        )


def _read_message(sock: socket.socket, buffer: bytearray) -> dict | None:
    while True:
        messages = protocol.decode_lines(buffer)
        if messages:
            rest = b"".join(protocol.encode(m) for m in messages[1:])
            buffer[:0] = rest
            return messages[0]
        try:
            data = sock.recv(4096)
        except InterruptedError:
            continue
        if not data:
            return None
        buffer += data


def _streams(sock: socket.socket) -> list[int]:
    """This process's stdin, stdout and stderr to pass on; /dev/null for one that is closed (a process started
    without standard input), or that is the server's connection itself (which then took its number)."""
    out = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            usable = fd != sock.fileno()
        except OSError:
            usable = False
        out.append(fd if usable else os.open(os.devnull, os.O_RDWR))
    return out


def forward(entry: str, argv: list[str], sock: socket.socket, env: dict[str, str] | None = None) -> int:
    """Have the server run `entry argv` with this process's streams and environment (or `env`); relay
    signals; its exit status."""
    request = {"entry": entry, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ) if env is None else env}
    streams = _streams(sock)
    try:
        socket.send_fds(sock, [protocol.encode(request)], streams)
    except OSError as exc:
        raise Unavailable(f"could not pass the standard streams: {exc}") from None
    finally:
        for fd in streams:
            if fd > 2:
                os.close(fd)
    buffer = bytearray()
    first = _read_message(sock, buffer)
    if first is None or "pid" not in first:
        raise Unavailable(f"the warm server did not start {entry}: {first}")
    pid = int(first["pid"])

    def relay(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)

    previous = {s: signal.signal(s, relay) for s in RELAYED}
    try:
        done = _read_message(sock, buffer)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
    if done is None or "status" not in done:
        print(f"pgfslab warm: the server ended before {entry} {' '.join(argv)} did", file=sys.stderr)
        return 1
    status = int(done["status"])
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def cold(entry: str, argv: list[str]) -> int:
    """The same command without a server, in this process (a kernel: exec'd, as jupyter_client would)."""
    if entry == "kernel":
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    if entry == "snakemake":
        os.execv(sys.executable, [sys.executable, "-m", "pgfslab.cli.snakemake_main", *argv])
    from pgfslab.cli.main import main

    return main(argv)


def run(entry: str, argv: list[str], start: bool = True, env: dict[str, str] | None = None) -> int:
    """`entry argv` forked from the warm server, or cold; `start`: start a server when none runs (else cold,
    quietly: a lone command is quicker cold than a server's start-up). `env`: the command's environment when
    it is not this process's (which then chose the server: `--job-threads`)."""
    if protocol.enabled() and not os.environ.get("PGFSLAB_WARM_SERVER"):
        try:
            sock = connect(start)
        except Unavailable as exc:
            if start:
                print(f"pgfslab warm: {exc}; running cold", file=sys.stderr)
        else:
            try:
                return forward(entry, argv, sock, env)
            except Unavailable as exc:
                print(f"pgfslab warm: {exc}; running cold", file=sys.stderr)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    return cold(entry, argv)
