"""The fio and pg_test_fsync parsers on outputs recorded on this machine (tests/data/device_baseline/, see its
ORIGINS.md). Expected values were read by eye from the files (fio: ns in the JSON, µs here), not produced by
the parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA

from pgfslab.ingest.parsers import ParseError, detect_format, fio
from pgfslab.ingest.parsers import pg_test_fsync as pgtf

LabError = ParseError
RECORDED = DATA / "device_baseline"
BASE = RECORDED
FS = ("ext4", "xfs", "btrfs", "zfs-fuse")
JOBS = ("wal_qd1_fdatasync", "randread_qd1", "randread_qd32", "randwrite_qd1", "randwrite_qd32", "seqwrite_1m")

# wal_qd1_fdatasync.json, "write" section and the job's "sync" section, by eye
WAL = {
    "ext4": dict(
        iops=6594.881024,
        total_ios=32981,
        runtime_ms=5001,
        bw=54025265,
        clat=(3344, 6176, 8512, 20608),
        sync_n=32981,
        sync_mean=145843.530669,
        sync=(117248, 150528, 189440, 18219008),
    ),
    "xfs": dict(
        iops=8620.903277,
        total_ios=43139,
        runtime_ms=5004,
        bw=70622439,
        clat=(3184, 4704, 7008, 16192),
        sync_n=43139,
        sync_mean=110143.384293,
        sync=(90624, 113152, 138240, 13828096),
    ),
    "btrfs": dict(
        iops=1154.369126,
        total_ios=5773,
        runtime_ms=5001,
        bw=9456591,
        clat=(11328, 14784, 26496, 136192),
        sync_n=5773,
        sync_mean=851329.153127,
        sync=(856064, 1036288, 1171456, 3227648),
    ),
    "zfs-fuse": dict(
        iops=2605.878824,
        total_ios=13032,
        runtime_ms=5001,
        bw=21347359,
        clat=(42240, 55552, 64768, 114176),
        sync_n=13032,
        sync_mean=317632.121087,
        sync=(301056, 366592, 432128, 4423680),
    ),
}
# iops of the other jobs (read for randread, write for the others), by eye
IOPS = {
    "ext4": {
        "randread_qd1": 35387.322535,
        "randread_qd32": 117481.303739,
        "randwrite_qd1": 19057.253385,
        "randwrite_qd32": 82365.006943,
        "seqwrite_1m": 2386.341463,
    },
    "xfs": {
        "randread_qd1": 34711.857628,
        "randread_qd32": 118108.778244,
        "randwrite_qd1": 19727.654469,
        "randwrite_qd32": 75262.547491,
        "seqwrite_1m": 885.015408,
    },
    "btrfs": {
        "randread_qd1": 20461.446264,
        "randread_qd32": 82098.380324,
        "randwrite_qd1": 9518.896221,
        "randwrite_qd32": 9424.515097,
        "seqwrite_1m": 404.715128,
    },
    "zfs-fuse": {
        "randread_qd1": 12544.691062,
        "randread_qd32": 13066.186763,
        "randwrite_qd1": 19397.720456,
        "randwrite_qd32": 19814.659477,
        "seqwrite_1m": 263.591757,
    },
}
SEQ_BW = {"ext4": 2502260386, "xfs": 928005916, "btrfs": 424374569, "zfs-fuse": 276395989}
RANDREAD_QD1_CLAT = {"ext4": (24448, 36096), "xfs": (24704, 36096), "btrfs": (28800, 47872), "zfs-fuse": (1128, 1928)}
# pg_test_fsync.txt, "Compare file sync methods using one 8kB write", by eye
PGTF_ONE_WRITE = {
    "ext4": {
        "open_datasync": (8282.524, 121),
        "fdatasync": (8974.410, 111),
        "fsync": (8309.139, 120),
        "open_sync": (7844.886, 127),
    },
    "xfs": {
        "open_datasync": (7175.509, 139),
        "fdatasync": (7440.362, 134),
        "fsync": (7309.803, 137),
        "open_sync": (6900.465, 145),
    },
    "btrfs": {
        "open_datasync": (1523.806, 656),
        "fdatasync": (1646.214, 607),
        "fsync": (1784.132, 560),
        "open_sync": (1769.197, 565),
    },
    "zfs-fuse": {
        "open_datasync": (3220.507, 311),
        "fdatasync": (2664.534, 375),
        "fsync": (2600.713, 385),
        "open_sync": (2510.866, 398),
    },
}


def _one(path: Path) -> dict:
    res = fio.parse(path)
    assert res["fio_job"].height == 1, res["fio_job"]
    return res["fio_job"].row(0, named=True)


# ----------------------------------------------------------------------------- fio, recorded


@pytest.mark.parametrize("fs", FS)
def test_fio_wal_job(fs):
    e = WAL[fs]
    r = _one(BASE / fs / "wal_qd1_fdatasync.json")
    assert (r["job"], r["direction"], r["rw"]) == ("wal_qd1_fdatasync", "write", "write")
    assert (r["bs"], r["bs_bytes"]) == ("8k", 8192)
    assert (r["iodepth"], r["direct"], r["ioengine"], r["fdatasync"], r["fsync"]) == (1, False, "psync", 1, None)
    assert r["fio_version"] == "fio-3.33" and r["error"] == 0
    assert r["iops"] == pytest.approx(e["iops"]) and r["total_ios"] == e["total_ios"]
    assert r["runtime_ms"] == e["runtime_ms"] and r["bw_bytes_per_s"] == e["bw"]
    got_clat = (r["clat_p50_us"], r["clat_p95_us"], r["clat_p99_us"], r["clat_p999_us"])
    assert got_clat == pytest.approx(tuple(v / 1000 for v in e["clat"]))
    assert r["sync_n"] == e["sync_n"]
    assert r["sync_lat_mean_us"] == pytest.approx(e["sync_mean"] / 1000)
    got_sync = (r["sync_p50_us"], r["sync_p95_us"], r["sync_p99_us"], r["sync_p999_us"])
    assert got_sync == pytest.approx(tuple(v / 1000 for v in e["sync"]))


@pytest.mark.parametrize("fs", FS)
@pytest.mark.parametrize("job", JOBS[1:])
def test_fio_other_jobs(fs, job):
    r = _one(BASE / fs / f"{job}.json")
    assert r["direction"] == ("read" if job.startswith("randread") else "write")
    assert r["iops"] == pytest.approx(IOPS[fs][job])
    assert r["direct"] is True and r["ioengine"] == "libaio"
    assert r["iodepth"] == {"qd1": 1, "qd32": 32, "1m": 4}[job.rsplit("_", 1)[1]]
    assert r["bs_bytes"] == (1048576 if job == "seqwrite_1m" else 8192)
    assert r["sync_n"] is None and r["sync_p99_us"] is None
    if job == "seqwrite_1m":
        assert r["bw_bytes_per_s"] == SEQ_BW[fs]
    if job == "randread_qd1":
        assert (r["clat_p50_us"], r["clat_p99_us"]) == pytest.approx(tuple(v / 1000 for v in RANDREAD_QD1_CLAT[fs]))


def test_fio_zfs_fuse_submission_is_synchronous():
    """libaio on zfs-fuse: the I/O completes inside io_submit, so slat carries the time (77567.708397 ns
    mean) and clat is about 1 µs; lat (78749.127216 ns) is the figure to use."""
    r = _one(BASE / "zfs-fuse" / "randread_qd1.json")
    assert r["slat_mean_us"] == pytest.approx(77.567708397)
    assert r["lat_mean_us"] == pytest.approx(78.749127216)
    assert r["clat_p50_us"] == pytest.approx(1.128)


def test_fio_recorded_files_have_no_stray_text():
    for fs in FS:
        for job in JOBS:
            res = fio.parse(BASE / fs / f"{job}.json")
            assert res["fio_text"].height == 0 and "_warnings" not in res, (fs, job)


def test_fio_note_before_json_is_returned_not_dropped():
    """Recorded with psync and iodepth=4: fio 3.33 prints a note on stdout before the JSON."""
    path = RECORDED / "fio_text" / "randread_psync_qd4.json"
    res = fio.parse(path)
    assert res["fio_text"].to_dicts() == [
        {
            "line": 1,
            "position": "before",
            "text": "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1",
        }
    ]
    assert res["_warnings"]["line"].to_list() == [1]
    assert "non-JSON text before the fio report" in res["_warnings"]["message"][0]
    r = res["fio_job"].row(0, named=True)
    assert (r["job"], r["job_line"], r["iodepth"], r["ioengine"]) == ("randread_psync_qd4", 9, 4, "psync")
    assert r["iops"] == pytest.approx(35771.228771) and r["total_ios"] == 35807 and r["io_bytes"] == 293330944
    assert r["clat_p50_us"] == pytest.approx(26.752) and r["clat_p999_us"] == pytest.approx(121.344)


# ----------------------------------------------------------------------------- fio, damaged copies


def test_fio_truncated_json_names_file_and_line(tmp_path):
    lines = (RECORDED / "fio_text" / "randread_psync_qd4.json").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.json"
    cut.write_text("".join(lines[:40]))  # the note, then 39 lines of JSON
    with pytest.raises(ParseError) as ei:
        fio.parse(cut)
    assert isinstance(ei.value, LabError)
    assert str(ei.value).startswith(f"{cut}:41: invalid JSON")
    assert ei.value.line == 41 and ei.value.path == str(cut)


def test_fio_broken_json_line_counts_the_text_before(tmp_path):
    lines = (RECORDED / "fio_text" / "randread_psync_qd4.json").read_text().splitlines(keepends=True)
    lines[9] = lines[9].replace('"groupid" : 0,', '"groupid" : 0,,')  # line 10 of the file
    bad = tmp_path / "bad.json"
    bad.write_text("".join(lines))
    with pytest.raises(ParseError, match=r"bad\.json:10: invalid JSON: Expecting property name"):
        fio.parse(bad)


def test_fio_no_json_and_empty(tmp_path):
    p = tmp_path / "text.out"
    p.write_text("\nfio: pid=0, err=22/file:filesetup.c:240, func=open, error=Invalid argument\n")
    with pytest.raises(ParseError, match=r"text\.out:2: no JSON object in the file"):
        fio.parse(p)
    e = tmp_path / "empty.json"
    e.write_text("")
    with pytest.raises(ParseError, match=r"empty\.json: empty file"):
        fio.parse(e)
    b = tmp_path / "bin.json"
    b.write_bytes(b'{\n"x": "\xff"}\n')
    with pytest.raises(ParseError, match=r"bin\.json:2: not UTF-8"):
        fio.parse(b)


def test_fio_text_after_json_is_returned(tmp_path):
    src = (BASE / "ext4" / "randread_qd1.json").read_text()
    n = src.count("\n")
    p = tmp_path / "after.json"
    p.write_text(src + "fio: file hash not empty on exit\n")
    res = fio.parse(p)
    assert res["fio_text"].to_dicts() == [
        {"line": n + 1, "position": "after", "text": "fio: file hash not empty on exit"}
    ]
    assert res["fio_job"]["iops"][0] == pytest.approx(35387.322535)


def test_fio_job_without_io_is_a_row_with_a_warning(tmp_path):
    doc = json.loads((BASE / "ext4" / "randread_qd1.json").read_text())
    doc["jobs"][0]["read"].update(total_ios=0, io_bytes=0)
    doc["jobs"][0]["error"] = 5
    p = tmp_path / "noio.json"
    p.write_text(json.dumps(doc, indent=2))
    res = fio.parse(p)
    r = res["fio_job"].row(0, named=True)
    assert r["direction"] is None and r["error"] == 5 and r["job"] == "randread_qd1"
    msgs = res["_warnings"]["message"].to_list()
    assert any("reports error 5" in m for m in msgs) and any("did no I/O" in m for m in msgs)


def test_fio_not_a_report(tmp_path):
    p = tmp_path / "other.json"
    p.write_text('{"hello": 1}\n')
    with pytest.raises(ParseError, match=r"other\.json:1: the JSON object has no 'jobs' list"):
        fio.parse(p)


# ----------------------------------------------------------------------------- pg_test_fsync, recorded


@pytest.mark.parametrize("fs", FS)
def test_pg_test_fsync_recorded(fs):
    res = pgtf.parse(BASE / fs / "pg_test_fsync.txt")
    t = res["pg_test_fsync"]
    assert t.height == 18
    assert res["pg_test_fsync_unrecognised"].height == 0 and "_warnings" not in res
    assert t["secs_per_test"].unique().to_list() == [2]
    assert t["platform"][0] == "O_DIRECT supported on this platform for open_datasync and open_sync."
    one = t.filter(t["section"] == "Compare file sync methods using one 8kB write")
    assert one["method"].to_list() == ["open_datasync", "fdatasync", "fsync", "fsync_writethrough", "open_sync"]
    for method, (ops, us) in PGTF_ONE_WRITE[fs].items():
        row = one.filter(one["method"] == method).row(0, named=True)
        assert (row["ops_per_s"], row["usecs_per_op"], row["status"]) == (pytest.approx(ops), us, "ok")
    wt = one.filter(one["method"] == "fsync_writethrough").row(0, named=True)
    assert wt["status"] == "n/a" and wt["ops_per_s"] is None and "not available" in wt["note"]
    assert t["section"].unique(maintain_order=True).to_list() == [
        "Compare file sync methods using one 8kB write",
        "Compare file sync methods using two 8kB writes",
        "Compare open_sync with different write sizes",
        "Test if fsync on non-write file descriptor is honored",
        "Non-sync'ed 8kB writes",
    ]
    assert t.filter(t["section"] == "Compare open_sync with different write sizes")["method"].to_list() == [
        "1 * 16kB open_sync write",
        "2 *  8kB open_sync writes",
        "4 *  4kB open_sync writes",
        "8 *  2kB open_sync writes",
        "16 *  1kB open_sync writes",
    ]


def test_pg_test_fsync_values_by_eye_btrfs():
    t = pgtf.parse(BASE / "btrfs" / "pg_test_fsync.txt")["pg_test_fsync"]
    two = t.filter(t["section"] == "Compare file sync methods using two 8kB writes")
    assert two.filter(two["method"] == "open_datasync").row(0, named=True)["ops_per_s"] == pytest.approx(825.245)
    assert two.filter(two["method"] == "open_sync")["usecs_per_op"][0] == 1156
    fd = t.filter(t["method"] == "write, close, fsync").row(0, named=True)
    assert (fd["ops_per_s"], fd["usecs_per_op"], fd["line"]) == (pytest.approx(1698.190), 589, 33)
    w = t.filter(t["section"] == "Non-sync'ed 8kB writes").row(0, named=True)
    assert (w["method"], w["ops_per_s"], w["usecs_per_op"]) == ("write", pytest.approx(416999.830), 2)


# ----------------------------------------------------------------------------- pg_test_fsync, edited copies


def _edited(tmp_path: Path, fs: str, edit) -> Path:
    lines = (BASE / fs / "pg_test_fsync.txt").read_text().splitlines()
    p = tmp_path / "pgtf.txt"
    p.write_text("\n".join(edit(lines)) + "\n")
    return p


def test_pg_test_fsync_na_star(tmp_path):
    """What a file system without O_DIRECT gives (pg_test_fsync.c's NA_FORMAT "%21s" and footnote)."""

    def edit(lines):
        out = []
        for ln in lines:
            is_result = ln.startswith("        ") and ln.split()[0] in ("open_datasync", "open_sync")
            if is_result:
                ln = f"        {ln.split()[0]:<30s}{'n/a*':>21s}"
            out.append(ln)
            if is_result and ln.split()[0] == "open_sync":
                out += [
                    "* This file system and its mount options do not support direct",
                    "  I/O, e.g. ext4 in journaled mode.",
                ]
        return out

    res = pgtf.parse(_edited(tmp_path, "ext4", edit))
    t = res["pg_test_fsync"]
    star = t.filter(t["status"] == "n/a*")
    assert star["method"].to_list() == ["open_datasync", "open_sync", "open_datasync", "open_sync"]
    assert star["ops_per_s"].null_count() == 4 and star["usecs_per_op"].null_count() == 4
    assert "do not support direct I/O" in star["note"][0]
    assert res["pg_test_fsync_unrecognised"].height == 0
    fdat = t.filter((t["method"] == "fdatasync") & (t["section"].str.contains("one 8kB")))
    assert fdat["ops_per_s"][0] == pytest.approx(8974.410)


def test_pg_test_fsync_unrecognised_lines_are_counted_and_returned(tmp_path):
    extra = ["something else entirely", "        fdatasync   12 tps"]
    p = _edited(tmp_path, "xfs", lambda ls: ls[:6] + extra + ls[6:])
    res = pgtf.parse(p)
    u = res["pg_test_fsync_unrecognised"]
    assert u.to_dicts() == [
        {"line": 7, "text": "something else entirely"},
        {"line": 8, "text": "        fdatasync   12 tps"},
    ]
    assert (
        res["_warnings"]
        .filter(res["_warnings"]["line"].is_null())["message"][0]
        .startswith("2 unrecognised line(s), returned in pg_test_fsync_unrecognised (first at line 7)")
    )
    assert res["pg_test_fsync"].height == 18  # nothing else lost


def test_pg_test_fsync_cut_off_run(tmp_path):
    """pg_test_fsync killed during a test: the label is printed (fflush) but no result."""
    lines = (BASE / "zfs-fuse" / "pg_test_fsync.txt").read_text().splitlines()
    p = tmp_path / "cut.txt"
    p.write_text("\n".join(lines[:6]) + "\n        fdatasync                     ")
    res = pgtf.parse(p)
    t = res["pg_test_fsync"]
    assert t["method"].to_list() == ["open_datasync", "fdatasync"]
    assert t["status"].to_list() == ["ok", "incomplete"] and t["ops_per_s"][1] is None
    assert t["ops_per_s"][0] == pytest.approx(3220.507)
    assert "interrupted or cut off" in res["_warnings"]["message"][0]


def test_pg_test_fsync_error_lines_warn(tmp_path):
    err = "pg_test_fsync: error: write failed: No space left on device"
    p = _edited(tmp_path, "ext4", lambda ls: ls[:8] + [err])
    res = pgtf.parse(p)
    assert res["_warnings"]["message"][0] == (
        "pg_test_fsync reported: pg_test_fsync: error: write failed: No space left on device"
    )
    assert res["pg_test_fsync"].height == 3


def test_pg_test_fsync_not_its_output(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("\nhello\nworld\n")
    with pytest.raises(ParseError, match=r"x\.txt:2: not pg_test_fsync output"):
        pgtf.parse(p)
    e = tmp_path / "e.txt"
    e.write_text("  \n")
    with pytest.raises(LabError, match="empty file"):
        pgtf.parse(e)


@pytest.mark.parametrize("fs", FS)
def test_formats_detected_among_all_parsers(fs):
    for job in JOBS:
        assert detect_format(BASE / fs / f"{job}.json") == "fio"
    assert detect_format(BASE / fs / "pg_test_fsync.txt") == "pg-test-fsync"
