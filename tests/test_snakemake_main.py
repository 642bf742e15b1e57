"""pgfslab.cli.snakemake_main: Snakemake's own command line and exit status, without the re-evaluation timer
that kept every invocation that ran a job alive for up to a second after "Elapsed time"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a real Snakemake, twice

SNAKEFILE = """
rule all:
    input: "done.txt"
rule wait:
    output: "done.txt"
    shell: "sleep 1.5; touch {output}"
"""
# Runs Snakemake in this process as `python -m snakemake` or the lab's module would, then says which
# threading.Timer threads are still alive once it returned (the interpreter waits for them at exit).
PROBE = """
import sys, threading
mode, argv = sys.argv[1], sys.argv[2:]
try:
    if mode == "lab":
        from pgfslab.cli import snakemake_main
        snakemake_main.main(argv)
    else:
        from snakemake.cli import main
        main(argv)
except SystemExit as exc:
    status = exc.code
alive = [t for t in threading.enumerate() if isinstance(t, threading.Timer) and t.is_alive()]
for t in alive:
    t.join(0.5)
print("status", status, "timers", len(alive), "alive", sum(t.is_alive() for t in alive))
"""


def _probe(tmp_path: Path, mode: str, *extra: str) -> list[str]:
    (tmp_path / "done.txt").unlink(missing_ok=True)
    res = subprocess.run(
        [sys.executable, "-c", PROBE, mode, "--snakefile", "Snakefile", "--cores", "1", "--quiet", "all", *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.split()


def test_the_scheduler_timer_is_cancelled_once_snakemake_returned(tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    # Snakemake alone leaves its re-evaluation timer waiting (its 1 s timespan outlives a join of 0.5 s)
    assert _probe(tmp_path, "snakemake") == ["status", "0", "timers", "1", "alive", "1"]
    assert (tmp_path / "done.txt").exists()
    # the lab's entry: the same status and work, no timer left to wait for
    lab = _probe(tmp_path, "lab")
    assert lab[:2] == ["status", "0"] and lab[-2:] == ["alive", "0"]
    assert (tmp_path / "done.txt").exists()
    # and a failing workflow's status is Snakemake's
    (tmp_path / "Snakefile").write_text(SNAKEFILE.replace("sleep 1.5; touch {output}", "sleep 1.5; exit 3"))
    assert _probe(tmp_path, "lab")[:2] == ["status", "1"]


# Runs the lab's entry in this process with ARGV, then says whether the Slurm plugin and pandas were imported.
PLUGIN_PROBE = """
import sys
from pgfslab.cli import snakemake_main
try:
    snakemake_main.main(sys.argv[1:])
except SystemExit as exc:
    status = exc.code
print("status", status, "slurm", snakemake_main.SLURM_PLUGIN in sys.modules, "pandas", "pandas" in sys.modules)
"""


def test_the_slurm_plugin_is_loaded_only_where_a_command_can_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snakemake imports every executor plugin at its start; the Slurm one (pandas with it) only when the command
    line may use it: a Slurm option must still parse, a local command line starts without both."""
    from pgfslab.cli.snakemake_main import slurm_may_be_used

    assert not slurm_may_be_used(["--snakefile", "workflow/Snakefile", "--cores", "all", "--configfile", "c.yaml"], {})
    assert not slurm_may_be_used(["--snakefile", "/studies/slurm-notes/Snakefile", "--executor", "local"], {})
    for argv in (
        ["--executor", "slurm"],
        ["-e", "slurm"],
        ["--profile", "workflow/profiles/slurm"],
        ["--profile=some-site-profile"],
        ["--workflow-profile", "elsewhere"],
        ["--slurm-status-command", "squeue"],
    ):
        assert slurm_may_be_used(["--cores", "1", *argv], {}), argv
    assert slurm_may_be_used(["--cores", "1"], {"SNAKEMAKE_PROFILE": "site"})
    (tmp_path / "profiles" / "default").mkdir(parents=True)  # a workflow's default profile is read unnamed
    assert slurm_may_be_used(["--snakefile", str(tmp_path / "Snakefile")], {})
    monkeypatch.chdir(tmp_path)  # ... beside the Snakefile or in the working directory
    assert slurm_may_be_used(["--snakefile", "/elsewhere/Snakefile"], {})

    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    work = tmp_path / "work"
    work.mkdir()
    base = [sys.executable, "-c", PLUGIN_PROBE, "--snakefile", str(tmp_path / "Snakefile"), "--cores", "1"]
    base += ["--dry-run", "--quiet", "all"]

    def probe(*extra: str) -> list[str]:
        res = subprocess.run([*base, *extra], cwd=work, capture_output=True, text=True, timeout=120)
        return res.stdout.splitlines()[-1].split()  # the probe's line, after Snakemake's own

    (tmp_path / "profiles" / "default").rmdir()
    assert probe() == ["status", "0", "slurm", "False", "pandas", "False"]
    assert probe("--slurm-init-seconds-before-status-checks", "1") == ["status", "0", "slurm", "True", "pandas", "True"]
