"""The durability check: does a transaction whose COMMIT returned survive a crash?

One run = one cycle: write, crash, restart, verify.

* **Write.** A small client (this file, run as a separate process) opens `clients` connections, one
  thread each. Every transaction is pgbench's TPC-B transaction (update one account, its teller and its
  branch by a random delta, insert the delta into pgbench_history) plus one row with a unique id in
  `durability_log`. Only after COMMIT has returned does the thread append "id ack_epoch" to its own
  file under the run folder and fsync that file: the file lists exactly the transactions the server
  promised to keep.
* **Crash.** After `crash_after_s` the lab kills PostgreSQL: `kill` sends SIGKILL to the postmaster
  (its backends notice and exit; the operating system and its page cache live on); `power-loss` first
  cuts the target's loop device (pgfslab/host/powercut.py cut_power: nothing more reaches the image, so
  writes not yet on the device are lost, as in a power cut) and SIGKILLs every server process.
* **Restart.** A power cut's file system is unmounted, the image attached and mounted again (journal
  replay); PostgreSQL starts and runs crash recovery from its WAL.
* **Verify.** Every id in the clients' files must be in durability_log (a missing one is a *lost
  committed transaction*); the TPC-B balances must move together: the change since the start of the
  run of sum(abalance), sum(tbalance), sum(bbalance) and sum(delta) of pgbench_history must all equal
  the sum of the deltas of the durability_log rows that survived (an atomicity check); amcheck verifies
  the B-tree indexes.

What a lost id means depends on what the settings promise. With synchronous_commit=off PostgreSQL
acknowledges a commit before its WAL is flushed and documents a loss window of up to three times
wal_writer_delay: a lost id acknowledged within that window before the crash is reported as "within
the synchronous_commit=off window", not as a violation. With fsync=off nothing is promised across a
power loss. Anything else lost is a violation.

The client part of this module imports only the standard library and psycopg: it is run by path.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from pgfslab.config.model import Workload
from pgfslab.tools.durability import DurabilityOptions

TABLE_SQL = """
CREATE TABLE IF NOT EXISTS durability_log (
    run text NOT NULL,
    id bigint NOT NULL,
    client int NOT NULL,
    aid int NOT NULL,
    delta int NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run, id)
)"""
SUMS_SQL = """
SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts)::bigint,
       (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers)::bigint,
       (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches)::bigint,
       (SELECT coalesce(sum(delta), 0) FROM pgbench_history)::bigint"""
SUM_KEYS = ("accounts", "tellers", "branches", "history")
SETTINGS = (
    "synchronous_commit",
    "fsync",
    "wal_writer_delay",
    "full_page_writes",
    "wal_sync_method",
    "data_checksums",
    "wal_level",
)
ID_STRIDE = 10**9  # id = client * ID_STRIDE + n: unique within a run without coordination
SLACK_MS = 50  # scheduling between the client's clock read and the crash, both on this host's clock
FORMAT = "pgfs-lab durability v1"


# ----------------------------------------------------------------------------------------- the client


def _client(
    conninfo: str,
    run: str,
    client: int,
    scale: int,
    out: Path,
    stop: threading.Event,
    counts: list[int],
    errors: list[str],
) -> None:
    rng = random.Random(f"{run}:{client}")
    n = 0
    try:
        conn = psycopg.connect(conninfo, autocommit=False, connect_timeout=10)
    except psycopg.Error as exc:
        errors.append(f"client {client}: cannot connect: {' '.join(str(exc).split())}")
        return
    with open(out / f"acked.{client}.log", "a") as fh:
        try:
            while not stop.is_set():
                n += 1
                tx_id = client * ID_STRIDE + n
                aid = rng.randint(1, 100000 * scale)
                tid = rng.randint(1, 10 * scale)
                bid = rng.randint(1, scale)
                delta = rng.randint(-5000, 5000)
                with conn.cursor() as cur:
                    cur.execute("UPDATE pgbench_accounts SET abalance = abalance + %s WHERE aid = %s", (delta, aid))
                    cur.execute("UPDATE pgbench_tellers SET tbalance = tbalance + %s WHERE tid = %s", (delta, tid))
                    cur.execute("UPDATE pgbench_branches SET bbalance = bbalance + %s WHERE bid = %s", (delta, bid))
                    cur.execute(
                        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) "
                        "VALUES (%s, %s, %s, %s, CURRENT_TIMESTAMP)",
                        (tid, bid, aid, delta),
                    )
                    cur.execute(
                        "INSERT INTO durability_log (run, id, client, aid, delta) VALUES (%s, %s, %s, %s, %s)",
                        (run, tx_id, client, aid, delta),
                    )
                conn.commit()
                # the promise: COMMIT returned, so this transaction must survive any crash from now on
                fh.write(f"{tx_id} {time.time():.6f}\n")
                fh.flush()
                os.fsync(fh.fileno())
                counts[client] += 1
        except psycopg.Error as exc:
            errors.append(f"client {client}: after {counts[client]} commits: {' '.join(str(exc).split())[:300]}")
        finally:
            try:
                conn.close()
            except psycopg.Error:
                pass


def client_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="durability client: TPC-B transactions, committed ids logged")
    ap.add_argument("--conninfo", required=True)
    ap.add_argument("--run", required=True, help="this run's tag (durability_log.run)")
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--scale", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-s", type=float, required=True, help="stop by itself after this long")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    counts = [0] * args.clients
    errors: list[str] = []
    threads = [
        threading.Thread(
            target=_client, args=(args.conninfo, args.run, c, args.scale, args.out, stop, counts, errors), daemon=True
        )
        for c in range(args.clients)
    ]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            elapsed = time.monotonic() - t0
            if elapsed > args.max_s:
                stop.set()
            for t in threads:
                t.join(timeout=1.0 / len(threads))
            print(f"t={time.monotonic() - t0:.1f} s committed={sum(counts)}", flush=True)
    except KeyboardInterrupt:
        stop.set()
    for e in errors:
        print(e, file=sys.stderr, flush=True)
    print(
        f"done: {sum(counts)} commits acknowledged by {args.clients} clients in "
        f"{time.monotonic() - t0:.1f} s; {len(errors)} clients stopped by errors",
        flush=True,
    )
    return 0


# ----------------------------------------------------------------------- the lab's side (orchestrated
# from pgfslab/run/execute.py, which owns the mount, the server and the crash)


def client_command(conninfo: str, run: str, clients: int, scale: int, out: Path, max_s: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pgfslab.runners.durability",
        "--conninfo",
        conninfo,
        "--run",
        run,
        "--clients",
        str(clients),
        "--scale",
        str(scale),
        "--out",
        str(out),
        "--max-s",
        f"{max_s:g}",
    ]


def prepare(conn: psycopg.Connection) -> None:
    conn.execute(TABLE_SQL)


def scale_of(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM pgbench_branches").fetchone()
    return int(row[0]) if row else 0


def sums(conn: psycopg.Connection) -> dict[str, int]:
    row = conn.execute(SUMS_SQL).fetchone()
    if row is None:  # an aggregate always returns its row: a server that returned none is broken
        raise RuntimeError("the durability sums returned no row")
    return dict(zip(SUM_KEYS, (int(v) for v in row), strict=True))


def settings(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute(
        "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)", (list(SETTINGS),)
    ).fetchall()
    return {n: s for n, s, _u in rows}


def window_ms(effective: dict[str, str]) -> float:
    """The loss window PostgreSQL documents for these settings: 3 x wal_writer_delay with
    synchronous_commit=off, none otherwise."""
    if effective.get("synchronous_commit") == "off":
        return 3 * float(effective.get("wal_writer_delay") or 200)
    return 0.0


def read_acked(out: Path) -> tuple[dict[int, float], int]:
    """Every acknowledged id and its acknowledgement time, from the clients' files; and how many torn
    lines were skipped (a client killed mid-line has not finished acknowledging that id)."""
    acked: dict[int, float] = {}
    torn = 0
    for f in sorted(out.glob("acked.*.log")):
        text = f.read_text()
        lines = text.split("\n")
        if lines[-1]:  # no newline at the end: the client stopped mid-line, that id was not finished
            torn += 1
        for line in lines[:-1]:
            parts = line.split()
            if len(parts) != 2:
                torn += 1
                continue
            try:
                acked[int(parts[0])] = float(parts[1])
            except ValueError:
                torn += 1
    return acked, torn


def verify(
    conn: psycopg.Connection,
    run: str,
    out: Path,
    before: dict[str, int],
    effective: dict[str, str],
    crash_at: float,
    crash: str,
) -> dict[str, Any]:
    """After the restart: committed ids present, balances moved together, indexes intact."""
    acked, torn = read_acked(out)
    rows = conn.execute("SELECT id, delta FROM durability_log WHERE run = %s", (run,)).fetchall()
    present = {int(i): int(d) for i, d in rows}
    lost = sorted(set(acked) - set(present))
    in_doubt = len(set(present) - set(acked))
    after = sums(conn)
    moved = {k: after[k] - before[k] for k in SUM_KEYS}
    logged = sum(present.values())
    balances_ok = all(v == logged for v in moved.values())
    win = window_ms(effective)
    fsync_off = effective.get("fsync") == "off"
    ages = {i: round((crash_at - acked[i]) * 1000, 1) for i in lost}
    within = [i for i in lost if win > 0 and ages[i] <= win + SLACK_MS]
    if fsync_off and crash == "power-loss":
        allowed, why = list(lost), "fsync=off: PostgreSQL promises no durability across a power loss"
    else:
        allowed, why = within, "within the synchronous_commit=off window" if within else ""
    violations = len(lost) - len(allowed)
    return {
        "committed_ids": len(acked),
        "present_ids": len(present),
        "lost_ids": len(lost),
        "lost_within_window": len(within),
        "lost_allowed": len(allowed),
        "lost_allowed_reason": why or None,
        "violations": violations,
        "in_doubt_present": in_doubt,
        "torn_ack_lines": torn,
        "lost_sample": [{"id": i, "acked_ms_before_crash": ages[i]} for i in lost[:20]],
        "oldest_lost_ms": max(ages.values()) if ages else None,
        "balances_ok": balances_ok,
        "balance_moved": moved,
        "durability_log_delta_sum": logged,
        "sums_before": before,
        "sums_after": after,
        "synchronous_commit": effective.get("synchronous_commit"),
        "fsync": effective.get("fsync"),
        "full_page_writes": effective.get("full_page_writes"),
        "wal_writer_delay_ms": float(effective.get("wal_writer_delay") or 0),
        "window_ms": win,
        "amcheck": amcheck(conn),
    }


def amcheck(conn: psycopg.Connection) -> str:
    """bt_index_check on the indexes the check wrote through: "ok", or what it found / why it could not."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
    except psycopg.Error as exc:
        return f"not run: {' '.join(str(exc).split())[:200]}"
    found = []
    for idx in ("pgbench_accounts_pkey", "pgbench_tellers_pkey", "pgbench_branches_pkey", "durability_log_pkey"):
        try:
            conn.execute("SELECT bt_index_check(%s::regclass)", (idx,))
        except psycopg.Error as exc:
            found.append(f"{idx}: {' '.join(str(exc).split())[:200]}")
    return "ok" if not found else "; ".join(found)


def verdict(rec: dict[str, Any]) -> str:
    """One line for the progress output and run.json."""
    if rec.get("restart_error"):
        return f"server did not restart after the crash: {rec['restart_error']}"
    text = (
        f"{rec.get('crash')} crash after {rec.get('committed_ids', 0)} committed transactions: "
        f"{rec.get('lost_ids', 0)} lost"
    )
    if rec.get("lost_allowed"):
        text += f" ({rec['lost_allowed']} {rec.get('lost_allowed_reason')})"
    if rec.get("violations"):
        text += f", {rec['violations']} VIOLATIONS"
    text += ", balances " + ("agree" if rec.get("balances_ok") else "DISAGREE")
    if rec.get("amcheck") not in ("ok", None) and not str(rec.get("amcheck")).startswith("not run"):
        text += f", amcheck: {rec['amcheck']}"
    return text


def describe(spec: Workload) -> str:
    """The workload in a few words, as the paper names it (the schema's defaults: power-loss, after 3 s)."""
    o = spec.options_as(DurabilityOptions)
    return f"durability {o.crash_kind()} crash after {o.crash_after():g} s of TPC-B"


def how(spec: Workload) -> list[str]:
    """Nothing beyond the crash its name says."""
    return []


if __name__ == "__main__":
    sys.exit(client_main())
