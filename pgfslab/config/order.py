"""The order of the targets within a round of the plan.

`williams` (the default) follows a Williams design: the rounds cycle through the rows of a Williams Latin
square, so that over a full cycle (n rounds for an even number of targets, 2n for an odd one) every target
runs in every position equally often AND follows every other target equally often. A run's predecessor can
leave something behind (a cache state, dirty pages still being written, the host's own write-back of
another image), and a plain rotation balances the position only: with four targets rotated, each target is
followed by the same other target in every round, so a carry-over passes for a difference between targets.
`rotate` (round r starts at target r mod n) and `fixed` (the config's order in every round) stay for
studies that ask for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
KINDS = ("williams", "rotate", "fixed")


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design for n treatments (Williams 1949): the first row 0, 1, n-1, 2, n-2, ...,
    each further row the first plus i (mod n); for an odd n the same rows reversed are added, since one
    square cannot balance the predecessors of an odd number of treatments."""
    if n <= 0:
        return []
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 else rows


def cycle_length(n: int, kind: str) -> int:
    """Rounds after which the order repeats and is balanced (position, and for williams the predecessor)."""
    if kind == "fixed" or n <= 1:
        return 1
    return len(williams_rows(n)) if kind == "williams" else n


def round_order(targets: Sequence[T], round_index: int, kind: str | None) -> list[T]:
    """The targets in the order round `round_index` (0-based, burn-in rounds included) runs them."""
    mine = list(targets)
    if not mine or kind == "fixed":
        return mine
    if kind == "rotate":
        k = round_index % len(mine)
        return mine[k:] + mine[:k]
    rows = williams_rows(len(mine))
    return [mine[i] for i in rows[round_index % len(rows)]]
