"""`python -m pgfslab.warm COMMAND ...`: a `pgfslab` command run in a fork of the warm server.

python -m pgfslab.warm notebook --config ... --name ... --out ...   # as `python -m pgfslab notebook ...`
python -m pgfslab.warm kernel -f CONNECTION_FILE                    # an IPython kernel (ipykernel_launcher)
python -m pgfslab.warm snakemake ARGV...    # `python -m snakemake ARGV`, forked if a server runs, else cold
python -m pgfslab.warm start                                        # start the server now, don't wait
python -m pgfslab.warm --job-threads 1 COMMAND ...   # in the environment of a Snakemake job of 1 thread
python -m pgfslab.warm serve --socket PATH [--idle-s S]             # the server (the client starts it)
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--job-threads"] and len(argv) > 1:  # as a Snakemake job of N threads (protocol.as_job)
        from pgfslab.warm import protocol

        protocol.as_job(int(argv[1]))
        argv = argv[2:]
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
        return client.run("kernel", argv[1:])
    if argv[:1] == ["snakemake"]:  # forked only from a server already running
        return client.run("snakemake", argv[1:], start=False)
    return client.run("pgfslab", argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
