"""The /proc/stat sampler log (`stat.log`, format proc-stat): rows against a plain reading of the files,
the kernels' layouts, damage, and detection beside the other sampler logs. Fast, no root."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pgfslab.config.model import SamplerSettings
from pgfslab.ingest import parsers
from pgfslab.ingest.parsers import ParseError, diskstats, meminfo, procstat, vmstat
from pgfslab.run.sampler import Samplers

DATA = Path(__file__).resolve().parent / "data"
CAPTURED = DATA / "captured" / "proc_stat"
LOCAL = CAPTURED / "local" / "stat_kernel6.18_2cpu.log"
K24 = CAPTURED / "documented" / "stat_kernel2.4_4fields.log"
K2611 = CAPTURED / "documented" / "stat_kernel2.6.11_8fields.log"
NAMES = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"]


def plain_rows(path: Path) -> list[tuple[float, str, list[int | None]]]:
    """(epoch, cpu, 10 counters padded with None) for every cpu line, read with str.split."""
    rows: list[tuple[float, str, list[int | None]]] = []
    epoch = 0.0
    for ln in path.read_text().splitlines():
        if ln.startswith("@ "):
            epoch = float(ln[2:])
        elif ln.startswith("cpu"):
            name, *vals = ln.split()
            rows.append((epoch, name, [int(v) for v in vals] + [None] * (10 - len(vals))))
    return rows


def rows_of(frame: pl.DataFrame) -> list[tuple[float, str, list[int | None]]]:
    return [(r["ts"].timestamp(), r["cpu"], [r[c] for c in NAMES]) for r in frame.iter_rows(named=True)]


@pytest.mark.parametrize("path", [LOCAL, K24, K2611], ids=lambda p: p.name)
def test_rows_are_the_files_cpu_lines(path: Path) -> None:
    out = procstat.parse(path)
    got = rows_of(out["cpu_stat"])
    want = plain_rows(path)
    assert [(round(t, 6), c, v) for t, c, v in got] == [(round(t, 6), c, v) for t, c, v in want]
    assert out["cpu_stat"].schema == pl.Schema(procstat.SCHEMA)
    assert "_warnings" not in out
    # every line accounted for: markers and cpu lines parsed, the rest (intr, ctxt, ...) noise
    lines = path.read_text().splitlines()
    acc = out["_lines"]
    assert acc["line"].to_list() == list(range(1, len(lines) + 1))
    parsed = [i + 1 for i, ln in enumerate(lines) if ln.startswith(("@ ", "cpu"))]
    assert acc.filter(pl.col("kind") == "parsed")["line"].to_list() == parsed
    assert acc.filter(pl.col("kind") == "noise").height == len(lines) - len(parsed)


def test_captured_sample_is_this_machines_two_cpus() -> None:
    f = procstat.parse(LOCAL)["cpu_stat"]
    assert sorted(set(f["cpu"])) == ["cpu", "cpu0", "cpu1"]
    assert f.filter(pl.col("cpu") == "cpu")["ts"].n_unique() == 5
    assert f.null_count().sum_horizontal().item() == 0  # kernel 6.18: all 10 counters


def test_layouts_by_field_count(tmp_path: Path) -> None:
    old = procstat.parse(K24)["cpu_stat"]
    assert old["user"][0] == 10132 and old["idle"][0] == 46828
    assert old.select(NAMES[4:]).null_count().row(0) == (old.height,) * 6
    steal = procstat.parse(K2611)["cpu_stat"]
    assert steal["steal"][0] == 1502 and steal["guest"].null_count() == steal.height
    body = {
        7: "1 2 3 4 5 6 7",
        9: "1 2 3 4 5 6 7 8 9",
        10: "1 2 3 4 5 6 7 8 9 10",
    }
    for n, values in body.items():
        f = procstat.parse(_write(tmp_path, f"k{n}.log", f"@ 12.5\ncpu  {values}\ncpu0 {values}\nctxt 9\n"))["cpu_stat"]
        row = [f[c][0] for c in NAMES]
        assert row == list(range(1, n + 1)) + [None] * (10 - n)
    for n in (5, 6, 3):
        values = " ".join(str(i) for i in range(1, n + 1))
        with pytest.raises(ParseError, match=f"{n} counters after 'cpu0'") as exc:
            procstat.parse(_write(tmp_path, f"bad{n}.log", f"@ 1\ncpu  1 2 3 4\ncpu0 {values}\n"))
        assert exc.value.line == 3
    future = procstat.parse(_write(tmp_path, "k11.log", "@ 1\ncpu  1 2 3 4 5 6 7 8 9 10 11\n"))
    assert future["cpu_stat"]["guest_nice"][0] == 10
    assert future["_warnings"]["line"].to_list() == [2]


def test_torn_last_line_and_cut_sample(tmp_path: Path) -> None:
    text = LOCAL.read_text()
    last = text.rindex("@ ")
    cpu1 = text.index("cpu1", last)
    torn = _write(tmp_path, "torn.log", text[: cpu1 + 10])  # mid-way through the last sample's cpu1 line
    out = procstat.parse(torn)
    f = out["cpu_stat"]
    assert f.height == len(plain_rows(LOCAL)) - 1
    messages = out["_warnings"]["message"].to_list()
    assert any("incomplete last line dropped" in m for m in messages)
    assert any("last sample cut off: 2 of 3 lines" in m for m in messages)
    torn_line = torn.read_text().count("\n") + 1
    acc = out["_lines"]
    assert acc.filter(pl.col("kind") == "not_understood")["line"].to_list() == [torn_line]
    assert acc.height == torn_line


def test_garbage_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.log", "@ 1.5\ncpu  1 2 3 4 5 6 7 8 9 10\nMemFree: 12 kB\n")
    with pytest.raises(ParseError, match="expected '@ <epoch seconds>' or a /proc/stat line") as exc:
        procstat.parse(path)
    assert str(exc.value).startswith(f"{path}:3:")
    lost = _write(tmp_path, "lost.log", "@ 1.5\ncpu  1 2 3 4\ncpu0 1 2 3 4\ncpu  2 3 4 5\n")  # a marker lost
    with pytest.raises(ParseError, match="repeated within one sample") as exc:
        procstat.parse(lost)
    assert exc.value.line == 4
    with pytest.raises(ParseError, match="too large for a 64-bit integer") as exc:
        procstat.parse(_write(tmp_path, "big.log", "@ 1\ncpu  1 2 3 " + "9" * 25 + "\n"))
    assert exc.value.line == 2


def test_detection_beside_the_other_sampler_logs() -> None:
    assert parsers.detect_format(LOCAL) == "proc-stat"
    assert parsers.detect_format(K24) == "proc-stat"
    others = [DATA / "proc" / "diskstats.log", DATA / "proc" / "vmstat.log", DATA / "pg15" / "meminfo.log"]
    for path, fmt in zip(others, ("diskstats", "vmstat", "meminfo"), strict=True):
        head = path.read_text()[:8192]
        assert not procstat.sniff(head, path), path
        assert parsers.detect_format(path) == fmt
    head = LOCAL.read_text()[:8192]
    assert not any(m.sniff(head, LOCAL) for m in (diskstats, vmstat, meminfo))
    for mod in (diskstats, vmstat, meminfo):
        with pytest.raises(ParseError):
            mod.parse(LOCAL)
    with pytest.raises(ParseError):
        procstat.parse(others[1])


def test_units_are_user_hz_ticks() -> None:
    units = parsers.units_of("cpu_stat")
    assert {units[c] for c in NAMES} == {"ticks of USER_HZ (1/100 s on Linux), since boot"}


def test_samplers_write_stat_log(tmp_path: Path) -> None:
    s = Samplers(tmp_path, SamplerSettings())
    assert s.items["stat"].out == tmp_path / "stat.log"  # type: ignore[union-attr]
    off = Samplers(tmp_path, SamplerSettings(stat_hz=0))
    assert "stat" not in off.items


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_the_stat_sampler_at_its_default_keeps_run_fingerprints(tmp_path: Path) -> None:
    """Raw folders recorded before the /proc/stat sampler are not re-measured for it; another rate is a change."""
    import json

    import yaml

    from pgfslab.config.study import load_study

    src = Path(__file__).resolve().parent.parent / "config" / "fs-compare.yaml"
    default = load_study(src)
    fp = json.loads(default.run_fingerprint(default.runs[0]))
    assert default.sampler.stat_hz == 1 and "stat_hz" not in fp["sampler"]
    assert {"meminfo_hz", "diskstats_hz", "vmstat_hz", "pgstat_hz"} <= set(fp["sampler"])
    cfg = yaml.safe_load(src.read_text())
    cfg["sampler"]["stat_hz"] = 2
    (tmp_path / "fs-compare.yaml").write_text(yaml.safe_dump(cfg))
    faster = load_study(tmp_path / "fs-compare.yaml")
    assert json.loads(faster.run_fingerprint(faster.runs[0]))["sampler"]["stat_hz"] == 2
