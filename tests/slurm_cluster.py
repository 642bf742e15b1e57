"""Start and stop a private one-node Slurm cluster (munged + slurmctld + slurmd).

Everything lives under one work directory: its own munge key, munged socket,
slurm.conf, state/spool dirs, logs and pid files, on its own ports, so it never
touches a system munged or a system Slurm.  Meant for a pytest fixture::

    handle = start(workdir)          # ~2-4 s
    env = handle.env()               # os.environ + SLURM_CONF=<workdir>/slurm.conf
    ...  sbatch / snakemake --executor slurm with env=env ...
    stop(handle)                     # cancels jobs, stops the 3 daemons, removes state

Only argument lists, never a shell.  Must run as root (slurmd has to start jobs
as any user; munged is started as user ``munge``).

CLI (for timing and manual use)::

    python tests/slurm_cluster.py selftest [WORKDIR] # start, sbatch one job, stop; print timings
    python tests/slurm_cluster.py start WORKDIR
                                           # start, write WORKDIR/handle.json, leave running
    python tests/slurm_cluster.py stop WORKDIR         # stop what handle.json describes
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CTLD_PORT = 16817  # not Slurm's 6817/6818, so a system Slurm can coexist
DEFAULT_SLURMD_PORT = 16818
MARKER_VAR = "PGFS_SLURM_CLUSTER"  # set in the daemons' env; inherited by slurmstepd
DAEMONS = ("munged", "slurmctld", "slurmd")
REQUIRED_BINARIES = (
    "munged",
    "mungekey",
    "munge",
    "unmunge",
    "slurmctld",
    "slurmd",
    "sinfo",
    "squeue",
    "sbatch",
    "scancel",
    "scontrol",
)


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be started here (not root, packages or user missing, ports busy)."""


@dataclass
class Handle:
    workdir: Path
    conf: Path
    munge_socket: Path
    node: str
    partition: str
    ctld_port: int
    slurmd_port: int
    marker: str
    die_with_parent: bool = True
    pids: dict = field(default_factory=dict)  # name -> pid
    procs: dict = field(default_factory=dict)  # name -> Popen (same process only)
    timings: dict = field(default_factory=dict)
    created: list = field(default_factory=list)  # paths start() created (removed by stop)

    def env(self, base: dict | None = None) -> dict:
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        env.pop(MARKER_VAR, None)
        return env

    def to_json(self) -> str:
        d = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items() if k != "procs"}
        return json.dumps(d, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Handle:
        d = json.loads(text)
        for k in ("workdir", "conf", "munge_socket"):
            d[k] = Path(d[k])
        return cls(**d)


# ----------------------------------------------------------------------------- checks


def check_available(ports: tuple[int, ...] = (DEFAULT_CTLD_PORT, DEFAULT_SLURMD_PORT)) -> None:
    """Raise ClusterUnavailable with a clear reason if start() cannot work here."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("must run as root (slurmd launches jobs, munged runs as user munge)")
    missing = [b for b in REQUIRED_BINARIES if shutil.which(b) is None]
    if missing:
        raise ClusterUnavailable("missing binaries {}: apt-get install -y slurm-wlm munge".format(", ".join(missing)))
    try:
        pwd.getpwnam("munge")
    except KeyError:
        raise ClusterUnavailable("no user 'munge' (apt-get install -y munge creates it)") from None
    busy = [p for p in ports if not _port_free(p)]
    if busy:
        raise ClusterUnavailable(f"TCP port(s) {busy} already in use")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port_pair() -> tuple[int, int]:
    """Two currently free TCP ports (for callers that do not want fixed ones)."""
    socks, ports = [], []
    for _ in range(2):
        s = socket.socket()
        s.bind(("0.0.0.0", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports[0], ports[1]


# ----------------------------------------------------------------------------- helpers


def _run(args, env=None, timeout=30, input=None, check=True) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        env=env,
        timeout=timeout,
        input=input,
        check=check,
        capture_output=True,
        text=isinstance(input, str) or input is None,
    )


def _hardware() -> str:
    """'CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105'"""
    out = _run(["slurmd", "-C"]).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
    return " ".join(tok for tok in line.split() if not tok.startswith("NodeName="))


def _wait_for(pred, timeout, what, handle=None, interval=0.1):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        if handle is not None:
            for name, p in handle.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {p.returncode} while waiting for "
                        f"{what}; see {handle.workdir}/log/{name}.log"
                    )
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _pid_cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def pdeathsig(sig: int = signal.SIGTERM):
    """preexec_fn for subprocess.Popen: the child gets `sig` when the thread that
    started it exits (prctl PR_SET_PDEATHSIG; set after Popen's user= switch)."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork
    PR_SET_PDEATHSIG = 1

    def fn():
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return fn


def _preexec(h: Handle):
    """Daemons die (SIGTERM) with the starting thread, so a killed pytest does not leave
    them on our ports.  Off for `slurm_cluster.py start`."""
    return pdeathsig(signal.SIGTERM) if h.die_with_parent else None


def _descendants(pids) -> list[int]:
    """All live descendants of `pids` (e.g. a job's shell under slurmstepd)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.append(c)
                todo.append(c)
    return [p for p in out if _pid_alive(p)]


def _our_stepds(workdir: Path) -> list[int]:
    """slurmstepd processes of our slurmd.  slurmstepd overwrites its environment (proc
    title), so the marker is useless there; it keeps slurmd's cwd (= workdir) and holds
    our slurmd.log / job output files open."""
    prefix = str(workdir)
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if Path(f"/proc/{d}/comm").read_text().strip() != "slurmstepd":
                continue
            targets = [os.readlink(f"/proc/{d}/cwd")]
            targets += [os.readlink(f"/proc/{d}/fd/{fd}") for fd in os.listdir(f"/proc/{d}/fd")]
        except OSError:
            continue
        if any(t == prefix or t.startswith(prefix + "/") for t in targets):
            found.append(int(d))
    return [p for p in found if _pid_alive(p)]


def _marked_pids(marker: str) -> list[int]:
    """PIDs whose environment carries MARKER_VAR=marker (our daemons and their slurmstepd)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            pass
    return [p for p in found if _pid_alive(p)]


def _init_zombies(pids=()) -> list[int]:
    """Zombies waiting for PID 1 to reap them: any slurmstepd, or one of `pids`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                comm, rest = f.read().split(") ", 1)
        except (OSError, ValueError):
            continue
        fields = rest.split()
        if fields[0] == "Z" and fields[1] == "1" and (comm.endswith("(slurmstepd") or int(d) in pids):
            out.append(int(d))
    return out


def _slurm_conf_text(h: Handle, hw: str, state: Path, spool: Path, log: Path, run: Path) -> str:
    accounting = f"""\
# No slurmdbd: `sacct` fails ("Slurm accounting storage is disabled"); job states come
# from slurmctld (squeue/scontrol). `sacct -c` reads the jobcomp file below.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={log}/jobcomp.txt"""
    return f"""\
# Written by pgfs-lab cluster.py -- private one-node test cluster
ClusterName=pgfslab
SlurmctldHost={h.node}(127.0.0.1)
SlurmctldPort={h.ctld_port}
SlurmdPort={h.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={h.munge_socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={run}/slurmctld.pid
SlurmdPidFile={run}/slurmd.pid
SlurmctldLogFile={log}/slurmctld.log
SlurmdLogFile={log}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
{accounting}
# squeue/scontrol keep showing a finished job for MinJobAge seconds
MinJobAge=600
NodeName={h.node} NodeAddr=127.0.0.1 {hw} State=UNKNOWN
PartitionName={h.partition} Nodes={h.node} Default=YES MaxTime=INFINITE State=UP
"""


# ----------------------------------------------------------------------------- start/stop


def start(
    workdir,
    ctld_port: int = DEFAULT_CTLD_PORT,
    slurmd_port: int = DEFAULT_SLURMD_PORT,
    timeout: float = 60.0,
    partition: str = "debug",
    run_conf_link: bool = False,
    die_with_parent: bool = True,
) -> Handle:
    """Start munged, slurmctld and slurmd for a one-node cluster under `workdir`.

    Returns once `sinfo` reports the node idle.  On any failure everything started
    so far is stopped again and the exception is re-raised.

    run_conf_link: also symlink /run/slurm/conf/slurm.conf -> our slurm.conf (the
    path Slurm 22.05 clients try when SLURM_CONF is unset, as a configless slurmd
    would provide).  Needed only for tools that strip SLURM_CONF from the
    environment, e.g. snakemake-executor-plugin-slurm-jobstep 0.6.1 before its
    inner `srun`.  Refused (ClusterUnavailable) if /etc/slurm/slurm.conf or
    /run/slurm exists, so it never shadows or overwrites a system Slurm; removed
    by stop().

    die_with_parent: the daemons get SIGTERM when the calling thread exits (prctl
    PR_SET_PDEATHSIG), so a crashed or killed test run frees the ports by itself.
    Running jobs then outlive slurmd until they end: `python tests/slurm_cluster.py stop WORKDIR`
    (reads WORKDIR/handle.json) kills them too.
    """
    t0 = time.monotonic()
    check_available((ctld_port, slurmd_port))
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    munge_pw = pwd.getpwnam("munge")
    # munged runs as user munge: it must be able to reach its directory.
    for parent in [workdir, *workdir.parents]:
        if parent.stat().st_mode & 0o001 == 0:
            if parent == workdir:
                os.chmod(workdir, 0o755)
            else:
                raise ClusterUnavailable(
                    f"{parent} is not searchable by others; user munge cannot reach "
                    f"{workdir}: use a work directory like tempfile.mkdtemp(dir='/tmp')"
                )

    node = _run(["hostname", "-s"]).stdout.strip()
    h = Handle(
        workdir=workdir,
        conf=workdir / "slurm.conf",
        munge_socket=workdir / "munge" / "munge.socket.2",
        node=node,
        partition=partition,
        ctld_port=ctld_port,
        slurmd_port=slurmd_port,
        marker=f"{workdir}:{os.getpid()}:{time.time_ns()}",
        die_with_parent=die_with_parent,
    )
    names = ("munge", "state", "spool", "log", "run")
    dirs = {n: workdir / n for n in names}
    try:
        for p in dirs.values():
            if p.exists():
                raise ClusterUnavailable(f"{p} already exists: stale cluster? run stop() or remove it")
        for p in dirs.values():
            p.mkdir(mode=0o755)
            h.created.append(str(p))
        h.created.append(str(h.conf))
        h.created.append(str(workdir / "handle.json"))
        if run_conf_link:
            if Path("/etc/slurm/slurm.conf").exists() or Path("/run/slurm").exists():
                raise ClusterUnavailable(
                    "run_conf_link: /etc/slurm/slurm.conf or /run/slurm exists; not touching a system Slurm"
                )
            Path("/run/slurm/conf").mkdir(parents=True)
            h.created.append("/run/slurm")
            Path("/run/slurm/conf/slurm.conf").symlink_to(h.conf)

        # --- munge: own key, own socket, own pid/log/seed files, run as user munge
        mdir = dirs["munge"]
        os.chown(mdir, munge_pw.pw_uid, munge_pw.pw_gid)
        key = mdir / "munge.key"
        _run(["mungekey", "--create", "--keyfile", str(key)])
        os.chown(key, munge_pw.pw_uid, munge_pw.pw_gid)
        os.chmod(key, 0o600)
        env = dict(os.environ)
        env.pop("SLURM_CONF", None)
        env[MARKER_VAR] = h.marker
        h.procs["munged"] = subprocess.Popen(
            [
                "munged",
                "--foreground",
                "--socket",
                str(h.munge_socket),
                "--key-file",
                str(key),
                "--pid-file",
                str(mdir / "munged.pid"),
                "--log-file",
                str(mdir / "munged.log"),
                "--seed-file",
                str(mdir / "munged.seed"),
            ],
            user="munge",
            group="munge",
            extra_groups=[],
            env=env,
            cwd=mdir,
            stdin=subprocess.DEVNULL,
            stdout=open(dirs["log"] / "munged.out", "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_preexec(h),
        )
        h.pids["munged"] = h.procs["munged"].pid

        def munge_ok():
            if not h.munge_socket.exists():
                return False
            r = subprocess.run(
                ["munge", "--socket", str(h.munge_socket), "--no-input"], capture_output=True, timeout=10
            )
            if r.returncode:
                return False
            return (
                subprocess.run(
                    ["unmunge", "--socket", str(h.munge_socket)], input=r.stdout, capture_output=True, timeout=10
                ).returncode
                == 0
            )

        _wait_for(munge_ok, 15, "munged", h)
        h.timings["munged_s"] = round(time.monotonic() - t0, 2)

        # --- slurm.conf and the two Slurm daemons (foreground mode: we own the PIDs)
        h.conf.write_text(_slurm_conf_text(h, _hardware(), dirs["state"], dirs["spool"], dirs["log"], dirs["run"]))
        env["SLURM_CONF"] = str(h.conf)
        for name, args in (
            ("slurmctld", ["slurmctld", "-D", "-c", "-f", str(h.conf)]),
            ("slurmd", ["slurmd", "-D", "-f", str(h.conf), "-N", node]),
        ):
            h.procs[name] = subprocess.Popen(
                args,
                env=env,
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=open(dirs["log"] / f"{name}.out", "wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_preexec(h),
            )
            h.pids[name] = h.procs[name].pid

        cenv = h.env()

        def node_idle():
            r = subprocess.run(
                ["sinfo", "--noheader", "--Node", "--format=%T"], env=cenv, capture_output=True, text=True, timeout=10
            )
            return r.returncode == 0 and r.stdout.split() == ["idle"]

        _wait_for(node_idle, timeout, "node idle in sinfo", h, interval=0.2)
        h.timings["start_s"] = round(time.monotonic() - t0, 2)
        (workdir / "handle.json").write_text(h.to_json())
        return h
    except BaseException:
        try:
            stop(h, keep_logs=True)
        except Exception as e:  # pragma: no cover
            print(f"cluster.py: cleanup after failed start also failed: {e}", file=sys.stderr)
        raise


def _terminate(h: Handle, name: str, timeout: float = 15.0) -> None:
    pid = h.pids.get(name)
    if not pid:
        return
    proc = h.procs.get(name)
    if proc is not None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        return
    # handle loaded from json (another process started it): verify before signalling
    if not _pid_alive(pid) or name not in _pid_cmd(pid):
        return
    os.kill(pid, signal.SIGTERM)
    t0 = time.monotonic()
    while _pid_alive(pid) and time.monotonic() - t0 < timeout:
        time.sleep(0.1)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def stop(h: Handle, keep_logs: bool = False) -> dict:
    """Cancel all jobs, stop slurmd, slurmctld, munged (only those start() began),
    kill leftover slurmstepd (and their job processes) of our slurmd, remove the state.
    Works from another process too, with Handle.from_json(WORKDIR/handle.json).
    Returns timings."""
    t0 = time.monotonic()
    cenv = h.env()
    if h.pids.get("slurmctld") and _pid_alive(h.pids["slurmctld"]):
        try:
            ids = subprocess.run(
                ["squeue", "--noheader", "--format=%i", "--states=PD,R,CG,S"],
                env=cenv,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.split()
            if ids:
                subprocess.run(["scancel", "--full", *ids], env=cenv, capture_output=True, timeout=10)

                def drained():
                    r = subprocess.run(
                        ["squeue", "--noheader", "--format=%i", "--states=PD,R,CG,S"],
                        env=cenv,
                        capture_output=True,
                        text=True,
                        timeout=10,
                    )
                    return r.returncode != 0 or not r.stdout.split()

                try:
                    _wait_for(drained, 20, "jobs to be cancelled")
                except TimeoutError:
                    pass
        except (OSError, subprocess.TimeoutExpired):
            pass
    for name in ("slurmd", "slurmctld"):
        _terminate(h, name)
    # slurmstepd and the job processes under it left behind (e.g. slurmd died with a
    # crashed parent while a job ran)?  Children first, then slurmstepd.
    roots = set(_our_stepds(h.workdir)) | set(_marked_pids(h.marker))
    roots.discard(h.pids.get("munged"))
    leftovers = _descendants(roots) + sorted(roots)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in leftovers:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
        leftovers = [p for p in leftovers if _pid_alive(p)]
        if not leftovers:
            break
    _terminate(h, "munged")
    # A finished slurmstepd (and, when stop() runs in another process than start(), our
    # daemons) is reparented to PID 1, which here reaps it only after ~1 s: wait (never
    # kill) so that `pgrep slurm` right after stop() shows nothing of ours.
    t1 = time.monotonic()
    while _init_zombies(set(h.pids.values())) and time.monotonic() - t1 < 5:
        time.sleep(0.1)
    h.timings["stop_s"] = round(time.monotonic() - t0, 2)
    left = leftovers + _our_stepds(h.workdir) + _marked_pids(h.marker)
    if left:
        raise RuntimeError(f"processes left running: {sorted(set(left))}")
    for p in h.created:
        p = Path(p)
        if keep_logs and p.name == "log":
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists() or p.is_symlink():
            p.unlink()
    return h.timings


# ----------------------------------------------------------------------------- CLI


def _selftest(workdir: Path) -> int:
    h = start(workdir)
    print(f"started in {h.timings['start_s']} s (timings {h.timings}); pids {h.pids}")
    env = h.env()
    print(_run(["sinfo"], env=env).stdout)
    t1 = time.monotonic()
    jid = (
        _run(
            [
                "sbatch",
                "--parsable",
                "-D",
                str(workdir / "log"),
                "--output",
                str(workdir / "log" / "selftest-%j.out"),
                "--wrap",
                "hostname; sleep 1",
            ],
            env=env,
        )
        .stdout.strip()
        .split(";")[0]
    )
    _wait_for(
        lambda: (
            "COMPLETED" in _run(["squeue", "--noheader", "--states=all", "--jobs", jid, "--format=%T"], env=env).stdout
        ),
        60,
        "job",
    )
    print(f"sbatch job {jid} COMPLETED {time.monotonic() - t1:.2f} s after submission")
    t = stop(h)
    print(f"stopped in {t['stop_s']} s")
    return 0


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("selftest", "start", "stop"))
    ap.add_argument("workdir", nargs="?")
    a = ap.parse_args(argv)
    if a.command == "selftest":
        wd = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="pgfs-slurm-"))
        try:
            return _selftest(wd)
        finally:
            if not a.workdir:
                shutil.rmtree(wd, ignore_errors=True)
    if not a.workdir:
        ap.error("start/stop need WORKDIR")
    wd = Path(a.workdir)
    if a.command == "start":
        h = start(wd, die_with_parent=False)
        print(h.to_json())
        # Popen objects die with this process; the daemons are in their own sessions
        return 0
    h = Handle.from_json((wd / "handle.json").read_text())
    print(stop(h))
    return 0


if __name__ == "__main__":
    sys.exit(main())
