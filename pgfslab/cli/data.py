"""Data commands: freeze, notebook, ingest, ingest-study, merge, ingest-external, export, formats, schema, paper.

Each command imports the stage it runs inside its function, not here: every `pgfslab` command imports
this module, and a stage's libraries (polars and the parsers, DuckDB, YAML and jsonschema, papermill) are
optional for the others; `pgfslab ingest`'s fast start imports neither polars nor YAML
(tests/test_fast_ingest.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pgfslab.errors import LabError


def cmd_freeze(args: argparse.Namespace) -> int:
    import yaml  # not at start-up: `pgfslab ingest`'s fast start does without it

    from pgfslab.config.study import Study, load, validate

    if (args.config is None) == (args.json is None):
        raise LabError("freeze: give one of --config FILE or --json TEXT (the resolved config)")
    if args.config is not None:
        cfg, source = load(args.config), str(args.config)
    else:
        source = args.source or "the workflow's resolved config"
        cfg = validate(json.loads(args.json), source)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(
        f"# resolved from {' '.join(source.split())} by pgfs-lab (defaults filled in)\n"
        + yaml.safe_dump(cfg, sort_keys=False)
    )
    tmp.replace(args.out)
    host = Study.from_dict(cfg).host
    if host:  # a host's own raw folder says what machine it is
        from pgfslab.run import common, hosts

        common.write_json(args.out.parent / "host.json", hosts.describe(host))
    return 0


def cmd_notebook(args: argparse.Namespace) -> int:
    from pgfslab.analysis import execute, registry
    from pgfslab.config.study import load_study

    study = load_study(args.config)
    job = registry.job(study, args.name)
    name = study.study
    params = job.parameters(
        study,
        db=args.db or Path(f"data/{name}.duckdb"),
        figures_dir=args.figures or Path(f"figures/{name}"),
        tables_dir=args.tables or Path(f"build/{name}/tables"),
    )
    execute.run(job, params, args.out)
    print(f"{args.out}: executed ({job.source.name})")
    return 0


def cmd_ingest_study(args: argparse.Namespace) -> int:
    from pgfslab.config import host_folders
    from pgfslab.ingest import days, merge, study
    from pgfslab.ingest.published import EXTERNAL_DIR

    external = None if args.no_published else (args.external or EXTERNAL_DIR)
    if args.day2:  # an earlier raw folder of the same study: two days, each a host key (docs/two-days.md)
        s = days.ingest_days(args.raw, args.day2, args.db, external=external)
        print(f"{args.db}: day1 {args.raw}, day2 {args.day2}")
    elif host_folders.host_folders(args.raw):  # a study run on several hosts: data/raw/<study>/<host>/...
        folders = host_folders.study_folders(args.raw)
        s = merge.merge_study(folders, args.db, external=external)
        print(f"{args.db}: merged hosts {', '.join(f.host for f in folders)}")
    else:
        s = study.ingest_study(args.raw, args.db, external=external)
    return _report_ingest(args.db, s)


def cmd_merge(args: argparse.Namespace) -> int:
    from pgfslab.config import host_folders
    from pgfslab.ingest import merge
    from pgfslab.ingest.published import EXTERNAL_DIR

    folders = host_folders.parse_folder_args(args.folders)
    external = None if args.no_published else EXTERNAL_DIR
    s = merge.merge_study(folders, args.db, external=external)
    for f in folders:
        print(f"host {f.host}: {f.folder}")
    return _report_ingest(args.db, s)


def _report_ingest(db: Path, s: Any) -> int:
    print(f"{db}: {s.runs} runs, {s.files} files, {s.rows} rows, {s.published_files} published reference files")
    for w in s.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if s.failed_runs:
        print(f"{len(s.failed_runs)} runs did not succeed (kept, marked in runs.status):", file=sys.stderr)
        for f in s.failed_runs:
            print(f"  {f}", file=sys.stderr)
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    files: list[Path] = []
    for p in args.paths:
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file())
        elif p.exists():
            files.append(p)
        else:
            raise LabError(f"{p}: no such file or directory")
    # plain per-transaction logs first, by DuckDB alone (no polars import): pgfslab.ingest.fast
    from pgfslab.ingest import fast

    done = fast.ingest(args.db, files, fmt=args.format, run_id=args.run, study=args.study, origin=args.origin)
    for res in done:
        for line in res.summary():
            print(line)
        for w in res.warnings:
            print(f"warning: {w}", file=sys.stderr)
    rest = files[len(done) :]
    return _ingest_full(args, rest, len(files)) if rest else 0


def _ingest_full(args: argparse.Namespace, files: list[Path], n_files: int) -> int:
    """The files of `pgfslab ingest` that the fast start did not take, with every format's parser."""
    import duckdb

    from pgfslab.ingest import load, parsers, schema

    failures: list[str] = []
    unparsed = 0
    con = duckdb.connect(str(args.db))
    try:
        schema.create_schema(con)
        for f in files:
            try:
                res = load.ingest_file(
                    con,
                    f,
                    fmt=args.format,
                    run_id=args.run,
                    study=args.study,
                    origin=args.origin,
                    strict=args.strict,
                    tz=args.tz,
                )
            except (parsers.ParseError, LabError) as exc:
                if not args.keep_going:
                    raise LabError(str(exc)) from None
                failures.append(str(exc))
                continue
            for line in res.summary():
                print(line)
            for w in res.warnings:
                print(f"warning: {w}", file=sys.stderr)
            if res.lines is not None:
                unparsed += res.lines.not_understood
    finally:
        con.close()
    if unparsed:
        print(
            f"{unparsed} lines not understood in all (kept in table unparsed_lines; --strict makes them an error)",
            file=sys.stderr,
        )
    if failures:
        print(f"{len(failures)} of {n_files} files failed (the database holds the others):", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    return 0


def cmd_ingest_external(args: argparse.Namespace) -> int:
    import duckdb

    from pgfslab.ingest import published, schema

    con = duckdb.connect(str(args.db))
    try:
        schema.create_schema(con)
        s = published.ingest_external(con, args.external or published.EXTERNAL_DIR)
    finally:
        con.close()
    print(f"{args.db}: {s.files} published files, {s.rows} rows (origin 'published')")
    for w in s.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pgfslab.ingest import export

    done = export.export_parquet(args.db, args.parquet)
    for e in done:
        print(f"{e.path}: {e.rows} rows")
    print(f"{len(done)} tables from {args.db} in {args.parquet} (index: {args.parquet / '_tables.json'})")
    return 0


def cmd_formats(args: argparse.Namespace) -> int:
    from pgfslab.ingest import parsers

    for name, mod in parsers.FORMATS.items():
        print(f"{name:20s} {mod.DESCRIPTION}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from pgfslab.ingest import schema

    if args.markdown:
        print(schema.schema_markdown())
        return 0
    if args.sql:
        print(schema.schema_sql(), end="")
        return 0
    for table, cols in schema.all_tables().items():
        print(f"{table}")
        for c, t in cols.items():
            print(f"  {c:32s} {schema.duck_type(t)}")
    return 0


def cmd_paper(args: argparse.Namespace) -> int:
    from pgfslab.paper import build as paper

    paper.build(db=args.db, study=args.study, source=args.source, executed=args.executed, pdf=args.pdf, html=args.html)
    print(f"{args.pdf}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("freeze", help="write the resolved study config (defaults filled) for the raw folder")
    p.add_argument("--config", type=Path, help="a study config file")
    p.add_argument("--json", help="or the config as Snakemake resolved it (JSON)")
    p.add_argument("--source", help="with --json: where it came from (recorded in the file)")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_freeze)

    p = sub.add_parser(
        "notebook",
        help="execute one of the study's notebooks (pgfslab.analysis.registry) with "
        "papermill, kernel in notebooks/ as JupyterLab runs it",
    )
    p.add_argument("--config", type=Path, required=True, help="the study config (data/raw/<study>/study.yaml)")
    p.add_argument("--name", required=True, help="the job: <notebook>[-<workload>]")
    p.add_argument("--out", type=Path, required=True, help="the executed copy")
    p.add_argument("--db", type=Path, help="default data/<study>.duckdb")
    p.add_argument("--figures", type=Path, help="default figures/<study>")
    p.add_argument("--tables", type=Path, help="default build/<study>/tables")
    p.set_defaults(func=cmd_notebook)

    p = sub.add_parser("ingest-study", help="(re)build data/<study>.duckdb from data/raw/<study>/, atomically")
    p.add_argument("--raw", type=Path, required=True)
    p.add_argument("--db", type=Path, required=True)
    p.add_argument(
        "--external",
        type=Path,
        default=None,
        help="published reference results to include [data/external of this repository]",
    )
    p.add_argument("--no-published", action="store_true", help="leave the published reference results out")
    p.add_argument(
        "--day2",
        type=Path,
        default=None,
        help="an earlier raw folder of the same study: ingested beside --raw as a second day (docs/two-days.md)",
    )
    p.set_defaults(func=cmd_ingest_study)

    p = sub.add_parser(
        "merge",
        help="one database from several hosts' raw folders of one study (refused, naming the keys, when their "
        "resolved configs differ in anything but `host`)",
    )
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--no-published", action="store_true", help="leave the published reference results out")
    p.add_argument(
        "folders",
        nargs="+",
        metavar="FOLDER[=HOST]",
        help="a host's raw folder (data/raw/<study>/<host>/, or another machine's data/raw/<study>/ with its "
        "host key after =), or a study folder holding host folders",
    )
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("ingest", help="ingest log files into a database, one transaction per file")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--format", help="force a format (see `formats`)")
    p.add_argument("--study", help="label the files with a study")
    p.add_argument("--run", help="label the files with a run id")
    p.add_argument(
        "--origin", default="local", choices=["local", "published"], help="where the files' results come from [local]"
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="ingest the other files when one fails; list the failures and exit 1 at the end",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="a line the parser does not understand is an error (the file is not ingested)",
    )
    p.add_argument(
        "--tz",
        help="the time zone of local time stamps a file does not name or names ambiguously (vmstat -t's 'CST'): "
        "an IANA name (Asia/Shanghai) or an offset (+08:00)",
    )
    p.add_argument("paths", type=Path, nargs="+")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("ingest-external", help="(re)ingest the published reference results (data/external/)")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--external", type=Path, default=None, help="the folder [data/external of this repository]")
    p.set_defaults(func=cmd_ingest_external)

    p = sub.add_parser("export", help="write every table of a database as Parquet (DIR/<table>.parquet)")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--parquet", type=Path, required=True, metavar="DIR")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("formats", help="list the log formats the ingest understands")
    p.set_defaults(func=cmd_formats)

    p = sub.add_parser("schema", help="print the database schema (tables, columns, types)")
    p.add_argument("--markdown", action="store_true", help="as Markdown, for the README")
    p.add_argument("--sql", action="store_true", help="as the SQL that creates it (pgfslab/ingest/schema.sql)")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("paper", help="execute the paper notebook and export PDF and HTML")
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--study", required=True)
    p.add_argument("--source", type=Path, required=True)
    p.add_argument("--executed", type=Path, required=True)
    p.add_argument("--pdf", type=Path, required=True)
    p.add_argument("--html", type=Path, required=True)
    p.set_defaults(func=cmd_paper)
