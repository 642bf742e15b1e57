"""What a warm server and its clients agree on: where the socket is, and how a request and its answers look.

A request is one JSON line sent with the client's standard streams (SCM_RIGHTS): `entry` (one of
`ENTRIES`), `argv`, `cwd`, `env`. The server answers JSON lines: `{"pid": N}` once the child runs, then
`{"status": S}` (os.waitpid's status) when it has ended, or `{"error": "..."}` when it could not start it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

# seconds a server waits, with no child and no connection, before it exits
IDLE_S = 90.0
# what a child may run: the lab's command line, an IPython kernel (ipykernel_launcher's arguments) and
# Snakemake's command line
ENTRIES = ("pgfslab", "kernel", "snakemake")
IMPORT_TIME_ENV = ("OPENBLAS_", "OMP_", "MKL_", "POLARS_", "PYTHON", "JUPYTER_", "IPYTHON")
# What Snakemake sets in the environment of a job of `threads` threads (snakemake/shell.py), so in a
# notebook's or the ingest's job (1 thread) but not in `make`'s own commands: those that want the jobs'
# server (its start ahead of Snakemake, pgfslab.noop's dry run) set them alike (`--job-threads 1`), or
# their key would name a second server, started and imported for nothing.
JOB_THREADS_ENV = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def as_job(threads: int) -> None:
    """This process's environment as a Snakemake job's of `threads` threads (JOB_THREADS_ENV)."""
    for name in JOB_THREADS_ENV:
        os.environ[name] = str(threads)


PACKAGE = Path(__file__).resolve().parent.parent


def enabled() -> bool:
    """PGFSLAB_WARM=0 runs every command and kernel cold (the way a shell or JupyterLab starts them)."""
    return os.environ.get("PGFSLAB_WARM", "1") != "0"


def code_key() -> str:
    """A digest of what the server imports: the interpreter, the installed environment's lock stamp, every
    file of the lab's package (name, size, modification time) and the environment variables libraries read
    at import. A change starts a new server (the old one idles out)."""
    h = hashlib.sha256(sys.executable.encode())
    # what a library reads from the environment when it is imported (thread pools, BLAS kernels)
    for name in sorted(n for n in os.environ if n.startswith(IMPORT_TIME_ENV)):
        h.update(f"{name}={os.environ[name]}\n".encode())
    stamp = Path(sys.prefix) / ".lock-sha256"
    if stamp.exists():
        h.update(stamp.read_bytes())
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(root, name))
            h.update(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def runtime_dir() -> Path:
    """A folder only this user can enter (sockets there accept only this user's requests)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    d = Path(base) / f"pgfslab-warm-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    st = d.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{d}: not this user's private folder (owner {st.st_uid}, mode {oct(st.st_mode)})")
    return d


def socket_path(key: str | None = None) -> Path:
    return runtime_dir() / f"{key or code_key()}.sock"


def encode(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


def decode_lines(buffer: bytearray) -> list[dict]:
    """Take the whole JSON lines out of `buffer` (what is left is an incomplete line)."""
    out = []
    while (end := buffer.find(b"\n")) >= 0:
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        if line.strip():
            out.append(json.loads(line))
    return out
