"""The paper's parts from the device baseline (fio and pg_test_fsync without PostgreSQL, pgfslab.analysis.device):
the per-target device table in the setup, PostgreSQL against the device's limit in the results, and the
threats of zfs-fuse targets and unsafe settings. Each says nothing for a study that did not measure it."""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import charts, device, report
from pgfslab.config import device_profiles
from pgfslab.config.study import Study
from pgfslab.paper.context import Context, figure, show


def profiles(study: Study) -> dict[str, str]:
    """target -> its device profile (`device_profile`), for the study's targets that have one."""
    return {t: str(s.device_profile) for t, s in study.targets.items() if s.device_profile}


def recorded_kinds(ctx: Context) -> dict[str, str]:
    """target -> "disk" or "throttle", as its runs recorded it (run.json `disk`, or cgroup read/write IOPS
    limits): raw folders from before the emulated disk named the throttle `hdd`."""
    kinds: dict[str, str] = {}
    if "target" not in ctx.runs.columns:
        return kinds
    for run_id, target in ctx.runs.select("run_id", "target").iter_rows():
        rec = ctx.records.get(run_id)
        if rec is None:
            continue
        if rec.disk:
            kinds[target] = "disk"
        elif ((rec.cgroup.limits if rec.cgroup else None) or {}).get("read_iops") and target not in kinds:
            kinds[target] = "throttle"
    return kinds


def emulated_text(study: Study, kinds: dict[str, str] | None = None) -> str | None:
    """What the emulated targets' device is, where its numbers come from, and what it does not emulate.
    `kinds` (recorded_kinds) overrides what the profile's name means today for a target whose runs say."""
    named = profiles(study)
    if not named:
        return None
    kinds = kinds or {}

    def kind(t: str, p: str) -> str:
        return kinds.get(t) or ("disk" if device_profiles.is_disk(p) else "throttle")

    out = []
    disks = {t: p for t, p in named.items() if kind(t, p) == "disk"}
    throttled = {t: p for t, p in named.items() if kind(t, p) == "throttle"}
    if disks:
        parts = []
        for t, name in disks.items():
            spec = study.targets[t]
            m = device_profiles.model(spec, int(spec.size_gb * 2**30))
            d, der = m.drive, m.describe()["derived"]
            over = f"; overrides: {m.describe()['overrides']}" if m.describe()["overrides"] else ""
            parts.append(
                f"{t}: `{name}`, {d.rpm:.0f} rpm, seeks {d.seek_read_ms.track}/{d.seek_read_ms.average}/"
                f"{d.seek_read_ms.full} ms (track/average/full stroke; writes {d.seek_write_ms.track}/"
                f"{d.seek_write_ms.average}/{d.seek_write_ms.full}), {d.overhead_ms} ms command overhead, "
                f"{d.rate_outer_mb_s:.0f}-{d.rate_inner_mb_s:.0f} MB/s, the image over {der['span']:.3g} of the "
                f"stroke: a random 8 kB read {der['random_8k_read_ms']:.1f} ms{over}"
            )
        p = device_profiles.source(next(iter(disks.values())))
        out.append(
            "**Emulated disk (a model of one).** The data devices of " + "; ".join(parts) + " are an emulated "
            f"magnetic disk with one head ({p}): a daemon of the lab serves the target's image under its loop "
            "device and holds every request for its modelled service time, one request at a time from one queue "
            "shared by reads and writes — the seek from the previous head position (fitted to the datasheet's "
            "track-to-track, average and full-stroke seeks), the rotation to the sector (from the platter's "
            "angle), the transfer at the zone's rate; a request that continues the previous one pays the "
            "transfer only. Everything that reaches the device pays it, the kernel's write-back included; the "
            "page cache stays in front, as on a real machine. Not emulated: a write cache (each write completes "
            "on the medium) and command queueing (no reordering of the queue). The rows marked *emulated* in "
            "the device table are measured on it. See docs/slow-device.md."
        )
    if throttled:
        parts = []
        for name in sorted(set(throttled.values())):
            tname = device_profiles.throttle(name) or "hdd-throttle"  # raw folders' `hdd` was this throttle
            b = device_profiles.blkio(tname)
            targets = ", ".join(t for t, p in throttled.items() if p == name)
            parts.append(
                f"{targets}: `{name}`, {b.read_iops} read and {b.write_iops} write operations per second and "
                f"{b.read_bps}/s each way ({device_profiles.source(tname)})"
            )
        out.append(
            "**Emulated device (an approximation).** The data devices of " + "; ".join(parts) + " are throttled "
            "with the cgroup blkio controller for the PostgreSQL server, its clients and the device baseline: "
            "the rows marked *emulated* in the device table are measured under the throttle, those marked *real* "
            "on the same machine's disk without it. A throttle is not a disk: it has no seek model (a sequential "
            "I/O costs one operation like a random one; a merged readahead request counts once), reads and "
            "writes have separate budgets (writes never take time from reads), the page cache stays in front "
            "of the device, and under cgroup v1 the write-back that kernel threads do in the background is not "
            "throttled at all — only what the cgroup's processes issue themselves (reads, O_DIRECT, fsync, "
            "fdatasync and sync_file_range of their dirty pages). A flush counts as a write operation: 8 kB "
            "writes with fdatasync after each run at half the write rate. See docs/slow-device.md."
        )
    return "\n\n".join(out)


def device_setup(ctx: Context) -> None:
    """The per-target device table (fio and pg_test_fsync without PostgreSQL), when the study measured it."""
    if not device.has_baseline(ctx.db, ctx.study):
        return
    table, _ = device.section_tables(ctx.db, ctx.study)
    named = profiles(ctx.cfg)
    if named:  # which rows are a throttled (emulated) device and which the real one
        raw = device.device_table(ctx.db, ctx.study)["target"].to_list()
        kind = [f"emulated: {named[t]}" if t in named else "real" for t in raw]
        table = table.insert_column(1, pl.Series("device", kind))
    ctx.defer(
        "Setup",
        report.markdown_table(
            table,
            digits={c: 0 for c in table.columns if c not in ("target", "device")},
            caption="Each target measured without PostgreSQL before its runs (fio on the mounted file system; "
            "8 kB writes with fdatasync after each at QD1, the WAL commit floor; 8 kB random I/O with O_DIRECT "
            "at queue depth 1 and 32, in IOPS; 1 MB sequential writes; pg_test_fsync's fdatasync rate for one "
            "8 kB write).",
        ),
    )
    notes = sorted({n for n in device.device_table(ctx.db, ctx.study)["notes"].drop_nulls().to_list() if n})
    if notes:
        show("Device-baseline notes: " + " ".join(notes))
    text = emulated_text(ctx.cfg, recorded_kinds(ctx))
    if text:
        show(text)


def device_results(ctx: Context) -> None:
    """PostgreSQL's single-client commit rate against each target's device ceiling, with the figure."""
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
    ctx.defer(
        "PostgreSQL against the device's limit",
        report.markdown_table(
            ctable,
            digits={"ceiling 1/p50 fdatasync /s": 0, "PostgreSQL tps, 1 client (median)": 0, "share of ceiling": 2},
            caption="Device ceiling (1 / median fdatasync latency; a target with its WAL on another target takes "
            "that target's, where the WAL's fdatasync happens) and PostgreSQL's median tps of the "
            "single-client runs of writing workloads.",
        ),
    )
    ceil = device.ceilings(ctx.db, ctx.study)
    if ceil["tps_1_client"].drop_nulls().len():
        paths = charts.save_chart(device.ceiling_chart(ceil), ctx.figures_dir / "device_ceiling")
        figure(
            paths["svg"],
            "Each target's single-client PostgreSQL commit rate beside its device ceiling "
            "(1 / median fdatasync latency of fio's QD1 8 kB write+fdatasync job)." + ctx.provenance(),
        )


def device_threats(ctx: Context) -> list[str]:
    """Threats that come with zfs-fuse targets and with settings unsafe on the target's file system."""
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
    kinds = recorded_kinds(ctx)
    named = {
        kinds.get(t) or ("disk" if device_profiles.is_disk(p) else "throttle") for t, p in profiles(ctx.cfg).items()
    }
    if "disk" in named:
        items.append(
            "**An emulated magnetic disk.** The emulated targets' device is a model of a 7,200 rpm drive served "
            "by a daemon on a fast disk: its seeks, rotation and transfer follow the datasheet, but without a "
            "write cache or command queueing it serves writes and deep queues as a drive with both turned off "
            "would; its service times are held by sleeping, so CPU steal on a busy host can make them longer."
        )
    if "throttle" in named:
        items.append(
            "**An emulated slow disk.** The throttled targets' device is a cgroup throttle on a fast disk, not "
            "a magnetic one: no seeks, the page cache in front, background write-back unthrottled (cgroup v1). "
            "Where write-back by kernel threads carries a workload's writes, the throttled targets write faster "
            "than a disk of that rate could."
        )
    unsafe = device.unsafe_settings(ctx.cfg)
    if unsafe:
        items.append("**Unsafe settings.** " + "; ".join(unsafe) + ".")
    return items
