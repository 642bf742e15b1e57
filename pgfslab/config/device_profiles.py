"""Named slow-device presets for a target (`targets.<name>.device_profile`): block-I/O throttles of the
target's data device, applied with the blkio (cgroup v1) or io (v2) controller to the PostgreSQL server and
its clients of that target's runs, and to its device baseline (pgfslab/host/cgroups.py does the throttling).

`hdd`: a 7,200 rpm magnetic disk as the seed 004 post had under its tables (a 3 TB Western Digital desktop
drive). A random 8 kB I/O on such a disk costs a seek (about 8.5 ms average over the surface) plus half a
revolution (60 s / 7,200 / 2 = 4.2 ms): about 80 per second across the whole disk, 100-200 with the short
seeks of a data set that occupies a small part of the surface and with command queueing; 150 read and 150
write operations per second are the middle of that range (the range the verdicts' "magnetic-class device"
precondition, pgfslab/analysis/verdicts/regime.py, quotes). Its sequential rate is about 150 MB/s on the
outer tracks and half that on the inner ones: 100 MB/s each way.

What a throttle does not emulate (docs/slow-device.md, with measurements): there is no seek model (a
sequential and a random I/O cost the same one operation; readahead's large reads count once), the page
cache stays in front of the device, and under cgroup v1 background write-back (kernel flusher threads) is
not throttled at all; what the cgroup's processes issue themselves is (reads, O_DIRECT, fsync/fdatasync and
sync_file_range of their own dirty pages).
"""

from __future__ import annotations

from pgfslab.config.model import Blkio

HDD_SOURCE = (
    "a 7,200 rpm disk: ~8.5 ms average seek + 4.2 ms half revolution per random I/O, 100-200 random IOPS "
    "with short seeks and queueing (150 taken); ~100 MB/s sequential between outer and inner tracks"
)

PROFILES: dict[str, tuple[Blkio, str]] = {
    "hdd": (Blkio(read_iops=150, write_iops=150, read_bps="100MB", write_bps="100MB"), HDD_SOURCE),
}


def blkio(name: str) -> Blkio:
    """The throttles of profile `name` (the schema allows only the names of PROFILES)."""
    return PROFILES[name][0]


def source(name: str) -> str:
    """Where the profile's numbers come from, as the paper and the docs state it."""
    return PROFILES[name][1]


def describe(name: str) -> dict[str, object]:
    """The profile as run.json and baseline.json record it: its name, throttles and their source."""
    return {"name": name, "blkio": blkio(name).to_dict(), "source": source(name)}
