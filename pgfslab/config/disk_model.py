"""The emulated magnetic disk's model: a named drive's datasheet, per-key overrides from the config, and what
follows from them (the seek curve fitted to the datasheet's three seek times, the zoned media rate, the
rotation). The daemon that serves the disk (pgfslab/host/native/pgfslab_disk.c, started by
pgfslab/host/disk_daemon.py) evaluates the same model for every request; `service` here is the same
arithmetic in Python, so the lab can say what the daemon should do (the validation's expected rates, the
tests that compare the two).

One request at a time, from one queue shared by reads and writes. A request that starts where the previous
one ended is sequential and pays its transfer only, if it is a read (the drive's read-ahead holds it) or was
already queued when the previous one completed (the head is on its sector as it finishes); a write that
continues the previous one but came after it finds its sector passed and, with no write cache, waits for it to
come round like any other request (a single-stream fsync loop commits once a revolution). Any other pays

* the command overhead (the datasheet's access time minus its seek time),
* a seek over the distance from the head's cylinder: settle + a·sqrt(cylinders) for short seeks, linear for
  long ones (Ruemmler and Wilkes' model), fitted so that a one-cylinder seek, the datasheet's average (the
  mean over all pairs of cylinders, the datasheet's own definition) and the full stroke come out as the
  datasheet says, with the two pieces meeting with the same slope; a separate curve for writes (the
  datasheet's write seeks settle longer);
* the rotational wait, modelled deterministically: the platter's angle is the monotonic clock modulo one
  revolution, and the sector's angle follows from its position on the tracks. Random requests then wait
  half a revolution on average (4.17 ms at 7,200 rpm) with the spread a disk has (0 to 8.3 ms), and the
  cases an expected value gets wrong come out right: rewriting the block just written waits a whole
  revolution (a WAL-like fsync loop commits about 120 times a second), a short forward skip on the same
  track waits only the skipped sectors' time;
* the transfer at the media rate of the zone under the head: the datasheet's outer-edge rate falling
  linearly with the radius to its inner-edge rate.

Where the file lies on the disk (`span`): by default it stands for the whole drive, stretched over the full
stroke (its first and last byte a full stroke apart), so random I/O over the whole file seeks like random
I/O over the whole drive (the datasheet's average seek) and a data set filling a fifth of the image seeks
over a fifth of the stroke, as a database filling a fifth of a disk. A share below 1 puts it on that share of
the stroke from the outer edge; `partition` makes it a partition of its own size at the outer edge of the
named drive (a 4 GB image on a 500 GB drive spans 0.8 % of the stroke: short seeks throughout).

No write cache: a write completes when it is on the medium (the backing file has it), and a cache flush
costs nothing. docs/slow-device.md has the datasheet, the fit and the validation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pgfslab.errors import LabError


@dataclass(frozen=True)
class Seek:
    """A datasheet's seek times in ms: one cylinder (track to track), the average over all seeks, a full stroke."""

    track: float
    average: float
    full: float


@dataclass(frozen=True)
class Drive:
    """A named drive's datasheet values (and overrides of them): what the model is built from."""

    rpm: float
    capacity_gb: float  # 10^9 bytes
    cylinders: int  # tracks per surface: the seek curve's distance unit across the full stroke
    rate_outer_mb_s: float  # media rate at the outer edge, 10^6 bytes/s
    rate_inner_mb_s: float  # ... at the inner edge
    overhead_ms: float  # command overhead (access time - seek time)
    seek_read_ms: Seek
    seek_write_ms: Seek
    span: float | str = 1.0  # share of the full stroke the file covers, or "partition": one of its own size
    write_cache: bool = False


@dataclass(frozen=True)
class Preset:
    drive: Drive
    model: str  # the drive's name
    source: str  # the document and where in it


CONSTELLATION = Preset(
    Drive(
        rpm=7200,
        capacity_gb=500,
        cylinders=123_148,
        rate_outer_mb_s=142,
        rate_inner_mb_s=75,
        overhead_ms=0.2,
        seek_read_ms=Seek(track=0.5, average=8.0, full=17.35),
        seek_write_ms=Seek(track=0.7, average=8.4, full=17.82),
    ),
    model="Seagate Constellation ST9500430SS (500 GB, 7,200 rpm)",
    source=(
        "Seagate Constellation SAS Product Manual, Rev. E (ST9500430SS, ST9500431SS, ST9500432SS), section 5.1 "
        "Internal drive characteristics (7,200 rpm, 4.16 ms average rotational latency, 123,148 tracks per "
        "surface, internal data rate 75-142 MB/s variable with zone) and 5.2.1 Access time, typical, not "
        "including controller overhead: average 8.0 ms read / 8.4 ms write, single track 0.5 / 0.7, full "
        "stroke 17.35 / 17.82 (including it: 8.2 / 8.6, so 0.2 ms of command overhead)"
    ),
)

PRESETS: dict[str, Preset] = {"constellation-7200": CONSTELLATION}

# the keys `targets.<name>.device_model` may override, with the type each takes
OVERRIDABLE = {f for f in Drive.__dataclass_fields__}


def drive_with(base: Drive, overrides: Mapping[str, Any] | None) -> Drive:
    """`base` with the config's per-key overrides (seek times per key: {track, average, full})."""
    if not overrides:
        return base
    unknown = sorted(set(overrides) - OVERRIDABLE)
    if unknown:
        raise LabError(f"device_model: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(OVERRIDABLE))})")
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in ("seek_read_ms", "seek_write_ms"):
            changes[key] = replace(getattr(base, key), **dict(value))
        else:
            changes[key] = value
    return replace(base, **changes)


def problems(d: Drive) -> list[str]:
    """What makes a drive's values impossible (each as `key: why`)."""
    out = []
    if d.rpm <= 0:
        out.append("rpm: must be positive")
    if not 0 < d.rate_inner_mb_s <= d.rate_outer_mb_s:
        out.append("rate_inner_mb_s: must be positive and at most rate_outer_mb_s")
    if d.cylinders < 2:
        out.append("cylinders: at least 2")
    if d.capacity_gb <= 0:
        out.append("capacity_gb: must be positive")
    if d.overhead_ms < 0:
        out.append("overhead_ms: must not be negative")
    for key in ("seek_read_ms", "seek_write_ms"):
        s: Seek = getattr(d, key)
        if not 0 <= s.track < s.average < s.full:
            out.append(f"{key}: needs 0 <= track < average < full (got {s.track}, {s.average}, {s.full})")
    if d.span != "partition" and (isinstance(d.span, str) or not 0 < d.span <= 1):
        out.append("span: a share of the full stroke in (0, 1], or partition")
    if d.write_cache:
        out.append("write_cache: a volatile write cache is not emulated (every write completes on the medium)")
    return out


@dataclass(frozen=True)
class Curve:
    """seek(n) = a + b sqrt(n) for 1 <= n <= n0 cylinders, c + e n beyond (ms); 0 below one cylinder."""

    a: float
    b: float
    c: float
    e: float
    n0: float

    def ms(self, n: float) -> float:
        if n < 1:
            return 0.0
        return self.a + self.b * math.sqrt(n) if n <= self.n0 else self.c + self.e * n

    def arg(self) -> str:
        return ",".join(repr(float(v)) for v in (self.a, self.b, self.c, self.e, self.n0))


def _solve(rows: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (a 4x4 system)."""
    n = len(rows)
    m = [row[:] + [r] for row, r in zip(rows, rhs, strict=True)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        if abs(m[col][col]) < 1e-300:
            raise LabError("seek curve: singular system")
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit_at(s: Seek, cylinders: int, x0: float) -> Curve:
    """The curve whose two pieces meet at x0 (share of the stroke) and that has the datasheet's one-cylinder,
    average and full-stroke seek; the average over seek distances x with density 2 (1 - x), the distance of
    two uniformly random cylinders (the datasheet's weighted average of all seek lengths)."""
    n, n0 = float(cylinders), x0 * cylinders
    i0 = 2 * x0 - x0**2
    i1 = 2 * math.sqrt(n) * (2 / 3 * x0**1.5 - 2 / 5 * x0**2.5)
    j0 = 1 - i0
    j1 = 2 * n * (1 / 6 - (x0**2 / 2 - x0**3 / 3))
    a, b, c, e = _solve(
        [[1, 1, 0, 0], [0, 0, 1, n], [i0, i1, j0, j1], [1, math.sqrt(n0), -1, -n0]],
        [s.track, s.full, s.average, 0],
    )
    return Curve(a, b, c, e, n0)


def fit_seek(s: Seek, cylinders: int) -> Curve:
    """Fitted seek curve: continuous with a continuous slope where the sqrt and linear pieces meet (the
    meeting point found by bisection); where no such point exists, the one closest to it."""

    def slope_gap(x0: float) -> float:
        c = _fit_at(s, cylinders, x0)
        return c.b / (2 * math.sqrt(c.n0)) - c.e

    grid = [i / 200 for i in range(1, 190)]
    gaps = [slope_gap(x) for x in grid]
    best = min(range(len(grid)), key=lambda i: abs(gaps[i]))
    lo_hi = next(((grid[i], grid[i + 1]) for i in range(len(grid) - 1) if gaps[i] * gaps[i + 1] < 0), None)
    if lo_hi is not None:
        lo, hi = lo_hi
        for _ in range(60):
            mid = (lo + hi) / 2
            if slope_gap(lo) * slope_gap(mid) <= 0:
                hi = mid
            else:
                lo = mid
        x0 = (lo + hi) / 2
    else:
        x0 = grid[best]
    curve = _fit_at(s, cylinders, x0)
    if curve.b < 0 or curve.e < 0 or curve.a < 0:
        raise LabError(
            f"seek times {s.track}/{s.average}/{s.full} ms cannot be fitted with a rising seek curve: "
            "check track < average < full"
        )
    return curve


@dataclass(frozen=True)
class Model:
    """The resolved model of one disk holding a file of `size` bytes (what the daemon is started with)."""

    drive: Drive
    preset: str
    size: int
    seek_read: Curve = field(init=False)
    seek_write: Curve = field(init=False)

    def __post_init__(self) -> None:
        bad = problems(self.drive)
        if bad:
            raise LabError("device_model: " + "; ".join(bad))
        object.__setattr__(self, "seek_read", fit_seek(self.drive.seek_read_ms, self.drive.cylinders))
        object.__setattr__(self, "seek_write", fit_seek(self.drive.seek_write_ms, self.drive.cylinders))

    # geometry
    @property
    def rev_ns(self) -> float:
        return 60e9 / self.drive.rpm

    @property
    def k(self) -> float:
        return 1 - self.drive.rate_inner_mb_s / self.drive.rate_outer_mb_s

    @property
    def rate_outer(self) -> float:
        return self.drive.rate_outer_mb_s * 1e6

    @property
    def tracks(self) -> float:
        """Revolutions of the file's own media across the full stroke: the sector angle of an offset is the time
        to stream the file up to it at the zones' rates, in revolutions (so that a transfer moves the sector
        under the head exactly as far as the platter turns). For a partition of the file's size these are the
        drive's tracks; a file stretched over more of the stroke has its tracks spread over it."""
        span = self.span
        return self.size / ((span - self.k * span * span / 2) * self.rate_outer * self.rev_ns / 1e9)

    @property
    def span(self) -> float:
        """The share of the full stroke the file covers: given, or the partition of the file's size at the
        outer edge (the bytes up to x are proportional to x - k x^2 / 2)."""
        if not isinstance(self.drive.span, str):
            return float(self.drive.span)
        share = min(1.0, self.size / (self.drive.capacity_gb * 1e9))
        whole = 1 - self.k / 2
        q = share * whole
        return q if self.k < 1e-9 else (1 - math.sqrt(max(0.0, 1 - 2 * self.k * q))) / self.k

    def radial(self, offset: float) -> float:
        """0 (outer edge) .. span (the file's end): where a byte of the file lies on the stroke."""
        span = self.span
        q = offset / self.size * (span - self.k * span * span / 2)
        if self.k < 1e-9:
            return q
        return (1 - math.sqrt(max(0.0, 1 - 2 * self.k * q))) / self.k

    def rate_at(self, x: float) -> float:
        return self.rate_outer * (1 - self.k * x)

    def daemon_args(self) -> list[str]:
        """The model's parameters as the daemon's options."""
        return [
            f"--rev-ns={self.rev_ns!r}",
            f"--overhead-ns={self.drive.overhead_ms * 1e6!r}",
            f"--rate-outer={self.rate_outer!r}",
            f"--k={self.k!r}",
            f"--span={self.span!r}",
            f"--cylinders={float(self.drive.cylinders)!r}",
            f"--tracks={self.tracks!r}",
            f"--seek-read={self.seek_read.arg()}",
            f"--seek-write={self.seek_write.arg()}",
        ]

    # what the model predicts
    def random_service_ms(self, block: int, lo: int = 0, hi: int | None = None, write: bool = False) -> float:
        """Mean service time of `block`-byte requests at uniformly random offsets in [lo, hi) of the file, one
        at a time: overhead + mean seek between two random offsets + half a revolution + transfer."""
        hi = self.size if hi is None else hi
        curve = self.seek_write if write else self.seek_read
        pts = 400
        xs = [self.radial(lo + (hi - lo - block) * (i + 0.5) / pts) for i in range(pts)]
        seek = sum(curve.ms(abs(a - b) * self.drive.cylinders) for a in xs for b in xs) / pts**2
        mid = self.radial((lo + hi) / 2)
        return self.drive.overhead_ms + seek + self.rev_ns / 2e6 + block / self.rate_at(mid) * 1e3

    def sequential_mb_s(self, lo: int = 0, hi: int | None = None) -> float:
        """Media rate (10^6 bytes/s) averaged over the file's bytes in [lo, hi): a sequential stream's rate."""
        hi = self.size if hi is None else hi
        n = 64
        times = sum(1 / self.rate_at(self.radial(lo + (hi - lo) * (i + 0.5) / n)) for i in range(n)) / n
        return 1 / times / 1e6

    def service(
        self, write: bool, offset: int, length: int, t_ns: float, head: tuple[int, float] | None, queued: bool = True
    ) -> Any:
        """One request's (overhead, seek, rotation, transfer) in ns and the head after it, as the daemon
        computes them: `head` is (end offset, radial position) of the previous request, None at start;
        `queued`: the request was waiting when the previous one completed."""
        x = self.radial(offset)
        x_end = self.radial(offset + length)
        transfer = length / self.rate_at((x + x_end) / 2) * 1e9
        if head is not None and head[0] == offset and (queued or not write):
            return (0.0, 0.0, 0.0, transfer), (offset + length, x_end)
        overhead = self.drive.overhead_ms * 1e6
        n = abs(x - (head[1] if head else 0.0)) * self.drive.cylinders
        seek = (self.seek_write if write else self.seek_read).ms(n) * 1e6
        arrive = t_ns + overhead + seek
        platter = math.fmod(arrive, self.rev_ns) / self.rev_ns
        sector = math.fmod(x * self.tracks, 1.0)
        wait = sector - platter
        if wait < 0:
            wait += 1
        return (overhead, seek, wait * self.rev_ns, transfer), (offset + length, x_end)

    def describe(self) -> dict[str, Any]:
        """The model as target.json, run.json and the paper record it: the drive's values, where they come
        from, and what was derived from them."""
        p = PRESETS.get(self.preset)
        d = asdict(self.drive)
        return {
            "preset": self.preset,
            "drive": p.model if p else None,
            "source": p.source if p else None,
            "overrides": {k: v for k, v in d.items() if p is not None and v != asdict(p.drive)[k]},
            "parameters": d,
            "derived": {
                "file_bytes": self.size,
                "revolution_ms": round(self.rev_ns / 1e6, 4),
                "span": self.span,
                "tracks": round(self.tracks, 1),
                "seek_read": asdict(self.seek_read),
                "seek_write": asdict(self.seek_write),
                "random_8k_read_ms": round(self.random_service_ms(8192), 3),
                "sequential_mb_s": round(self.sequential_mb_s(), 1),
            },
            "rotation": "deterministic: platter angle = monotonic clock mod one revolution",
            "queue": "one request at a time, FIFO, reads and writes in one queue",
            "write_cache": self.drive.write_cache,
        }


def model(preset: str, overrides: Mapping[str, Any] | None, size: int) -> Model:
    """The model of preset `preset` with the config's overrides, for a file of `size` bytes."""
    if preset not in PRESETS:
        raise LabError(f"device_model: unknown disk preset {preset!r} (known: {', '.join(PRESETS)})")
    return Model(drive_with(PRESETS[preset].drive, overrides), preset, int(size))
