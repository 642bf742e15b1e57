"""Every analysis notebook, executed with papermill on small recorded databases (tests/recorded.py):
it ran, its figures are real images, its table's numbers agree with values computed here directly
from the raw files with plain code (never with the code under test), and given a database without its
data it stops with the one-line MissingData message.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import re
import statistics
import struct
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
import recorded
import vl_convert as vlc

from pgfslab.analysis import registry

pytestmark = pytest.mark.slow  # executes notebooks (kernels, figures)

ANALYSIS_NOTEBOOKS = list(registry.ALL)


@pytest.fixture(scope="module")
def st() -> dict[str, recorded.Study]:
    return recorded.studies()


def study_with(st: dict[str, recorded.Study], tool: str) -> recorded.Study:
    for s in st.values():
        if any(w["tool"] == tool for w in s.cfg["workloads"].values()):
            return s
    pytest.skip(f"no recorded study with a {tool} workload")


# ------------------------------------------------------------------ plain readers of the raw files


def label(rec: dict) -> str:
    """A target as tables name it (`target_label`): the target, and for ZFS which implementation ran, from
    run.json's fs_label by name ('zfs (zfs-fuse, userspace)' -> 'zfs-gzip (zfs-fuse)')."""
    fs_label = rec.get("fs_label") or ""
    if fs_label.startswith("zfs (") and fs_label.endswith(")"):
        return f"{rec['target']} ({fs_label[5:-1].split(',')[0]})"
    return rec["target"]


def raw_runs(s: recorded.Study) -> dict[str, dict]:
    """run folder name -> its run.json (plain json), for the runs that measured something (an optional
    precision round recorded as `skipped` has no logs). A ladder's rung is part of the cell: its workload
    is named `<workload>.d<rung>` here, as the database names it."""
    out = {}
    for p in sorted(s.raw.iterdir()):
        if not (p / "run.json").exists():
            continue
        rec = json.loads((p / "run.json").read_text())
        if rec.get("status") == "skipped":
            continue
        if rec.get("rung") is not None:
            rec["workload"] = f"{rec['workload']}.d{rec['rung']}"
        out[p.name] = rec
    return out


def per_second(run_dir: Path) -> list[tuple[float, float]]:
    """(t, tps) per second: pgbench's `progress: 1.0 s, 1407.9 tps` lines or sysbench's `[ 1s ] ... tps: 654.19`."""
    out = []
    pg = run_dir / "pgbench.stderr"
    if pg.exists():
        for line in pg.read_text().splitlines():
            m = re.match(r"progress: ([0-9.]+) s, ([0-9.]+) tps", line)
            if m:
                out.append((float(m[1]), float(m[2])))
    sb = run_dir / "sysbench.stdout"
    if sb.exists():
        for line in sb.read_text().splitlines():
            m = re.match(r"\[ (\d+)s \] thds: \d+ tps: ([0-9.]+)", line)
            if m:
                out.append((float(m[1]), float(m[2])))
    return out


def summary_tps(run_dir: Path) -> float:
    pg = run_dir / "pgbench.stdout"
    if pg.exists():
        return float(re.search(r"tps = ([0-9.]+) \(without initial connection time\)", pg.read_text())[1])
    return float(
        re.search(r"transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)", (run_dir / "sysbench.stdout").read_text())[1]
    )


def mser5_trim(xs: list[float]) -> int:
    """Samples to drop by MSER-5 (White 1997), written out plainly."""
    k = len(xs) // 5
    if k < 2:
        return 0
    z = [sum(xs[i * 5 : (i + 1) * 5]) / 5 for i in range(k)]
    best, best_d = None, 0
    for d in range(k // 2 + 1):
        rest = z[d:]
        m = sum(rest) / len(rest)
        v = sum((x - m) ** 2 for x in rest) / len(rest) ** 2
        if best is None or v < best - 1e-12:
            best, best_d = v, d
    return best_d * 5


def benchmark_end(run_dir: Path) -> float:
    """Epoch at which the benchmark's last interval ended: pgbench's aggregate log (interval start + 1 s),
    else the last pg_stat sample (sysbench)."""
    logs = sorted(run_dir.glob("pgbench_log.*"))
    if logs:
        return max(int(ln.split()[0]) for f in logs for ln in f.read_text().splitlines()) + 1.0
    return float((run_dir / "pgstat.csv").read_text().splitlines()[-1].split(",")[0])


def meminfo(run_dir: Path, key: str) -> list[int]:
    vals = []
    for line in (run_dir / "meminfo.log").read_text().splitlines():
        if line.startswith(key + ":"):
            vals.append(int(line.split()[1]))
    return vals


def nearest_rank(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[max(1, math.ceil(round(p * len(v) / 100, 9))) - 1]


def png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


def forest_points(svg: str) -> int:
    """Points drawn in the plot of a Vega SVG (its symbol marks, not the legend's)."""
    groups = re.findall(r'<g class="mark-symbol role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    return sum(g.count("<path") for g in groups)


def forest_rows(parquet: Path) -> int:
    """The rows the verdicts' forest must draw: tested cells with an estimate, savings aside (their own table)."""
    from pgfslab.analysis.verdicts import claims

    quantity = {c.id: c.quantity for c in claims.claims()}
    res = pl.read_parquet(parquet).filter(pl.col("role").is_not_null() & pl.col("estimate").is_not_null())
    return sum(quantity[c] not in ("saving", "rank_test_floor", "durability", "qualitative") for c in res["claim"])


def colored_share(data: bytes) -> float:
    """Share of a PNG's pixels that carry colour (not white, grey or black): a chart whose marks
    collapsed (bars of zero width, nothing drawn) has almost none. Plain PNG decoding (8-bit RGBA)."""
    import zlib

    w, h = png_size(data)
    bit_depth, color_type = data[24], data[25]
    assert (bit_depth, color_type) == (8, 6), "expected 8-bit RGBA"
    pos, idat = 8, b""
    while pos < len(data):
        n = struct.unpack(">I", data[pos : pos + 4])[0]
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    raw, stride, bpp = zlib.decompress(idat), w * 4, 4
    prev, colored = bytearray(stride), 0
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, 4 * 3):  # every third pixel is enough
            r, g, bl, al = line[x : x + 4]
            if al > 0 and max(r, g, bl) - min(r, g, bl) > 60:
                colored += 1
        prev = line
    return colored / (w * h / 3)


# ------------------------------------------------------------------ every notebook ran, with real figures


def all_executions(st: dict[str, recorded.Study]) -> list[recorded.Execution]:
    return [ex for s in st.values() for ex in s.executions.values()]


def test_every_notebook_is_exercised(st: dict[str, recorded.Study]) -> None:
    ran = {ex.notebook for ex in all_executions(st)}
    assert ran == set(ANALYSIS_NOTEBOOKS), f"not executed on any recorded study: {set(ANALYSIS_NOTEBOOKS) - ran}"


def test_notebooks_ran(st: dict[str, recorded.Study]) -> None:
    failed = [f"{ex.study}/{ex.name}:\n{ex.log[-2500:]}" for ex in all_executions(st) if ex.returncode != 0]
    assert not failed, "\n\n".join(failed)
    for ex in all_executions(st):
        outs = recorded.outputs(ex.output)
        assert not [o for o in outs if o["output_type"] == "error"], ex.name
        assert any("image/svg+xml" in o.get("data", {}) for o in outs), f"{ex.name}: no figure shown"


def test_parameters_cell_and_question(st: dict[str, recorded.Study]) -> None:
    for name in ANALYSIS_NOTEBOOKS:
        nb = json.loads((recorded.NOTEBOOKS / f"{name}.ipynb").read_text())
        params = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
        assert len(params) == 1, name
        src = "".join(params[0]["source"])
        for p in ("db", "study", "targets", "alpha", "trim_s", "figures_dir", "tables_dir"):
            assert re.search(rf"^{p} = ", src, re.M), f"{name}: parameter {p} missing"
        if name in recorded.PER_WORKLOAD:
            assert re.search(r"^workload = ", src, re.M), name
        assert "**Question.**" in "".join(nb["cells"][0]["source"]), name
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), f"{name}: committed outputs"


def test_figures_are_real_images(st: dict[str, recorded.Study]) -> None:
    for s in st.values():
        pubs = [json.loads(p.read_text()) for p in s.tables.glob("*.json")]
        assert pubs, s.name
        for pub in pubs:
            figs = [b for b in pub["blocks"] if b["kind"] == "figure"]
            assert figs, f"{pub['name']}: no figure"
            for b in figs:
                svg = Path(b["path"])
                text = svg.read_text()
                assert text.startswith("<svg") and len(text) > 5_000 and "<text" in text, svg
                png = svg.with_suffix(".png").read_bytes()
                assert png.startswith(b"\x89PNG") and len(png) > 10_000, svg
                w, h = png_size(png)
                assert w >= 400 and h >= 200, (svg, w, h)
                if svg.name == "seed_verdicts-forest.svg":  # grey is a verdict's colour here: count the marks
                    drawn = forest_points(text)
                    assert drawn == forest_rows(s.tables / "seed_verdicts.parquet") > 0, (svg, drawn)
                else:
                    small = vlc.svg_to_png(text, scale=0.5)  # rasterised again, small: decoded below in pure Python
                    assert colored_share(small) > 0.003, f"{svg}: hardly any coloured marks drawn"
                assert svg.with_suffix(".pdf").read_bytes().startswith(b"%PDF"), svg
                assert len(b["caption"]) > 60, f"{svg}: caption too short"
            assert (s.tables / f"{pub['name']}.parquet").exists(), pub["name"]


def test_figures_name_every_target(st: dict[str, recorded.Study]) -> None:
    for s in st.values():
        targets = {r["target"] for r in raw_runs(s).values()}
        for name in ("throughput_stability", "variance_significance", "compression_footprint", "fs_micro-ops"):
            for svg in s.figures.glob(f"{name}*.svg"):
                text = svg.read_text()
                assert all(t in text for t in targets), (svg, targets)


# ------------------------------------------------------------------ tables against the raw files


def test_throughput_run_means_and_mser_trim(st: dict[str, recorded.Study]) -> None:
    for s in st.values():
        for name, ex in s.executions.items():
            if ex.notebook != "throughput_stability":
                continue
            table = pl.read_parquet(s.tables / f"{name}.parquet")
            trim = s.cfg["analysis"]["trim_s"]
            checked = 0
            for run_dir_name, rec in raw_runs(s).items():
                if rec["workload"] != name.removeprefix("throughput_stability-"):
                    continue
                row = table.filter(pl.col("run_id") == run_dir_name).row(0, named=True)
                series = [(t, x) for t, x in per_second(s.raw / run_dir_name) if t > trim]
                drop = mser5_trim([x for _, x in series])
                expect_trim = series[drop - 1][0] if drop else float(trim)
                assert row["trim_s"] == pytest.approx(max(expect_trim, trim)), run_dir_name
                kept = [x for t, x in series if t > row["trim_s"]]
                assert row["n"] == len(kept), run_dir_name
                assert row["mean"] == pytest.approx(statistics.fmean(kept), rel=1e-9), run_dir_name
                if len(set(kept)) > 1:
                    assert row["ci_lo"] < row["mean"] < row["ci_hi"], run_dir_name
                else:  # every second the same (a scan at 2 tps): no spread, the interval is the point
                    assert row["ci_lo"] == pytest.approx(row["mean"]) == pytest.approx(row["ci_hi"]), run_dir_name
                assert 1 <= row["n_eff"] <= row["n"], run_dir_name
                checked += 1
            assert checked >= 2 and checked == table.height, name


def test_variance_table(st: dict[str, recorded.Study]) -> None:
    for s in st.values():
        if "variance_significance" not in s.executions:
            continue
        table = pl.read_parquet(s.tables / "variance_significance.parquet")
        trim = s.cfg["analysis"]["trim_s"]
        compared = table["compared"][0]
        cells: dict[tuple, list[list[float]]] = defaultdict(list)
        for run_dir_name, rec in raw_runs(s).items():
            level = label(rec) if compared == "target_label" else rec["workload"]
            first = rec["workload"] if compared == "target_label" else label(rec)
            cells[(first, rec["clients"], level)].append([x for t, x in per_second(s.raw / run_dir_name) if t > trim])
        assert table.height == len(cells)
        first_col = "workload" if compared == "target_label" else "target_label"
        for (first, clients, level), runs in cells.items():
            row = table.filter(
                (pl.col(first_col) == first) & (pl.col("clients") == clients) & (pl.col("level") == level)
            ).row(0, named=True)
            pooled = [x for r in runs for x in r]
            assert row["n"] == len(pooled)
            assert row["mean"] == pytest.approx(statistics.fmean(pooled), rel=1e-9)
            assert row["variance"] == pytest.approx(statistics.variance(pooled), rel=1e-9)
            grand = statistics.fmean(pooled)
            within = [x - statistics.fmean(r) + grand for r in runs for x in r]
            assert row["variance_within"] == pytest.approx(statistics.variance(within), rel=1e-9)
            assert row["run_median"] == pytest.approx(
                statistics.median(
                    [
                        summary_tps(s.raw / d)
                        for d, rec in raw_runs(s).items()
                        if (label(rec) if compared == "target_label" else rec["workload"]) == level
                        and (rec["workload"] if compared == "target_label" else label(rec)) == first
                        and rec["clients"] == clients
                    ]
                ),
                rel=1e-9,
            )


def test_latency_table(st: dict[str, recorded.Study]) -> None:
    checked = 0
    for s in st.values():
        for name, ex in s.executions.items():
            if ex.notebook != "latency_percentiles":
                continue
            table = pl.read_parquet(s.tables / f"{name}.parquet")
            wl = name.removeprefix("latency_percentiles-")
            trim = s.cfg["analysis"]["trim_s"]
            by_cell: dict[tuple, list[Path]] = defaultdict(list)
            for d, rec in raw_runs(s).items():
                if rec["workload"] == wl:
                    by_cell[(label(rec), rec["clients"])].append(s.raw / d)
            for (target, clients), dirs in by_cell.items():
                rows = {
                    r["stat"]: r
                    for r in table.filter(
                        (pl.col("target_label") == target) & (pl.col("clients") == clients)
                    ).iter_rows(named=True)
                }
                if (dirs[0] / "sysbench.stdout").exists():  # --histogram: sysbench's percentile rule
                    hist: dict[float, int] = defaultdict(int)
                    for d in dirs:
                        text = (d / "sysbench.stdout").read_text()
                        for m in re.finditer(r"^\s+([0-9.]+) \|\**\s+(\d+)$", text, re.M):
                            hist[float(m[1])] += int(m[2])
                    values = sorted(hist)
                    total = sum(hist.values())
                    for p in (50, 95, 99):
                        k = max(1, math.floor(total * p / 100 + 0.5))
                        cum = 0
                        for v in values:
                            cum += hist[v]
                            if cum >= k:
                                break
                        assert rows[f"p{p}"]["value"] == pytest.approx(v, abs=6e-4), (target, p)
                    assert rows["p50"]["n"] == total
                else:  # pgbench aggregate log: exact mean, min and max after the trim
                    n = s_ = 0.0
                    lo, hi = math.inf, 0.0
                    for d in dirs:
                        lines = [
                            ln.split() for f in sorted(d.glob("pgbench_log.*")) for ln in f.read_text().splitlines()
                        ]
                        first = min(int(x[0]) for x in lines)
                        for x in lines:
                            if int(x[0]) - first + 1 > trim and int(x[1]) > 0:
                                n += int(x[1])
                                s_ += float(x[2])
                                lo, hi = min(lo, float(x[4])), max(hi, float(x[5]))
                    assert rows["mean"]["value"] == pytest.approx(s_ / n / 1000, rel=1e-9)
                    assert rows["min"]["value"] == pytest.approx(lo / 1000)
                    assert rows["max"]["value"] == pytest.approx(hi / 1000)
                    assert rows["p99"]["lo"] <= rows["p99"]["hi"]
                checked += 1
    assert checked >= 2


def test_dirty_memory_table(st: dict[str, recorded.Study]) -> None:
    checked = 0
    for s in st.values():
        if "dirty_memory_checkpoints" not in s.executions:
            continue
        table = pl.read_parquet(s.tables / "dirty_memory_checkpoints.parquet")
        for d in raw_runs(s):
            row = table.filter(pl.col("run_id") == d).row(0, named=True)
            dirty = meminfo(s.raw / d, "Dirty")
            assert row["dirty_max_mib"] == pytest.approx(max(dirty) / 1024)
            assert row["dirty_mean_mib"] == pytest.approx(statistics.fmean(dirty) / 1024)
            assert row["writeback_max_mib"] == pytest.approx(max(meminfo(s.raw / d, "Writeback")) / 1024)
            log = (s.raw / d / "postgresql.log").read_text()
            end = benchmark_end(s.raw / d)  # checkpoints that started while the benchmark ran
            starts = [
                ln
                for ln in log.splitlines()
                if "LOG:  checkpoint starting:" in ln
                and "shutdown" not in ln
                and datetime.datetime.strptime(ln[:23] + " +0000", "%Y-%m-%d %H:%M:%S.%f %z").timestamp() <= end
            ]
            assert row["checkpoints_log"] == len(starts), d
            if (s.raw / d / "pgstat.csv").exists():
                rows = [ln.split(",") for ln in (s.raw / d / "pgstat.csv").read_text().splitlines()[2:]]
                assert row["checkpoints_pgstat"] == (int(rows[-1][1]) + int(rows[-1][2])) - (
                    int(rows[0][1]) + int(rows[0][2])
                )
            if row["n_in"]:
                assert 0 < row["time_share"] <= 1 and 0 <= row["variance_share"] <= 1
            checked += 1
    assert checked >= 2


def test_compression_table(st: dict[str, recorded.Study]) -> None:
    for s in st.values():
        table = pl.read_parquet(s.tables / "compression_footprint.parquet")
        last: dict[str, dict] = {}
        for rec in sorted(raw_runs(s).values(), key=lambda r: r["plan_index"]):
            if rec["status"] == "ok":  # a failed run's sizes say where it stopped (durability/'s r3)
                last[rec["target"]] = rec
        assert sorted(table["target"].to_list()) == sorted(last)
        for t, rec in last.items():
            row = table.filter(pl.col("target") == t).row(0, named=True)
            assert row["fs_used_bytes"] == rec["fs_used_bytes"]
            assert row["database_bytes"] == (rec.get("postgres") or {}).get("database_bytes")
            comp = rec.get("compsize") or {}
            zfp = rec.get("zfs_footprint") or {}
            if "disk_bytes" in comp:
                assert row["compsize_disk_bytes"] == comp["disk_bytes"]
                assert row["ratio"] == pytest.approx(comp["uncompressed_bytes"] / comp["disk_bytes"])
                assert row["space_savings"] == pytest.approx(1 - comp["disk_bytes"] / comp["uncompressed_bytes"])
            elif zfp.get("used"):  # ZFS's own accounting: logicalused, or used x compressratio on zfs-fuse
                logical = zfp.get("logicalused") or zfp["logicalused_est"]
                assert (row["physical_bytes"], row["logical_bytes"]) == (zfp["used"], logical)
                assert row["ratio"] == pytest.approx(logical / zfp["used"])
                assert row["ratio"] == pytest.approx(zfp["compressratio"], abs=0.01)
            else:
                assert row["ratio"] is None


def test_scaling_table(st: dict[str, recorded.Study]) -> None:
    checked = 0
    for s in st.values():
        if "scaling" not in s.executions:
            continue
        table = pl.read_parquet(s.tables / "scaling.parquet")
        # one line per target and cell; a ladder's rungs are its points, in the order of their scale
        cells: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for d, rec in raw_runs(s).items():
            base = rec["workload"].split(".d")[0]
            scale = int(rec["dataset"].get("scale") or 0)
            cells[(label(rec), f"{base}/c={rec['clients']}")][scale].append(summary_tps(s.raw / d))
        for (target, cell), by_scale in cells.items():
            rows = table.filter((pl.col("target_label") == target) & (pl.col("cell") == cell)).sort("size_mib")
            assert rows.height == len(by_scale), (target, cell)
            for row, scale in zip(rows.iter_rows(named=True), sorted(by_scale), strict=True):
                assert row["median"] == pytest.approx(statistics.median(by_scale[scale]), rel=1e-9)
                assert row["n"] == len(by_scale[scale])
                checked += 1
    assert checked >= 2


def device_reads_per_s(run_dir: Path, device: str) -> float:
    """The data device's reads completed per second, first to last diskstats sample (plain reading)."""
    samples, ts = [], None
    for line in (run_dir / "diskstats.log").read_text().splitlines():
        if line.startswith("@"):
            ts = float(line.split()[1])
        elif line.split()[2:3] == [device]:
            samples.append((ts, int(line.split()[3])))
    (t0, r0), (t1, r1) = samples[0], samples[-1]
    return (r1 - r0) / (t1 - t0)


def test_io_methods_table(st: dict[str, recorded.Study]) -> None:
    """Each io_method variant's median tps, its ratio to the sync variant (the middle of the pairwise ratios)
    and the data device's reads per second, from the raw pgbench summaries and diskstats.log."""
    checked = 0
    for s in st.values():
        if "io_methods" not in s.executions:
            continue
        table = pl.read_parquet(s.tables / "io_methods.parquet")
        tps: dict[tuple[str, str], list[float]] = defaultdict(list)
        reads: dict[tuple[str, str], list[float]] = defaultdict(list)
        settings: dict[str, dict] = {}
        for d, rec in raw_runs(s).items():
            wl = rec["workload"].split(".d")[0]
            tps[(wl, rec["target"])].append(summary_tps(s.raw / d))
            reads[(wl, rec["target"])].append(device_reads_per_s(s.raw / d, rec["mount"]["device"].rsplit("/", 1)[-1]))
            settings[wl] = s.cfg["workloads"][wl].get("postgres_settings") or {}
        sync = {w for w, st_ in settings.items() if st_.get("io_method") == "sync"}
        for (wl, target), values in tps.items():
            row = table.filter((pl.col("workload") == wl) & (pl.col("target") == target)).row(0, named=True)
            assert row["median_tps"] == pytest.approx(statistics.median(values), rel=1e-9)
            assert row["reads_per_s"] == pytest.approx(statistics.median(reads[(wl, target)]), rel=1e-6)
            if wl in sync:
                assert row["is_baseline"] and row["ratio"] is None
                continue
            base = next(tps[(w, target)] for w in sync)  # one family in the recorded study
            pairwise = sorted(b / a for a in base for b in values)
            if len(pairwise) % 2:
                assert row["ratio"] == pytest.approx(pairwise[len(pairwise) // 2], rel=1e-9)
            assert row["lo"] <= row["ratio"] <= row["hi"]
            assert row["finding"].split(" (")[0] in ("gained", "lost") or row["finding"].startswith("no difference")
            checked += 1
    assert checked >= 2


def test_pg_versions_table(st: dict[str, recorded.Study]) -> None:
    """Each major's median tps per file system and its ratio to the oldest major's (the middle of the pairwise
    ratios), from the raw pgbench summaries and the server version each run.json recorded."""
    checked = 0
    for s in st.values():
        if "pg_versions" not in s.executions:
            continue
        table = pl.read_parquet(s.tables / "pg_versions.parquet").filter(pl.col("reading") == "major")
        tps: dict[tuple[str, str, int], list[float]] = defaultdict(list)
        for d, rec in raw_runs(s).items():
            major = int(rec["postgres_build"]["version"].split(".")[0])
            fs = rec["target"].removesuffix(f"-pg{major}")
            tps[(rec["workload"].split(".d")[0], fs, major)].append(summary_tps(s.raw / d))
        oldest = min(m for _, _, m in tps)
        for (wl, fs, major), values in tps.items():
            row = table.filter(
                (pl.col("workload") == wl) & (pl.col("fs_target") == fs) & (pl.col("pg_major") == major)
            ).row(0, named=True)
            assert row["median_tps"] == pytest.approx(statistics.median(values), rel=1e-9)
            if major == oldest:
                assert row["ratio"] is None and row["finding"] == "the reference major"
                continue
            pairwise = sorted(b / a for a in tps[(wl, fs, oldest)] for b in values)
            if len(pairwise) % 2:
                assert row["ratio"] == pytest.approx(pairwise[len(pairwise) // 2], rel=1e-9)
            assert row["lo"] <= row["ratio"] <= row["hi"]
            checked += 1
    assert checked >= 2


def test_fs_micro_table(st: dict[str, recorded.Study]) -> None:
    s = study_with(st, "fsmicro")
    table = pl.read_parquet(s.tables / "fs_micro.parquet")
    cells: dict[tuple, list[Path]] = defaultdict(list)
    for d, rec in raw_runs(s).items():
        out = (s.raw / d / "fsmicro.stdout").read_text()
        name = re.search(r"^fsbench/(\S+)", out, re.M)[1]
        cells[(name, rec["target"])].append(s.raw / d)
    assert table.height == len(cells)
    for (bench, target), dirs in cells.items():
        row = table.filter((pl.col("benchmark") == bench) & (pl.col("target_label") == target)).row(0, named=True)
        ops = []
        for d in dirs:
            lines = (d / "fsmicro.stdout").read_text().splitlines()
            header = next(i for i, ln in enumerate(lines) if ln.startswith("____optype"))
            ops.append(float(lines[header + 1].split()[3]))
        assert row["ops_med"] == pytest.approx(statistics.median(ops))
        p99 = []
        for d in dirs:
            lat = [int(ln.split(",")[2]) / 1e6 for ln in (d / "fsmicro_ops.csv").read_text().splitlines()[1:]]
            p99.append(nearest_rank(lat, 99))
        assert row["p99_ms"] == pytest.approx(statistics.median(p99), rel=1e-9)
        assert row["n"] == len(dirs)


def test_fs_micro_seed_form_benchstat(st: dict[str, recorded.Study]) -> None:
    """seed 003's table in its form: per benchmark and target the mean over its repeats of the timed operations
    per second (here every recorded benchmark does untimed work per loop: 1e9 / mean latency in ns of the
    csv), printed to benchstat's 3 significant digits."""
    s = study_with(st, "fsmicro")
    pub = json.loads((s.tables / "fs_micro.json").read_text())
    text = next(b["markdown"] for b in pub["blocks"] if b["kind"] == "text" and "```" in b["markdown"])
    rates: dict[tuple[str, str], list[float]] = defaultdict(list)
    for d, rec in raw_runs(s).items():
        lines = (s.raw / d / "fsmicro_ops.csv").read_text().splitlines()[1:]
        lat = [int(ln.split(",")[2]) for ln in lines]
        rates[(lines[0].split(",")[0], rec["target"])].append(1e9 * len(lat) / sum(lat))
    rows = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.startswith("fsbench/")}
    header = next(ln for ln in text.splitlines() if ln.startswith("name")).split()
    base, cand = header[1], header[3]
    assert {b for b, _ in rates} == {k.removeprefix("fsbench/") for k in rows}
    for bench, row in rows.items():
        for target, printed in ((base, row[1]), (cand, row[4 if row[2] == "±" else 3])):
            got = float(printed[:-1]) * 1000 if printed.endswith("k") else float(printed)
            want = statistics.mean(rates[(bench.removeprefix("fsbench/"), target)])  # 2 runs: nothing dropped
            assert got == pytest.approx(want, rel=0.006), (bench, target)


def test_sysbench_qps_per_run_table(st: dict[str, recorded.Study]) -> None:
    """seed 002's per-second figures and table: each run's average and variance of per-second TPS and its mean
    read/write/other QPS after trim_s, from sysbench.stdout's report lines read here with a regex."""
    s = study_with(st, "sysbench")
    trim = s.cfg["analysis"]["trim_s"]
    line = re.compile(r"^\[ (\d+)s \] thds: \d+ tps: ([0-9.]+) qps: [0-9.]+ \(r/w/o: ([0-9.]+)/([0-9.]+)/([0-9.]+)\)")
    checked = 0
    for wl in (w for w, spec in s.cfg["workloads"].items() if spec["tool"] == "sysbench"):
        table = pl.read_parquet(s.tables / f"sysbench_qps-{wl}.parquet")
        for d, rec in raw_runs(s).items():
            if rec["workload"] != wl:
                continue
            found = [line.match(ln) for ln in (s.raw / d / "sysbench.stdout").read_text().splitlines()]
            kept = [m for m in found if m and int(m[1]) > trim]
            tps = [float(m[2]) for m in kept]
            row = table.filter(pl.col("run_id") == d).row(0, named=True)
            assert row["n"] == len(tps) > 2
            assert row["tps_avg"] == pytest.approx(statistics.mean(tps), rel=1e-9)
            assert row["tps_var"] == pytest.approx(statistics.variance(tps), rel=1e-9)
            for i, kind in ((3, "read"), (4, "write"), (5, "other")):
                assert row[f"qps_{kind}_avg"] == pytest.approx(statistics.mean(float(m[i]) for m in kept), rel=1e-9)
            checked += 1
        pub = json.loads((s.tables / f"sysbench_qps-{wl}.json").read_text())
        text = next(b["markdown"] for b in pub["blocks"] if b["kind"] == "table")
        assert "thr avg" in text and "thr σ²" in text
    assert checked >= 2


def test_published_comparison_table(st: dict[str, recorded.Study]) -> None:
    checked = 0
    for s in st.values():
        if "local_vs_published" not in {j.notebook for j in recorded.notebooks_for(s)}:
            continue  # nothing published to compare with (registry.comparable): no table, as the pipeline runs it
        table = pl.read_parquet(s.tables / "local_vs_published.parquet")
        assert set(table["source"]) == {"this lab", "published"}
        lab = table.filter(pl.col("source") == "this lab")
        for kind in lab["kind"].unique().to_list():
            if kind.startswith("fs micro"):
                values = defaultdict(list)
                for d, rec in raw_runs(s).items():
                    out = (s.raw / d / "fsmicro.stdout").read_text()
                    m = re.search(r"^fsbench/(\S+)\s+\d+\s+([0-9.]+) ops/sec", out, re.M)
                    values[f"{m[1]} · {rec['target']}"].append(float(m[2]))
                for item, v in values.items():
                    row = lab.filter((pl.col("kind") == kind) & (pl.col("item") == item)).row(0, named=True)
                    assert row["value"] == pytest.approx(statistics.median(v), rel=1e-3)
                    checked += 1
            if kind.startswith("pgbench"):
                for row in lab.filter(pl.col("kind") == kind).iter_rows(named=True):
                    builtin, target, c, base = row["item"].split(" · ")  # one median per config workload
                    v = [
                        summary_tps(s.raw / d)
                        for d, rec in raw_runs(s).items()
                        if label(rec) == target
                        and f"c={rec['clients']}" == c
                        and rec["workload"].split(".d")[0] == base
                    ]
                    assert row["value"] == pytest.approx(statistics.median(v), rel=1e-9)
                    checked += 1
        pub = table.filter((pl.col("source") == "published") & pl.col("kind").str.starts_with("pgbench"))
        for row in pub.iter_rows(named=True):  # every published tps is in a seed-001 summary as printed
            texts = " ".join(p.read_text() for p in (recorded.REPO / "data" / "external").glob("seed001*/*.stdout"))
            assert f"tps = {row['value']:.6f}" in texts
    assert checked >= 2


# ------------------------------------------------------------------ without data: one line


@pytest.mark.parametrize("notebook", ANALYSIS_NOTEBOOKS)
def test_missing_data_is_one_line(st: dict[str, recorded.Study], notebook: str) -> None:
    ex = recorded.missing_data_runs()[notebook]
    assert ex.returncode != 0, f"{notebook} ran on a database without its data"
    errors = [o for o in recorded.outputs(ex.output) if o["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "MissingData", (notebook, ex.log[-1500:])
    shown = [ln for ln in errors[0]["traceback"] if ln.strip()]
    assert len(shown) == 1 and shown[0].startswith("STOP: "), shown
    assert "Traceback" not in "".join(errors[0]["traceback"])


def test_targets_parameter_keeps_only_those_targets(st: dict[str, recorded.Study]) -> None:
    s = study_with(st, "sysbench")
    keep = sorted({r["target"] for r in raw_runs(s).values()})[-1:]
    wl = next(iter(s.cfg["workloads"]))
    out = recorded.workdir() / "filtered"
    out.mkdir(parents=True, exist_ok=True)
    rc, log = recorded.papermill(
        "throughput_stability",
        out / "nb.ipynb",
        {
            "db": s.db,
            "study": s.study,
            "workload": wl,
            "targets": keep,
            "figures_dir": out / "figs",
            "tables_dir": out / "tables",
        },
    )
    assert rc == 0, log
    table = pl.read_parquet(out / "tables" / f"throughput_stability-{wl}.parquet")
    assert table["target"].unique().to_list() == keep
    assert table.height == sum(1 for r in raw_runs(s).values() if r["target"] in keep and r["workload"] == wl)


# ------------------------------------------------------------------ opened as a researcher opens them


@pytest.mark.parametrize("notebook", ["throughput_stability", "dirty_memory_checkpoints"])
def test_runs_as_jupyterlab_runs_it_with_repository_relative_paths(
    st: dict[str, recorded.Study], notebook: str
) -> None:
    """No papermill: the notebook file as committed, executed top to bottom by nbclient (JupyterLab's executor)
    with the kernel in notebooks/ and no PYTHONPATH; only its parameters cell edited, as a researcher edits it,
    to paths relative to the repository. The figure lands under the repository, not under notebooks/."""
    import shutil

    import nbformat
    from nbclient import NotebookClient

    s = study_with(st, "pgbench")
    # under data/work, the lab's scratch folder, which no rule of the workflow reads
    rel = Path("data") / "work" / "pytest-jupyterlab" / notebook
    root = recorded.REPO / rel
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    shutil.copy(s.db, root / "study.duckdb")  # the database alone: no notebook reads the raw folder
    nb = nbformat.read(recorded.NOTEBOOKS / f"{notebook}.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    workload = next(iter(registry.series_workloads(s.typed)))
    params.source += (
        f"\ndb = {str(rel / 'study.duckdb')!r}\nstudy = {s.study!r}\nworkload = {workload!r}\n"
        f"figures_dir = {str(rel / 'figures')!r}\ntables_dir = {str(rel / 'tables')!r}\n"
    )
    assert "PYTHONPATH" not in __import__("os").environ
    try:
        NotebookClient(
            nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(recorded.NOTEBOOKS)}}
        ).execute()
        errors = [
            o
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.get("outputs", [])
            if o.get("output_type") == "error"
        ]
        assert not errors
        name = f"{notebook}-{workload}" if notebook in registry.PER_WORKLOAD else notebook
        assert (root / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (root / "tables" / f"{name}.parquet").exists()
        assert not (recorded.NOTEBOOKS / rel).exists(), "a relative path was resolved against the kernel's folder"
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with contextlib.suppress(OSError):  # when empty
            root.parent.rmdir()
