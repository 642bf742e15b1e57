"""A no-op `make run` without Snakemake's start-up: a stamp of the state Snakemake last found up to date.

Snakemake needs about 4 s to start and several more to build a study's DAG before it can say "Nothing to be
done". Its answer is a function of its command line, its own code and the workflow's (the venv, workflow/,
pgfslab/), and the files of the lab and the study (configs, notebooks, raw data, outputs, .snakemake's
metadata). So: when Snakemake has certified a state as up to date, `stamp` records that state (every such
file's path, size and mtime in ns, and the command line), and the next `check` with the same command line
answers "up to date" when every recorded file is unchanged and no file was added, in well under a second.
Anything else (one byte of one file, a new raw run, another CONFIG or SNAKE_ARGS) runs Snakemake as before.

When is a state certified? After a Snakemake invocation that succeeded and left the snapshot unchanged:
Snakemake ran no job (every job writes its outputs and .snakemake/metadata), so it found nothing to do in
exactly that state. After a run that did work, `certify` therefore runs Snakemake's dry-run once more and
stamps only if it left the state unchanged and said "Nothing to be done"; a file edited while Snakemake ran
(a notebook, the config) changes the snapshot and no stamp is written. Stdlib only: the check must start fast.

    python -m pgfslab.noop check -- SNAKEMAKE-ARGV...     # exit 0: up to date; 3: run Snakemake
    python -m pgfslab.noop snapshot -- SNAKEMAKE-ARGV...  # before Snakemake: the state it starts from
    python -m pgfslab.noop certify -- SNAKEMAKE-ARGV...   # after it succeeded
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent
STATE_DIR = ".snakemake"
STAMP = "pgfslab-uptodate.json"
BEFORE = "pgfslab-before.json"
# never read by Snakemake's decision and rewritten by anything that imports or tests the lab (or holds the
# machine's images and mounts: data/work, the default workdir); Snakemake's own logs and locks, and this
# module's files
SKIP_DIRS = {".git", "__pycache__", ".ruff_cache", ".pytest_cache", ".mypy_cache", ".ipynb_checkpoints"}
SKIP_DIRS |= {".hypothesis"}  # the test suite's example database, written while its property tests run
# (.snakemake/iocache: Snakemake rewrites its file-listing cache at every start, and reads it only when told
# --trust-io-cache, which the lab never passes)
SKIP_PATHS = {"data/work", ".venv", f"{STATE_DIR}/log", f"{STATE_DIR}/locks", f"{STATE_DIR}/iocache"}
SKIP_PATHS |= {f"{STATE_DIR}/{STAMP}"}
SKIP_PATHS |= {f"{STATE_DIR}/{n}" for n in (BEFORE, STAMP + ".tmp", BEFORE + ".tmp")}
# the venv's identity: its lock's hash (scripts/setup.sh) and its Python
VENV_FILES = (".venv/.lock-sha256", ".venv/pyvenv.cfg")
MAX_ENTRIES = 200_000  # a working directory this big is not a lab checkout: no stamp


def _walk(root: Path, out: dict[str, list[int]]) -> None:
    """Every file under root (size, mtime ns) and every directory, staying on root's device (never into a
    mounted target)."""
    dev = root.stat().st_dev
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        # a directory by its presence only: its mtime changes with entries that are not part of the state
        # (__pycache__, data/work, this module's own files); the files listed say what was added or removed
        out[str(d)] = [-1, 0]
        for e in entries:
            rel = os.path.relpath(e.path, root)
            if e.name in SKIP_DIRS or rel in SKIP_PATHS:
                continue
            try:
                st = e.stat(follow_symlinks=True)
            except OSError:
                out[e.path] = [-2, 0]  # a dangling link: recorded as such
                continue
            if e.is_dir(follow_symlinks=False):
                if st.st_dev == dev:
                    stack.append(Path(e.path))
            else:
                out[e.path] = [st.st_size, st.st_mtime_ns]
            if len(out) > MAX_ENTRIES:
                raise OverflowError(f"more than {MAX_ENTRIES} files under {root}")


def key_of(argv: list[str]) -> str:
    """The command line and the environment Snakemake reads (its profile, the import path)."""
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("SNAKEMAKE") or k == "PYTHONPATH")
    return "\0".join([str(LAB), *argv, "", *env])


def snapshot(key: str) -> dict[str, object]:
    files: dict[str, list[int]] = {}
    roots = {LAB, Path.cwd().resolve()}
    for root in sorted(roots):
        _walk(root, files)
    for name in VENV_FILES:
        p = LAB / name
        st = p.stat() if p.exists() else None
        files[str(p)] = [st.st_size, st.st_mtime_ns] if st else [-3, 0]
    # files named on the command line outside those trees (a config file elsewhere)
    for tok in key.split("\0"):
        for part in tok.split("="):
            p = Path(part)
            if part and p.is_file() and str(p.resolve()) not in files:
                st = p.stat()
                files[str(p.resolve())] = [st.st_size, st.st_mtime_ns]
    return {"key": key, "cwd": str(Path.cwd().resolve()), "files": files}


def _digest(snap: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(snap, sort_keys=True).encode()).hexdigest()


def _state(name: str) -> Path:
    return Path(STATE_DIR) / name


def _read(name: str) -> dict[str, object] | None:
    try:
        return json.loads(_state(name).read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _write(name: str, snap: dict[str, object]) -> None:
    _state(name).parent.mkdir(exist_ok=True)
    tmp = _state(name + ".tmp")
    tmp.write_text(json.dumps({"digest": _digest(snap), "snapshot": snap}))
    os.replace(tmp, _state(name))


def check(key: str) -> bool:
    """True when the stamp's state is this state, for this command line."""
    stamp = _read(STAMP)
    if not stamp:
        return False
    try:
        return stamp.get("digest") == _digest(snapshot(key))
    except OverflowError:
        return False


def _dry_run_says_nothing(argv: list[str]) -> bool:
    # Snakemake's own answer, in the same state: its dry run, with its messages (no --quiet)
    cmd, skip = [], False
    for a in argv:
        if a == "--quiet":
            skip = True
            continue
        if skip and a in ("all", "rules", "progress", "host", "reason"):
            continue
        skip = False
        cmd.append(a)
    # `PY -m snakemake ...`: forked from the lab's warm interpreter when one runs (the notebooks' server, found
    # through a one-thread job's environment, `--job-threads 1`; it imports Snakemake while idle): the same
    # command without 1.7 s of imports
    if len(cmd) > 2 and cmd[1] == "-m" and cmd[2] in ("snakemake", "pgfslab.cli.snakemake_main"):
        cmd = [cmd[0], "-m", "pgfslab.warm", "--job-threads", "1", "snakemake", *cmd[3:]]  # the notebooks' server
    res = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True)
    return res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr


def certify(key: str, argv: list[str]) -> bool:
    """After a Snakemake invocation that succeeded: stamp the state if it is certified up to date."""
    _state(STAMP).unlink(missing_ok=True)
    try:
        now = snapshot(key)
        before = _read(BEFORE)
        if before and before.get("digest") == _digest(now):
            _write(STAMP, now)  # Snakemake succeeded and changed nothing: it had nothing to do here
            return True
        if not argv or not _dry_run_says_nothing(argv):
            return False
        if snapshot(key) != now:  # something changed while the dry run looked
            return False
        _write(STAMP, now)
        return True
    except OverflowError:
        return False
    finally:
        _state(BEFORE).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pgfslab.noop", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("action", choices=["check", "snapshot", "certify"])
    p.add_argument("snakemake", nargs=argparse.REMAINDER, help="after --: Snakemake's whole command line")
    args = p.parse_args(argv)
    snake = args.snakemake[1:] if args.snakemake[:1] == ["--"] else args.snakemake
    if not snake:
        p.error("give Snakemake's command line after --")
    key = key_of(snake)
    if args.action == "check":
        if check(key):
            print("Nothing to be done (the state Snakemake last found up to date; pgfslab.noop)")
            return 0
        return 3
    if args.action == "snapshot":
        _state(STAMP).unlink(missing_ok=True)  # Snakemake is about to change things
        try:
            _write(BEFORE, snapshot(key))
        except OverflowError:
            _state(BEFORE).unlink(missing_ok=True)
        return 0
    certify(key, snake)
    return 0


if __name__ == "__main__":
    sys.exit(main())
