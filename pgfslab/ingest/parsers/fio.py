"""fio's ``--output-format=json`` report (fio 3.x): one row per job and direction (read, write, trim).

What is read (fio 3.33's layout, checked on the files in recorded/):

* ``"fio version"`` at the top; ``"global options"`` (options before the first ``--name``) merged under each
  job's ``"job options"`` (a job's own options win). Options are strings as given (``bs`` "8k", ``direct``
  "1"); an option not given is null here (fio's defaults are not guessed).
* per direction: ``runtime`` (ms), ``total_ios``, ``io_bytes``, ``iops``, ``bw_bytes`` (bytes/s),
  ``lat_ns.mean`` (submission + completion), ``slat_ns.mean``, ``clat_ns.mean`` and ``clat_ns.percentile``
  (keys like "99.900000", values in ns; absent when no I/O completed), ``lat_ns.percentile`` only with
  ``lat_percentiles=1``. Times are returned in microseconds. Where submission is synchronous (libaio on
  zfs-fuse: FUSE direct I/O completes inside io_submit) the time is in slat and clat is ~1 µs: use lat.
  fio 2.x's ``clat``/``lat`` (µs) and ``bw`` (KiB/s) are read when the ``_ns``/``bw_bytes`` fields are missing.
* ``sync``: with ``fsync=``/``fdatasync=`` the job's ``sync.lat_ns`` holds the latency of the fsync/fdatasync
  calls (``N`` of them; ``sync.total_ios`` stays 0 in fio 3.33). Reported on the job's write row (else on
  its first row) as ``sync_*`` columns; the write row's ``clat`` is then the write() call alone.
* a direction without I/O (``total_ios`` 0 or absent, and ``io_bytes`` 0) gives no row; a job without any I/O
  gives one row with ``direction`` null and a warning (a failed job: see ``error``).

Units by fio version (read from fio's stat.c history, and checked on the captures in tests/data/captured/fio/):

* ``io_bytes``: KiB before fio-2.21 (``ts->io_bytes[ddir] >> 10``, "since the dawn of time", commit c12d597a),
  bytes from fio-2.21 on, which also adds ``io_kbytes``. Decided by ``io_kbytes`` when present, else by the
  version; a report without either is decided by which reading agrees with ``bw × runtime`` (a warning says
  so). Stored in bytes; ``io_unit_read`` records what the file held ("KiB" or "bytes").
* bandwidth: ``bw_bytes`` (bytes/s) from fio-3.2; before, ``bw`` (KiB/s) only: ``bw_unit_read``.
* latencies: ``*_ns`` (ns) from fio-2.99, ``clat``/``slat``/``lat`` in µs before: ``lat_unit_read``. Stored in µs.
* ``total_ios`` from fio-2.1.14: absent before, and then null here (not 0).

Consistency (the report states each quantity twice): ``bw × runtime ≈ io_bytes`` and ``iops × runtime ≈
total_ios``, within the rounding of the printed numbers and 2 %. A row that fails says why in ``check`` and
gives a warning naming the job's line; its values are stored as read.

Text outside the JSON document: fio prints some notes on stdout before the report (seen:
``note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1``) and
errors after it. Such lines are kept in the ``fio_text`` table (line, position before/after, text) and each
gives a warning; nothing is dropped. A file with no JSON object, or broken JSON, raises ParseError naming the
file and the line (counted in the whole file, the text before the JSON included).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.ingest.parsers._common import LINES_KEY, LINES_SCHEMA, NOISE, NOT_UNDERSTOOD, PARSED, ParseError

NAME = "fio"
DESCRIPTION = "fio --output-format=json report: one row per job and direction, sync latency, text around the JSON"
WARNINGS_KEY = "_warnings"

SCHEMA: dict[str, Any] = {
    "fio_version": pl.String,
    "job": pl.String,
    "job_line": pl.Int64,  # line of the job's "jobname" in the file
    "description": pl.String,
    "direction": pl.String,  # read | write | trim (null: the job did no I/O)
    "rw": pl.String,
    "bs": pl.String,
    "bs_bytes": pl.Int64,  # of this direction (bs "4k,8k" is read,write)
    "iodepth": pl.Int64,
    "direct": pl.Boolean,
    "ioengine": pl.String,
    "fsync": pl.Int64,
    "fdatasync": pl.Int64,
    "size": pl.String,
    "runtime_ms": pl.Int64,
    "elapsed_s": pl.Int64,
    "total_ios": pl.Int64,
    "io_bytes": pl.Int64,
    "iops": pl.Float64,
    "bw_bytes_per_s": pl.Int64,
    "lat_mean_us": pl.Float64,
    "slat_mean_us": pl.Float64,
    "clat_mean_us": pl.Float64,
    "clat_p50_us": pl.Float64,
    "clat_p95_us": pl.Float64,
    "clat_p99_us": pl.Float64,
    "clat_p999_us": pl.Float64,
    "lat_p50_us": pl.Float64,  # total latency percentiles: only with lat_percentiles=1
    "lat_p95_us": pl.Float64,
    "lat_p99_us": pl.Float64,
    "lat_p999_us": pl.Float64,
    "sync_n": pl.Int64,
    "sync_lat_mean_us": pl.Float64,
    "sync_p50_us": pl.Float64,
    "sync_p95_us": pl.Float64,
    "sync_p99_us": pl.Float64,
    "sync_p999_us": pl.Float64,
    "error": pl.Int64,
    "io_unit_read": pl.String,  # what the report's io_bytes was in: "bytes" (fio >= 2.21) or "KiB" (older)
    "bw_unit_read": pl.String,  # "bytes/s" (bw_bytes, fio >= 3.2) or "KiB/s" (bw)
    "lat_unit_read": pl.String,  # "ns" (*_ns, fio >= 2.99) or "us" (clat/slat/lat)
    "check": pl.String,  # null, or which of bw x runtime = io_bytes, iops x runtime = total_ios failed
}
TEXT_SCHEMA: dict[str, Any] = {"line": pl.Int64, "position": pl.String, "text": pl.String}
WARNINGS_SCHEMA: dict[str, Any] = {"line": pl.Int64, "message": pl.String}
TABLES = {"fio_job": SCHEMA, "fio_text": TEXT_SCHEMA}
UNITS = {
    "fio_job": {
        "job_line": "line number",
        "bs_bytes": "bytes",
        "iodepth": "count",
        "fsync": "count (writes per fsync)",
        "fdatasync": "count (writes per fdatasync)",
        "runtime_ms": "ms",
        "elapsed_s": "s",
        "total_ios": "count (null before fio-2.1.14)",
        "io_bytes": "bytes (converted from KiB before fio-2.21: see io_unit_read)",
        "iops": "1/s",
        "bw_bytes_per_s": "bytes/s (converted from KiB/s before fio-3.2: see bw_unit_read)",
        **{c: "µs (converted from ns from fio-2.99: see lat_unit_read)" for c in SCHEMA if c.endswith("_us")},
        "sync_n": "count",
        "error": "errno",
    },
    "fio_text": {"line": "line number"},
}

PCTS = {"p50": "50.000000", "p95": "95.000000", "p99": "99.000000", "p999": "99.900000"}


def sniff(head: str, path: str | Path | None = None) -> bool:
    return '"fio version"' in head and '"jobs"' in head


def _excerpt(s: str, n: int = 80) -> str:
    return repr(s if len(s) <= n else s[:n] + "...")


def _size_bytes(tok: str | None) -> int | None:
    if tok is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(i?b)?\s*", tok, re.IGNORECASE)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " kmgtp".index((m.group(2) or " ").lower())


def _int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(str(v))
    except ValueError:
        return None


def _us(v: Any, scale: float) -> float | None:
    if v is None:
        return None
    x = float(v)
    return None if math.isnan(x) else x / scale


def version_tuple(version: Any) -> tuple[int, ...] | None:
    """(3, 33) of "fio-3.33", (2, 2, 10) of "fio-2.2.10"; None when there is no version to read."""
    m = re.match(r"\s*fio-(\d+(?:\.\d+)*)", str(version or ""))
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def io_unit(sec: dict[str, Any], version: tuple[int, ...] | None) -> tuple[str | None, str | None]:
    """("bytes" or "KiB": what `sec["io_bytes"]` is in, a warning when it had to be inferred)."""
    if "io_kbytes" in sec:
        return "bytes", None
    if version is not None:
        return ("bytes" if version >= (2, 21) else "KiB"), None
    iob, bw, rt = _int(sec.get("io_bytes")), sec.get("bw"), _int(sec.get("runtime"))
    if iob and bw and rt:
        kib = float(bw) * rt / 1000.0  # bw is KiB/s in every version
        unit = "KiB" if abs(iob - kib) <= abs(iob / 1024.0 - kib) else "bytes"
        return unit, f"no fio version and no io_kbytes: io_bytes read as {unit} (the one that agrees with bw x runtime)"
    return "KiB", "no fio version and no io_kbytes: io_bytes read as KiB (fio before 2.21)"


def checks(row: dict[str, Any], bw_step: float, iops_step: float, io_step: float) -> str | None:
    """What the row states two ways and does not agree on (None: all agree or cannot be checked):
    bw x runtime = io_bytes, iops x runtime = total_ios; `*_step` are the resolutions of the printed
    numbers (a KiB/s bandwidth is good to 1 KiB/s, an integer iops to 1/s)."""
    out = []
    rt, iob, bw = row.get("runtime_ms"), row.get("io_bytes"), row.get("bw_bytes_per_s")
    if rt and iob is not None and bw is not None:
        secs = rt / 1000.0
        tol = bw_step * secs + io_step + 0.02 * iob
        if abs(bw * secs - iob) > tol:
            out.append(f"bw x runtime = {bw * secs:.0f} bytes, io_bytes = {iob}")
    ios, iops = row.get("total_ios"), row.get("iops")
    if rt and ios is not None and iops is not None:
        secs = rt / 1000.0
        if abs(iops * secs - ios) > iops_step * secs + 1 + 0.02 * ios:
            out.append(f"iops x runtime = {iops * secs:.1f}, total_ios = {ios}")
    return "; ".join(out) or None


def _lat(sec: dict[str, Any], kind: str) -> tuple[float | None, dict[str, float | None], int | None]:
    """(mean µs, {p50..p999: µs}, N) of sec[kind + '_ns'] (fio 3) or sec[kind] (µs, fio 2)."""
    if isinstance(sec.get(f"{kind}_ns"), dict):
        d, scale = sec[f"{kind}_ns"], 1000.0
    elif isinstance(sec.get(kind), dict):
        d, scale = sec[kind], 1.0
    else:
        return None, {k: None for k in PCTS}, None
    n = _int(d.get("N"))
    pct = d.get("percentile") or {}
    mean = _us(d.get("mean"), scale) if (n is None or n > 0) else None
    return mean, {k: _us(pct.get(v), scale) for k, v in PCTS.items()}, n


def _lat_unit(sec: dict[str, Any]) -> str | None:
    if any(isinstance(sec.get(f"{k}_ns"), dict) for k in ("clat", "lat", "slat")):
        return "ns"
    if any(isinstance(sec.get(k), dict) for k in ("clat", "lat", "slat")):
        return "us"
    return None


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ParseError(path, line, f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def parse(path: str | Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    text = _decode(path)
    if not text.strip():
        raise ParseError(path, None, "empty file (fio printed nothing: did it fail before starting?)")
    lines = text.splitlines(keepends=True)
    offsets, pos = [], 0
    for ln in lines:
        offsets.append(pos)
        pos += len(ln)
    start_idx = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("{")), None)
    if start_idx is None:
        first = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
        raise ParseError(
            path,
            first + 1,
            f"no JSON object in the file (is it fio --output-format=json output?): {_excerpt(lines[first].rstrip())}",
        )
    start = offsets[start_idx] + (len(lines[start_idx]) - len(lines[start_idx].lstrip()))
    try:
        doc, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise ParseError(
            path, line, f"invalid JSON: {exc.msg} (column {exc.colno}); the fio report is broken or cut off"
        ) from None
    text_rows: list[tuple[int, str, str]] = []
    warnings: list[tuple[int | None, str]] = []
    for i in range(start_idx):
        if lines[i].strip():
            text_rows.append((i + 1, "before", lines[i].rstrip("\r\n")))
    end_line = text.count("\n", 0, end)  # 0-based index of the line holding the JSON's last character
    rest = lines[end_line][end - offsets[end_line] :] if end_line < len(lines) else ""
    if rest.strip():
        text_rows.append((end_line + 1, "after", rest.strip()))
    for i in range(end_line + 1, len(lines)):
        if lines[i].strip():
            text_rows.append((i + 1, "after", lines[i].rstrip("\r\n")))
    for row_no, where, row_text in text_rows:
        warnings.append((row_no, f"non-JSON text {where} the fio report: {_excerpt(row_text)}"))

    json_line = start_idx + 1
    if not isinstance(doc, dict) or "jobs" not in doc:
        raise ParseError(path, json_line, "the JSON object has no 'jobs' list: not a fio report")
    if not isinstance(doc["jobs"], list):
        raise ParseError(path, json_line, "'jobs' is not a list")
    version = doc.get("fio version")
    vt = version_tuple(version)
    if version is None:
        warnings.append((json_line, "no 'fio version' in the report"))
    elif vt is None:
        warnings.append((json_line, f"unreadable 'fio version' {version!r}"))
    job_lines = [text.count("\n", 0, start + m.start()) + 1 for m in re.finditer(r'"jobname"\s*:', text[start:end])]
    glob = doc.get("global options") or {}
    rows: list[dict[str, Any]] = []
    for j, job in enumerate(doc["jobs"]):
        jline = job_lines[j] if j < len(job_lines) else json_line
        if not isinstance(job, dict) or "jobname" not in job:
            raise ParseError(path, jline, f"job #{j + 1} has no 'jobname'")
        opts = {**glob, **(job.get("job options") or {})}
        bs_parts = [p for p in str(opts["bs"]).split(",")] if "bs" in opts else []
        base = {
            "fio_version": version,
            "job": job["jobname"],
            "job_line": jline,
            "description": job.get("desc") or opts.get("description"),
            "rw": opts.get("rw", opts.get("readwrite")),
            "bs": opts.get("bs"),
            "iodepth": _int(opts.get("iodepth")),
            "direct": None if opts.get("direct") is None else str(opts["direct"]) not in ("0", "false", ""),
            "ioengine": opts.get("ioengine"),
            "fsync": _int(opts.get("fsync")),
            "fdatasync": _int(opts.get("fdatasync")),
            "size": opts.get("size"),
            "elapsed_s": _int(job.get("elapsed")),
            "error": _int(job.get("error")),
        }
        if base["error"]:
            warnings.append((jline, f"job {job['jobname']!r} reports error {base['error']}"))
        s_mean, s_pct, s_n = _lat(job.get("sync") or {}, "lat")
        job_rows = []
        for di, direction in enumerate(("read", "write", "trim")):
            sec = job.get(direction)
            if not isinstance(sec, dict):
                continue
            ios, iob = _int(sec.get("total_ios")), _int(sec.get("io_bytes")) or 0
            if not ios and iob == 0:
                continue
            unit, why = io_unit(sec, vt)
            if why is not None:
                warnings.append((jline, f"job {job['jobname']!r} {direction}: {why}"))
            c_mean, c_pct, _ = _lat(sec, "clat")
            l_mean, l_pct, _ = _lat(sec, "lat")
            s_mean_dir, _, _ = _lat(sec, "slat")
            bw = sec.get("bw_bytes")
            bw_unit = "bytes/s"
            if bw is None and sec.get("bw") is not None:
                bw, bw_unit = int(sec["bw"]) * 1024, "KiB/s"
            bs_tok = bs_parts[min(di, len(bs_parts) - 1)] if bs_parts else None
            row = {
                **base,
                "direction": direction,
                "bs_bytes": _size_bytes(bs_tok),
                "runtime_ms": _int(sec.get("runtime")),
                "total_ios": ios,
                "io_bytes": iob * 1024 if unit == "KiB" else iob,
                "iops": float(sec["iops"]) if sec.get("iops") is not None else None,
                "bw_bytes_per_s": _int(bw),
                "lat_mean_us": l_mean,
                "slat_mean_us": s_mean_dir,
                "clat_mean_us": c_mean,
                **{f"clat_{k}_us": v for k, v in c_pct.items()},
                **{f"lat_{k}_us": v for k, v in l_pct.items()},
                "io_unit_read": unit,
                "bw_unit_read": bw_unit,
                "lat_unit_read": _lat_unit(sec),
            }
            row["check"] = checks(
                row,
                bw_step=1024.0 if bw_unit == "KiB/s" else 1.0,
                iops_step=1.0 if isinstance(sec.get("iops"), int) else 0.001,
                io_step=1024.0 if unit == "KiB" else 1.0,
            )
            if row["check"] is not None:
                warnings.append((jline, f"job {job['jobname']!r} {direction}: inconsistent report: {row['check']}"))
            job_rows.append(row)
        if not job_rows:
            warnings.append((jline, f"job {job['jobname']!r} did no I/O in any direction"))
            job_rows.append({**base, "direction": None})
        if s_n:
            target = next((r for r in job_rows if r.get("direction") == "write"), job_rows[0])
            target.update({"sync_n": s_n, "sync_lat_mean_us": s_mean, **{f"sync_{k}_us": v for k, v in s_pct.items()}})
        rows += job_rows
    jobs = (
        pl.DataFrame([{k: r.get(k) for k in SCHEMA} for r in rows], schema=SCHEMA)
        if rows
        else pl.DataFrame(schema=SCHEMA)
    )
    out = {
        "fio_job": jobs,
        "fio_text": pl.DataFrame(
            {
                "line": [r[0] for r in text_rows],
                "position": [r[1] for r in text_rows],
                "text": [r[2] for r in text_rows],
            },
            schema=TEXT_SCHEMA,
        ),
    }
    if warnings:
        out[WARNINGS_KEY] = pl.DataFrame(
            {"line": [w[0] for w in warnings], "message": [w[1] for w in warnings]}, schema=WARNINGS_SCHEMA
        )
    out[LINES_KEY] = _accounting(text, start_idx, end_line, {r[0] for r in text_rows})
    return out


def _accounting(text: str, start_idx: int, end_line: int, text_lines: set[int]) -> pl.DataFrame:
    """The line accounting: the JSON report's lines are parsed (its rows come from them), the text around
    it (fio_text) not understood, blank lines noise. Warnings about a job (an inconsistent report, an
    error) name its line but do not make it unread."""
    all_lines = text.split("\n")
    if all_lines[-1] == "":
        all_lines.pop()
    kinds = [
        NOT_UNDERSTOOD
        if i + 1 in text_lines
        else NOISE
        if not ln.strip()
        else PARSED
        if start_idx <= i <= end_line
        else NOT_UNDERSTOOD
        for i, ln in enumerate(all_lines)
    ]
    return pl.DataFrame(
        {"line": list(range(1, len(all_lines) + 1)), "kind": kinds, "text": [ln.rstrip("\r") for ln in all_lines]},
        schema=LINES_SCHEMA,
    )
