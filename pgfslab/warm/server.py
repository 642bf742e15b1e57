"""The warm server: import the analysis stage once, then fork a child per request (pgfslab.warm says why).

One thread, one selector: the listening socket, each client's connection, and a wake-up pipe for SIGCHLD.
Forking from a single-threaded process with no open database, no kernel and no event loop is what keeps a
child as clean as a fresh interpreter: the imports are all it inherits.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

from pgfslab.warm import protocol

# Imported once here instead of in every notebook process, kernel and first cell. Import only: nothing here
# may start a thread, open a database or create an event loop (a forked child would inherit it half-made).
PREWARM = (
    "papermill",
    "nbclient",
    "nbformat",
    "nbconvert",
    "jupyter_client",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",  # a kernel's start-up imports debugpy through it: 0.2 s of a forked kernel's 0.3
    "IPython",
    "numpy",
    "polars",
    "duckdb",
    "pyarrow",
    "altair",
    "vl_convert",
    "scipy.stats",
    "yaml",
    "pgfslab.cli.main",
    "pgfslab.cli.data",
    "pgfslab.analysis.charts",
    "pgfslab.analysis.report",
    "pgfslab.analysis.queries",
    "pgfslab.analysis.notebook",
    "pgfslab.analysis.execute",
    "pgfslab.analysis.registry",
    "pgfslab.paper.build",
    "pgfslab.paper.sections",
    "pgfslab.paper.pdf_export",
    # a run (`pgfslab run-one`): its modules, PostgreSQL's driver, a precision round's statistics
    "psycopg",
    "pgfslab.config.study",
    "pgfslab.run.execute",
    "pgfslab.run.precision",
)
# the lab commands that measure (a run): the server imports nothing while one of them runs
MEASURING = (["run-one"],)
PREWARM_PACKAGES = ("pgfslab.analysis.answers", "pgfslab.analysis.stats", "pgfslab.analysis.verdicts")
# Imported after the server listens, one module at a time while no request waits (a notebook never waits for
# them) and no run is measuring (they take the CPU): Snakemake, whose dry run certifies a finished study for
# pgfslab.noop (`snakemake` entry; its imports are 1.7 s of a 4 s dry run cold), with the executor plugins its
# command line loads.
PREWARM_IDLE = (
    "snakemake.cli",
    "snakemake.api",
    "snakemake.workflow",
    "snakemake.dag",
    "snakemake.scheduling.job_scheduler",
    "snakemake_interface_executor_plugins.registry",
    "snakemake_executor_plugin_slurm",
    "pgfslab.cli.snakemake_main",
)


def prewarm() -> list[str]:
    """Import PREWARM and every module of PREWARM_PACKAGES; returns what could not be imported (a missing
    optional module only costs its import in the child)."""
    failed = []
    names = list(PREWARM)
    for pkg in PREWARM_PACKAGES:
        try:
            mod = importlib.import_module(pkg)
        except Exception:
            failed.append(pkg)
            continue
        names += [f"{pkg}.{m.name}" for m in pkgutil.iter_modules(mod.__path__)]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:
            failed.append(name)
    return failed


def prewarm_one(name: str) -> None:
    """Import one module of PREWARM_IDLE, leaving the warning filters as they were (pandas, which the Slurm
    plugin imports, adds some: a kernel forked later must see a fresh interpreter's)."""
    import warnings

    filters = list(warnings.filters)
    try:
        importlib.import_module(name)
    except Exception:
        pass  # imported (or failed again) in the child that needs it
    finally:
        warnings.filters[:] = filters


def _entry(entry: str, argv: list[str]) -> int:
    """Run a request's entry point in this (child) process; its exit status."""
    if entry == "pgfslab":
        from pgfslab.cli.main import main

        sys.argv = ["pgfslab", *argv]
        return main(argv) or 0
    if entry == "snakemake":  # what `python -m snakemake ARGV` does
        from snakemake.workflow import Workflow

        from pgfslab.cli import snakemake_main

        Workflow._rundir = os.getcwd()  # a class attribute Snakemake sets when it is imported (here: in /)
        snakemake_main.main(argv)
        return 0
    if entry == "kernel":  # what `python -m ipykernel_launcher -f CONNECTION_FILE` does
        from ipykernel import kernelapp

        # ipykernel reads JPY_PARENT_PID when it is imported (here: in the server), as the default of
        # parent_handle; a kernel launched by jupyter_client has it from its environment, so this one too
        parent = os.environ.get("JPY_PARENT_PID")
        handle = [f"--IPKernelApp.parent_handle={int(parent)}"] if parent and parent.isdigit() else []
        sys.argv = ["ipykernel_launcher", *handle, *argv]
        kernelapp.launch_new_instance(argv=sys.argv[1:])
        return 0
    raise ValueError(f"unknown entry {entry!r}")


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


class Server:
    def __init__(self, path: Path, idle_s: float = protocol.IDLE_S) -> None:
        self.path = path
        self.idle_s = idle_s
        self.sel = selectors.DefaultSelector()
        self.conns: dict[socket.socket, tuple[bytearray, list[int]]] = {}
        self.children: dict[int, socket.socket | None] = {}
        self.last = time.monotonic()
        self.stopping = False
        self.told = False
        self.render_path: Path | None = None  # where the renderer listens (pgfslab.warm.render)
        self.render_pipe: int | None = None  # its standard input: closed, it ends
        self.later = list(PREWARM_IDLE)  # imported while nothing waits
        self.measuring: set[int] = set()  # children running a measurement (MEASURING): no idle imports then

    # -- set-up and the loop
    def listen(self) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a stale socket: the client that started us holds the start lock
        self.listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.inode = self.path.stat().st_ino
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        self.wake_w = wake_w
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._stop)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _ours(self) -> bool:
        try:
            return self.path.stat().st_ino == self.inode
        except FileNotFoundError:
            return False

    def serve(self) -> None:
        try:
            while True:
                busy = bool(self.children or self.conns)
                if not busy and (self.stopping or time.monotonic() - self.last >= self.idle_s or not self._ours()):
                    return
                if self.stopping and not self.told:  # our children are told once, then waited for
                    self.told = True
                    self._signal_children(signal.SIGTERM)
                idle_work = bool(self.later) and not self.stopping and not self.measuring
                events = self.sel.select(timeout=0 if idle_work else 1.0)
                if not events and idle_work:
                    prewarm_one(self.later.pop(0))
                for key, _ in events:
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        with contextlib.suppress(BlockingIOError):
                            while os.read(self.wake_r, 512):
                                pass
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                self._reap()
        finally:
            if self._ours():  # this key's files go with the last server that served it
                self.path.unlink()
                for suffix in (".lock", ".log"):
                    self.path.with_suffix(suffix).unlink(missing_ok=True)

    def spawn_renderer(self) -> subprocess.Popen:
        self.render_path = self.path.with_name(f"{self.path.stem}.{os.getpid()}.render.sock")
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgfslab.warm.render", str(self.render_path)],
            stdin=subprocess.PIPE,
            stdout=sys.stdout,
            stderr=sys.stderr,
        )
        assert proc.stdin is not None
        self.render_pipe = os.dup(proc.stdin.fileno())
        proc.stdin.close()
        return proc

    # -- connections
    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():  # the folder is private already; a second lock on the door
            conn.close()
            return
        self.last = time.monotonic()
        self.conns[conn] = (bytearray(), [])
        self.sel.register(conn, selectors.EVENT_READ, "conn")

    def _read(self, conn: socket.socket) -> None:
        buffer, fds = self.conns[conn]
        try:
            data, new_fds, _, _ = socket.recv_fds(conn, 1 << 16, 8)
        except OSError:
            data, new_fds = b"", []
        fds += new_fds
        if not data:
            self._close(conn)
            return
        buffer += data
        for request in protocol.decode_lines(buffer):
            if len(fds) != 3:
                self._answer(conn, {"error": f"expected 3 file descriptors with the request, got {len(fds)}"})
                self._close(conn)
                return
            self._start(conn, request, fds)
            fds.clear()

    def _close(self, conn: socket.socket) -> None:
        """A connection ended: a child still running for it has lost its client (killed, say), so it is
        told to stop as its client would have been (SIGTERM to its process group: itself and what it ran)."""
        buffer, fds = self.conns.pop(conn, (bytearray(), []))
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(conn)
        conn.close()
        for pid, c in self.children.items():
            if c is conn:
                self.children[pid] = None
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGTERM)
        self.last = time.monotonic()

    def _answer(self, conn: socket.socket, message: dict) -> None:
        with contextlib.suppress(OSError):
            conn.setblocking(True)
            conn.sendall(protocol.encode(message))

    # -- children
    def _start(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        entry = request.get("entry")
        if entry not in protocol.ENTRIES:
            self._answer(conn, {"error": f"unknown entry {entry!r}"})
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._child(request, fds)  # never returns
        with contextlib.suppress(OSError):  # here too: a signal relayed before the child's own call finds its group
            os.setpgid(pid, pid)
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        if entry == "pgfslab" and list(request.get("argv", []))[:1] in MEASURING:
            self.measuring.add(pid)
        self._answer(conn, {"pid": pid})

    def _child(self, request: dict, fds: list[int]) -> None:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.setpgid(0, 0)  # its own group: a stop reaches it and what it starts, nothing of ours
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            keep = set(range(3))
            for fd in [*fds, self.wake_r, self.wake_w, *([self.render_pipe] if self.render_pipe is not None else [])]:
                if fd not in keep:
                    os.close(fd)
            self.sel.close()
            self.listener.close()
            for c in self.conns:
                c.close()
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            if self.render_path is not None:
                from pgfslab.warm import render

                os.environ[render.ENV] = str(self.render_path)
            sys.path[0] = request["cwd"]  # as `python -m ...` started there would have it
            code = _exit_code(_entry(request["entry"], list(request["argv"])))
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _reap(self) -> None:
        while True:  # our requests' children, and the renderer should it end
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self.measuring.discard(pid)
            self.last = time.monotonic()
            if conn is not None:
                self._answer(conn, {"status": status})
                self._close(conn)

    def _signal_children(self, signum: int) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signum)


def main(path: Path, idle_s: float = protocol.IDLE_S, lock_fd: int | None = None) -> int:
    """Import, listen, then release the start lock (`lock_fd`, inherited from the client that started us),
    and serve until idle."""
    t0 = time.monotonic()
    server = Server(path, idle_s)
    renderer = server.spawn_renderer()  # spawned, not forked: it starts vl-convert's engine (threads)
    failed = prewarm()
    print(
        f"pgfslab warm server {os.getpid()}: imported in {time.monotonic() - t0:.1f} s"
        + (f" (not importable: {', '.join(failed)})" if failed else ""),
        flush=True,
    )
    server.listen()
    if lock_fd is not None:
        os.close(lock_fd)
    try:
        server.serve()
    finally:
        if server.render_pipe is not None:
            os.close(server.render_pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            renderer.wait(timeout=10)
    print(f"pgfslab warm server {os.getpid()}: idle, exiting", flush=True)
    return 0
