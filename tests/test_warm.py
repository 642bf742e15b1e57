"""The warm interpreter (pgfslab.warm): a command or kernel forked from it behaves as the cold one, with the
client's streams, folder, environment and exit status; a kernel is a real ipykernel that answers interrupts
and ends with its client; a server serves only the code it imported and leaves by itself when idle."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgfslab.warm import protocol

pytestmark = pytest.mark.slow  # starts servers and kernels

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


@contextlib.contextmanager
def _runtime_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="pw", dir="/tmp"))  # short: a socket's path has at most 107 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    monkeypatch.delenv("PGFSLAB_WARM", raising=False)
    try:
        yield d
    finally:
        for pid in server_pids(d):
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime folder of this test's own, its servers stopped afterwards: for the tests that say whether
    a server was started at all."""
    with _runtime_folder(monkeypatch) as d:
        yield d


@pytest.fixture(scope="module")
def shared_runtime() -> Iterator[Path]:
    """One runtime folder for the tests that use a server, as a user's commands do: the first one starts it,
    the others fork from it (a server's start costs about 6 s of CPU, its renderer 2 s more, and the suite is
    bound by CPU); stopped when the module ends."""
    with pytest.MonkeyPatch.context() as monkeypatch, _runtime_folder(monkeypatch) as d:
        yield d


def server_pids(runtime: Path) -> list[int]:
    """The servers started under `runtime`: the pid each one's log names."""
    pids = []
    for log in runtime.glob("pgfslab-warm-*/*.log"):
        pids += [int(p) for p in re.findall(r"pgfslab warm server (\d+):", log.read_text())]
    return [p for p in pids if Path(f"/proc/{p}").exists()]


def server_sockets(runtime: Path) -> list[Path]:
    return [p for p in runtime.glob("pgfslab-warm-*/*.sock") if not p.name.endswith(".render.sock")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def pgfslab(
    args: list[str], *, warm: bool, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    module = "pgfslab.warm" if warm else "pgfslab"
    return subprocess.run(
        [PY, "-m", module, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )


def test_a_command_forked_from_the_server_is_the_cold_command(shared_runtime: Path, tmp_path: Path) -> None:
    """Same stdout, stderr and exit status, a relative path read against the client's folder, and it really
    went through a server (one was started under this runtime folder)."""
    (tmp_path / "configs").mkdir()
    shutil.copy(REPO / "config" / "default.yaml", tmp_path / "configs" / "mine.yaml")
    bad = tmp_path / "configs" / "bad.yaml"
    bad.write_text((REPO / "config" / "default.yaml").read_text().replace("fs: ext4", "fs: ntfs", 1))
    for args in (["plan", "configs/mine.yaml"], ["validate", "configs/bad.yaml"]):
        cold = pgfslab(args, warm=False, cwd=tmp_path)
        warm = pgfslab(args, warm=True, cwd=tmp_path)
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), args
    assert cold.returncode != 0 and "ntfs" in cold.stderr  # the second one: the bad config, refused
    assert len(server_sockets(shared_runtime)) == 1
    assert server_pids(shared_runtime)


def test_disabled_runs_cold_without_a_server(runtime: Path, tmp_path: Path) -> None:
    res = pgfslab(["plan", str(REPO / "config" / "default.yaml")], warm=True, cwd=tmp_path, env={"PGFSLAB_WARM": "0"})
    assert res.returncode == 0 and res.stdout.count("\n") > 10
    assert not list(runtime.glob("pgfslab-warm-*/*.sock"))  # no server, no renderer


def test_the_key_follows_the_code_and_the_import_time_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text("x = 1\n")
    monkeypatch.setattr(protocol, "PACKAGE", pkg)
    first = protocol.code_key()
    assert protocol.code_key() == first
    (pkg / "mod.py").write_text("x = 22\n")
    second = protocol.code_key()
    assert second != first
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert protocol.code_key() != second


def test_an_idle_server_leaves_and_takes_its_socket(runtime: Path) -> None:
    sock = runtime / "idle.sock"
    proc = subprocess.Popen([PY, "-m", "pgfslab.warm", "serve", "--socket", str(sock), "--idle-s", "1"])
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert not sock.exists()
    # its renderer (a process of its own, pgfslab.warm.render) went with it, and took its socket
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
        list(runtime.glob("idle.*.render.sock"))
        or subprocess.run(["pgrep", "-f", str(runtime)], capture_output=True).returncode == 0
    ):
        time.sleep(0.2)
    assert not list(runtime.glob("idle.*.render.sock"))
    assert subprocess.run(["pgrep", "-f", str(runtime)], capture_output=True).returncode == 1


def _kernel(runtime: Path, cwd: Path):  # type: ignore[no-untyped-def]
    from pgfslab.warm.kernel import WarmKernelManager

    km = WarmKernelManager(kernel_name="python3")
    km_sync = _sync(km)
    km_sync("start_kernel", cwd=str(cwd), env={**os.environ, "PGFS_WARM_TEST": "yes"})
    kc = km.client()
    kc.start_channels()
    _sync(kc)("wait_for_ready", timeout=120)
    return km, km_sync, kc


def _sync(obj):  # type: ignore[no-untyped-def]
    """Call an async jupyter_client method to completion."""
    import asyncio

    def call(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = getattr(obj, name)(*args, **kwargs)
        return asyncio.get_event_loop().run_until_complete(result) if asyncio.iscoroutine(result) else result

    return call


def _run(kc, code: str, timeout: float = 60):  # type: ignore[no-untyped-def]
    """Execute `code`; its stdout and the error's name if it raised."""
    out: list[str] = []
    error: list[str] = []

    def hook(msg: dict) -> None:
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            error.append(msg["content"]["ename"])

    _sync(kc)("execute_interactive", code, timeout=timeout, output_hook=hook)
    return "".join(out), error


def test_a_kernel_is_a_fork_that_ends_with_its_client(shared_runtime: Path, tmp_path: Path) -> None:
    km, km_sync, kc = _kernel(shared_runtime, tmp_path)
    client_pid = km.provisioner.process.pid
    try:
        out, error = _run(
            kc,
            "import os, sys, json\n"
            "print(json.dumps({'pid': os.getpid(), 'ppid': os.getppid(), 'cwd': os.getcwd(),"
            " 'env': os.environ.get('PGFS_WARM_TEST'), 'polars': 'polars' in sys.modules}))",
        )
        assert not error
        seen = json.loads(out)
        (server,) = server_pids(shared_runtime)
        assert seen["ppid"] == server  # forked by the server, not exec'd by the client
        assert seen["pid"] != client_pid
        assert seen["polars"]  # imported before the notebook asked for it
        assert Path(seen["cwd"]) == tmp_path and seen["env"] == "yes"
        # charts drawn by the server's renderer (its vl-convert already started), the same SVG as drawn here
        out, error = _run(
            kc,
            "import os, vl_convert as vlc\n"
            "from pgfslab.warm import render\n"
            "spec = {'mark': 'bar', 'data': {'values': [{'a': 'x', 'b': 3}, {'a': 'y', 'b': 5}]},"
            " 'encoding': {'x': {'field': 'a', 'type': 'nominal'}, 'y': {'field': 'b', 'type': 'quantitative'}}}\n"
            "version = vlc.get_vegalite_versions()[-1]\n"
            "remote = render.remote_svg(spec, version)\n"
            "print(bool(os.environ.get(render.ENV)), remote is not None, remote == vlc.vegalite_to_svg(spec, vl_version=version))",
            timeout=120,
        )
        assert not error and out.split() == ["True", "True", "True"]
        # an interrupt (SIGINT to the client's process group) reaches the kernel through the client
        msg_id = kc.execute("import time; time.sleep(60)")
        time.sleep(1.0)
        km_sync("interrupt_kernel")
        t0 = time.monotonic()
        while True:
            reply = _sync(kc)("get_shell_msg", timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - t0 < 20
        out, error = _run(kc, "print(6 * 7)")  # still alive after the interrupt
        assert out.strip() == "42" and not error
    finally:
        kc.stop_channels()
        km_sync("shutdown_kernel", now=False)
    assert wait_gone(seen["pid"]) and wait_gone(client_pid)


def test_a_killed_client_takes_its_kernel_with_it(shared_runtime: Path, tmp_path: Path) -> None:
    km, km_sync, kc = _kernel(shared_runtime, tmp_path)
    try:
        out, _ = _run(kc, "import os; print(os.getpid())")
        kernel = int(out)
        os.kill(km.provisioner.process.pid, signal.SIGKILL)  # no chance to pass anything on
        assert wait_gone(kernel), "the kernel outlived its killed client"
        assert server_pids(shared_runtime), "the server went with it"
    finally:
        kc.stop_channels()
        km_sync("cleanup_resources")


def test_a_notebook_executed_warm_has_the_outputs_of_a_cold_one(shared_runtime: Path, tmp_path: Path) -> None:
    """One recorded study's notebook, executed by the lab (execute.run) warm and with PGFSLAB_WARM=0: the same
    outputs (text and which kinds of display data), the same table."""
    import polars as pl

    raw = tmp_path / "raw" / "dirty-bytes"
    shutil.copytree(REPO / "tests" / "data" / "studies" / "dirty-bytes", raw)
    db = tmp_path / "study.duckdb"
    subprocess.run(
        [PY, "-m", "pgfslab", "ingest-study", "--raw", str(raw), "--db", str(db)], check=True, capture_output=True
    )
    outputs, tables, svgs = {}, {}, {}
    for mode in ("1", "0"):  # into the same folders (paths are part of the outputs)
        res = subprocess.run(
            [PY, "-m", "pgfslab.warm", "notebook", "--config", str(raw / "study.yaml"), "--name", "scaling"]
            + ["--db", str(db), "--figures", "figs", "--tables", "tables", "--out", f"nb{mode}.ipynb"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PGFSLAB_WARM": mode},
        )
        assert res.returncode == 0, res.stderr[-2000:]
        nb = json.loads((tmp_path / f"nb{mode}.ipynb").read_text())
        outputs[mode] = [
            (
                o["output_type"],
                sorted(o.get("data", {})),
                "".join(o.get("text") or o.get("data", {}).get("text/plain", "")),
            )
            for c in nb["cells"]
            for o in c.get("outputs", [])
        ]
        svgs[mode] = (tmp_path / "figs" / "scaling.svg").read_bytes()
        assert len(svgs[mode]) > 1000
        tables[mode] = pl.read_parquet(tmp_path / "tables" / "scaling.parquet")
        shutil.rmtree(tmp_path / "figs")
        shutil.rmtree(tmp_path / "tables")
    assert outputs["1"] == outputs["0"] and outputs["1"]
    assert tables["1"].equals(tables["0"])
    assert svgs["1"] == svgs["0"]  # drawn by the warm renderer and by vl-convert in the process: the same
    assert len(server_pids(shared_runtime)) == 1  # the warm run went through a server; the cold one started none


def test_a_command_started_without_standard_input_is_forked_all_the_same(shared_runtime: Path, tmp_path: Path) -> None:
    """A process with stdin closed (its first socket takes fd 0): the child gets /dev/null, not that socket."""
    cfg = REPO / "config" / "default.yaml"
    cold = pgfslab(["plan", str(cfg)], warm=False, cwd=tmp_path)
    warm = subprocess.run(
        ["bash", "-c", f"exec {PY} -m pgfslab.warm plan {cfg} <&-"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert "running cold" not in warm.stderr and server_pids(shared_runtime)


def test_a_snakemake_dry_run_is_forked_only_from_a_running_server(runtime: Path, tmp_path: Path) -> None:
    """pgfslab.noop's certifying dry run: `python -m pgfslab.warm snakemake ARGV` says what `python -m snakemake
    ARGV` says (output, exit status, also of a broken workflow); forked when a server runs, cold (and no server
    started) when none does."""
    (tmp_path / "in.txt").write_text("x\n")
    (tmp_path / "Snakefile").write_text(
        "import os, sys\n"
        "print('parent', os.getppid(), file=sys.stderr)\n"
        "rule all:\n    input: 'out.txt'\n"
        "rule copy:\n    input: 'in.txt'\n    output: 'out.txt'\n    shell: 'cp {input} {output}'\n"
    )
    (tmp_path / "Broken").write_text("rule all:\n    input: undefined_name\n")

    def snake(module: list[str], snakefile: str) -> subprocess.CompletedProcess:
        argv = ["--snakefile", snakefile, "--cores", "1", "--dry-run", "--quiet", "rules"]
        return subprocess.run([PY, "-m", *module, *argv], cwd=tmp_path, capture_output=True, text=True)

    def same(res: subprocess.CompletedProcess) -> tuple[int, str, str]:
        out = re.sub(r"(Date|Workflow ID): .*", r"\1: -", res.stdout)  # Snakemake's header
        return res.returncode, out, re.sub(r"parent \d+", "parent N", res.stderr)

    cold = {f: snake(["snakemake"], f) for f in ("Snakefile", "Broken")}
    assert cold["Snakefile"].returncode == 0 and "copy" in cold["Snakefile"].stdout
    assert cold["Broken"].returncode != 0 and "undefined_name" in cold["Broken"].stdout + cold["Broken"].stderr
    alone = snake(["pgfslab.warm", "snakemake"], "Snakefile")
    assert same(alone) == same(cold["Snakefile"])
    assert not server_sockets(runtime)  # none started for it

    subprocess.run([PY, "-m", "pgfslab.warm", "start"], check=True)
    deadline = time.monotonic() + 120
    while not server_sockets(runtime) and time.monotonic() < deadline:
        time.sleep(0.2)
    (server,) = server_pids(runtime)
    for f in ("Snakefile", "Broken"):
        warm = snake(["pgfslab.warm", "snakemake"], f)
        assert same(warm) == same(cold[f]), f
    assert f"parent {server}" in snake(["pgfslab.warm", "snakemake"], "Snakefile").stderr
    assert not (tmp_path / "out.txt").exists()


def test_a_one_thread_job_and_make_find_the_same_server(tmp_path: Path) -> None:
    """Snakemake gives a job of one thread OMP_NUM_THREADS=1 and the like (read by BLAS at import, so part of the
    key); `--job-threads 1` has `make`'s own commands (the early start, the certifying dry run) find that
    job's server, the notebooks', instead of starting a second. Checked against a real
    Snakemake job's environment."""
    key = "from pgfslab.warm import protocol; print(protocol.code_key())"
    env = {k: v for k, v in os.environ.items() if k not in protocol.JOB_THREADS_ENV}
    (tmp_path / "Snakefile").write_text(
        f"rule all:\n    output: 'key.txt'\n    threads: 1\n    shell: '{PY} -c \"{key}\" > {{output}}'\n"
    )
    subprocess.run(
        [PY, "-m", "snakemake", "--cores", "2", "--quiet", "all"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    in_job = (tmp_path / "key.txt").read_text().strip()
    bare = subprocess.run([PY, "-c", key], env=env, capture_output=True, text=True, check=True).stdout.strip()
    as_job = subprocess.run(
        [PY, "-c", f"from pgfslab.warm import protocol; protocol.as_job(1); {key.split('; ', 1)[1]}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert in_job != bare  # the job's thread settings are part of the key
    assert as_job == in_job


def test_a_run_is_forked_from_the_notebooks_server_and_keeps_its_environment(runtime: Path, tmp_path: Path) -> None:
    """A run is a job of every core (OMP_NUM_THREADS=2 and the like here): `pgfslab.warm run-one` finds the
    server of a one-thread job (the notebooks' one) instead of starting a second, and the command keeps its
    own job's environment, as every `--job-threads` command does."""
    from pgfslab.warm import protocol

    run_env = {**os.environ, **dict.fromkeys(protocol.JOB_THREADS_ENV, "2")}
    key = "from pgfslab.warm import protocol; protocol.as_job(1); print(protocol.code_key())"
    notebooks_key = subprocess.run([PY, "-c", key], env=run_env, capture_output=True, text=True, check=True)
    res = subprocess.run(
        [PY, "-m", "pgfslab.warm", "run-one", "--config", "missing.json", "--run-id", "x"],
        cwd=tmp_path,
        env=run_env,
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0 and "missing.json" in res.stderr, res.stderr  # refused, by a forked child
    assert "running cold" not in res.stderr
    assert [p.stem for p in server_sockets(runtime)] == [notebooks_key.stdout.strip()]
    (server,) = server_pids(runtime)
    # the command's own environment: a Snakefile that prints it, dry-run by a child of that server
    (tmp_path / "Snakefile").write_text(
        "import os, sys\nprint('omp', os.environ.get('OMP_NUM_THREADS'), 'parent', os.getppid(), file=sys.stderr)\n"
        "rule all:\n    output: 'never.txt'\n    shell: 'touch {output}'\n"
    )
    dry = subprocess.run(
        [PY, "-m", "pgfslab.warm", "--job-threads", "1", "snakemake", "--cores", "1", "--dry-run", "--quiet", "rules"],
        cwd=tmp_path,
        env=run_env,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0 and f"omp 2 parent {server}" in dry.stderr, dry.stderr


def test_a_server_imports_nothing_while_a_run_measures(tmp_path: Path) -> None:
    """The idle imports (Snakemake, for the dry run) take the CPU: not while a child runs a measurement
    (`pgfslab run-one`), and else while nothing waits. The server's own loop, in a process of its own."""
    code = """
import sys
from pathlib import Path
from pgfslab.warm import server as srv
s = srv.Server(Path(sys.argv[1]), idle_s=0.5)
s.listen()
s.later = ["json.tool", "pgfslab.cli.snakemake_main"]
s.measuring = {int(sys.argv[2])} if sys.argv[2] != "none" else set()
s.serve()
print(" ".join(s.later) or "-", "json.tool" in sys.modules)
"""
    out = {}
    for child in ("4242", "none"):  # a measuring child (its pid), or none
        res = subprocess.run(
            [PY, "-c", code, str(tmp_path / f"s{child}.sock"), child], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, res.stderr[-2000:]
        out[child] = res.stdout.split()
    assert out["4242"] == ["json.tool", "pgfslab.cli.snakemake_main", "False"]
    assert out["none"] == ["-", "True"]
