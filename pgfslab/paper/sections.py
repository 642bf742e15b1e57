"""The whitepaper's sections, each a function the paper notebook calls. Every number in the text
is computed here from the study database or read from what the executed notebooks recorded
(`report.Publication`: <tables_dir>/<name>.json); nothing is typed by hand.

Works for every kind of study: pgbench, sysbench and fsmicro workloads, alone or mixed. A run's
headline number is its tool's throughput (`data.headline`: pgbench/sysbench tps, fsmicro ops/s,
higher is better).
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from IPython.display import Markdown, display

from pgfslab.analysis import queries as data
from pgfslab.analysis import report, stats
from pgfslab.paper import hosts as paper_hosts
from pgfslab.paper import wal as paper_wal
from pgfslab.paper.build import write_meta
from pgfslab.paths import in_lab

PG_TOOLS = ("pgbench", "sysbench")
# the executed notebooks whose results the paper shows, in this order (per-workload ones first)
RESULT_ORDER = [
    "seed_verdicts",
    "throughput_stability",
    "sysbench_qps",
    "latency_percentiles",
    "variance_significance",
    "precision",
    "dirty_memory_checkpoints",
    "compression_footprint",
    "scaling",
    "fs_micro",
]
PUBLISHED = "local_vs_published"


@dataclass
class Context:
    db: str
    study: str
    info: dict[str, Any]
    cfg: dict[str, Any]
    runs: pl.DataFrame
    targets: pl.DataFrame
    headline: pl.DataFrame
    records: dict[str, dict[str, Any]]
    figures_dir: Path
    tables_dir: Path
    build_dir: Path
    target_records: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, db: str, study: str, *, figures_dir: str, tables_dir: str, build_dir: str) -> Context:
        """Paths relative to the repository (or absolute), wherever the kernel runs."""
        db = str(in_lab(db))
        figures_dir, tables_dir, build_dir = (str(in_lab(p)) for p in (figures_dir, tables_dir, build_dir))
        info = data.study_info(db)
        runs = data.require(data.runs(db, study), f"runs of study {study!r}")
        # the paper speaks of the config's workloads: a ladder's `tpcb.d2` is `tpcb` (its cell in cell_workload)
        runs = runs.with_columns(
            pl.col("workload").alias("cell_workload"), pl.coalesce("base_workload", "workload").alias("workload")
        )
        return cls(
            db,
            study,
            info,
            data.study_config(db),
            runs,
            data.targets(db, study),
            data.headline(db, study, only_ok=False),
            data.run_records(db, study, only_ok=False),
            Path(figures_dir),
            Path(tables_dir),
            Path(build_dir),
            data.target_records(db, study),
        )

    # ---------------------------------------------------------------- facts used by several sections
    @property
    def ok(self) -> pl.DataFrame:
        return self.headline.filter((pl.col("status") == "ok") & pl.col("value").is_not_null())

    @property
    def tools(self) -> list[str]:
        return self.runs["tool"].unique(maintain_order=True).to_list()

    @property
    def uses_postgres(self) -> bool:
        return any(t in PG_TOOLS for t in self.tools)

    @property
    def target_names(self) -> list[str]:
        return data.target_names(self.db, self.study)

    @property
    def baseline(self) -> str:
        return self.target_names[0]

    def first_record(self, tools: tuple[str, ...] | None = None) -> dict[str, Any]:
        for rec in self.records.values():
            if tools is None or rec.get("tool") in tools:
                return rec
        return next(iter(self.records.values()), {})

    def unit(self, tool: str | None = None) -> str:
        return data.METRICS.get(tool or self.tools[0], data.METRICS["pgbench"]).unit

    def headline_cell(self) -> tuple[str, int | None]:
        """The cell with the most repeats per target (ties: more clients, then config order)."""
        order = {w: i for i, w in enumerate(self.cfg.get("workloads") or {})}
        counts = (
            self.ok.group_by(["workload", "clients"])
            .agg((pl.len() / pl.col("target").n_unique()).alias("n"), pl.col("target").n_unique().alias("t"))
            .with_columns(
                pl.col("workload")
                .str.replace(r"\.d[0-9]+$", "")
                .replace_strict(order, default=99, return_dtype=pl.Int64)
                .alias("o")
            )
            .sort(["t", "n", "clients", "o", "workload"], descending=[True, True, True, False, True])
        )
        return counts["workload"][0], counts["clients"][0]


def show(text: str) -> None:
    display(Markdown(text))


def figure(path: Path | str, caption: str) -> None:
    """A numbered figure with its caption (pandoc implicit figure: an image alone in a paragraph)."""
    show(f"![{caption}]({Path(path).as_posix()})")


def _names(items: list[str]) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _wl_what(spec: dict[str, Any]) -> str:
    tool = spec.get("tool")
    if tool == "pgbench":
        what = spec.get("builtin") or ", ".join(Path(s["file"]).name for s in spec.get("scripts") or []) or "custom"
        return f"pgbench {what}"
    if tool == "sysbench":
        return f"sysbench {spec.get('test')}"
    return f"fsmicro {spec.get('op')}"


# ---------------------------------------------------------------------------------------- abstract


def abstract_text(ctx: Context) -> str:
    ok = ctx.ok
    n_targets = len(ctx.target_names)
    tools = _names([t for t in ctx.tools])
    text = (
        f"We ran {tools} against {n_targets} storage target{'s' if n_targets > 1 else ''} "
        f"({_names(ctx.target_names)}) on one machine ({ctx.runs['cpus'][0]} CPUs, "
        f"{report.bytes_h((ctx.runs['mem_total_kb'][0] or 0) * 1024)} RAM): {ctx.runs.height} runs of "
        f"{_run_lengths(ctx)}, repeats interleaved across {'targets' if n_targets > 1 else 'workloads'}. "
    )
    if ok.height == 0:
        return text + "No run completed, so there are no results to summarise."
    wl, clients = ctx.headline_cell()
    cell = ok.filter(
        (pl.col("workload") == wl) & (pl.col("clients") == clients) if clients is not None else pl.col("workload") == wl
    )
    tool = cell["tool"][0]
    unit = ctx.unit(tool)
    base = cell["base_workload"][0] if "base_workload" in cell.columns and cell["base_workload"][0] else wl
    spec = (ctx.cfg.get("workloads") or {}).get(base) or {}
    rung = f", data set {wl.rpartition('.d')[2]} of the ladder" if base != wl else ""
    what = f"{_wl_what(spec)}{rung}" + (f", {clients} client{'s' if clients != 1 else ''}" if tool in PG_TOOLS else "")
    med = (
        cell.group_by("target_label")
        .agg(pl.col("value").median().alias("m"), pl.len().alias("n"))
        .sort("m", descending=True)
    )
    if med.height >= 2:
        best, worst = med.row(0, named=True), med.row(-1, named=True)
        gap = 100 * (best["m"] - worst["m"]) / worst["m"] if worst["m"] else math.nan
        base = cell.filter(pl.col("target") == ctx.baseline)["target_label"]
        baseline = base[0] if base.len() else med["target_label"][-1]
        grid = stats.benchstat_grid(
            cell.with_columns(pl.lit(wl).alias("cell")),
            "value",
            "cell",
            "target_label",
            baseline,
            alpha=ctx.cfg["analysis"]["alpha"],
            adjust="holm",
        )
        tests = grid.filter(pl.col("benchmark") != "geomean")
        sig = tests.filter(pl.col("significant"))
        lo_n, hi_n = int(med["n"].min()), int(med["n"].max())
        reps = f"{lo_n}" if lo_n == hi_n else f"{lo_n}–{hi_n}"
        text += (
            f"In the headline cell ({what}, {reps} repeats per target) "
            f"{best['target_label']} reached a median of {report.num(best['m'])} {unit} and {worst['target_label']} "
            f"{report.num(worst['m'])} {unit} ({gap:.0f} % apart); {sig.height} of {tests.height} differences from "
            f"{baseline} are significant (Mann-Whitney U, Holm-adjusted, α = {ctx.cfg['analysis']['alpha']}). "
        )
    else:  # one target: compare the workloads of the study instead
        per_wl = (
            ok.group_by("workload", "clients")
            .agg(pl.col("value").median().alias("m"), pl.col("tool").first(), pl.len().alias("n"))
            .sort("m", descending=True)
        )
        text += (
            "Median throughput per workload: "
            + "; ".join(
                f"{r['workload']} {report.num(r['m'])} {ctx.unit(r['tool'])} ({r['n']} runs)"
                for r in per_wl.iter_rows(named=True)
            )
            + ". "
        )
        first = next((w for w in (ctx.cfg.get("workloads") or {}) if w in per_wl["workload"].to_list()), None)
        grid = stats.benchstat_grid(
            ok.with_columns(pl.col("clients").cast(pl.Utf8).alias("cell")),
            "value",
            "cell",
            "workload",
            first,
            alpha=ctx.cfg["analysis"]["alpha"],
            adjust="holm",
        )
        tests = grid.filter(pl.col("benchmark") != "geomean")
        if tests.height:
            text += (
                f"{tests.filter(pl.col('significant')).height} of {tests.height} differences from {first} are "
                f"significant (Mann-Whitney U, Holm-adjusted, α = {ctx.cfg['analysis']['alpha']}). "
            )
    wl_count = ok.select("workload", "clients").unique().height
    if wl_count > 1 and med.height >= 2:  # the other axis of the study: its workloads on the baseline target
        per_wl = (
            ok.filter(pl.col("target_label") == baseline)
            .group_by("workload", "clients", maintain_order=True)
            .agg(pl.col("value").median().alias("m"), pl.col("tool").first())
        )
        if per_wl.height > 1:
            text += (
                f"On {baseline}, the median per workload: "
                + "; ".join(
                    f"{data.cell_label(r['workload'], r['clients'], r['tool'])} {report.num(r['m'])} {ctx.unit(r['tool'])}"
                    for r in per_wl.iter_rows(named=True)
                )
                + ". "
            )
    comp = _parquet(ctx, "compression_footprint")
    if comp is not None and "ratio" in comp.columns and (comp["ratio"].fill_null(0) > 1.01).any():
        b = comp.filter(pl.col("ratio").is_not_null()).sort("ratio", descending=True).row(0, named=True)
        text += (
            f"Compression on {b['target']} stored the files at {b['ratio']:.2f}:1 "
            f"({report.pct(b['space_savings'], 0)} space savings). "
        )
    var = _parquet(ctx, "variance_significance")
    if var is not None and "cv_within" in var.columns and var.height:
        lo, hi = var.sort("cv_within").row(0, named=True), var.sort("cv_within").row(-1, named=True)
        text += (
            f"Per-second throughput varied within runs by {report.pct(lo['cv_within'], 0)} "
            f"({lo['level']}) to {report.pct(hi['cv_within'], 0)} ({hi['level']}) (coefficient of variation)."
        )
    return text.strip()


def _run_lengths(ctx: Context) -> str:
    """`20 s`, `10–60 s`, or with transaction-limited pgbench workloads `30 s or 1,500–5,000 transactions per client`."""
    wls = ctx.cfg.get("workloads") or {}
    timed = [w for w in wls if not wls[w].get("transactions")]
    counted = sorted({int(wls[w]["transactions"]) for w in wls if wls[w].get("transactions")})
    durations = sorted({int(d) for d in ctx.runs.filter(pl.col("workload").is_in(timed))["duration_s"].drop_nulls()})
    parts = []
    if durations:
        parts.append(f"{durations[0]} s" if len(durations) == 1 else f"{durations[0]}–{durations[-1]} s")
    if counted:
        n = f"{counted[0]:,}" if len(counted) == 1 else f"{counted[0]:,}–{counted[-1]:,}"
        parts.append(f"{n} transactions per client")
    return " or ".join(parts) or "unknown length"


def _parquet(ctx: Context, name: str) -> pl.DataFrame | None:
    p = ctx.tables_dir / f"{name}.parquet"
    return pl.read_parquet(p) if p.exists() else None


def abstract(ctx: Context) -> None:
    text = _durability_abstract(ctx) if ctx.ok.height == 0 and _durability_frame(ctx).height else abstract_text(ctx)
    write_meta(ctx.build_dir, abstract=text)
    # the PDF typesets the abstract under the title from the notebook metadata; HTML shows this output
    display(Markdown(f"**Abstract.** {text}"), metadata={"pgfs": {"front_matter": True}})


# ---------------------------------------------------------------------------------------- setup


def _facts(ctx: Context) -> dict[str, str]:
    rec = ctx.first_record()
    host, tools, git = rec.get("host") or {}, rec.get("tools") or {}, rec.get("git") or {}
    facts = {
        "CPU": f"{host.get('cpu_model') or '?'} ({host.get('cpus')} logical CPUs, {host.get('arch') or '?'})",
        "Memory": report.bytes_h((host.get("mem_total_kb") or 0) * 1024),
        "OS / kernel": f"{host.get('os') or '?'} / Linux {host.get('kernel') or '?'}",
    }
    if ctx.uses_postgres:
        pg = ctx.first_record(PG_TOOLS)
        facts["PostgreSQL"] = ((pg.get("postgres") or {}).get("version") or "?").split(" on ")[0]
    for tool in ("pgbench", "sysbench"):
        if tool in ctx.tools:
            facts[tool] = tools.get(tool) or "?"
    if "fsmicro" in ctx.tools:
        facts["fsmicro"] = "pgfslab/runners/fsmicro.py (this lab; pebble bench fs layout), Python " + (
            tools.get("python") or "?"
        )
    fss = sorted({str(f) for f in ctx.runs["fs"].drop_nulls().to_list()})
    mkfs = [v for k, v in tools.items() if k.startswith("mkfs") and k.split(".")[-1] in fss and v]
    if mkfs:
        facts["File-system tools"] = "; ".join(mkfs)
    facts["Python stack"] = ", ".join(
        f"{k} {tools[k]}"
        for k in ("python", "polars", "duckdb", "scipy", "altair", "snakemake", "papermill")
        if tools.get(k)
    )
    commits = sorted({(r.get("git") or {}).get("commit") or "unknown" for r in ctx.records.values()})
    dirty = any((r.get("git") or {}).get("dirty") for r in ctx.records.values())
    facts["Lab commit"] = ", ".join(c[:12] for c in commits) + (" (uncommitted changes)" if dirty else "")
    if len(commits) > 1:
        facts["Lab commit"] += f" — {len(commits)} commits over the runs"
    del git
    return facts


def _targets_table(ctx: Context) -> pl.DataFrame:
    rows = []
    for t in ctx.target_names:
        trec = ctx.target_records.get(t) or {}
        runs = ctx.runs.filter(pl.col("target") == t)
        rrec = next((ctx.records[r] for r in runs["run_id"].to_list() if r in ctx.records), {})
        mount = rrec.get("mount") or trec.get("mount") or {}
        created = trec.get("created") or {}
        spec = (ctx.cfg.get("targets") or {}).get(t) or {}
        fallback = bool(mount.get("fallback") or created.get("fallback"))
        kind = (
            mount.get("kind")
            or created.get("kind")
            or ("image" if str(mount.get("device", "")).startswith("/dev/loop") else "")
        )
        device = (
            "plain directory (FALLBACK)"
            if fallback
            else {
                "image": "image on a loop device",
                "tmpfs": "tmpfs",
                "existing": "existing mount",
                "device": f"block device {mount.get('device') or ''}",
            }.get(kind, kind or "–")
            + (", direct I/O" if kind == "image" and mount.get("direct_io") else "")
        )
        load = (trec.get("load") or {}).get("wall_s") or (trec.get("load_sysbench") or {}).get("wall_s")
        ds = data.dataset_label({**rrec, "dataset": rrec.get("dataset") or trec.get("dataset") or {}}) if rrec else "–"
        extras = []
        if spec.get("postgres_settings"):
            extras.append(", ".join(f"{k}={v}" for k, v in spec["postgres_settings"].items()))
        wal = rrec.get("wal") or trec.get("wal")
        if wal:
            extras.append(
                f"WAL on target {wal.get('target')} ({wal.get('fs_label') or wal.get('fs')}, {wal.get('device')})"
            )
        if t in (ctx.cfg.get("snapshots") or {}).get("targets", []):
            sn = ctx.cfg["snapshots"]
            extras.append(f"snapshots every {sn.get('interval_s')} s, kept {sn.get('keep_s')} s")
        rows.append(
            {
                "target": t,
                "fs": rrec.get("fs_label")
                or created.get("fs_label")
                or spec.get("fs")
                or (trec.get("spec") or {}).get("fs"),
                "device": device,
                "mount options (in force)": mount.get("mount_options") or "–",
                "image": report.bytes_h(created.get("image_bytes")) if created.get("image_bytes") else "–",
                "data set": ds,
                "load s": float(load) if load is not None else None,
                "other": "; ".join(extras) or "–",
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "target": pl.Utf8,
            "fs": pl.Utf8,
            "device": pl.Utf8,
            "mount options (in force)": pl.Utf8,
            "image": pl.Utf8,
            "data set": pl.Utf8,
            "load s": pl.Float64,
            "other": pl.Utf8,
        },
    )


def _os_table(ctx: Context) -> pl.DataFrame:
    rows = []
    for wl in ctx.runs["workload"].unique(maintain_order=True).to_list():
        rid = ctx.runs.filter(pl.col("workload") == wl)["run_id"][0]
        rec = ctx.records.get(rid) or {}
        vm = dict(rec.get("vm") or {})
        after = (rec.get("vm_applied") or {}).get("after") or {}
        vm.update({k.removeprefix("vm."): v for k, v in after.items()})
        res = rec.get("resources") or {}
        cg = rec.get("cgroup") or {}
        limit = (
            (
                f"{res['memory_limit_mb']} MiB"
                + ("" if cg.get("applied") else " (requested, not applied: " + str(cg.get("reason") or "?") + ")")
            )
            if res.get("memory_limit_mb")
            else "none"
        )
        rows.append(
            {
                "workload": wl,
                "dirty background": vm.get("dirty_background_bytes")
                if str(vm.get("dirty_background_bytes")) not in ("0", "None")
                else f"{vm.get('dirty_background_ratio')} %",
                "dirty": vm.get("dirty_bytes")
                if str(vm.get("dirty_bytes")) not in ("0", "None")
                else f"{vm.get('dirty_ratio')} %",
                "expire / writeback cs": f"{vm.get('dirty_expire_centisecs')} / {vm.get('dirty_writeback_centisecs')}",
                "swappiness": str(vm.get("swappiness")),
                "page cache dropped": "yes" if str(rec.get("caches", "")).startswith("dropped") else "no",
                "cgroup memory limit": limit,
            }
        )
    df = pl.DataFrame(rows)
    for c in ("dirty background", "dirty"):  # bytes in human units
        df = df.with_columns(
            pl.col(c).map_elements(
                lambda v: report.bytes_h(int(v)) if str(v).isdigit() else str(v), return_dtype=pl.Utf8
            )
        )
    return df.rename({"dirty background": "vm dirty background", "dirty": "vm dirty"})


def _when(ctx: Context) -> str:
    start, end = ctx.runs["started_at"].min(), ctx.runs["ended_at"].max()
    if start is None or end is None:
        return "an unknown date"
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"


def setup(ctx: Context) -> None:
    show(
        f"## Setup\n\nStudy `{ctx.study}`: {ctx.runs.height} runs of {len(ctx.cfg.get('workloads') or {})} "
        f"workload(s) on {len(ctx.target_names)} target(s), from {_when(ctx)}. Every fact below is read from the "
        "provenance records the lab writes with each run (`run.json`) and each target (`target.json`)."
    )
    facts = _facts(ctx)
    show(
        report.markdown_table(
            pl.DataFrame({"item": list(facts), "value": list(facts.values())}),
            caption="Machine, software and code version.",
        )
    )
    show(
        report.markdown_table(
            _targets_table(ctx),
            caption="Storage targets: file system, device, mount options as "
            "the kernel reported them in force, image size, data set and its bulk-load time, and "
            "per-target extras (PostgreSQL settings, where WAL lives, snapshots).",
        )
    )
    device_setup(ctx)
    if ctx.uses_postgres:
        rec = ctx.first_record(PG_TOOLS)
        settings = report.non_default_settings(json.dumps(rec))
        show(
            report.markdown_table(
                settings,
                caption="PostgreSQL settings that differ from the built-in defaults, as in "
                "force during the first run (pg_settings).",
            )
        )
        per_wl = [
            (w, s.get("postgres_settings"))
            for w, s in (ctx.cfg.get("workloads") or {}).items()
            if s.get("postgres_settings")
        ]
        if per_wl:
            show(
                report.markdown_table(
                    pl.DataFrame(
                        {
                            "workload": [w for w, _ in per_wl],
                            "settings": [", ".join(f"{k}={v}" for k, v in s.items()) for _, s in per_wl],
                        }
                    ),
                    caption="PostgreSQL settings of individual workloads (over the study's).",
                )
            )
    show(
        report.markdown_table(
            _os_table(ctx),
            caption="Operating-system settings in force per workload (vm.* as read "
            "back after applying, page-cache drop before each run) and the memory limit of "
            "PostgreSQL and its clients.",
        )
    )
    paper_hosts.setup_hosts(ctx)  # a study from several hosts: every host, and whether their hardware differs


# ---------------------------------------------------------------------------------------- methodology


def _workload_rows(ctx: Context) -> pl.DataFrame:
    rows = []
    for wl, spec in (ctx.cfg.get("workloads") or {}).items():
        runs = ctx.runs.filter((pl.col("workload") == wl) & (pl.col("status") != "skipped"))
        if runs.height == 0:
            continue
        reps = runs.group_by("target", "clients").len()["len"]
        tool = spec.get("tool")
        how = []
        if spec.get("transactions"):
            how.append(f"{spec['transactions']} transactions per client")
        else:
            how.append(f"{int(runs['duration_s'].median())} s")
        if tool == "pgbench":
            how += [f"-M {spec['query_mode']}"] if spec.get("query_mode") else []
            how += [f"--rate {spec['rate_tps']}"] if spec.get("rate_tps") else []
            how.append(
                {"aggregate": "aggregate log per second", "transactions": "per-transaction log", "none": "no log"}.get(
                    spec.get("log", "aggregate"), ""
                )
            )
        elif tool == "sysbench":
            how.append(f"p{spec.get('percentile', 95)} per second" + (", histogram" if spec.get("histogram") else ""))
        else:
            how += [f"{k} {spec[k]}" for k in ("size_bytes", "bg_files", "count", "files") if spec.get(k)]
        os_ = spec.get("os") or {}
        if os_:
            how.append(", ".join(f"{k.removeprefix('vm_')}={v}" for k, v in os_.items()))
        if spec.get("postgres_settings"):
            how.append(", ".join(f"{k}={v}" for k, v in spec["postgres_settings"].items()))
        rows.append(
            {
                "workload": wl,
                "tool": tool,
                "what": _wl_what(spec).split(" ", 1)[1],
                "clients": ", ".join(str(c) for c in sorted(runs["clients"].unique().to_list())),
                "repeats": f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()}–{reps.max()}",
                "run": "; ".join(h for h in how if h),
            }
        )
    return pl.DataFrame(rows)


def _headline_kinds(ctx: Context) -> str:
    kinds = {
        "pgbench": "pgbench's transactions per second without connection time",
        "sysbench": "sysbench's transactions per second",
        "fsmicro": "fsmicro's operations per second",
    }
    return "; ".join(kinds[t] for t in ctx.tools if t in kinds)


def methodology(ctx: Context) -> None:
    c = ctx.cfg
    a = c.get("analysis") or {}
    samplers = c.get("sampler") or {}
    sampled = ", ".join(
        f"{k.removesuffix('_hz')} at {v:g} Hz"
        for k, v in samplers.items()
        if k.endswith("_hz") and v and (k != "pgstat_hz" or ctx.uses_postgres)
    )
    show(f"""## Methodology

**Targets and runs.** Each target is formatted and mounted by the lab (a sparse image on a loop device with
direct I/O, so the host's page cache does not absorb the target's I/O), and, for the PostgreSQL workloads, a
cluster is initialised on it and loaded once. Every run then mounts the target, drops the kernel's page
cache{"" if (c.get("run") or {}).get("drop_caches", True) else " (disabled in this study)"}, starts the server, runs
one workload, stops the server and unmounts, while samplers record {sampled}. Runs are interleaved (repeat 1 of
every target and cell, then repeat 2, ...), so that drift of the machine over time does not masquerade as a
difference between targets.

{_start_sentence(ctx)}""")
    show(
        report.markdown_table(
            _workload_rows(ctx),
            caption="Workloads: tool, script, client counts (cells), repeats per "
            "cell and target, and how each run was driven.",
        )
    )
    if not _headline_kinds(ctx):  # durability checks only: no throughput, nothing to trim or compare
        show("""**What is measured.** No throughput: every run is a durability check (crash, restart,
verification), described with its results in the durability section. Its counts are exact, not estimates: every
transaction the client saw commit is looked up after the restart.""")
        return
    show(f"""**Warm-up.** Per-second series drop the first {a.get("trim_s", 2):g} s of every run; the throughput
stability analysis then finds the end of each run's warm-up with MSER-5 (White 1997: the truncation point that
minimises the standard error of the remaining batch means) and records the trim per run, flagging runs whose
truncation hits its limit (never settled).

**Statistics, and why.** Repeats, not seconds, are the unit of comparison: per-second samples of one run are
autocorrelated. A cell's value is the median of its runs' headline numbers ({_headline_kinds(ctx)}) with a
distribution-free confidence interval from order statistics (its
exact coverage is reported; with few repeats the widest interval falls short of 95 %). Targets are compared
benchstat-style: two-sided Mann-Whitney U test per cell (exact for small samples), p-values Holm-adjusted over all
comparisons of a table (the family a reader scans), `~` when not significant at α = {a.get("alpha", 0.05)} or when the
sample sizes cannot reach it at all. Within a run, a mean gets an interval from the effective sample size of its
autocorrelated samples (Geyer's initial positive sequence), not the naive iid one. Variances are compared with the
Brown-Forsythe test (robust to non-normal data) and variance ratios with F and circular block-bootstrap intervals
(the block length from Politis-White, respecting autocorrelation). Goodput: a run's failed transactions or ignored
errors per attempt, flagged above 1 %, so a run that is fast because it fails is not mistaken for a fast one.
Latency percentiles are exact from per-transaction logs, bounded from pgbench's aggregate logs (only count, sum,
min and max per second survive), and known to the bucket from sysbench's histogram; every table says which.""")


# ---------------------------------------------------------------------------------------- results


def _start_sentence(ctx: Context) -> str:
    """Which state a run starts from (the issue every seed comparison needs said), how many checkpoints the
    runs spanned, and how repeats were decided."""
    c = ctx.cfg
    rungs = "; each rung of the data-set ladder has a database of its own" if c.get("ladder") else ""
    warm = (
        ", its relations loaded into shared_buffers with pg_prewarm before the measured interval (warm start)"
        if (c.get("run") or {}).get("prewarm")
        else " and cold buffers (cold start)"
    )
    return (
        f"**Starting state.** A run starts from the data as the target's previous run left it (the data set is "
        f"loaded once, not restored before each run{rungs}), with a freshly started server{warm}. "
        + _checkpoint_sentence(ctx)
        + _precision_sentence(c)
    )


def _checkpoint_sentence(ctx: Context) -> str:
    """How many checkpoints the runs spanned (the seeds' long runs span many; short ones may span none)."""
    ok = ctx.runs.filter(pl.col("status") == "ok")
    if "checkpoints_timed" not in ok.columns:
        return ""
    n = (ok["checkpoints_timed"].fill_null(0) + ok["checkpoints_req"].fill_null(0)).drop_nulls()
    if n.is_empty():
        return ""
    return (
        f"Runs spanned {int(n.min())} to {int(n.max())} checkpoints (median {n.median():g}; timed and requested, from "
        f"pg_stat_bgwriter before and after); {int((n < 2).sum())} of {n.len()} runs spanned fewer than two."
    )


def _precision_sentence(c: dict[str, Any]) -> str:
    prec = c.get("precision")
    if not prec:
        return ""
    return (
        f" **Repeats until precise.** The cells {', '.join(prec.get('cells') or ['(every cell)'])} ran "
        f"{prec['min_repeats']} rounds, then further rounds (up to {prec['max_repeats']}) only while some target's median "
        f"was not yet known to ±{100 * prec['half_width']:g} % ({100 * prec['confidence']:g} % distribution-free "
        "interval)"
        + (
            f" and less than {prec['budget_min']:g} minutes had passed since the first run"
            if prec.get("budget_min")
            else ""
        )
        + "; the decision never looked at a p-value. The precision reached per cell is in the precision section."
    )


def _publications(ctx: Context, prefix: str) -> list[dict[str, Any]]:
    found = []
    for p in sorted(ctx.tables_dir.glob(f"{prefix}*.json")):
        doc = json.loads(p.read_text())
        if doc.get("name") == prefix or str(doc.get("name", "")).startswith(prefix + "-"):
            found.append(doc)
    order = {w: i for i, w in enumerate(ctx.cfg.get("workloads") or {})}
    return sorted(found, key=lambda d: order.get(str(d["name"]).removeprefix(prefix + "-"), 99))


def _render(doc: dict[str, Any]) -> None:
    show(f"### {doc['title']}\n\n*{doc['question']}*")
    for block in doc.get("blocks", []):
        if block["kind"] == "text":
            show(block["markdown"])
        elif block["kind"] == "figure":
            if Path(block["path"]).exists():
                figure(block["path"], block["caption"])
        elif block["kind"] == "table":
            show(block["markdown"])


def results(ctx: Context) -> None:
    show(
        "## Results\n\nOne subsection per analysis notebook that ran for this study (each is a parameterized "
        "notebook under `notebooks/`; its executed copy, figures and tables are build products of the study)."
    )
    shown = 0
    for name in RESULT_ORDER:
        for doc in _publications(ctx, name):
            _render(doc)
            shown += 1
    if not shown:
        show("No analysis notebook has produced results for this study yet.")
    device_results(ctx)
    paper_wal.wal_results(ctx)  # commits per WAL flush (pg_stat_wal), the WAL device apart (wal_on)
    paper_hosts.across_hosts(ctx)  # a study from several hosts: comparisons with the host as block
    failed = ctx.runs.filter(~pl.col("status").is_in(["ok", "skipped"]))  # skipped: a precision round not needed
    if failed.height:
        show(
            report.markdown_table(
                failed.select("run_id", "status", pl.col("error").fill_null("–")),
                caption="Runs that did not complete; their partial logs are kept and they are left "
                "out of every statistic.",
            )
        )


def published(ctx: Context) -> None:
    docs = _publications(ctx, PUBLISHED)
    show("## Comparison with published results")
    if not docs:
        show("Nothing in this study is comparable with the published results shipped with the lab.")
        return
    for doc in docs:
        show(f"*{doc['question']}*")
        for block in doc.get("blocks", []):
            if block["kind"] == "figure" and Path(block["path"]).exists():
                figure(block["path"], block["caption"])
            elif block["kind"] in ("text", "table"):
                show(block["markdown"])


# ---------------------------------------------------------------------------------------- device baseline


def device_setup(ctx: Context) -> None:
    """The per-target device table (fio and pg_test_fsync without PostgreSQL), when the study measured it."""
    from pgfslab.analysis import device

    if not device.has_baseline(ctx.db, ctx.study):
        return
    table, _ = device.section_tables(ctx.db, ctx.study)
    show(
        report.markdown_table(
            table,
            digits={c: 0 for c in table.columns if c != "target"},
            caption="Each target measured without PostgreSQL before its runs (fio on the mounted file system; "
            "8 kB writes with fdatasync after each at QD1, the WAL commit floor; 8 kB random I/O with O_DIRECT "
            "at queue depth 1 and 32, in IOPS; 1 MB sequential writes; pg_test_fsync's fdatasync rate for one "
            "8 kB write).",
        )
    )
    notes = sorted({n for n in device.device_table(ctx.db, ctx.study)["notes"].drop_nulls().to_list() if n})
    if notes:
        show("Device-baseline notes: " + " ".join(notes))


def device_results(ctx: Context) -> None:
    """PostgreSQL's single-client commit rate against each target's device ceiling, with the figure."""
    from pgfslab.analysis import charts, device

    if not device.has_baseline(ctx.db, ctx.study):
        return
    _, ctable = device.section_tables(ctx.db, ctx.study)
    show(
        "### PostgreSQL against the device's limit\n\nWith synchronous_commit on, a single client's commit "
        "waits for at least one WAL flush (an fdatasync), so 1 / (median fdatasync latency) of the target, "
        "measured by fio without PostgreSQL, is a ceiling for its single-client commit rate; the share of "
        "that ceiling PostgreSQL reaches tells a slow file system or device from time spent elsewhere "
        "(CPU, locks, the client). A share above 1 means commits shared flushes (group commit) or did not "
        "wait for one: where pg_stat_wal was sampled, the next subsection counts commits per WAL flush."
    )
    show(
        report.markdown_table(
            ctable,
            digits={"ceiling 1/p50 fdatasync /s": 0, "PostgreSQL tps, 1 client (median)": 0, "share of ceiling": 2},
            caption="Device ceiling (1 / median fdatasync latency; a target with its WAL on another target takes "
            "that target's, where the WAL's fdatasync happens) and PostgreSQL's median tps of the "
            "single-client runs of writing workloads.",
        )
    )
    ceil = device.ceilings(ctx.db, ctx.study)
    if ceil["tps_1_client"].drop_nulls().len():
        paths = charts.save_chart(device.ceiling_chart(ceil), ctx.figures_dir / "device_ceiling")
        figure(
            paths["svg"],
            "Each target's single-client PostgreSQL commit rate beside its device ceiling "
            "(1 / median fdatasync latency of fio's QD1 8 kB write+fdatasync job).",
        )


def device_threats(ctx: Context) -> list[str]:
    """Threats that come with zfs-fuse targets and with settings unsafe on the target's file system."""
    from pgfslab.analysis import device

    items = []
    labels = set(ctx.runs["fs_label"].drop_nulls().to_list()) if "fs_label" in ctx.runs.columns else set()
    if "zfs (zfs-fuse, userspace)" in labels:
        items.append(
            "**ZFS in user space.** The zfs targets ran on zfs-fuse (Debian's userspace ZFS, pool version 23), "
            "not on OpenZFS in the kernel (no zfs module here). Every read, write and fsync crosses FUSE into one "
            "daemon process, which shares the CPUs with PostgreSQL; its ARC is capped at 100 MB; it has no "
            "`sync` property, no lz4/zstd and no recordsize above 128k; asynchronous I/O completes at "
            "submission (QD32 equals QD1). Its numbers show ZFS's copy-on-write, record and ZIL behaviour "
            "with a large per-call overhead on top: they are not OpenZFS performance, in either direction."
        )
    unsafe = device.unsafe_settings(ctx.cfg)
    if unsafe:
        items.append("**Unsafe settings.** " + "; ".join(unsafe) + ".")
    return items


# ---------------------------------------------------------------------------------------- threats


def threats(ctx: Context) -> None:
    r0 = ctx.runs.row(0, named=True)
    cpus, mem_gib = r0["cpus"], (r0["mem_total_kb"] or 0) / 2**20
    items = []
    max_clients = int(ctx.runs.filter(pl.col("tool").is_in(list(PG_TOOLS)))["clients"].max() or 0)
    if max_clients:
        items.append(
            f"**Small hardware.** {cpus} logical CPUs and {mem_gib:.0f} GiB of memory; the benchmark clients "
            f"share the CPUs with the server{f' (up to {max_clients} clients on {cpus} CPUs)' if max_clients > (cpus or 1) else ''}, "
            "so CPU, not storage, may cap the higher client counts."
        )
    else:
        items.append(f"**Small hardware.** {cpus} logical CPUs and {mem_gib:.0f} GiB of memory.")
    kinds = {((ctx.records.get(r) or {}).get("mount") or {}).get("kind") for r in ctx.runs["run_id"].to_list()}
    if "image" in kinds:
        items.append(
            "**Loop devices.** The targets are image files on the host's own file system; even with direct "
            "I/O, the host's storage stack and its device cache sit below every target. Absolute numbers say "
            "little about dedicated disks; the differences between file systems on the same device are the result."
        )
    fallback = ctx.runs.filter(pl.col("fallback"))["target"].unique().to_list()
    if fallback:
        items.append(
            f"**Fallback targets.** {_names(fallback)} ran on plain directories, not on their own file systems."
        )
    dur = int(ctx.runs["duration_s"].max() or 0)
    if ctx.uses_postgres:
        rec = ctx.first_record(PG_TOOLS)
        ct = ((rec.get("postgres") or {}).get("settings") or {}).get("checkpoint_timeout") or {}
        ct_s = int(ct.get("setting", 300)) if str(ct.get("setting", "")).isdigit() else 300
        if dur < ct_s:
            items.append(
                f"**Short runs.** Runs of at most {dur} s are shorter than checkpoint_timeout ({ct_s} s): "
                "timed checkpoints and write-back storms of long runs are not sampled; warm-up is a large "
                "share of each run."
            )
    reps = ctx.ok.group_by("target", "workload", "clients").len()["len"]
    if reps.len():
        n = int(reps.min())
        limits = []
        if stats.median_ci_ranks(n)[2] < 0.95:
            limits.append(f"no cell's median interval reaches 95 % coverage with {n} repeats (6 are needed)")
        if stats.min_possible_p(n, n) >= ctx.cfg["analysis"]["alpha"]:
            limits.append(f"the U test cannot reach α = {ctx.cfg['analysis']['alpha']} with {n}+{n} repeats")
        if limits:
            items.append(
                f"**Few repeats.** As few as {n} repeats per cell: "
                + "; ".join(limits)
                + ". Not significant (`~`) then means 'not shown', not 'no difference'."
            )
    spread = (
        ctx.ok.group_by("target", "workload", "clients")
        .agg((pl.col("value").std() / pl.col("value").mean()).alias("cv"))
        .drop_nulls()
    )
    if spread.height:
        items.append(
            f"**Noise.** Runs of the same cell differ by a coefficient of variation of up to "
            f"{report.pct(spread['cv'].max(), 0)} (median {report.pct(spread['cv'].median(), 0)}) on this "
            "machine; only interleaved repeats and rank tests are used to compare targets."
        )
    limit_req = [((ctx.records.get(r) or {}).get("resources") or {}).get("memory_limit_mb") for r in ctx.records]
    applied = [bool(((ctx.records.get(r) or {}).get("cgroup") or {}).get("applied")) for r in ctx.records]
    if any(limit_req) and not all(applied):
        items.append(
            "**Memory limit not applied.** The study asked for a cgroup memory limit, but some runs went ahead "
            "without it (cgroups not writable): their data set was not forced out of memory."
        )
    items += device_threats(ctx)
    items.append(
        "**System-wide counters.** /proc/meminfo, vmstat and diskstats are machine-wide: anything else "
        "running on the host shows up in Dirty and Writeback."
    )
    items.append(
        "**Published numbers.** The seed documents ran other hardware, data-set sizes, client counts and "
        "versions; only the direction and relative size of differences are compared."
    )
    failed = ctx.runs.filter(~pl.col("status").is_in(["ok", "skipped"]))  # skipped: a precision round not needed
    if failed.height:
        items.append(f"**Failed runs.** {failed.height} run(s) did not complete and are left out of every statistic.")
    show("## Threats to validity\n\n" + "\n".join(f"* {i}" for i in items))


# ---------------------------------------------------------------------------------------- appendix


def _command(cmd: list[str]) -> str:
    parts = [Path(cmd[0]).name] + [a for a in cmd[1:]]
    if parts[0].startswith("python") and len(parts) > 1:
        parts = [
            "python",
            str(Path(parts[1]).relative_to(Path(parts[1]).parents[2])) if len(Path(parts[1]).parents) > 2 else parts[1],
            *parts[2:],
        ]
    return shlex.join(parts)


def appendix(ctx: Context) -> None:
    seen: set[tuple[str, int]] = set()
    lines = []
    for r in ctx.runs.iter_rows(named=True):
        key = (r["workload"], r["clients"])
        if key in seen or r["run_id"] not in ctx.records:
            continue
        seen.add(key)
        for cmd in ctx.records[r["run_id"]].get("commands") or []:
            lines.append(f"# {r['workload']}, {r['clients']} client(s), target {r['target']}\n{_command(cmd)}")
    nbs = []
    a = ctx.cfg.get("analysis") or {}
    for name in [*RESULT_ORDER, PUBLISHED]:
        for doc in _publications(ctx, name):
            wl = str(doc["name"]).removeprefix(name).lstrip("-")
            extra = {
                "throughput_stability": f" -p moving_average_s {a.get('moving_average_s', 15)}",
                "dirty_memory_checkpoints": " -p raw_dir data/raw",
            }.get(name, "")
            nbs.append(
                f"papermill notebooks/{name}.ipynb build/{ctx.study}/notebooks/{doc['name']}.ipynb "
                f"-p db data/{ctx.study}.duckdb -p study {ctx.study}"
                + (f" -p workload {wl}" if wl else "")
                + f" -p figures_dir figures/{ctx.study} -p tables_dir build/{ctx.study}/tables"
                + f" -p alpha {a.get('alpha', 0.05)} -p trim_s {a.get('trim_s', 2)}{extra}"
            )
    show(
        f"""## Appendix: the exact commands

Re-running the study from a clone of the lab (root, loop devices; the study's config travels with the raw data as
`data/raw/{ctx.study}/study.yaml`):

```
make run CONFIG=config/{ctx.study}.yaml
```

Rebuilding the database, notebooks, figures and this paper from the raw folder alone (no workload runs):

```
make analyse STUDY={ctx.study}
```

The benchmark command of each cell, as run (the socket directory and port differ per run; program paths shortened):

```
"""
        + "\n".join(lines)
        + """
```

Each analysis notebook, as the pipeline runs it:

```
"""
        + "\n".join(nbs)
        + "\n```"
    )


# ---------------------------------------------------------------------------------------- durability


def _durability_frame(ctx: Context) -> pl.DataFrame:
    """The durability checks of the study (empty when it ran none, or its database predates them)."""
    try:
        return data._frame(
            ctx.db,
            """
            SELECT r.target, r.target_label, r.workload, r.status, d.* EXCLUDE (target, workload, run_id)
            FROM durability d JOIN runs r USING (run_id) WHERE r.study = ? ORDER BY r.plan_index""",
            [ctx.study],
        )
    except Exception:  # no durability table in this database
        return pl.DataFrame()


def _per_target(d: pl.DataFrame) -> pl.DataFrame:
    return d.group_by("target_label", maintain_order=True).agg(
        pl.col("crashes").sum(),
        pl.col("committed_ids").sum(),
        pl.col("lost_ids").sum(),
        pl.col("lost_allowed").sum(),
        pl.col("violations").sum(),
        (pl.col("restart_error").is_not_null()).sum().alias("failed_restarts"),
    )


def _durability_abstract(ctx: Context) -> str:
    d = _durability_frame(ctx)
    if d.height == 0:
        return f"Study {ctx.study}: {ctx.runs.height} runs; none produced pgbench throughput or a durability check."
    t = _per_target(d)
    parts = [
        f"{r['target_label']}: {r['crashes']} crashes, {r['lost_ids'] - r['lost_allowed']} lost committed transactions"
        for r in t.iter_rows(named=True)
    ]
    allowed = int(t["lost_allowed"].sum())
    return (
        f"We crashed PostgreSQL {int(t['crashes'].sum())} times on {t.height} storage "
        f"target{'s' if t.height != 1 else ''} while clients "
        f"committed transactions, restarted it and checked every transaction whose COMMIT had returned "
        f"({int(t['committed_ids'].sum()):,} in all). "
        + "; ".join(parts)
        + "."
        + (
            f" {allowed} further transactions were lost where the settings allow it (synchronous_commit=off "
            "within its documented window, or fsync=off)."
            if allowed
            else ""
        )
    )


def durability(ctx: Context) -> None:
    """The durability checks: per target "N crashes, M lost committed transactions", then every check."""
    d = _durability_frame(ctx)
    if d.height == 0:
        return
    t = _per_target(d)
    lines = [
        f"* **{r['target_label']}**: {r['crashes']} crashes, {r['lost_ids'] - r['lost_allowed']} lost committed "
        f"transactions of {r['committed_ids']:,} checked"
        + (f" ({r['lost_allowed']} more lost as the settings allow)" if r["lost_allowed"] else "")
        + (f"; {r['failed_restarts']} restarts FAILED" if r["failed_restarts"] else "")
        for r in t.iter_rows(named=True)
    ]
    kinds = sorted(set(d["crash"].drop_nulls().to_list()))
    show(
        "## Durability under crashes\n\n"
        + "\n".join(lines)
        + f"""

Each check lets {", ".join(sorted(set(map(str, d["clients"].to_list()))))} client connection(s) commit pgbench's
TPC-B transaction plus one row with a unique id, the id written to a file (fsynced) only after COMMIT returned;
then PostgreSQL is crashed ({", ".join(kinds)}), restarted, and every acknowledged id is looked up. `kill` is a
SIGKILL of the postmaster: the operating system and its page cache survive, so it tests PostgreSQL's own crash
recovery. `power-loss` first cuts the target's loop device — from that instant no write reaches the image, so
whatever was only in the page cache is gone, as in a power cut of a machine whose disk has no volatile write
cache — then kills every server process and mounts the file system again before the restart. It cannot show
what a real disk's volatile cache, a torn sector or a lost flush would do. A lost id is allowed only where
PostgreSQL documents the loss: with synchronous_commit=off, commits acknowledged at most 3 × wal_writer_delay
before the crash; with fsync=off, anything after a power loss."""
    )
    tab = d.select(
        pl.col("target_label").alias("target"),
        "workload",
        "crash",
        pl.col("synchronous_commit").alias("sync commit"),
        "fsync",
        pl.col("committed_ids").alias("committed"),
        pl.col("lost_ids").alias("lost"),
        pl.col("lost_allowed").alias("allowed"),
        "violations",
        pl.when(pl.col("balances_ok"))
        .then(pl.lit("agree"))
        .when(pl.col("balances_ok").is_null())
        .then(pl.lit("–"))
        .otherwise(pl.lit("DISAGREE"))
        .alias("balances"),
        pl.col("restart_s").alias("restart (s)"),
    )
    show(
        report.markdown_table(
            tab,
            caption="Every crash: transactions acknowledged before it, lost after the "
            "restart, lost as the settings allow, and whether the TPC-B balances "
            "moved together.",
        )
    )
