"""Imports follow the data's flow: every import in pgfslab points down the layers or stays in its subpackage.

Layers, bottom to top: the base layer (the package's top-level modules: paths, errors, YAML reading, host
keys, progress lines; `records/`, the typed records the stages exchange; `tools/`, the workload tools'
registration and options), then config -> host -> run, runners (one layer) -> ingest -> analysis -> paper ->
cli (with `__main__`). Every import counts, at module level and inside functions, parsed with `ast` (nothing
is imported). The check fails, naming file:line, on an import up the layers, on a cycle between subpackages
and on a cycle between modules.

Run as a script (`python tests/test_import_layers.py`) it prints every problem and the counts.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "pgfslab"

# Subpackage -> layer; subpackages with the same number are one layer (they may import each other, though
# not in a circle). "base" is the package's top-level modules (and a `base/` subpackage, should one come).
LAYERS: dict[str, int] = {
    "base": 0,
    "records": 0,  # the typed records the stages exchange (run.json, the config's frozen objects)
    "tools": 0,  # the workload tools' registration and options: what every stage asks of a tool
    "config": 1,
    "host": 2,
    "run": 3,
    "runners": 3,
    "ingest": 4,
    "analysis": 5,
    "paper": 6,
    "cli": 7,
    "__main__": 7,
}

# Paths of the package (relative to it: a module or a folder) left out of the check, e.g. while another branch
# deletes them. Each must exist: one that does not hides nothing and only misleads, so `check` reports it.
IGNORED: tuple[str, ...] = ()


@dataclass(frozen=True)
class Import:
    src: str  # importing module, dotted
    path: str  # its file, relative to the package's parent
    line: int
    dst: str  # imported module of the same package, dotted

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def modules(root: Path, ignored: tuple[str, ...] = ()) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name, without the `ignored` paths (relative to root)."""
    found: dict[str, Path] = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root)
        if any(rel.as_posix() == i or rel.as_posix().startswith(i.rstrip("/") + "/") for i in ignored):
            continue
        parts = [root.name, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = f
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that `name` is or lies in (an attribute of a module names that module)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def imports(root: Path, ignored: tuple[str, ...] = ()) -> tuple[dict[str, Path], list[Import]]:
    """Every import (module level, in functions, under `if`) of one module of the package by another."""
    known = modules(root, ignored)
    base = root.parent
    found: list[Import] = []
    for mod, f in known.items():
        is_pkg = f.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        rel = f.relative_to(base).as_posix()
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    up = package.split(".")
                    if node.level > 1:
                        up = up[: -(node.level - 1)]
                    origin = ".".join(up + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                # `from pkg import sub` imports the module pkg.sub; `from mod import name` the module mod
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
            for t in targets:
                dst = _resolve(t, known) if t.split(".")[0] == root.name else None
                if dst is not None and dst != mod:
                    found.append(Import(mod, rel, node.lineno, dst))
    return known, sorted(set(found), key=lambda i: (i.path, i.line, i.dst))


def group(mod: str, known: dict[str, Path]) -> str:
    """A module's subpackage: `config`, `ingest`, ...; the package's own top-level modules are `base`."""
    parts = mod.split(".")
    if len(parts) == 1:
        return "base"
    if len(parts) == 2 and known[mod].name != "__init__.py":
        return "__main__" if parts[1] == "__main__" else "base"
    return parts[1]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    nodes = sorted(set(edges) | {w for ws in edges.values() for w in ws})
    for v in nodes:
        if v not in index:
            visit(v)
    return out


@dataclass
class Report:
    upward: list[str]
    package_cycles: list[str]
    module_cycles: list[str]
    n_imports: int
    n_modules: int
    stale_ignored: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self.stale_ignored + self.upward + self.package_cycles + self.module_cycles


def check(root: Path = ROOT, ignored: tuple[str, ...] = IGNORED, layers: dict[str, int] = LAYERS) -> Report:
    stale = [f"IGNORED names {i!r}, which is not in {root}: remove it" for i in ignored if not (root / i).exists()]
    known, found = imports(root, ignored)
    upward: list[str] = []
    for imp in found:
        s, d = group(imp.src, known), group(imp.dst, known)
        missing = sorted({g for g in (s, d) if g not in layers})
        if missing:
            upward.append(f"{imp.where}: subpackage {' and '.join(map(repr, missing))} has no layer (add it to LAYERS)")
        if s in layers and d in layers and layers[d] > layers[s]:
            upward.append(f"{imp.where}: {s} imports {imp.dst} ({d}), up the flow")

    def pkg(m: str) -> str:
        return group(m, known)

    def cycle_lines(members: list[str], key: Callable[[str], str]) -> list[str]:
        """Each import from one member of a cycle to another: for subpackages one line per pair, with the
        first import's file:line and how many more there are."""
        inside = set(members)
        pairs: dict[tuple[str, str], list[Import]] = {}
        for imp in found:
            a, b = key(imp.src), key(imp.dst)
            if a in inside and b in inside and a != b:
                pairs.setdefault((a, b), []).append(imp)
        lines = []
        for _pair, imps in sorted(pairs.items()):
            more = f" (and {len(imps) - 1} more)" if len(imps) > 1 else ""
            lines.append(f"    {imps[0].where}: {imps[0].src} -> {imps[0].dst}{more}")
        return lines

    pkg_edges: dict[str, set[str]] = {}
    mod_edges: dict[str, set[str]] = {}
    for imp in found:
        if pkg(imp.src) != pkg(imp.dst):
            pkg_edges.setdefault(pkg(imp.src), set()).add(pkg(imp.dst))
        mod_edges.setdefault(imp.src, set()).add(imp.dst)
    package_cycles = [
        "\n".join([f"cycle between subpackages {' <-> '.join(c)}:", *cycle_lines(c, pkg)]) for c in _cycles(pkg_edges)
    ]
    module_cycles = [
        "\n".join([f"cycle between modules {' <-> '.join(c)}:", *cycle_lines(c, lambda m: m)])
        for c in _cycles(mod_edges)
    ]
    return Report(upward, package_cycles, module_cycles, len(found), len(known), stale)


def test_pgfslab_imports_follow_the_flow() -> None:
    report = check()
    assert report.n_modules > 50  # the package was found
    assert not report.problems, "\n".join(report.problems)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_check_reports_an_upward_import_and_cycles(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    _write(
        root,
        {
            "__init__.py": "",
            "paths.py": "LAB = 1\n",
            "config/__init__.py": "",
            # upward (config -> ingest), inside a function, and a cycle between the two subpackages
            "config/study.py": "from lab import paths\n\ndef load():\n    from lab.ingest.merge import KEY\n",
            "ingest/__init__.py": "",
            "ingest/merge.py": "from lab.config import study\nKEY = 1\n",
            # a cycle between two modules of one subpackage, one of them relative
            "paper/__init__.py": "",
            "paper/hosts.py": "from .wal import _private\n",
            "paper/wal.py": "import lab.paper.hosts\n_private = 1\n",
            "gone/__init__.py": "from lab.paper import hosts\n",
        },
    )
    report = check(root, ignored=("gone",), layers={"base": 0, "config": 1, "ingest": 4, "paper": 6})
    assert report.upward == ["lab/config/study.py:4: config imports lab.ingest.merge (ingest), up the flow"]
    assert report.package_cycles == [
        "cycle between subpackages config <-> ingest:\n"
        "    lab/config/study.py:4: lab.config.study -> lab.ingest.merge\n"
        "    lab/ingest/merge.py:1: lab.ingest.merge -> lab.config.study"
    ]
    assert sorted(report.module_cycles) == [
        "cycle between modules lab.config.study <-> lab.ingest.merge:\n"
        "    lab/config/study.py:4: lab.config.study -> lab.ingest.merge\n"
        "    lab/ingest/merge.py:1: lab.ingest.merge -> lab.config.study",
        "cycle between modules lab.paper.hosts <-> lab.paper.wal:\n"
        "    lab/paper/hosts.py:1: lab.paper.hosts -> lab.paper.wal\n"
        "    lab/paper/wal.py:1: lab.paper.wal -> lab.paper.hosts",
    ]


def test_check_reports_a_subpackage_without_a_layer(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    _write(root, {"__init__.py": "", "extra/__init__.py": "", "extra/x.py": "from lab import paths\n", "paths.py": ""})
    report = check(root, ignored=(), layers={"base": 0})
    assert report.upward == ["lab/extra/x.py:1: subpackage 'extra' has no layer (add it to LAYERS)"]


def test_check_reports_an_ignored_path_that_does_not_exist(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    _write(root, {"__init__.py": "", "paths.py": "", "warm/__init__.py": "", "warm/keep.py": ""})
    report = check(root, ignored=("warm", "warm/keep.py", "noop.py", "cli/gone.py"), layers={"base": 0, "warm": 1})
    assert report.problems == [
        f"IGNORED names 'noop.py', which is not in {root}: remove it",
        f"IGNORED names 'cli/gone.py', which is not in {root}: remove it",
    ]


if __name__ == "__main__":
    r = check()
    print("\n".join(r.problems))
    print(
        f"{r.n_modules} modules, {r.n_imports} imports within the package: {len(r.upward)} up the flow, "
        f"{len(r.package_cycles)} cycles between subpackages, {len(r.module_cycles)} between modules",
    )
    sys.exit(1 if r.problems else 0)
