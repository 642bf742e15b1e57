"""The paper's appendices: A, the full tables and further figures the sections deferred (`Context.defer`), each
under its section; B, the exact commands that re-run the study, rebuild it from its raw folder, and ran each
benchmark cell and analysis notebook."""

from __future__ import annotations

import shlex
from pathlib import Path

from pgfslab.paper.context import ANSWERS, PUBLISHED, RESULT_ORDER, Context, publications, show


def _command(cmd: list[str]) -> str:
    parts = [Path(cmd[0]).name] + [a for a in cmd[1:]]
    if parts[0].startswith("python") and len(parts) > 1:
        parts = [
            "python",
            str(Path(parts[1]).relative_to(Path(parts[1]).parents[2])) if len(Path(parts[1]).parents) > 2 else parts[1],
            *parts[2:],
        ]
    return shlex.join(parts)


def full_tables(ctx: Context) -> None:
    """Appendix A: what the sections deferred, grouped by section in the order they came."""
    if not ctx.later:
        return
    show(
        "## Appendix A: full tables and further figures\n\nEvery table of the analyses, and the figures that "
        "support rather than carry an answer, under the section that refers to them."
    )
    sections: dict[str, list[str]] = {}
    for section, md in ctx.later:
        sections.setdefault(section, []).append(md)
    for section, blocks in sections.items():
        show(f"### {section}")
        for md in blocks:
            show(md)


def appendix(ctx: Context) -> None:
    full_tables(ctx)
    seen: set[tuple[str, int]] = set()
    lines = []
    for r in ctx.runs.iter_rows(named=True):
        key = (r["workload"], r["clients"])
        if key in seen or r["run_id"] not in ctx.records:
            continue
        seen.add(key)
        for cmd in ctx.records[r["run_id"]].commands or []:
            lines.append(f"# {r['workload']}, {r['clients']} client(s), target {r['target']}\n{_command(cmd)}")
    nbs = []
    a = ctx.cfg.analysis
    for name in [ANSWERS, *RESULT_ORDER, PUBLISHED]:
        for doc in publications(ctx, name):
            wl = str(doc["name"]).removeprefix(name).lstrip("-")
            extra = {"throughput_stability": f" -p moving_average_s {a.moving_average_s}"}.get(name, "")
            nbs.append(
                f"papermill notebooks/{name}.ipynb build/{ctx.study}/notebooks/{doc['name']}.ipynb "
                f"-p db data/{ctx.study}.duckdb -p study {ctx.study}"
                + (f" -p workload {wl}" if wl else "")
                + f" -p figures_dir figures/{ctx.study} -p tables_dir build/{ctx.study}/tables"
                + f" -p alpha {a.alpha} -p trim_s {a.trim_s}{extra}"
            )
    show(
        f"""## Appendix B: the exact commands

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
