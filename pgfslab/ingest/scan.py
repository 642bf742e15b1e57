"""One read of a big log: its hash, size, newlines, alphabet and byte counts, and its first line.
Without polars (and numpy only when bytes are counted): the ingest command's fast path for a plain
per-transaction log starts from here (pgfslab.ingest.fast). Outside the parsers package, whose
import loads every parser (and polars)."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _numpy() -> Any:
    # imported on first use: numpy is optional for the fast path (only byte counts need it)
    import numpy

    return numpy


def first_line(path: Path, limit: int = 1 << 16) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(limit)
    pos = head.find(b"\n")
    return (head if pos < 0 else head[:pos]).rstrip(b"\r")


# ----------------------------------------------------------------------------- one pass over a big file


@dataclass(frozen=True)
class FileScan:
    """What one read of a file found: its SHA-256 (the ingest's file_id), size, number of newlines,
    whether it holds a byte outside `alphabet`, whether it ends with a newline, and how often each
    byte of `count` occurs."""

    sha256: str
    size: int
    newlines: int
    foreign: bool
    ends_with_newline: bool
    counts: dict[int, int]


def scan_file(path: Path, alphabet: bytes, count: bytes = b"") -> FileScan:
    """Hash a file and check its bytes in one read, 16 MiB at a time: hashlib (in a worker thread:
    it releases the GIL) next to bytes.translate (the alphabet) and numpy (the byte counts: 4x
    faster than bytes.count here, so only when `count` asks for bytes). Used to decide whether a big log may take the DuckDB fast path."""
    np = _numpy() if count else None

    h = hashlib.sha256()
    size = newlines = 0
    foreign = False
    counts = dict.fromkeys(count, 0)
    last = b""
    with open(path, "rb") as fh, ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for chunk in iter(lambda: fh.read(1 << 24), b""):
            if pending is not None:
                pending.result()  # keep the hash's updates in file order
            pending = pool.submit(h.update, chunk)
            size += len(chunk)
            if np is None:  # bytes.count: no numpy import (0.3 s) for a scan that counts only newlines
                newlines += chunk.count(b"\n")
            else:
                view = np.frombuffer(chunk, dtype=np.uint8)
                newlines += int(np.count_nonzero(view == 10))
                for b in counts:
                    counts[b] += int(np.count_nonzero(view == b))
            if not foreign and chunk.translate(None, alphabet):
                foreign = True
            last = chunk[-1:]
        if pending is not None:
            pending.result()
    return FileScan(h.hexdigest(), size, newlines, foreign, last == b"\n", counts)
