"""The emulated disk's model (pgfslab/config/disk_model.py): the seek curve fitted to the datasheet, the
rotation, the zoned transfer, the overrides; and that the daemon (pgfslab/host/native/pgfslab_disk.c, in its
--trace mode, no FUSE needed) computes every request as the Python model does."""

from __future__ import annotations

import math
import random
import subprocess

import pytest

from pgfslab.config import disk_model
from pgfslab.errors import LabError
from pgfslab.host import disk_daemon

GIB = 2**30


def hdd(size: int = 4 * GIB, **overrides: object) -> disk_model.Model:
    return disk_model.model("constellation-7200", overrides or None, size)


@pytest.mark.parametrize("direction", ["seek_read_ms", "seek_write_ms"])
def test_the_seek_curve_has_the_datasheets_three_seek_times(direction):
    """One cylinder, the full stroke, and the datasheet's average (its weighted average over all seek lengths
    n with weight max + 1 - n) come out as the datasheet says; the two pieces meet with one slope."""
    m = hdd()
    s: disk_model.Seek = getattr(m.drive, direction)
    c = m.seek_read if direction == "seek_read_ms" else m.seek_write
    n = m.drive.cylinders
    assert c.ms(1) == pytest.approx(s.track, abs=1e-9)
    assert c.ms(n) == pytest.approx(s.full, abs=1e-9)
    step = 7  # the datasheet's weighted average, summed over every 7th seek length
    lengths = range(1, n + 1, step)
    avg = sum((n + 1 - k) * c.ms(k) for k in lengths) / sum(n + 1 - k for k in lengths)
    assert avg == pytest.approx(s.average, rel=2e-3)
    left = c.b / (2 * math.sqrt(c.n0))
    assert left == pytest.approx(c.e, rel=1e-6)  # the same slope where they meet
    assert c.a + c.b * math.sqrt(c.n0) == pytest.approx(c.c + c.e * c.n0)
    assert c.ms(0.5) == 0  # no seek within a cylinder


def test_random_reads_over_the_whole_drive_cost_the_datasheets_access_time():
    """With the default span the file stands for the whole drive: a random 8 kB read costs the command
    overhead, the average seek, half a revolution (4.17 ms at 7,200 rpm) and the transfer."""
    m = hdd()
    assert m.span == 1.0 and m.rev_ns == pytest.approx(60e9 / 7200)
    d = m.drive
    want = d.overhead_ms + d.seek_read_ms.average + 60e3 / 7200 / 2 + 8192 / (d.rate_outer_mb_s * 1e6 * 0.75) * 1e3
    assert m.random_service_ms(8192) == pytest.approx(want, rel=0.01)
    assert 75 < 1000 / m.random_service_ms(8192) < 85


def test_partition_span_is_the_files_share_of_the_drive_and_seeks_short():
    m = hdd(span="partition")
    share = 4 * GIB / (m.drive.capacity_gb * 1e9)
    assert 0.7 * share < m.span < share  # the outer tracks hold more bytes: less stroke than the byte share
    assert m.random_service_ms(8192) < hdd().random_service_ms(8192) - 5


def test_rotation_is_deterministic_from_the_angle():
    """Rewriting the block just written takes one whole revolution (overhead, wait, transfer); a sequential request
    pays its transfer only; a random one waits between 0 and one revolution."""
    m = hdd()
    (ov, sk, rot, tr), head = m.service(True, 1 << 30, 8192, 0.0, None)
    t = ov + sk + rot + tr
    (ov2, sk2, rot2, tr2), head = m.service(True, 1 << 30, 8192, t, head)
    assert sk2 == 0 and ov2 + rot2 + tr2 == pytest.approx(m.rev_ns, rel=1e-6)
    (ov3, sk3, rot3, tr3), head = m.service(False, (1 << 30) + 8192, 1 << 20, t, head)
    assert (ov3, sk3, rot3) == (0, 0, 0) and tr3 == pytest.approx(
        (1 << 20) / m.rate_at(m.radial(1 << 30)) * 1e9, rel=1e-3
    )
    # a write continuing the previous one, arriving after it completed: its sector has passed (no write
    # cache), so it waits for it to come round; queued behind it, it would have paid the transfer only
    t2 = t + ov3 + sk3 + rot3 + tr3
    end = (1 << 30) + 8192 + (1 << 20)
    (ov4, sk4, rot4, tr4), after = m.service(True, end, 8192, t2 + 100e3, head, queued=False)
    assert sk4 == 0 and ov4 > 0 and rot4 == pytest.approx(m.rev_ns - ov4 - 100e3, rel=1e-6)
    assert m.service(True, end, 8192, t2, head, queued=True)[0][:3] == (0, 0, 0)
    assert m.service(False, end, 8192, t2 + 100e3, head, queued=False)[0][:3] == (0, 0, 0)
    head = after
    rng = random.Random(3)
    rots = []
    for _ in range(2000):
        (_, _, r, _), head = m.service(False, rng.randrange(4 * GIB // 8192) * 8192, 8192, rng.random() * 1e12, head)
        rots.append(r)
    assert 0 <= min(rots) and max(rots) < m.rev_ns
    assert sum(rots) / len(rots) == pytest.approx(m.rev_ns / 2, rel=0.05)


def test_the_zones_rate_falls_from_the_outer_to_the_inner_edge():
    m = hdd()
    assert m.rate_at(0) == pytest.approx(142e6) and m.rate_at(1) == pytest.approx(75e6)
    assert m.radial(0) == 0 and m.radial(m.size) == pytest.approx(1.0)
    assert m.radial(m.size / 2) < 0.5  # the outer half of the bytes fills less than half of the stroke
    assert 75 < m.sequential_mb_s() < 142


def test_overrides_are_per_key_and_checked():
    m = hdd(rpm=5400, seek_read_ms={"average": 9.0})
    assert m.drive.rpm == 5400 and m.drive.seek_read_ms == disk_model.Seek(0.5, 9.0, 17.35)
    assert m.drive.seek_write_ms == disk_model.CONSTELLATION.drive.seek_write_ms
    assert m.describe()["overrides"] == {"rpm": 5400, "seek_read_ms": {"track": 0.5, "average": 9.0, "full": 17.35}}
    for bad, msg in (
        ({"rate_inner_mb_s": 200}, "rate_inner_mb_s"),
        ({"seek_read_ms": {"average": 30}}, "track < average < full"),
        ({"span": 0}, "span"),
        ({"write_cache": True}, "write_cache"),
        ({"heads": 4}, "unknown key"),
    ):
        with pytest.raises(LabError, match=msg):
            hdd(**bad)


def test_the_model_is_described_with_its_source():
    d = hdd().describe()
    assert "ST9500430SS" in d["drive"] and "Product Manual" in d["source"]
    assert d["parameters"]["seek_read_ms"] == {"track": 0.5, "average": 8.0, "full": 17.35}
    assert d["derived"]["revolution_ms"] == pytest.approx(8.3333, abs=1e-3)
    assert d["write_cache"] is False and "deterministic" in d["rotation"]


@pytest.mark.skipif(
    disk_daemon.build_problem() is not None, reason=f"cannot build the daemon: {disk_daemon.build_problem()}"
)
def test_the_daemon_computes_what_the_python_model_computes():
    """Random, sequential, read and write requests at random times through the daemon's --trace mode: the
    same overhead, seek, rotation and transfer to well under a microsecond."""
    for m in (hdd(), hdd(span="partition"), hdd(1 * GIB, span=0.3, rate_inner_mb_s=142)):
        rng = random.Random(7)
        reqs, t, end = [], 0, 0
        for _ in range(1500):
            off = end if rng.random() < 0.3 else rng.randrange(m.size // 4096) * 4096
            length = rng.choice([4096, 8192, 131072, 1 << 20])
            if off + length > m.size:
                off = 0
            t += rng.randrange(0, 30_000_000)
            reqs.append((rng.random() < 0.4, off, length, t, rng.random() < 0.5))
            end = off + length
        text = "".join(f"{'w' if w else 'r'} {o} {n} {t} {int(q)}\n" for w, o, n, t, q in reqs)
        cmd = [str(disk_daemon.binary()), "--trace", f"--size={m.size}", *m.daemon_args()]
        out = subprocess.run(cmd, input=text, capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(out) == len(reqs)
        head = None
        for (w, o, n, t, q), line in zip(reqs, out, strict=True):
            parts, head = m.service(w, o, n, t, head, q)
            got = [float(v) for v in line.split()[:4]]
            assert got == pytest.approx(list(parts), abs=1.0), (w, o, n, t, q)
