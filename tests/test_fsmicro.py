"""pgfslab.runners.fsmicro: every op run for real (tiny), its stdout checked against its csv with
numpy, the work directory's safety rules, interruption, and the seed 003 layout and names."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pgfslab.errors import LabError
from pgfslab.runners import fsmicro
from pgfslab.tools import fsmicro_ops as fspec

# tiny versions of every op (run for real on the host fs of the temp directory)
TINY: dict[str, dict[str, Any]] = {
    "create_fsync": {"op": "create_fsync", "count": 40},
    "create_fsync_timed": {"op": "create_fsync", "duration_s": 0.3, "size_bytes": 4096},
    "delete": {"op": "delete", "files": 60, "size_bytes": 8192},
    "delete_bg_fsync_dir": {"op": "delete", "files": 20, "size_bytes": 4096, "bg_files": 30, "fsync_dir": True},
    "delete_small_dir": {
        "op": "delete_small_dir",
        "bg_files": 30,
        "bg_size_bytes": 4096,
        "size_bytes": 65536,
        "count": 30,
    },
    "delete_small_dir_unlink_open": {
        "op": "delete_small_dir",
        "bg_files": 5,
        "size_bytes": 65536,
        "count": 10,
        "unlink_open": True,
        "fsync_dir": True,
    },
    "delete_large_dir": {
        "op": "delete_large_dir",
        "bg_files": 150,
        "bg_size_bytes": 0,
        "size_bytes": 65536,
        "duration_s": 0.3,
    },
    "write_fsync": {"op": "write_fsync", "size_bytes": 65536, "max_file_bytes": 300_000, "count": 20, "fill": "random"},
    "statfs": {"op": "statfs", "size_bytes": 1000, "count": 60},
}


def _parse(stdout: str) -> dict[str, Any]:
    lines = stdout.splitlines()
    i = lines.index(fspec.HEADER)
    f = lines[i + 1].split()
    bench = next(ln for ln in lines if ln.startswith("fsbench/")).split()
    return {
        "optype": f[0],
        "elapsed": float(f[1].rstrip("s")),
        "n": int(f[2]),
        "rate": float(f[3]),
        "ms": dict(zip(("avg", "p50", "p95", "p99", "max"), f[4:9])),
        "row": lines[i + 1],
        "name": bench[0].removeprefix("fsbench/"),
        "partial": [ln for ln in lines if ln.startswith("# partial:")],
    }


def _csv(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["op", "start_ns", "latency_ns"]
    ops = [r[0] for r in rows[1:]]
    start = np.array([int(r[1]) for r in rows[1:]], dtype=np.int64)
    lat = np.array([int(r[2]) for r in rows[1:]], dtype=np.int64)
    return ops, start, lat


def _nearest_rank(values: np.ndarray, q: float) -> int:
    """Independent of numpy: the smallest value with at least q % of the values at or below it."""
    s = sorted(int(v) for v in values)
    rank = -(-round(q * 100) * len(s) // 10_000)  # ceil(q % of n), in integers
    return s[max(1, rank) - 1]


def _run(
    spec: dict[str, Any], tmp: Path, capsys: pytest.CaptureFixture[str], extra: list[str] | None = None
) -> tuple[int, str, str, Path, Path]:
    """fsmicro.main in this process (a Python + numpy start costs seconds on a busy machine) with
    the arguments command() builds; returns (exit status, stdout, stderr, --dir, --out)."""
    work, out = tmp / "fs", tmp / "run"
    work.mkdir(exist_ok=True)
    cmd = fspec.command(spec, work, out)
    assert cmd[:3] == [sys.executable, "-m", "pgfslab.runners.fsmicro"]
    capsys.readouterr()
    rc = fsmicro.main(cmd[3:] + (extra or []))
    got = capsys.readouterr()
    return rc, got.out, got.err, work, out


@pytest.mark.parametrize("case", list(TINY))
def test_op_runs_and_stdout_agrees_with_csv(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = TINY[case]
    rc, stdout, stderr, work, out = _run(spec, tmp_path, capsys, ["--ms-decimals", "6"])
    assert rc == 0, stderr
    res = _parse(stdout)
    ops, start, lat = _csv(out / fspec.CSV_NAME)
    name = fspec.label(fspec.resolve(spec))

    assert res["n"] == len(lat) > 0
    assert set(ops) == {name} and res["name"] == name and res["optype"] == name[:10]
    assert not res["partial"]
    if "count" in spec:
        assert res["n"] == spec["count"]
    if spec["op"] == "delete" and "count" not in spec:
        assert res["n"] == spec["files"]
    if "duration_s" in spec:
        assert spec["duration_s"] - 0.05 <= res["elapsed"] < spec["duration_s"] + 2  # + one op
    assert (lat >= 0).all() and (np.diff(start) > 0).all()
    assert abs(start[0] / 1e9 - time.time()) < 60  # epoch nanoseconds

    # the printed statistics, recomputed from the csv
    q = np.percentile(lat, fspec.QUANTILES, method="inverted_cdf")
    for key, want in zip(("p50", "p95", "p99"), q):
        assert res["ms"][key] == f"{want / 1e6:.6f}", key
        assert int(want) == _nearest_rank(lat, fspec.QUANTILES[("p50", "p95", "p99").index(key)])
    assert res["ms"]["max"] == f"{lat.max() / 1e6:.6f}"
    assert float(res["ms"]["avg"]) == pytest.approx(int(lat.sum()) / len(lat) / 1e6, abs=1.1e-6)
    # ops/sec = n / elapsed, elapsed printed to 0.1 s
    assert res["n"] / (res["elapsed"] + 0.05) - 0.05 <= res["rate"]
    if res["elapsed"] > 0.05:
        assert res["rate"] <= res["n"] / (res["elapsed"] - 0.05) + 0.05

    # its subdirectory is gone, and nothing else was left in --dir
    assert list(work.iterdir()) == []


RECORDED = sorted(p for p in (Path(__file__).parent / "data" / "fsmicro").iterdir() if p.is_dir())


@pytest.mark.parametrize("run", RECORDED, ids=[p.name for p in RECORDED])
def test_recorded_output_is_consistent(run: Path) -> None:
    """tests/data/fsmicro (the parser's test data): stdout agrees with the csv beside it."""
    stdout = (run / "fsmicro.stdout").read_text()
    res = _parse(stdout)
    ops, _, lat = _csv(run / fspec.CSV_NAME)
    assert res["n"] == len(lat) and set(ops) == {res["name"]} and res["optype"] == res["name"][:10]
    decimals = len(res["ms"]["p50"].split(".")[1])
    q = np.percentile(lat, fspec.QUANTILES, method="inverted_cdf")
    for key, want in zip(("p50", "p95", "p99", "max"), [*q, lat.max()]):
        assert res["ms"][key] == f"{want / 1e6:.{decimals}f}", key
    assert res["partial"] == (["# partial: interrupted"] if "interrupted" in run.name else [])


def test_default_layout_is_pebbles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, stdout, stderr, _, _ = _run({"op": "create_fsync", "count": 5}, tmp_path, capsys)
    assert rc == 0, stderr
    lines = stdout.splitlines()
    assert lines[0] == fspec.HEADER
    # "%10s %7.1fs %14d %14.1f %8.1f %8.1f %8.1f %8.1f %8.1f"
    row = lines[1]
    assert len(row) == 10 + 9 + 15 + 15 + 5 * 9
    assert row[:10] == "create_emp" and row[18:20] == "s "
    assert lines[2:] == ["", f"fsbench/create_empty  5 {_parse(stdout)['rate']:0.1f} ops/sec"]


@pytest.mark.parametrize(
    "ms_decimals, row",
    [
        # seed 003, create_empty ext4 run 1, and delete_small_dir_2MB ext4 run 1 (pebble's later "%5.5f")
        (1, "create_emp   600.0s         386438          644.1      1.6      1.6      2.0      2.5     67.1"),
        (5, "delete_sma   600.0s          40001           66.7 0.05900 0.04096 0.05734 0.06553 75.49747"),
    ],
)
def test_format_row_reproduces_seed_003_rows(ms_decimals: int, row: str) -> None:
    f = row.split()
    ms = dict(zip(("avg", "p50", "p95", "p99", "max"), map(float, f[4:])))
    name = {"create_emp": "create_empty", "delete_sma": "delete_small_dir_2MB"}[f[0]]
    assert fsmicro.format_row(name, float(f[1][:-1]), int(f[2]), ms, ms_decimals) == row


@pytest.mark.parametrize(
    "spec, name",
    [
        ({"op": "create_fsync"}, "create_empty"),
        ({"op": "create_fsync", "size_bytes": 100_000}, "create_100KB"),
        ({"op": "delete"}, "delete_10k_2MB"),
        ({"op": "delete", "files": 100_000}, "delete_100k_2MB"),
        ({"op": "delete", "files": 2_000, "size_bytes": 200_000_000, "bg_files": 8_000}, "delete_10k_2k_200MB"),
        ({"op": "delete_small_dir"}, "delete_small_dir_2MB"),
        ({"op": "delete_large_dir", "size_bytes": 200_000_000}, "delete_large_dir_200MB"),
        ({"op": "write_fsync"}, "write_sync_10MB"),
        ({"op": "statfs"}, "statfs_many_files"),
    ],
)
def test_seed_003_names(spec: dict[str, Any], name: str) -> None:
    assert fspec.label(fspec.resolve(spec)) == name


def test_resolve_defaults_and_limits() -> None:
    p = fspec.resolve({"op": "create_fsync"})
    assert (p["duration_s"], p["count"]) == (600.0, None)
    p = fspec.resolve({"op": "create_fsync", "count": 10})
    assert (p["duration_s"], p["count"]) == (None, 10)
    p = fspec.resolve({"op": "delete"})
    assert (p["duration_s"], p["count"], p["files"], p["size_bytes"]) == (None, None, 10_000, 2_000_000)
    assert fspec.resolve({"op": "delete_large_dir"})["bg_files"] == 100_000
    for bad in (
        {"op": "fio"},
        {"op": "statfs", "files": 3},
        {"op": "delete", "files": 5, "count": 6},
        {"op": "write_fsync", "size_bytes": 10, "max_file_bytes": 5},
        {"op": "statfs", "count": 0},
        {"op": "statfs", "count": 1.5},
        {"op": "delete", "fsync_dir": "yes"},
        {"op": "write_fsync", "fill": "zeros"},
        {"op": "create_fsync", "duration_s": -1},
    ):
        with pytest.raises(ValueError):
            fspec.resolve(bad)
    with pytest.raises(LabError, match="does not take files"):
        fspec.command({"op": "statfs", "files": 3}, Path("/x"), Path("/y"))


def test_refuses_a_foreign_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign = tmp_path / "fs" / fspec.SUBDIR
    foreign.mkdir(parents=True)
    (foreign / "temp_0").write_text("not the runner's")  # a name the runner would delete as its own
    rc, stdout, stderr, _, out = _run({"op": "create_fsync", "count": 3}, tmp_path, capsys)
    assert rc == 2
    assert "refus" in stderr and str(foreign) in stderr
    assert (foreign / "temp_0").read_text() == "not the runner's"
    assert not out.exists() and stdout == ""


def test_runs_by_path_from_any_directory(tmp_path: Path) -> None:
    """The command line works where the study runner runs it: in the run directory."""
    work, out = tmp_path / "fs", tmp_path / "run"
    work.mkdir()
    out.mkdir()
    proc = subprocess.run(
        fspec.command({"op": "statfs", "count": 3, "size_bytes": 10}, work, out),
        cwd=out,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert _parse(proc.stdout)["n"] == 3 and (out / fspec.CSV_NAME).is_file()
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--op", "create_fsync", "--count", "3"], "required"),
        (["--op", "create_fsync", "--files", "3"], "does not take files"),
        (["--op", "delete", "--files", "2", "--count", "3"], "count 3 > files 2"),
        (["--op", "statfs", "--count", "-1"], ">= 1"),
    ],
)
def test_bad_input_exits_2(argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if message != "required":
        argv = [*argv, "--dir", str(tmp_path), "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exc:
        fsmicro.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite_a_run_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, *_ = _run({"op": "statfs", "count": 3, "size_bytes": 10}, tmp_path, capsys)
    assert rc == 0
    with pytest.raises(SystemExit) as exc:
        _run({"op": "statfs", "count": 3, "size_bytes": 10}, tmp_path, capsys)
    assert exc.value.code == 2 and "exists" in capsys.readouterr().err
    assert list((tmp_path / "fs").iterdir()) == []


def _wait_for_files(sub: Path, n: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if len(os.listdir(sub)) >= n:
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    return False


def _check_partial(stdout: str, out: Path, work: Path) -> None:
    res = _parse(stdout)
    assert res["partial"] == ["# partial: interrupted"]
    ops, _, _ = _csv(out / fspec.CSV_NAME)
    assert res["n"] == len(ops) >= 20
    assert res["elapsed"] < 30
    assert list(work.iterdir()) == []


def test_sigint_mid_run_writes_partial_and_cleans_up(tmp_path: Path) -> None:
    """A real process, interrupted the way Ctrl-C does."""
    work, out = tmp_path / "fs", tmp_path / "run"
    work.mkdir()
    cmd = fspec.command({"op": "create_fsync", "duration_s": 60}, work, out)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for_files(work / fspec.SUBDIR, 20), "the run never started"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr
    _check_partial(stdout, out, work)


def test_sigterm_mid_run_writes_partial_and_cleans_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (saves a Python start): SIGTERM once the loop is running, i.e. once the
    runner's handler is installed (it is installed before the work directory is created)."""
    work = tmp_path / "fs"
    work.mkdir()

    def kill_when_running() -> None:
        if _wait_for_files(work / fspec.SUBDIR, 20):
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    killer = threading.Thread(target=kill_when_running, daemon=True)
    killer.start()
    rc, stdout, stderr, _, out = _run({"op": "create_fsync", "duration_s": 20}, tmp_path, capsys)
    killer.join()
    assert rc == 128 + signal.SIGTERM, stderr
    _check_partial(stdout, out, work)
    assert signal.getsignal(signal.SIGTERM) == before  # the runner put the old handler back


def _can_loop_mount() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not Path("/dev/loop-control").exists():
        return "no loop devices"
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_can_loop_mount() is not None, reason=str(_can_loop_mount()))
def test_on_a_loop_mounted_ext4_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the image made here is attached, mounted and released (loop devices of a running study
    are never touched: the device is the one `losetup --find --show` returned for this image)."""
    img, mnt = tmp_path / "fsmicro-test.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as fh:
        fh.truncate(64 << 20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", "--direct-io=on", str(img)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    mounted = False
    try:
        subprocess.run(["mkfs.ext4", "-q", dev], check=True, capture_output=True, timeout=60)
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True, timeout=30)
        mounted = True
        before = sorted(os.listdir(mnt))  # lost+found: --dir need not be empty, only its own subdirectory
        for i, spec in enumerate(
            ({"op": "create_fsync", "count": 50}, {"op": "write_fsync", "size_bytes": 1 << 20, "count": 5})
        ):
            capsys.readouterr()
            assert fsmicro.main(fspec.command(spec, mnt, tmp_path / f"run{i}")[3:]) == 0
            ops, _, _ = _csv(tmp_path / f"run{i}" / fspec.CSV_NAME)
            assert _parse(capsys.readouterr().out)["n"] == len(ops) == spec["count"]
            assert sorted(os.listdir(mnt)) == before
        # a full file system stops the run with a partial marker, and the clean-up still happens
        full = {"op": "write_fsync", "size_bytes": 8 << 20, "count": 100}
        assert fsmicro.main(fspec.command(full, mnt, tmp_path / "full")[3:]) == 1
        assert "# partial: no space left on device" in capsys.readouterr().out
        assert sorted(os.listdir(mnt)) == before
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False, timeout=60)
        subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


@pytest.mark.parametrize(
    ("setup_sync", "file_fsyncs", "syncfs_calls"),
    # delete: 12 files to delete + 5 background files; 'each' fsyncs all 17 as it makes them, 'end' none of
    # them and the file system once; both then fsync the directory once before the timer starts
    [("each", 17, 0), ("end", 0, 1)],
)
def test_setup_sync_each_or_once_at_the_end(
    setup_sync: str,
    file_fsyncs: int,
    syncfs_calls: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = {"op": "delete", "files": 12, "size_bytes": 4096, "bg_files": 5, "setup_sync": setup_sync}
    work = tmp_path / "fs"
    seen: list[str] = []  # what each fsync before the first unlink was of: a regular file or the directory
    real_fsync, real_syncfs, real_unlink = os.fsync, fsmicro.syncfs, os.unlink
    timed = [False]

    def fsync(fd: int) -> None:
        if not timed[0]:
            seen.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real_fsync(fd)

    def syncfs(fd: int) -> None:
        seen.append("syncfs")
        real_syncfs(fd)

    def unlink(*a: Any, **kw: Any) -> None:
        timed[0] = True
        real_unlink(*a, **kw)

    monkeypatch.setattr(fsmicro.os, "fsync", fsync)
    monkeypatch.setattr(fsmicro, "syncfs", syncfs)
    monkeypatch.setattr(fsmicro.os, "unlink", unlink)
    rc, stdout, stderr, work, _ = _run(spec, tmp_path, capsys)
    assert rc == 0, stderr
    assert seen.count("file") == file_fsyncs and seen.count("syncfs") == syncfs_calls
    assert seen[-1] == "dir" and seen.count("dir") == 1  # the directory last, once, in both ways
    assert _parse(stdout)["n"] == 12 and list(work.iterdir()) == []
    cmd = fspec.command(spec, work, tmp_path)
    assert cmd[cmd.index("--setup-sync") + 1] == setup_sync


def test_syncfs_of_a_bad_descriptor_raises() -> None:
    with pytest.raises(OSError, match="syncfs"):
        fsmicro.syncfs(10_000)


def test_a_delete_of_pre_created_files_runs_until_all_are_deleted() -> None:
    from pgfslab.config.model import RunSettings, Workload
    from pgfslab.run.fs_run import fs_op_spec

    run = RunSettings(duration_s=5, timeout_factor=3)
    # no duration of its own: every one of the 100k files is deleted, however long it takes (as seed 003)
    op, timeout = fs_op_spec(
        Workload.from_dict({"tool": "fsmicro", "op": "delete", "files": 100_000, "repeats": 4}), run
    )
    assert op == {"op": "delete", "files": 100_000} and fspec.resolve(op)["duration_s"] is None
    # + 10 ms per file made and a second per 10 MB the set-up writes (a delete's files are 2 MB unless it says)
    assert timeout == 5 * 3 + 600 + 1000 + 100_000 * 2_000_000 / 10e6
    # a duration or a count of its own is kept
    op, _ = fs_op_spec(Workload.from_dict({"tool": "fsmicro", "op": "delete", "files": 10, "duration_s": 2}), run)
    assert op["duration_s"] == 2
    op, _ = fs_op_spec(Workload.from_dict({"tool": "fsmicro", "op": "delete", "files": 10, "count": 4}), run)
    assert op == {"op": "delete", "files": 10, "count": 4, "duration_s": 5}
    # every other op runs for the study's duration; its background files lengthen the timeout
    op, timeout = fs_op_spec(
        Workload.from_dict({"tool": "fsmicro", "op": "delete_large_dir", "bg_files": 100_000}), run
    )
    assert op["duration_s"] == 5 and timeout == 5 * 3 + 600 + 1000 + 100_000 * 1_000_000 / 10e6  # 1 MB each (seed 003)
