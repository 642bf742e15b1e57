"""The defined starting state of a run, the same for every target: after a target's load its
tables vacuumed and analysed, a checkpoint, and autovacuum quiet; before each run a checkpoint and the cache
state the study asks for (`run.cache`), reached and verified, recorded in run.json as `start_state`.

cold: the page cache dropped (pgfslab.run.execute) and a freshly started server, its shared_buffers empty.
warm: the same, then a defined pass over the data set (pg_prewarm, PostgreSQL's contrib module, of every
table, then every index, by name: what a pass beyond the memory limit leaves cached is the same every run),
then two short probes that read an evenly spread sample of blocks (newest relation first, at most an eighth
of shared_buffers, so that the probe's own misses disturb little) and count the buffer hits of their own
transaction (pg_stat_get_xact_blocks_fetched/_hit: no other session and no statistics flush in them). The
state is steady when the two probes' hit ratios agree (within their sampling error); otherwise another pass,
up to MAX_PASSES. A data set larger than shared_buffers settles at a hit ratio below 1: steady, not full.
"""

from __future__ import annotations

import math
import time
from typing import Any

import psycopg

from pgfslab.host import postgres

# the relations of the run's data set in the pass's fixed order: tables, then indexes, each by name
RELATIONS_SQL = (
    "SELECT c.oid, c.relname, c.relkind, pg_relation_size(c.oid) / current_setting('block_size')::int "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') ORDER BY c.relkind DESC, c.relname"
)
PROBE_BLOCKS = 1024  # blocks a probe reads at most (8 MiB of 8 kB pages): short beside a run
PROBE_SHARE = 8  # ... and at most 1/8 of shared_buffers, so that its own misses evict little of what it measures
STEADY_TOLERANCE = 0.02  # two probes' hit ratios this close (absolute, or within their sampling error): steady
MAX_PASSES = 3  # passes over the data set before a warm start is recorded as not steady
AUTOVACUUM_WAIT_S = 120.0  # how long a prepared target waits for autovacuum to finish before its first run

AUTOVACUUM_SQL = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"


def cache_mode(cache: str | None, drop_caches: bool, prewarm: bool | None) -> str:
    """The cache state a run starts from: run.cache, or what run.drop_caches and run.prewarm made it before
    that key existed (cold, prewarm: one unverified pg_prewarm pass, kept: caches as the last run left them)."""
    if cache is not None:
        return cache
    if prewarm:
        return "prewarm"
    return "cold" if drop_caches else "kept"


def checkpoint(cl: postgres.Cluster) -> dict[str, Any]:
    """A CHECKPOINT: no dirty buffer left from the load or the warm pass; its redo LSN and time recorded."""
    t0 = time.monotonic()
    with cl.connect() as conn:
        conn.execute("CHECKPOINT")
        lsn, at = postgres.one_row(conn, "SELECT checkpoint_lsn::text, checkpoint_time FROM pg_control_checkpoint()")
    return {"lsn": lsn, "time": at.isoformat(), "wall_s": round(time.monotonic() - t0, 3)}


def autovacuum_workers(cl: postgres.Cluster) -> int:
    return int(cl.query(AUTOVACUUM_SQL)[0][0])


def wait_autovacuum_quiet(cl: postgres.Cluster, timeout_s: float = AUTOVACUUM_WAIT_S) -> dict[str, Any]:
    """Wait (bounded) until no autovacuum worker runs; how long it took and whether it got there."""
    t0 = time.monotonic()
    seen = 0
    while True:
        n = autovacuum_workers(cl)
        seen = max(seen, n)
        waited = time.monotonic() - t0
        if n == 0 or waited >= timeout_s:
            return {"quiet": n == 0, "waited_s": round(waited, 3), "workers_seen": seen, "timeout_s": timeout_s}
        time.sleep(1.0)


def settle_after_load(cl: postgres.Cluster, databases: list[str]) -> dict[str, Any]:
    """After a target's load: VACUUM ANALYZE of each loaded database (hint bits set and statistics made now,
    not by autovacuum during a run), a CHECKPOINT, and autovacuum quiet."""
    t0 = time.monotonic()
    old = cl.dbname
    try:
        for db in databases:
            cl.dbname = db
            cl.query("VACUUM ANALYZE")
    finally:
        cl.dbname = old
    vacuum_s = round(time.monotonic() - t0, 3)
    return {
        "vacuum_analyze": {"databases": databases, "wall_s": vacuum_s},
        "checkpoint": checkpoint(cl),
        "autovacuum": wait_autovacuum_quiet(cl),
    }


def relations(conn: psycopg.Connection) -> list[tuple[int, str, str, int]]:
    """(oid, name, kind, blocks) of the data set's tables and indexes, in the pass's order."""
    return [(int(o), str(n), str(k), int(b)) for o, n, k, b in conn.execute(RELATIONS_SQL).fetchall()]


def warm_pass(conn: psycopg.Connection, rels: list[tuple[int, str, str, int]]) -> int:
    """One pass over the data set in the fixed order, each relation read into shared_buffers. Blocks read."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    return sum(int(postgres.one_row(conn, "SELECT pg_prewarm(%s::oid::regclass)", (oid,))[0]) for oid, *_ in rels)


def probe(conn: psycopg.Connection, rels: list[tuple[int, str, str, int]], k: int) -> dict[str, Any]:
    """The buffer hit ratio of reading an evenly spread sample of blocks (probe `k` starts each relation at
    another offset, so it does not read the blocks the probe before it just loaded)."""
    total = sum(b for *_, b in rels)
    shared = int(postgres.one_row(conn, "SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers'")[0])
    stride = max(1, -(-total // min(PROBE_BLOCKS, max(1, shared // PROBE_SHARE))))
    counts = "SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(oid)), 0), coalesce(sum(pg_stat_get_xact_blocks_hit(oid)), 0) FROM unnest(%s::oid[]) oid"
    oids = [oid for oid, *_ in rels]
    t0 = time.monotonic()
    with conn.transaction():
        f0, h0 = postgres.one_row(conn, counts, (oids,))
        # newest first (the pass's order reversed): a probe's misses on the oldest blocks come last and
        # cannot evict the newest before the probe has counted them
        for oid, _, _, blocks in reversed(rels):
            start = (k * 7919) % stride
            if blocks > start:
                conn.execute(
                    "SELECT count(pg_prewarm(%s::oid::regclass, 'buffer', 'main', b, b)) "
                    "FROM generate_series(%s::bigint, %s::bigint, %s::bigint) b",
                    (oid, start, blocks - 1, stride),
                )
        f1, h1 = postgres.one_row(conn, counts, (oids,))
    fetched, hit = int(f1 - f0), int(h1 - h0)
    return {
        "blocks": fetched,
        "hit": hit,
        "hit_ratio": round(hit / fetched, 4) if fetched else None,
        "wall_s": round(time.monotonic() - t0, 3),
    }


def agreement(p: dict[str, Any], q: dict[str, Any]) -> float:
    """How far apart two probes' hit ratios may be and still agree: STEADY_TOLERANCE, or two standard errors
    of the difference of two samples of their sizes when that is wider (a few hundred sampled blocks read a
    ratio to a few per cent, and probes at different offsets are different samples)."""
    n1, n2 = p["blocks"], q["blocks"]
    if not n1 or not n2:
        return STEADY_TOLERANCE
    r = (p["hit"] + q["hit"]) / (n1 + n2)
    return max(STEADY_TOLERANCE, 2 * math.sqrt(r * (1 - r) * (1 / n1 + 1 / n2)))


def warm(cl: postgres.Cluster) -> dict[str, Any]:
    """The warm start: passes over the data set until two probes agree (at most MAX_PASSES passes)."""
    t0 = time.monotonic()
    with cl.connect() as conn:
        rels = relations(conn)
        passes: list[int] = []
        probes: list[dict[str, Any]] = []
        steady, tolerance = False, STEADY_TOLERANCE
        while len(passes) < MAX_PASSES and not steady:
            passes.append(warm_pass(conn, rels))
            while len(probes) < 2 * len(passes):
                probes.append(probe(conn, rels, len(probes)))
            tolerance = agreement(probes[-2], probes[-1])
            a, b = probes[-2]["hit_ratio"], probes[-1]["hit_ratio"]
            steady = a is not None and b is not None and abs(a - b) <= tolerance
    return {
        "relations": len(rels),
        "relation_blocks": sum(b for *_, b in rels),
        "order": "tables then indexes, by name",
        "passes": len(passes),
        "pass_blocks": passes,
        "probes": probes,
        "steady": steady,
        "tolerance": round(tolerance, 4),
        "hit_ratio": probes[-1]["hit_ratio"] if probes else None,
        "wall_s": round(time.monotonic() - t0, 3),
    }


def reach(cl: postgres.Cluster, mode: str, caches: Any) -> dict[str, Any]:
    """Reach the run's starting state on its freshly started server and say what it is (run.json's
    `start_state`): the cache mode, the warm pass and its verified hit ratio, a checkpoint, autovacuum."""
    state: dict[str, Any] = {"cache": mode, "caches_dropped": caches != "kept", "server_restarted": True}
    if mode == "warm":
        w = warm(cl)
        state["warm"] = w
        state["hit_ratio"] = w["hit_ratio"]
        state["steady"] = w["steady"]
    else:
        state["hit_ratio"] = None  # a probe would warm what cold leaves cold
    state["checkpoint"] = checkpoint(cl)
    n = autovacuum_workers(cl)
    state["autovacuum_workers"] = n
    state["autovacuum_quiet"] = n == 0
    return state
