"""The paper's setup section: machine, software and code version, the storage targets, PostgreSQL and
operating-system settings in force, and the hosts of a study from several machines; every fact read
from the provenance records the lab writes with each run (run.json) and target (target.json)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from pgfslab.analysis import queries, report
from pgfslab.config import run_copies
from pgfslab.paper.context import Context, lab_commit, show
from pgfslab.paper.device_baseline import device_setup
from pgfslab.paper.hosts import setup_hosts
from pgfslab.records.run_record import CgroupRecord, Dataset, HostFacts, MountFacts, RunRecord
from pgfslab.records.target_record import Created
from pgfslab.tools import PG_TOOLS


def _facts(ctx: Context) -> dict[str, str]:
    rec = ctx.first_record()
    host, tools = rec.host or HostFacts(), rec.tools or {}
    facts = {
        "CPU": f"{host.cpu_model or '?'} ({host.cpus} logical CPUs, {host.arch or '?'})",
        "Memory": report.bytes_h((host.mem_total_kb or 0) * 1024),
        "OS / kernel": f"{host.os or '?'} / Linux {host.kernel or '?'}",
    }
    if ctx.uses_postgres:
        pg = ctx.first_record(PG_TOOLS).postgres
        facts["PostgreSQL"] = _builds(ctx) or ((pg.version if pg else None) or "?").split(" on ")[0]
        checksums = _checksums(ctx)
        if checksums:
            facts["Data checksums"] = checksums
    for tool in ("pgbench", "sysbench"):
        if tool in ctx.tools:
            # each server's own pgbench: as many client versions as servers
            seen = {(r.tools or {}).get(tool) for r in ctx.records.values() if r.tool == tool}
            facts[tool] = "; ".join(sorted(str(v) for v in seen if v)) or tools.get(tool) or "?"
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
    facts["Lab commit"] = lab_commit(list(ctx.records.values()))
    return facts


def _builds(ctx: Context) -> str:
    """The PostgreSQL builds the runs used (run.json's postgres_build), each with where it came from: the
    distribution's package, a pinned PyPI wheel (file name and sha256) or a user's bindir."""
    seen: dict[str, str] = {}
    for rec in ctx.records.values():
        b = rec.postgres_build
        if b:
            seen.setdefault(str(b.version), f"{b.version}: {b.origin}")
    return "; ".join(seen[v] for v in sorted(seen, key=lambda v: [int(x) for x in v.split(".") if x.isdigit()]))


def _checksums(ctx: Context) -> str:
    """Data checksums as the servers reported them, per major when they differ (a comparison across majors must
    not compare checksums off with on unsaid)."""
    per: dict[str, set[bool]] = {}
    for rec in ctx.records.values():
        facts = rec.postgres or rec.postgres_before
        on = facts.data_checksums if facts else None
        if on is not None:
            major = str((rec.postgres_build.major if rec.postgres_build else None) or "")
            per.setdefault(major, set()).add(bool(on))
    if not per:
        return ""
    states = {s for v in per.values() for s in v}
    if len(states) == 1:
        return f"{'on' if states.pop() else 'off'} in every cluster"
    return "; ".join(
        f"PostgreSQL {m or '?'}: " + "/".join("on" if s else "off" for s in sorted(v)) for m, v in sorted(per.items())
    )


def disk_label(model: dict[str, Any]) -> str:
    """An emulated disk's model as the set-up table states it, from what target.json or run.json recorded."""
    p, d = model.get("parameters") or {}, model.get("derived") or {}
    r, w = p.get("seek_read_ms") or {}, p.get("seek_write_ms") or {}
    over = model.get("overrides") or {}
    return (
        f"emulated disk `{model.get('preset')}` ({model.get('drive') or 'model'}): {p.get('rpm', 0):.0f} rpm, seek "
        f"{r.get('track')}/{r.get('average')}/{r.get('full')} ms read, {w.get('track')}/{w.get('average')}/"
        f"{w.get('full')} write (track/average/full stroke), {p.get('overhead_ms')} ms overhead, "
        f"{p.get('rate_outer_mb_s')}-{p.get('rate_inner_mb_s')} MB/s, image over {d.get('span', 0):.3g} of the stroke, "
        f"no write cache; random 8 kB read {d.get('random_8k_read_ms')} ms, sequential {d.get('sequential_mb_s')} MB/s"
        + (f"; overrides {over}" if over else "")
    )


def _targets_table(ctx: Context) -> pl.DataFrame:
    rows = []
    for t in ctx.target_names:
        trec = ctx.target_records.get(t)
        runs = ctx.runs.filter(pl.col("target") == t)
        rrec = next((ctx.records[r] for r in runs["run_id"].to_list() if r in ctx.records), None)
        # the run's parts where a run recorded them, else the target's own record (target.json) of the same part
        mount = (rrec.mount if rrec else None) or (trec.mount if trec else None) or MountFacts()
        created = (trec.created if trec else None) or Created()
        spec = ctx.cfg.targets.get(t)
        fallback = bool(mount.fallback or created.fallback)
        kind = mount.kind or created.kind or ("image" if str(mount.device or "").startswith("/dev/loop") else "")
        device = (
            "plain directory (FALLBACK)"
            if fallback
            else {
                "image": "image on a loop device",
                "tmpfs": "tmpfs",
                "existing": "existing mount",
                "device": f"block device {mount.device or ''}",
            }.get(kind, kind or "–")
            + (" over an emulated disk" if mount.disk else "")
            + (", direct I/O" if kind == "image" and mount.direct_io else "")
        )
        load = trec.load_wall_s() if trec else None
        ds = (
            queries.dataset_label(
                rrec.model_copy(update={"dataset": rrec.dataset or (trec.dataset if trec else None) or Dataset()})
            )
            if rrec
            else "–"
        )
        extras = []
        build = (rrec.postgres_build if rrec else None) or (trec.postgres_build if trec else None)
        if build and spec and (spec.postgres_version or spec.postgres_bindir):
            extras.append(f"PostgreSQL {build.version} ({build.source})")
        if spec and spec.postgres_settings:
            extras.append(", ".join(f"{k}={v}" for k, v in spec.postgres_settings.items()))
        wal = (rrec.wal if rrec else None) or (trec.wal if trec else None)
        if wal:
            extras.append(f"WAL on target {wal.target} ({wal.fs_label or wal.fs}, {wal.device})")
        model = (mount.disk or {}).get("model") or (trec.disk.model if trec and trec.disk else None)
        lim = (rrec.cgroup.limits if rrec and rrec.cgroup else None) or {}  # pgfslab.host.cgroups' limits
        if model:
            extras.append(disk_label(model))
        elif lim.get("read_iops"):
            extras.append(
                f"blkio throttle ({spec.device_profile if spec else 'device profile'}): {lim.get('read_iops')} read and "
                f"{lim.get('write_iops')} write operations/s"
            )
        sn = ctx.cfg.snapshots
        if sn and t in sn.targets:
            extras.append(f"snapshots every {sn.interval_s} s, kept {sn.keep_s} s")
        rows.append(
            {
                "target": t,
                "fs": (rrec.fs_label if rrec else None)
                or created.fs_label
                or (spec.fs if spec else None)
                or ((trec.spec or {}) if trec else {}).get("fs"),
                "device": device,
                "mount options (in force)": mount.mount_options or "–",
                "image": report.bytes_h(created.image_bytes) if created.image_bytes else "–",
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
        rec = ctx.records.get(rid) or RunRecord()
        vm: dict[str, Any] = dict(rec.vm or {})
        after = (rec.vm_applied or {}).get("after") or {}  # pgfslab.host.sysctl's record of what it set
        vm.update({k.removeprefix("vm."): v for k, v in after.items()})
        limit_mb = run_copies.resources(rec).memory_limit_mb  # the study's `resources`, as the run copied them
        cg = rec.cgroup or CgroupRecord()
        limit = (
            (f"{limit_mb} MiB" + ("" if cg.applied else " (requested, not applied: " + str(cg.reason or "?") + ")"))
            if limit_mb
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
                "page cache dropped": "yes" if str(rec.caches or "").startswith("dropped") else "no",
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
    if not isinstance(start, dt.datetime) or not isinstance(end, dt.datetime):
        return "an unknown date"
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"


def setup(ctx: Context) -> None:
    show(
        f"## Setup\n\nStudy `{ctx.study}`: {ctx.ran.height} runs{ctx.skipped_words()} of {len(ctx.cfg.workloads)} "
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
        "The storage targets, each target's device measured without PostgreSQL, and the PostgreSQL and "
        "operating-system settings in force are tabulated in Appendix A, under Setup."
    )
    ctx.defer(
        "Setup",
        report.markdown_table(
            _targets_table(ctx),
            caption="Storage targets: file system, device, mount options as "
            "the kernel reported them in force, image size, data set and its bulk-load time, and "
            "per-target extras (PostgreSQL settings, where WAL lives, snapshots).",
            notes=("mount options (in force)", "other"),
        ),
    )
    device_setup(ctx)
    if ctx.uses_postgres:
        rec = ctx.first_record(PG_TOOLS)
        settings = report.non_default_settings(rec)
        ctx.defer(
            "Setup",
            report.markdown_table(
                settings,
                caption="PostgreSQL settings that differ from the built-in defaults, as in "
                "force during the first run (pg_settings).",
            ),
        )
        per_wl = [(w, s.postgres_settings) for w, s in ctx.cfg.workloads.items() if s.postgres_settings]
        if per_wl:
            ctx.defer(
                "Setup",
                report.markdown_table(
                    pl.DataFrame(
                        {
                            "workload": [w for w, _ in per_wl],
                            "settings": [", ".join(f"{k}={v}" for k, v in s.items()) for _, s in per_wl],
                        }
                    ),
                    caption="PostgreSQL settings of individual workloads (over the study's).",
                ),
            )
    ctx.defer(
        "Setup",
        report.markdown_table(
            _os_table(ctx),
            caption="Operating-system settings in force per workload (vm.* as read "
            "back after applying, page-cache drop before each run) and the memory limit of "
            "PostgreSQL and its clients.",
        ),
    )
    setup_hosts(ctx)  # a study from several hosts: every host, and whether their hardware differs
