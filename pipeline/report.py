"""Text for the paper and notebooks: Markdown tables (they survive every export route, unlike
box-drawing tables), number formatting, and the setup section built from run.json provenance."""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl


def fmt(value: Any, digits: int = 1) -> str:
    """One cell of a table: never `nan`/`None` in a paper."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text or "–"


def markdown_table(df: pl.DataFrame, *, digits: dict[str, int] | None = None, caption: str | None = None,
                   align: dict[str, str] | None = None) -> str:
    """A pipe table; numeric columns right-aligned; optional pandoc `Table:` caption below it."""
    digits = digits or {}
    align = align or {}
    cols = df.columns
    header = "| " + " | ".join(cols) + " |"

    def rule(c: str) -> str:
        a = align.get(c) or ("right" if df[c].dtype.is_numeric() else "left")
        return "---:" if a == "right" else ":---"

    lines = [header, "|" + "|".join(rule(c) for c in cols) + "|"]
    for row in df.iter_rows():
        lines.append("| " + " | ".join(fmt(v, digits.get(c, 1)) for c, v in zip(cols, row)) + " |")
    text = "\n".join(lines)
    if caption:
        text += f"\n\nTable: {caption}"
    return text


def bytes_h(n: float | int | None) -> str:
    if n is None:
        return "–"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def setup_facts(run_json: str) -> dict[str, str]:
    """Host, kernel, PostgreSQL and tool facts from one run.json (all runs of a study share them)."""
    rec = json.loads(run_json)
    host, tools, pg = rec.get("host", {}), rec.get("tools", {}), rec.get("postgres", {})
    git = rec.get("git", {})
    return {
        "CPU": f"{host.get('cpu_model') or '?'} ({host.get('cpus')} logical CPUs)",
        "Memory": bytes_h((host.get("mem_total_kb") or 0) * 1024),
        "OS / kernel": f"{host.get('os') or '?'} / Linux {host.get('kernel') or '?'}",
        "PostgreSQL": (pg.get("version") or "?").split(" on ")[0],
        "pgbench": tools.get("pgbench") or "?",
        "File-system tools": "; ".join(v for k, v in tools.items() if k.startswith("mkfs") and v),
        "Python stack": ", ".join(f"{k} {tools[k]}" for k in ("polars", "duckdb", "snakemake", "scipy") if tools.get(k)),
        "Lab commit": (git.get("commit") or "unknown")[:12] + (" (uncommitted changes)" if git.get("dirty") else ""),
    }


def non_default_settings(run_json: str) -> pl.DataFrame:
    rec = json.loads(run_json)
    settings = (rec.get("postgres") or {}).get("settings") or {}
    skip = {"port", "unix_socket_directories", "listen_addresses", "lc_messages", "lc_monetary", "lc_numeric",
            "lc_time", "DateStyle", "TimeZone", "log_timezone", "default_text_search_config",
            "dynamic_shared_memory_type"}
    rows = [{"setting": k, "value": pg_value(v["setting"], v.get("unit")), "source": v["source"]}
            for k, v in sorted(settings.items()) if k not in skip]
    return pl.DataFrame(rows, schema={"setting": pl.Utf8, "value": pl.Utf8, "source": pl.Utf8})


_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2, "GB": 1024**3}


def pg_value(setting: str, unit: str | None) -> str:
    """A pg_settings value in human units (shared_buffers 16384 x 8kB -> 128.0 MiB)."""
    if unit in _UNIT_BYTES and setting.lstrip("-").isdigit():
        return bytes_h(int(setting) * _UNIT_BYTES[unit])
    return f"{setting} {unit}" if unit else setting
