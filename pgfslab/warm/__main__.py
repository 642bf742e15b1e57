"""`python -m pgfslab.warm COMMAND ...`: a `pgfslab` command run in a fork of the warm server.

python -m pgfslab.warm notebook --config ... --name ... --out ...   # as `python -m pgfslab notebook ...`
python -m pgfslab.warm kernel -f CONNECTION_FILE                    # an IPython kernel (ipykernel_launcher)
python -m pgfslab.warm snakemake ARGV...    # `python -m snakemake ARGV`, forked if a server runs, else cold
python -m pgfslab.warm start                                        # start the server now, don't wait
python -m pgfslab.warm --job-threads 1 COMMAND ...   # forked from the server of a Snakemake job of 1 thread
python -m pgfslab.warm run-one ...          # a run: forked from the notebooks' server (as with --job-threads 1)
python -m pgfslab.warm serve --socket PATH [--idle-s S]             # the server (the client starts it)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    own_env = None
    threads = None
    if argv[:1] == ["--job-threads"] and len(argv) > 1:
        threads, argv = int(argv[1]), argv[2:]
    elif argv[:1] == ["run-one"]:
        # a run (a job of every core) is forked from the notebooks' server (a one-thread job's): one server and
        # one renderer per study, not one for the runs and one for the notebooks (about 8 s of CPU each). Here
        # and not in the workflow's rule: a changed shell command re-runs every run Snakemake recorded.
        threads = 1
    if threads is not None:
        # the server of a Snakemake job of `threads` threads (its key and, when it is started here, its
        # environment: protocol.as_job); the command itself keeps this process's environment
        from pgfslab.warm import protocol

        own_env = dict(os.environ)
        protocol.as_job(threads)
    if argv[:1] == ["serve"]:
        import argparse

        from pgfslab.warm import protocol, server

        p = argparse.ArgumentParser(prog="python -m pgfslab.warm serve")
        p.add_argument("--socket", type=Path, required=True)
        p.add_argument("--idle-s", type=float, default=protocol.IDLE_S)
        p.add_argument("--lock-fd", type=int, help="the start lock, held until the server listens")
        args = p.parse_args(argv[1:])
        return server.main(args.socket, args.idle_s, args.lock_fd)
    from pgfslab.warm import client, protocol

    if argv[:1] == ["start"]:  # warm up ahead of the notebooks; returns at once
        if protocol.enabled():
            try:
                client.start()
            except client.Unavailable:
                pass
        return 0
    if argv[:1] == ["kernel"]:
        return client.run("kernel", argv[1:], env=own_env)
    if argv[:1] == ["snakemake"]:  # forked only from a server already running
        return client.run("snakemake", argv[1:], start=False, env=own_env)
    return client.run("pgfslab", argv, env=own_env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
