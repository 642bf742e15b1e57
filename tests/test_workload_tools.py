"""The workload tools' registry (pgfslab.workload_tools) against what the pipeline asks of each tool: the config
schema names exactly the registered tools and their keys, each tool has its runner and a life cycle a run can
call."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import polars as pl
import pytest
import yaml

from pgfslab.config.checks import COMMON_KEYS
from pgfslab.workload_tools import PG_TOOLS, RATIO_TOOLS, TOOLS, tool

REPO = Path(__file__).resolve().parent.parent
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _workload_schema() -> dict:
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and "tool" in props and "enum" in props["tool"]:
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(SCHEMA)
    assert len(found) == 1, "one workload definition in the config schema"
    return found[0]


def test_the_config_schema_names_exactly_the_registered_tools() -> None:
    assert set(_workload_schema()["properties"]["tool"]["enum"]) == set(TOOLS)


def test_every_tool_key_is_a_workload_property_and_every_property_has_an_owner() -> None:
    props = set(_workload_schema()["properties"])
    for t in TOOLS.values():
        assert t.keys <= props, f"{t.name}: keys the schema does not define: {sorted(t.keys - props)}"
    owned = set(COMMON_KEYS).union(*(t.keys for t in TOOLS.values()))
    assert props <= owned, f"workload properties no tool owns: {sorted(props - owned)}"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_has_its_runner_and_a_headline(name: str) -> None:
    runner = importlib.import_module(f"pgfslab.runners.{name}")
    assert runner.__doc__, f"pgfslab.runners.{name} says what it runs"
    assert TOOLS[name].headline


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_names_a_life_cycle_a_run_can_call(name: str) -> None:
    from pgfslab.run import execute

    cycle = execute.life_cycle(name)
    assert callable(cycle)
    assert list(inspect.signature(cycle).parameters) == ["view", "rdir", "mnt", "record", "ph"], TOOLS[name].life_cycle


def test_the_derived_sets_and_an_unknown_tool() -> None:
    assert PG_TOOLS == {"pgbench", "sysbench", "durability"} and "fsmicro" not in PG_TOOLS
    assert RATIO_TOOLS == {"pgbench", "sysbench"}
    with pytest.raises(KeyError, match="no workload tool 'hammerdb' \\(tools: pgbench, sysbench"):
        tool("hammerdb")


SPECS = {
    "pgbench": ({"tool": "pgbench", "builtin": "tpcb-like", "rate_tps": 500, "log": "transactions"},
                "pgbench tpcb-like", ["--rate 500", "per-transaction log"]),
    "sysbench": ({"tool": "sysbench", "test": "oltp_read_write", "histogram": True},
                 "sysbench oltp_read_write", ["p95 per second, histogram"]),
    "fsmicro": ({"tool": "fsmicro", "op": "write_fsync", "size_bytes": 4096},
                "fsmicro write_fsync", ["size_bytes 4096"]),
    "durability": ({"tool": "durability", "crash": "power-loss", "crash_after_s": 5},
                   "durability power-loss crash after 5 s of TPC-B", []),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_runner_says_what_its_workload_is_and_how_it_was_driven(name: str) -> None:
    from pgfslab.config.study import Study, validate
    from pgfslab.runners import runner

    workload, what, how = SPECS[name]
    cfg = {"study": "t", "targets": {"ext4": {"fs": "ext4"}}, "workloads": {"w": workload}}
    spec = Study.from_dict(validate(cfg, "t.yaml")).workloads["w"]
    assert runner(name).describe(spec) == what
    assert runner(name).how(spec) == how


def test_every_tool_with_a_headline_number_reads_it_from_its_own_format() -> None:
    """A tool's headline (its unit in the registry) comes from the one parser format that holds it
    (`HEADLINE` in its module, gathered in ingest.parsers.HEADLINES): a tool added without one has no number."""
    import duckdb

    from pgfslab.ingest.parsers import FORMATS, HEADLINES

    assert set(HEADLINES) == {name for name, t in TOOLS.items() if t.unit is not None}
    tables = {table: schema for mod in FORMATS.values() for table, schema in mod.TABLES.items()}
    con = duckdb.connect()
    for name, (table, sql) in HEADLINES.items():
        assert table in tables, (name, table)
        con.register("empty_frame", pl.DataFrame(schema={**tables[table], "run_id": pl.Utf8}))
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM empty_frame")
        cols = [d[0] for d in con.execute(f"SELECT * FROM ({sql}) LIMIT 0").description]
        assert cols == ["run_id", "value", "transactions", "failed", "elapsed_s"], name
