"""The seeds' findings as claims the lab can test (`claims.yaml` beside this module).

Each claim: its seed, the finding in one line (our words; the seed's own number quoted with where it is,
and `seed_value`, that number or range as B/A where the seed gave one, else `size`, its words of size, read
by one rule: SIZE_WORDS), what it compares (sides A and B, by keys the run facts know), which quantity, and
what it expects of B/A: `greater` or `less` than 1, or `same` (equivalence within `band`, 1 ± a number or
[lo, hi], from the seed's words and numbers, `band_why` saying how; docs/claims.md). `lab_own` marks a
finding about the lab's own stack rather than the seed's. `primary` is the seed's own
condition (its cell: regime, clients, workload kind, settings; a list: any of its values): only that cell
gives the claim's verdict, the others are context. `preconditions` name what must hold for the seed's mechanism to act (I/O-bound,
steady, a magnetic-class device, ...; `regime.PRECONDITIONS`), checked per cell from what the samplers
recorded; a claim whose mechanism acts in every cell says why in `no_preconditions_why` (a reader of its
verdict should not have to guess why no regime was checked). `interaction` makes the claim a ratio of
ratios: B/A at `to` against B/A at `from` of one setting. A claim without `match` says in `figure` why
only a figure can speak to it. `reproducible_here: false` claims need what no machine of this kind has
and say why (`why_not`); their sides may name the seed's own hardware (SEED_ONLY_KEYS), which a
reproducible claim may not.

Every key is checked at load: an unknown claim key, an unknown side key, or a side key a reproducible claim
cannot use is an error naming the file and the claim (nothing is silently dropped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pgfslab import yaml_text
from pgfslab.analysis.verdicts.facts import FS_KEYS, PG_KEYS
from pgfslab.analysis.verdicts.regime import PRECONDITIONS
from pgfslab.errors import LabError

CLAIMS = Path(__file__).with_name("claims.yaml")
# the facts column each quantity compares lives in evaluate.VALUE; these need no per-run column
SPECIAL = ("durability", "rank_test_floor", "qualitative")
QUANTITIES = (
    "ratio",  # headline (tps, timed fsmicro ops/s)
    "variance_ratio",  # σ² of per-second throughput (after the warm-up), as seed 002's tables
    "cv_ratio",  # per-run coefficient of variation of per-second throughput (jitter seen on a chart)
    "latency_p95_ratio",  # 95th percentile of the run's per-second mean latency (spikes over time)
    "tx_latency_p95_ratio",  # 95th percentile of the run's logged transactions' latency (a percentile chart's)
    "read_await_variance",  # σ² of the data device's per-second read await (I/O service time)
    "written_per_tx",  # bytes written to the data device per committed transaction
    "tail_ratio",  # p99 / p50 of an fsmicro run's operation latencies
    "checkpoint_read_wait",  # read await in seconds with checkpoint writes against the other seconds, per run
    "saving",
    "compression_ratio",
    "footprint",
    "bandwidth",
    *SPECIAL,
)
EXPECTS = ("greater", "less", "same")
# The one rule that reads a seed's words of size (docs/claims.md): the effect as a factor >= 1 (B/A for a claim
# that B is greater, A/B for one that it is less), split at SMALL_EDGE. The talk calls a 10 % gap "fairly small"
# (seed 000, line 36) and no seed calls a gap of a quarter or more small; words of a large effect start where
# the small ones end, so the two never overlap and neither is stricter than a seed's own number.
SMALL_EDGE = 1.25
SMALL, LARGE = (1.0, SMALL_EDGE), (SMALL_EDGE, math.inf)
SIZE_WORDS: dict[str, tuple[float, float]] = {
    "a bit": SMALL, "slightly": SMALL, "fairly small": SMALL, "somewhat": SMALL, "modestly": SMALL,
    "much": LARGE, "substantially": LARGE, "significantly": LARGE, "massive": LARGE, "dramatic": LARGE,
}  # fmt: skip
# what tells a target apart, and what a run is (per workload or per target); `clients` for a claim across
# thread counts
TARGET_KEYS = ("fs", "compression", "fillfactor", "snapshots", "recordsize", "data_mode")
RUN_KEYS = ("dirty_background_bytes", *PG_KEYS, *FS_KEYS)
SIDE_KEYS = (*TARGET_KEYS, *RUN_KEYS, "clients")
# the seeds' own set-ups, which this lab cannot set: allowed only on claims not reproducible here
SEED_ONLY_KEYS = ("device", "backend", "block_size", "l2arc", "volume", "checkpoint_segments", "pgbench_mode")
PRIMARY_KEYS = ("regime", "clients", "kind", "rung", *RUN_KEYS)
REGIMES = ("fits_shared_buffers", "fits_ram", "exceeds_ram")  # `facts.regime`'s values
REQUIRED = ("id", "seed", "claim", "where", "seed_number", "quantity", "a", "b", "workload", "expect")
OPTIONAL = (
    "seed_value", "band", "band_why", "size", "lab_own", "reproducible_here", "why_not", "match", "primary", "preconditions",
    "interaction", "figure", "no_preconditions_why", "beyond_here",
)  # fmt: skip
MATCH_KEYS = ("tool", "kinds", "ops", "clients")


@dataclass(frozen=True)
class Claim:
    id: str
    seed: str
    claim: str
    where: str
    seed_number: str | None
    quantity: str
    a: dict[str, Any]
    b: dict[str, Any]
    workload: str
    expect: str | None  # None for a qualitative claim
    seed_value: float | list[float] | None = None  # a number, or the [lo, hi] range the seed gave
    band: float | list[float] | None = None  # 1 ± band, or [lo, hi] of B/A
    size: str | None = None  # the seed's own words of size, read by SIZE_WORDS
    lab_own: str | None = None  # the lab's own finding, not the seed's: why (what the seed's stack was)
    band_why: str | None = None
    reproducible_here: bool = True
    why_not: str | None = None
    match: dict[str, Any] = field(default_factory=dict)
    primary: dict[str, Any] = field(default_factory=dict)
    preconditions: tuple[str, ...] = ()
    interaction: dict[str, Any] | None = None
    figure: str | None = None
    no_preconditions_why: str | None = None  # a claim whose mechanism acts in every cell says why
    # run here, but what would decide it is beyond this machine (kernel ZFS's sizes, 200 GB of files): why. Its
    # verdicts are shown; the count of claims this machine can decide in principle leaves it out
    beyond_here: str | None = None

    @property
    def seed_range(self) -> tuple[float, float] | None:
        """The seed's own size of the effect as B/A: (v, v) for one number, (lo, hi) for a range it gave, else
        its words of size (`size`) by the lab's one rule (SIZE_WORDS) in the claim's direction; None where the
        seed gave no size (the claim is then tested for its direction only). A number wins over words."""
        v = self.seed_value
        if isinstance(v, list):
            return float(min(v)), float(max(v))
        if v is not None:
            return float(v), float(v)
        if self.size is None or self.expect not in ("greater", "less"):
            return None
        lo, hi = SIZE_WORDS[self.size]
        return (lo, hi) if self.expect == "greater" else (1 / hi, 1 / lo)

    @property
    def band_range(self) -> tuple[float, float] | None:
        """An equivalence claim's band of B/A: (1 - band, 1 + band), or the [lo, hi] the claim gives."""
        b = self.band
        if b is None:
            return None
        if isinstance(b, list):
            return float(min(b)), float(max(b))
        return 1 - float(b), 1 + float(b)


def _fail(path: Path, cid: Any, what: str) -> LabError:
    return LabError(f"{path}: claim {cid!r}: {what}")


def _check(item: dict[str, Any], path: Path) -> Claim:
    cid = item.get("id")
    missing = [k for k in REQUIRED if k not in item]
    if missing:
        raise _fail(path, cid, f"missing {', '.join(missing)}")
    unknown = sorted(set(item) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise _fail(path, cid, f"unknown keys {', '.join(unknown)}")
    quantity, expect = item["quantity"], item["expect"]
    if quantity not in QUANTITIES:
        raise _fail(path, cid, f"quantity {quantity!r} is not one of {', '.join(QUANTITIES)}")
    if expect not in (*EXPECTS, None) or (expect is None and quantity not in SPECIAL):
        raise _fail(path, cid, f"expect {expect!r} is not one of {', '.join(EXPECTS)}")
    reproducible = item.get("reproducible_here", True)
    if not reproducible and not item.get("why_not"):
        raise _fail(path, cid, "not reproducible here, but no why_not")
    band = item.get("band")
    band_ok = isinstance(band, (int, float)) or (
        isinstance(band, list)
        and len(band) == 2
        and all(isinstance(x, (int, float)) for x in band)
        and band[0] < 1 < band[1]
    )
    if expect == "same" and not (band_ok and item.get("band_why")):
        raise _fail(path, cid, "an equivalence claim (expect: same) needs its band (a number, or [lo, hi] around 1) "
                    "and band_why")  # fmt: skip
    size = item.get("size")
    if size is not None and size not in SIZE_WORDS:
        raise _fail(path, cid, f"size {size!r} is not one of {', '.join(SIZE_WORDS)}")
    if size is not None and expect not in ("greater", "less"):
        raise _fail(path, cid, "size (the seed's words of size) belongs to a claim that B is greater or less")
    own = item.get("lab_own")
    if own is not None and not (isinstance(own, str) and own.strip()):
        raise _fail(path, cid, "lab_own says why the finding is the lab's own, not the seed's")
    beyond = item.get("beyond_here")
    if beyond is not None and not (isinstance(beyond, str) and beyond.strip() and reproducible):
        raise _fail(path, cid, "beyond_here says why a claim run here cannot be decided on this machine (a claim "
                    "not reproducible here at all says why_not instead)")  # fmt: skip
    if expect != "same" and item.get("band") is not None:
        raise _fail(path, cid, "a band belongs to an equivalence claim (expect: same) only")
    sv = item.get("seed_value")
    if isinstance(sv, list) and not (len(sv) == 2 and all(isinstance(x, (int, float)) for x in sv) and sv[0] < sv[1]):
        raise _fail(path, cid, f"seed_value {sv}: a number, or a range [lo, hi] with lo < hi")
    values = sv if isinstance(sv, list) else [] if sv is None else [sv]
    if values and expect in ("greater", "less") and quantity not in (*SPECIAL, "saving"):
        if not all(v > 1 if expect == "greater" else v < 1 for v in values):
            raise _fail(path, cid, f"seed_value {sv} contradicts expect: {expect}")
    for side in ("a", "b"):
        keys = set(item[side] or {})
        allowed = set(SIDE_KEYS) | (set() if reproducible else set(SEED_ONLY_KEYS))
        bad = sorted(keys - allowed)
        if bad:
            known = ", ".join(SIDE_KEYS)
            raise _fail(path, cid, f"side {side}: keys {', '.join(bad)} are not facts the lab matches ({known})")
    match = item.get("match") or {}
    bad = sorted(set(match) - set(MATCH_KEYS))
    if bad:
        raise _fail(path, cid, f"match: unknown keys {', '.join(bad)}")
    bad = sorted(set(item.get("primary") or {}) - set(PRIMARY_KEYS))
    if bad:
        raise _fail(path, cid, f"primary: unknown keys {', '.join(bad)}")
    regimes = (item.get("primary") or {}).get("regime", [])
    bad = sorted(set(regimes if isinstance(regimes, list) else [regimes]) - set(REGIMES))
    if bad:  # a misspelt regime would make no cell primary, and the claim would silently go untested
        raise _fail(path, cid, f"primary: unknown regime {', '.join(bad)} (known: {', '.join(REGIMES)})")
    pre = tuple(item.get("preconditions") or ())
    bad = sorted(set(pre) - set(PRECONDITIONS))
    if bad:
        raise _fail(path, cid, f"preconditions: unknown {', '.join(bad)} (known: {', '.join(PRECONDITIONS)})")
    if pre and item.get("no_preconditions_why"):
        raise _fail(path, cid, "names preconditions and no_preconditions_why: one or the other")
    if reproducible and not pre and not item.get("no_preconditions_why"):
        raise _fail(
            path, cid, "name its preconditions, or no_preconditions_why: why the seed's mechanism acts in every cell"
        )
    inter = item.get("interaction")
    if inter is not None and (set(inter) != {"key", "from", "to"} or inter["key"] not in (*PRIMARY_KEYS, "fsync")):
        raise _fail(path, cid, "interaction needs key (a run fact), from and to")
    if reproducible and quantity != "qualitative" and not match and not item.get("figure"):
        raise _fail(path, cid, "a reproducible claim needs match, or figure saying why only a figure can speak to it")
    if quantity == "qualitative" and reproducible and not item.get("figure"):
        raise _fail(path, cid, "a qualitative claim needs figure: which figure speaks to it")
    return Claim(
        **{k: item[k] for k in REQUIRED},
        **{k: item[k] for k in OPTIONAL if k in item and k not in ("preconditions", "match", "primary")},
        match=match,
        primary=dict(item.get("primary") or {}),
        preconditions=pre,
    )


@cache
def claims(path: Path = CLAIMS) -> tuple[Claim, ...]:
    items = yaml_text.safe_load(path.read_text())
    out = tuple(_check(item, path) for item in items)
    ids = [c.id for c in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise LabError(f"{path}: duplicate claim ids {', '.join(dup)}")
    return out


SEED_RUNS = Path(__file__).with_name("seed_runs.yaml")


@cache
def seed_runs(path: Path = SEED_RUNS) -> tuple[dict[str, Any], ...]:
    """How long each seed ran its workloads, as it says (`seed_runs.yaml`): seed, ran, length, seconds (null
    where the seed gives no length), where."""
    items = yaml_text.safe_load(path.read_text())
    for item in items:
        missing = {"seed", "ran", "length", "seconds", "where"} - set(item)
        if missing:
            raise LabError(f"{path}: seed {item.get('seed')!r}: missing {', '.join(sorted(missing))}")
    return tuple(items)


def for_seeds(seeds: list[str]) -> list[Claim]:
    """The claims of the seeds a study reproduces (its config's `seeds`)."""
    return [c for c in claims() if c.seed in seeds]
