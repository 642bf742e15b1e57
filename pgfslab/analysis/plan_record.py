"""What a study's plan is sized from, kept beyond the machine it was measured on.

`pgfslab plan` sizes each cell from the noise and the cost of the study's last runs (`analysis.design`). Its
database (`data/<study>.duckdb`) stays on the machine that ran them, so on a fresh clone the plan would fall back
to the stated defaults. `pgfslab seed-summary` therefore keeps, with each study's verdict record
(`docs/results/<study>.json`, key `plan`), the same measures taken from that database: the run-to-run noise per
cell (unpaired and paired by round), the noise of the runs' steadiness and what a run cost. The plan reads them
where the machine has no database of the study, and says which runs they came from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.errors import LabError

CELL = {"workload": pl.Utf8, "clients": pl.Int64, "rung": pl.Int64}
SCHEMAS: dict[str, dict[str, Any]] = {
    "sigma": {**CELL, "sigma": pl.Float64},
    "sigma_rounds": {**CELL, "sigma": pl.Float64},
    "spread": {**CELL, "quantity": pl.Utf8, "sigma": pl.Float64},
    "cost": {**CELL, "target": pl.Utf8, "wall_s": pl.Float64, "beyond_s": pl.Float64},
}


@dataclass(frozen=True)
class PlanInputs:
    """The measures a plan is sized from, and where they came from (as the plan prints it)."""

    source: str
    sigma: pl.DataFrame  # per cell: the SD of log throughput per run, unpaired (`design.measured_sigma`)
    sigma_rounds: pl.DataFrame  # the same paired by round (`design.measured_sigma(rounds=True)`)
    spread: pl.DataFrame  # per cell and steadiness quantity (`design.measured_spread`)
    cost: pl.DataFrame  # per cell and target: a run's wall time and what it costs beyond its length

    def sigma_for(self, paired: bool) -> pl.DataFrame:
        return self.sigma_rounds if paired else self.sigma

    def is_empty(self) -> bool:
        return all(getattr(self, k).is_empty() for k in SCHEMAS)


def _conform(frame: pl.DataFrame, schema: dict[str, Any]) -> pl.DataFrame:
    """`frame` with the record's columns and types (a study without a ladder has no rung: null), sorted by its keys:
    a group-by's order is arbitrary, and a record written again from the same runs must read the same."""
    if frame.is_empty():
        return pl.DataFrame(schema=schema)
    keys = [c for c, t in schema.items() if t != pl.Float64]
    return frame.select(
        [(pl.col(c) if c in frame.columns else pl.lit(None)).cast(t).alias(c) for c, t in schema.items()]
    ).sort(keys, nulls_last=True)


def inputs(source: str, **frames: pl.DataFrame) -> PlanInputs:
    """PlanInputs from the design's measured frames (any left out is empty), in the record's columns."""
    unknown = set(frames) - set(SCHEMAS)
    if unknown:
        raise ValueError(f"not a plan measure: {', '.join(sorted(unknown))}")
    return PlanInputs(
        source=source,
        **{k: _conform(frames.get(k, pl.DataFrame()), s) for k, s in SCHEMAS.items()},
    )


def to_json(p: PlanInputs) -> dict[str, list[dict[str, Any]]]:
    """The measures as JSON-ready rows; a value that is not finite (no noise measurable) is left out with its row."""
    out = {}
    for k, schema in SCHEMAS.items():
        rows = getattr(p, k).to_dicts()
        floats = [c for c, t in schema.items() if t == pl.Float64]
        out[k] = [r for r in rows if all(r[c] is not None and math.isfinite(r[c]) for c in floats)]
    return out


def from_json(rows: Any, source: str, where: str) -> PlanInputs:
    """`to_json`'s rows read back (`where`: the file, named in an error)."""
    if not isinstance(rows, dict):
        raise LabError(f"{where}: its plan measures are not a mapping")
    try:
        return PlanInputs(
            source=source,
            **{k: pl.DataFrame(rows.get(k) or [], schema=s) for k, s in SCHEMAS.items()},
        )
    except (TypeError, ValueError, pl.exceptions.PolarsError) as exc:
        raise LabError(f"{where}: its plan measures do not read as {', '.join(SCHEMAS)} ({exc})") from exc


def load(record: Path) -> PlanInputs | None:
    """The plan measures of a study's record (`docs/results/<study>.json`), or None where there is no record or it
    holds none; the source names the runs' dates and the file."""
    if not record.exists():
        return None
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError) as exc:
        raise LabError(f"{record}: not a readable study record ({exc})") from exc
    return from_record(data, record)


def from_record(data: Any, record: Path) -> PlanInputs | None:
    """The plan measures of a study record already read (`data`, the JSON of `record`), or None where it holds
    none; the source names the runs' dates and the file."""
    if not isinstance(data, dict) or "plan" not in data:
        return None
    dates = sorted({str(data[k])[:10] for k in ("first_start", "last_end") if data.get(k)})
    when = f" of {' – '.join(dates)}" if dates else ""
    found = from_json(data["plan"], f"the study's runs{when} ({record.name} in docs/results)", str(record))
    return None if found.is_empty() else found
