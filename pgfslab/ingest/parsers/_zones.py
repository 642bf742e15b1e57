"""Time zones of captured time stamps: the zone a tool printed (vmstat -t's header, `date`) resolved
when it has one meaning, or the zone the user names (`pgfslab ingest --tz`); never a guess.

* numeric offsets: `+0900`, `+09:00`, `-0530`, `UTC+9`, `GMT-03:00`;
* abbreviations with one meaning in the tz database as used today (`JST` +09:00, `CEST` +02:00, ...:
  ``ABBREVIATIONS``); the ones with several (`CST`: China +08:00, US Central -06:00, Cuba -05:00;
  `IST`, `BST`, `AST`, ...: ``AMBIGUOUS``) are refused with the meanings listed, as is any other name;
* the user's zone: an IANA name (`Asia/Shanghai`, daylight saving applied per time stamp) or an offset.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass

import polars as pl

# abbreviation -> offset east of UTC in minutes; each with a single meaning in the tz database's current
# rules (glibc prints them for these zones)
ABBREVIATIONS: dict[str, int] = {
    "UTC": 0,
    "GMT": 0,
    "UCT": 0,
    "Z": 0,
    "WET": 0,
    "WEST": 60,
    "CET": 60,
    "CEST": 120,
    "MET": 60,
    "MEST": 120,
    "EET": 120,
    "EEST": 180,
    "MSK": 180,
    "PKT": 300,
    "HKT": 480,
    "AWST": 480,
    "JST": 540,
    "KST": 540,
    "ACST": 570,
    "ACDT": 630,
    "AEST": 600,
    "AEDT": 660,
    "NZST": 720,
    "NZDT": 780,
    "HST": -600,
    "AKST": -540,
    "AKDT": -480,
    "PST": -480,
    "PDT": -420,
    "MST": -420,
    "MDT": -360,
    "NST": -210,
    "NDT": -150,
}
AMBIGUOUS: dict[str, str] = {
    "CST": "China +08:00, US Central -06:00, Cuba -05:00",
    "CDT": "US Central Daylight -05:00, Cuba Daylight -04:00",
    "IST": "India +05:30, Ireland +01:00, Israel +02:00",
    "BST": "British Summer +01:00, Bangladesh +06:00",
    "AST": "Atlantic -04:00, Arabia +03:00",
    "ADT": "Atlantic Daylight -03:00, Arabia Daylight +04:00",
    "SST": "Samoa -11:00, Singapore +08:00",
    "EST": "US Eastern -05:00, Australian Eastern +10:00 (tz database before 2014)",
    "EDT": "US Eastern Daylight -04:00, Australian Eastern Daylight +11:00 (tz database before 2014)",
}
_OFFSET = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d\d))?$")


@dataclass(frozen=True)
class Zone:
    """A resolved zone: a fixed offset (minutes east of UTC) or an IANA name, and how it was known."""

    label: str  # as stored with the rows: "JST (+09:00)", "Asia/Shanghai (--tz)"
    offset_min: int | None = None
    iana: str | None = None

    def to_utc(self, naive: pl.Expr) -> pl.Expr:
        """The UTC instant of `naive` (a Datetime without zone, or one wrongly labelled UTC) read in this zone."""
        wall = naive.dt.replace_time_zone(None)
        if self.iana is not None:
            return wall.dt.replace_time_zone(self.iana, ambiguous="null", non_existent="null").dt.convert_time_zone(
                "UTC"
            )
        return (wall - pl.duration(minutes=self.offset_min or 0)).dt.replace_time_zone("UTC")


def _fmt(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def offset(text: str) -> int | None:
    """Minutes east of UTC of a numeric offset (`+0900`, `+09:00`, `UTC-5`), else None."""
    m = _OFFSET.match(text.strip())
    if m is None:
        return None
    h, mins = int(m.group("h")), int(m.group("m") or 0)
    if h > 14 or mins >= 60:
        return None
    return (h * 60 + mins) * (1 if m.group("sign") == "+" else -1)


def resolve(name: str) -> Zone | None:
    """The zone a tool printed, when it has one meaning; None otherwise (see `why_not`)."""
    name = name.strip()
    if name.upper() in ABBREVIATIONS and name.isupper():
        minutes = ABBREVIATIONS[name.upper()]
        return Zone(f"{name} ({_fmt(minutes)})", offset_min=minutes)
    parsed = offset(name)
    return None if parsed is None else Zone(f"{name} ({_fmt(parsed)})", offset_min=parsed)


def why_not(name: str) -> str:
    """Why a printed zone cannot be resolved, for the error that asks for --tz."""
    if name in AMBIGUOUS:
        return f"time zone {name!r} is ambiguous ({AMBIGUOUS[name]})"
    return f"time zone {name!r} is not one this lab resolves (a numeric offset or one of {', '.join(ABBREVIATIONS)})"


def user_zone(text: str) -> Zone:
    """The zone the user named (`--tz`): an IANA name or a numeric offset. ValueError when it is neither."""
    minutes = offset(text)
    if minutes is not None:
        return Zone(f"{text} (--tz)", offset_min=minutes)
    if text.upper() in ("UTC", "GMT", "Z"):
        return Zone(f"{text} (--tz)", offset_min=0)
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"--tz {text!r}: not an IANA time zone (e.g. Asia/Shanghai) nor an offset (e.g. +08:00)"
        ) from None
    return Zone(f"{text} (--tz)", iana=text)
