"""The seeds' findings as claims the lab can test (`claims.yaml` beside this module).

Each claim: its seed, the finding in one line (our words; the seed's own number quoted with where it is),
what it compares (sides A and B), over which runs (`match`: tool, workload kinds or fsmicro ops,
clients), in which memory regime, and what it says of B/A (`direction` within / greater / less a
`threshold`). `reproducible_here: false` claims need what no machine of this kind has (device-mapper
snapshots, NBD/S3 storage, the seeds' hardware) and say why; the paper lists them apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pgfslab import yaml_text
from pgfslab.errors import LabError

CLAIMS = Path(__file__).with_name("claims.yaml")
QUANTITIES = (
    "ratio",
    "variance_ratio",
    "saving",
    "compression_ratio",
    "footprint",
    "bandwidth",
    "count",
    "qualitative",
)
DIRECTIONS = ("within", "greater", "less")


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
    regime: str
    direction: str | None  # None for a qualitative claim
    threshold: float | None
    reproducible_here: bool
    why_not: str | None = None
    match: dict[str, Any] = field(default_factory=dict)


def _check(item: dict[str, Any], path: Path) -> Claim:
    missing = sorted(set(Claim.__dataclass_fields__) - {"why_not", "match"} - set(item))
    if missing:
        raise LabError(f"{path}: claim {item.get('id')!r}: missing {', '.join(missing)}")
    unknown = sorted(set(item) - set(Claim.__dataclass_fields__))
    if unknown:
        raise LabError(f"{path}: claim {item['id']!r}: unknown keys {', '.join(unknown)}")
    if item["quantity"] not in QUANTITIES or item["direction"] not in (*DIRECTIONS, None):
        raise LabError(f"{path}: claim {item['id']!r}: quantity must be one of {QUANTITIES}, direction of {DIRECTIONS}")
    if not item["reproducible_here"] and not item.get("why_not"):
        raise LabError(f"{path}: claim {item['id']!r}: not reproducible here, but no why_not")
    return Claim(**item)


@cache
def claims(path: Path = CLAIMS) -> tuple[Claim, ...]:
    items = yaml_text.safe_load(path.read_text())
    out = tuple(_check(item, path) for item in items)
    ids = [c.id for c in out]
    if len(ids) != len(set(ids)):
        raise LabError(f"{path}: duplicate claim ids")
    return out


def for_seeds(seeds: list[str]) -> list[Claim]:
    """The claims of the seeds a study reproduces (its config's `seeds`)."""
    return [c for c in claims() if c.seed in seeds]
